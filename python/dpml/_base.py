"""What the estimators share: parameter checks, the ledger, the Rust models, pickling."""

import math
import numbers
import warnings

import numpy as np

from . import _dpml, _validation, testing
from ._errors import (
    DPMLError,
    DPMLMemoryError,
    DPMLTypeError,
    DPMLUtilityWarning,
    DPMLValueError,
    NotFittedError,
)
from ._active import LedgerMarked, resolve_ledger
from ._randomness import resolve_seed

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
except ImportError as _e:  # pragma: no cover - scikit-learn is an optional extra
    raise ImportError(
        "dpml's estimators use scikit-learn's BaseEstimator and ClassifierMixin: "
        "pip install 'dp-ml[sklearn]'"
    ) from _e

NEIGHBOURS = (
    "replace-one: two training sets of the same size n that differ in one row "
    "(its features and its label)"
)

_MAX_EPSILON = _dpml.MAX_EPSILON
# The largest δ taken (dp-noise's MAX_DELTA, 0.1, through dp-fit): a useful δ is far below 1/n.
_MAX_DELTA = _dpml.MAX_DELTA


# The largest count the Rust core takes (usize on the 64-bit targets the wheels are built for).
_MAX_COUNT = 2**63 - 1


def _count(name, value):
    """A count parameter: an integer in [1, 2**63 − 1], as a Python int (a larger one would
    fail the conversion into Rust with an error that names no parameter)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DPMLTypeError(f"{name}={value!r} must be an integer")
    if not 1 <= value <= _MAX_COUNT:
        raise DPMLValueError(f"{name}={value!r} must be between 1 and {_MAX_COUNT}")
    return int(value)


def _number(name, value, *, positive=True, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPMLTypeError(f"{name}={value!r} must be a number")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise DPMLValueError(f"{name}={value!r} must be finite")
    if positive and not value > 0:
        raise DPMLValueError(f"{name}={value!r} must be > 0")
    return value


def _delta(value, *, required):
    """δ: 0 (pure ε; refused when ``required``) or in (0, ``MAX_DELTA``]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPMLTypeError(f"delta={value!r} must be a number")
    value = float(value)
    if required and not (0 < value <= _MAX_DELTA):
        raise DPMLValueError(
            f"delta={value!r}: this mechanism is (epsilon, delta)-DP and needs a delta in "
            f"(0, {_MAX_DELTA!r}], well below 1/n (e.g. 1e-6 for a million rows)"
        )
    if not (value == 0 or 0 < value <= _MAX_DELTA):
        raise DPMLValueError(
            f"delta={value!r} must be 0 (pure epsilon) or in (0, {_MAX_DELTA!r}], well "
            "below 1/n: delta is the chance that the epsilon guarantee fails outright"
        )
    return value


def _choice(name, value, options):
    if value not in options:
        raise DPMLValueError(f"{name}={value!r}; expected one of {options}")
    return value



def warn_outlook(outlook, estimator):
    """Raises the fit's outlook warning (from public facts only), if it has one, as a
    ``DPMLUtilityWarning`` pointing at the caller's ``fit``."""
    if outlook and outlook.get("warning"):
        warnings.warn(f"{estimator}: {outlook['warning']}", DPMLUtilityWarning, stacklevel=3)

def epsilon_and_mechanism(estimator, mechanisms=("objective", "output")):
    """The estimator's ε (inf only in the non-private check mode) and its mechanism, one of
    ``mechanisms``, checked: what every linear estimator, classifier or regressor, takes."""
    epsilon = estimator.epsilon
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool):
        if math.isinf(epsilon) and epsilon > 0:
            if testing.allow_non_private():
                return math.inf, "non-private"
            raise DPMLValueError(
                "epsilon=inf would train without privacy; pass a finite epsilon in "
                f"(0, {_MAX_EPSILON}]"
            )
    epsilon = _number("epsilon", epsilon)
    if epsilon > _MAX_EPSILON:
        raise DPMLValueError(f"epsilon={epsilon!r} must be at most {_MAX_EPSILON}")
    mechanism = _choice("mechanism", estimator.mechanism, mechanisms)
    _choice("calibration", estimator.calibration, ("cliff-free", "cms11"))
    if mechanism != "objective" and estimator.calibration != "cliff-free":
        raise DPMLValueError(
            "calibration applies to mechanism='objective' only; leave it at its default "
            f"with mechanism={mechanism!r}"
        )
    return epsilon, mechanism


class PrivateClassifier(ClassifierMixin, LedgerMarked, BaseEstimator):
    """Base of dpml's estimators (scikit-learn's mixins only: no scikit-learn model is
    subclassed and no private module imported). Subclasses define ``_kind`` (the model
    files' kind: "linear" or "kernel"), ``_loss()`` (the loss's name and Huber width) and
    ``_fit_rust(call, indices, n_classes, kwargs, seed)`` (the Rust fit, returning the
    models and the fit's report); they may extend ``_fit_kwargs`` (the keyword arguments of
    that fit), ``_privacy_report`` and, for other mechanisms, ``_epsilon_and_mechanism``,
    ``_delta`` and ``_released_mechanism``."""

    _kind = "linear"

    # -- parameters shared by every estimator ------------------------------------------

    def _epsilon_and_mechanism(self):
        return epsilon_and_mechanism(self)

    def _delta(self):
        """The δ the fit is (ε, δ)-DP at: 0 unless the estimator takes a ``delta``."""
        return 0.0

    def _released_mechanism(self, mechanism, delta):
        """The name ``privacy_`` and the ledger record (the model file's, as Rust names it)."""
        return f"gaussian-{mechanism}" if delta > 0 else mechanism

    def _regularization(self, n_rows):
        """Λ, or None for dp-erm's data-independent rule."""
        C, reg = self.C, self.regularization
        if C is not None:
            if not (isinstance(reg, str) and reg == "auto"):
                raise DPMLValueError(
                    f"pass either C={C!r} or regularization={reg!r}, not both"
                )
            # scikit-learn's C: C·Σ loss + ½‖w‖², i.e. Λ = 1/(C·n) on the mean loss.
            return 1.0 / (_number("C", C) * n_rows)
        if isinstance(reg, str):
            _choice("regularization", reg, ("auto",))
            if testing.allow_non_private() and not math.isfinite(self.epsilon):
                # No ε for the rule: scikit-learn's default C = 1.
                return 1.0 / n_rows
            return None
        return _number("regularization", reg)

    def _tol(self):
        return None if self.tol is None else _number("tol", self.tol)

    def _seed(self):
        return resolve_seed(self.random_state, testing.allow_int_seed())

    # -- fitting ------------------------------------------------------------------------

    def fit(self, X, y, ledger=None, **params):
        """Trains on ``X`` (n_samples × n_features) and ``y`` (one label per row, each in
        ``classes``), charging ``ledger`` (or the ledger active in a ``with`` block) the
        fit's (ε, δ) before any work. Returns ``self``.

        ``sample_weight`` (which scikit-learn's tools pass) must be None: a private fit
        takes no per-row weights (the noise is calibrated to one row's effect, which a
        weight multiplies); a weight is refused with ``DPMLValueError``.

        Interrupted (Ctrl-C, ``KeyboardInterrupt``), the fit releases nothing and the
        ledger keeps its charge, since noise may have been drawn (a fit is charged once it
        may have drawn noise); the estimator keeps its previous state. ``DPSGDClassifier``
        stops between two steps, the solver-based fits between two solver iterations, each
        within about 50 ms of the signal plus the step under way."""
        # First: a fit that an open block would charge but cannot reach is refused here.
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        epsilon, mechanism = self._epsilon_and_mechanism()
        delta = self._delta() if mechanism != "non-private" else 0.0
        released = self._released_mechanism(mechanism, delta)
        seed = self._seed()
        shape, call = _validation.rows(self, X, reset=True)
        y = _validation.labels(y, shape[0])
        classes = _validation.public_classes(self.classes, y, testing.infer_public_facts())
        indices = _validation.class_indices(y, classes)
        kwargs = self._fit_kwargs(shape, call, epsilon, mechanism)
        if delta > 0:
            kwargs["delta"] = delta
        record = None
        if ledger is not None:
            # The class count lets the ledger record a Gaussian output perturbation's
            # zCDP curve (one model, or one per class at its share).
            record = ledger.charge(
                epsilon, delta, what=type(self).__name__, mechanism=released, classes=len(classes)
            )
        try:
            models, report = self._fit_rust(call, indices, len(classes), kwargs, seed)
        except (DPMLValueError, DPMLMemoryError):
            # Refused before any noise was drawn (parameters, rows, or an input too large for
            # the memory): nothing was spent.
            if record is not None:
                ledger.refund(record)
            raise
        self.classes_ = classes
        self._models = models
        if record is not None and (curve := self._ledger_curve(report, models)) is not None:
            # Known only now (DP-SGD's σ is calibrated on n): the ledger composes it tightly.
            ledger._attach_curve(record, curve)
        self.privacy_ = self._privacy_report(report, epsilon, released, seed, kwargs)
        per_model = self.privacy_.get("epsilon_per_model")
        if report.get("outlook") is not None:
            # dp-fit's outlook of this fit, from public facts (its mechanism's own basis).
            self.privacy_["outlook"] = report["outlook"]
        elif self._models.info()["kind"] == "linear" and per_model is not None:
            # From the public n, d and ε alone (dp-erm's rule outlook): is a private linear
            # model expected to beat predicting the majority class at all?
            self.privacy_["outlook"] = _dpml.utility_outlook(
                self._public_rows(shape[0]), self._models.info()["features"], per_model
            )
        warn_outlook(self.privacy_.get("outlook"), type(self).__name__)
        return self

    def _public_rows(self, n_rows):
        """The row count that may be reported: the rows' own, public under replace-one."""
        return n_rows

    def _ledger_curve(self, report, models):
        """The fit's privacy curve for a ledger, known only after the fit: None (the charge's
        own pair or curve stands)."""
        return None

    def _fit_kwargs(self, shape, call, epsilon, mechanism):
        loss, width = self._loss()
        return dict(
            loss_name=loss,
            huber_width=width,
            mechanism_name=mechanism,
            epsilon=epsilon if math.isfinite(epsilon) else 1.0,
            calibration=self.calibration,
            regularization=self._regularization(shape[0]),
            tol=self._tol(),
        )

    def _privacy_report(self, report, epsilon, mechanism, seed, kwargs):
        info = self._models.info()
        test_mode = testing.infer_public_facts()
        private = mechanism != "non-private" and seed is None and not test_mode
        privacy = {
            "epsilon": epsilon,
            "delta": report.get("delta", 0.0),
            "private": private,
            "seeded": seed is not None,
            "test_mode": test_mode,
            "mechanism": mechanism,
            "calibration": self.calibration
            if mechanism in ("objective", "gaussian-objective")
            else None,
            "regularization": report["regularization"],
            "loss": info["loss"],
            "huber_width": info["huber_width"],
            "models": len(self._models),
            "epsilon_per_model": info["epsilon_per_model"],
            "neighbouring": NEIGHBOURS,
            "noise": report.get("calibration"),
            "library_version": _dpml.__version__,
            "crate_version": info["crate_version"],
        }
        if "data_norm" in kwargs:
            privacy["data_norm"] = kwargs["data_norm"]
            privacy["clip_rows"] = kwargs["clip_rows"]
            privacy["intercept_scaling"] = kwargs["intercept"]
        if seed is not None:
            privacy["warning"] = (
                "trained with dpml.InsecureSeed: the noise is predictable and this model "
                "is NOT private"
            )
        return privacy

    # -- prediction ---------------------------------------------------------------------

    def _check_fitted(self):
        if getattr(self, "_models", None) is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )

    def _scores(self, X):
        self._check_fitted()
        _, call = _validation.rows(self, X, reset=False)
        return self._models.decision(**call)

    def decision_function(self, X):
        """Scores: shape (n,) for two classes (>= 0 means ``classes_[1]``, as in dp-erm), else
        (n, n_classes), one-vs-rest."""
        scores = self._scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """The class of each row of ``X``."""
        scores = self._scores(X)
        if scores.shape[1] == 1:
            index = (scores[:, 0] >= 0).astype(np.intp)  # dp-erm: +1 when the score is >= 0
        else:
            index = np.argmax(scores, axis=1)
        return self.classes_[index]

    # -- files and pickles --------------------------------------------------------------

    def save(self, path):
        """Writes the model file the Rust crates read (``dp_erm::LinearModel::load`` or
        ``dp_kernel::KernelModel::load``): binary models only. The file holds the
        weights, ε, mechanism, Λ and (linear) the row transform; not ``classes``."""
        self._check_fitted()
        self._models.save(str(path))

    @classmethod
    def load(cls, path, classes, **params):
        """An estimator predicting with the model file at ``path`` (written by ``save``
        or by Rust), for the public ``classes`` it was trained on."""
        estimator = cls(classes=classes, **params)
        models = _dpml.Models.load(cls._kind, str(path))
        estimator._adopt(models)
        return estimator

    def _adopt(self, models):
        info = models.info()
        classes = _validation.public_classes(self.classes, None, False)
        if len(models) != (1 if len(classes) == 2 else len(classes)):
            raise DPMLValueError(
                f"the model holds {len(models)} binary models, which does not fit "
                f"{len(classes)} classes"
            )
        self.classes_ = classes
        self.n_features_in_ = info["features"]
        self._models = models
        self.privacy_ = {
            "epsilon": None
            if info["epsilon_per_model"] is None
            else info["epsilon_per_model"] * len(models),
            # Basic composition over the one-vs-rest models, rounded up (never under-reported).
            "delta": _composed(info["delta_per_model"], len(models)),
            "mechanism": info["mechanism"],
            "calibration": info["calibration"],
            "regularization": info["regularization"],
            "loss": info["loss"],
            "neighbouring": NEIGHBOURS,
            "library_version": _dpml.__version__,
            "crate_version": info["crate_version"],
            **{k: info[k] for k in _SGD_FIELDS if k in info},
            "from_file": True,
            "note": "read from a plain model file: its epsilon and mechanism are claims, "
            "not evidence (see dp-erm's file format)",
        }

    def __getstate__(self):
        # A copy: BaseEstimator returns the instance's own __dict__ for non-sklearn classes.
        state = dict(super().__getstate__())
        models = state.pop("_models", None)
        if models is not None:
            state["_model_files"] = [bytes(f) for f in models.to_bytes()]
        return state

    def __setstate__(self, state):
        state = dict(state)
        files = state.pop("_model_files", None)
        if files is not None:
            state["_models"] = _dpml.Models.from_bytes(self._kind, files)
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def feature_groups_kwarg(groups, delta, mechanism):
    """The public ``feature_groups`` as a list of group indices (None: spherical noise),
    refused by name where they shape nothing: the Gaussian mechanisms' noise is spherical
    and only objective perturbation's noise is shaped."""
    if groups is None:
        return None
    if delta > 0:
        raise DPMLValueError(
            "feature_groups shapes the pure-epsilon objective perturbation's noise; "
            "the Gaussian mechanisms (delta > 0) add spherical noise: leave "
            "feature_groups=None"
        )
    if mechanism != "objective":
        raise DPMLValueError(
            "feature_groups shapes objective perturbation's noise; it does not apply "
            f"to mechanism={mechanism!r}"
        )
    array = np.asarray(groups)
    if array.ndim != 1 or array.dtype.kind not in "iu" or np.any(array < 0):
        raise DPMLValueError(
            "feature_groups must hold one non-negative integer group index per "
            f"feature; got {groups!r}"
        )
    return [int(g) for g in array]


def require_data_norm(data_norm, call):
    """The public norm bound, or (check mode only) the largest row norm of the data."""
    if data_norm is None:
        if testing.infer_public_facts():
            x = call["x"]
            if "csr" in call:
                indptr = call["csr"][1]
                norms = np.sqrt(np.add.reduceat(np.append(x * x, 0.0), indptr[:-1]))
                norms[np.diff(indptr) == 0] = 0.0
            else:
                norms = np.linalg.norm(x, axis=1)
            largest = float(np.max(norms)) if len(norms) else 0.0
            # A margin over the computed norm, which may round below Rust's.
            return largest * (1 + 1e-9) if largest > 0 and math.isfinite(largest) else 1.0
        raise DPMLValueError(
            "data_norm is required: pass a public bound B on the Euclidean norm of every "
            "row of X, known without looking at the data (e.g. from the features' "
            "documented ranges). Rows are divided by B; a row above B is refused, naming "
            "it, unless you also pass clip_rows=True to clip such rows to norm B."
        )
    return _number("data_norm", data_norm)


def private_norm_kwargs(data_norm, epsilon, mechanism):
    """data_norm="private": dp-fit's share of ε releases the row-norm bound (a private
    quantile of the rows' norms, rows above it clipped), the fit gets the rest. The fit
    keywords that say so."""
    _choice("data_norm", data_norm, ("private",))
    if mechanism == "non-private" or not math.isfinite(epsilon):
        raise DPMLValueError(
            "data_norm='private' releases the row-norm bound privately from a share of "
            "epsilon; it needs a finite epsilon (pass a number as data_norm otherwise)"
        )
    from . import _dpml

    norm_epsilon, fit_epsilon = _dpml.private_norm_split(epsilon)
    # A placeholder the released bound replaces before any row is scaled.
    return dict(data_norm=1.0, epsilon=fit_epsilon, private_norm_epsilon=norm_epsilon)


def private_norm_report(report, kwargs):
    """What ``privacy_`` adds for a privately released norm bound (nothing otherwise)."""
    if "private_norm_epsilon" not in kwargs:
        return {}
    from . import _dpml

    return dict(
        data_norm=report["data_norm"],
        data_norm_epsilon=kwargs["private_norm_epsilon"],
        data_norm_mechanism=_dpml.PRIVATE_NORM_MECHANISM,
        clip_rows=True,
    )


__all__ = ["PrivateClassifier", "DPMLError", "require_data_norm"]


# What a DP-SGD model's file records besides (ε, δ): reported by ``privacy_``.
_SGD_FIELDS = ("noise_multiplier", "sampling_rate", "steps", "clip_norm")


def _composed(per_model, count):
    """`count` times `per_model`, rounded up: a product that rounded down would under-report."""
    total = per_model * count
    return total if count == 1 or total == 0.0 else math.nextafter(total, math.inf)
