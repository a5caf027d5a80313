"""Private linear regressors: Huber regression, and least squares and ridge as its
threshold-wide form (dp-erm's ``Loss::HuberRegression`` through dp-fit's regression
recipe), or least squares and ridge by AdaSSP (dp-erm's ``AdaSsp``)."""

import math
import warnings

import numpy as np

from . import _dpml, _validation, testing
from ._active import LedgerMarked, resolve_ledger
from ._base import (
    NEIGHBOURS,
    _choice,
    _delta,
    _number,
    epsilon_and_mechanism,
    feature_groups_kwarg,
    private_norm_kwargs,
    private_norm_report,
    require_data_norm,
    warn_outlook,
)
from ._errors import DPMLMemoryError, DPMLTypeError, DPMLValueError, NotFittedError
from ._randomness import resolve_seed

# The regressors' default intercept feature c (dp-fit's DEFAULT_INTERCEPT_SCALING).
_INTERCEPT_SCALING = _dpml.REGRESSION_INTERCEPT_SCALING

try:
    from sklearn.base import BaseEstimator, RegressorMixin
except ImportError as _e:  # pragma: no cover - scikit-learn is an optional extra
    raise ImportError(
        "dpml's estimators use scikit-learn's BaseEstimator and RegressorMixin: "
        "pip install 'dp-ml[sklearn]'"
    ) from _e


def _targets(y, n_rows):
    """y as a 1-D float64 array of n_rows finite-or-not numbers (the bounds check is Rust's)."""
    array = _validation.labels(y, n_rows)
    if array.dtype.kind == "O":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            pass
    if array.dtype.kind not in "biuf":
        raise DPMLValueError(
            f"Unknown label type: y must hold numbers for a regressor; got dtype "
            f"{array.dtype} (for classes, use a classifier)"
        )
    return np.ascontiguousarray(array, dtype=np.float64)


def _bounds(bounds, y):
    """The public target bounds (lower, upper), or (check mode only) the targets' range."""
    if bounds is None:
        if testing.infer_public_facts() and y is not None and len(y):
            finite = y[np.isfinite(y)]
            low, high = (float(finite.min()), float(finite.max())) if len(finite) else (0, 1)
            if not high > low:
                low, high = low - 1.0, high + 1.0
            return low, high
        raise DPMLValueError(
            "bounds is required: pass the public range (lower, upper) of the target, known "
            "without looking at the data (e.g. from the outcome's definition). Targets are "
            "scaled by it; one outside it is refused, naming its row, unless you also pass "
            "clip_targets=True."
        )
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise DPMLTypeError(f"bounds={bounds!r} must be a pair (lower, upper)") from None
    low = _number("bounds[0]", low, positive=False)
    high = _number("bounds[1]", high, positive=False)
    if not high > low:
        raise DPMLValueError(f"bounds={bounds!r} must have lower < upper")
    return low, high


_SHARED_DOC = """
    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of the guarantee, in (0, 1000]: the model is ε-differentially private for
        training sets that differ in one row (its features and its target, replaced).
    delta : float, default=0.0
        0: pure ε-DP. In (0, 0.01]: (ε, δ)-DP, trained by dp-erm's ``GaussianErm`` (or, with
        ``mechanism="adassp"``, which requires it, by ``AdaSsp``).
    data_norm : float or "private", required
        A public bound B on the Euclidean norm of every row of X. Rows are divided by B; a
        row above B is refused (naming it) unless ``clip_rows=True``. ``"private"``: no
        bound is known, so a tenth of ε releases one (the 0.9-quantile of the rows' norms,
        by the exponential mechanism; rows above it clipped) and the fit gets the rest; the
        released bound and its ε are in ``privacy_`` (not ``Ridge``, whose ``alpha`` is in
        the rows' units, nor ``DPSGDRegressor``).
    bounds : (float, float), required
        The public range (lower, upper) of the target. Targets are scaled into [−1, 1] by
        it for training, and every prediction is mapped back and clamped into it. Never
        read it from the data: a range computed from the targets leaks their extremes.
    clip_targets : bool, default=False
        Clip targets outside ``bounds`` to them instead of refusing them (per row, so it
        costs no privacy; it changes those rows).
    clip_rows : bool, default=False
        Clip rows of norm above ``data_norm`` (per row, no privacy cost).
    mechanism : {"objective", "output", "adassp"}, default="objective"
        Objective perturbation (CMS11 Algorithm 2) or output perturbation (Algorithm 1).
        ``LinearRegression`` and ``Ridge`` also take "adassp": AdaSSP (Wang 2018, Algorithm
        2), least squares plus a ridge λ chosen from a private estimate of λ_min(XᵀX), on
        discrete Gaussian releases of λ_min(XᵀX), XᵀX and Xᵀy (a third of the zCDP budget
        each; ``delta > 0`` required: it has no pure-ε form). Often far more accurate than
        the perturbation mechanisms at the same (ε, δ); see
        docs/src/mechanisms/regression.md.
    calibration : {"cliff-free", "cms11"}, default="cliff-free"
        How objective perturbation splits ε.
    feature_groups : array-like of int or None, default=None
        A public group index per feature (one-hot blocks, or a schema's
        ``feature_groups``): pure-ε objective perturbation's noise is shaped to the groups
        (same ε, less noise on one-hot data; Λ by the same rule as without groups).
        Every row must have group norm ≤ 1 after scaling. Refused with ``delta > 0`` and
        with output perturbation, whose noise is spherical.
    fit_intercept : bool, default=True
        Learn an intercept as a constant feature inside the unit ball (regularized like
        every weight).
    intercept_scaling : float, default=0.5
        That constant feature's value c: rows become ``(x/B, c)/√(1 + c²)``. The default
        is dp-fit's ``DEFAULT_INTERCEPT_SCALING``, chosen by measurement (c = 1, the
        classifiers', shrinks every feature by 1/√2 and lost up to 0.1 of R²).
    tol : float or None, default=None
        The gradient norm the solver must certify.
    random_state : None or dpml.InsecureSeed, default=None
        None: noise from the operating system's entropy (private). ``InsecureSeed(s)``:
        reproducible and NOT private.

    Attributes
    ----------
    n_features_in_, feature_names_in_, coef_, intercept_ (in the input's and the target's
    units: ``predict(X) = clip(X @ coef_ + intercept_, *bounds)``), privacy_ (ε, δ,
    mechanism, Λ, Huber threshold, norm bound, target bounds, neighbouring relation,
    outlook).

    ``score`` is R² (scikit-learn's ``RegressorMixin``).
"""


class _PrivateRegressor(RegressorMixin, LedgerMarked, BaseEstimator):
    """What the regressors share. Subclasses define ``_threshold(bounds)`` (the Huber
    threshold in the scaled target's units) and ``_regularization(n_rows, bounds)``."""

    def _scaled_threshold(self, threshold, bounds):
        """A threshold in the target's units, in the scaled target's (range 2)."""
        return 2.0 * threshold / (bounds[1] - bounds[0])

    def _regularization_rule(self, value, n_rows):
        if isinstance(value, str):
            _choice("regularization", value, ("auto",))
            if testing.allow_non_private() and not math.isfinite(self.epsilon):
                return 1.0 / n_rows
            return None
        return _number("regularization", value)

    # The mechanisms this estimator takes (AdaSSP fits least squares, not Huber's loss).
    _mechanisms = ("objective", "output")

    def fit(self, X, y, ledger=None, **params):
        """Trains on ``X`` (n_samples × n_features) and ``y`` (one number per row, within
        ``bounds``), charging ``ledger`` (or the ledger active in a ``with`` block) the
        fit's (ε, δ) before any work. Returns ``self``. ``sample_weight`` must be None."""
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        self._check_ledger(ledger)
        epsilon, mechanism, delta = self._epsilon_mechanism_delta()
        adassp = mechanism == "adassp"
        # AdaSSP and DP-SGD are (ε, δ) mechanisms of their own, not Gaussian variants.
        released = (
            mechanism
            if mechanism in ("adassp", "dp-sgd") or delta == 0
            else f"gaussian-{mechanism}"
        )
        seed = resolve_seed(self.random_state, testing.allow_int_seed())
        shape, call = _validation.rows(self, X, reset=True)
        y = _targets(y, shape[0])
        bounds = _bounds(self.bounds, y)
        for name in ("fit_intercept", "clip_rows", "clip_targets"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise DPMLTypeError(f"{name}={getattr(self, name)!r} must be True or False")
        if isinstance(self.data_norm, str):
            if not self._private_norm_supported:
                raise DPMLValueError(
                    f"data_norm={self.data_norm!r}: {type(self).__name__} needs a public "
                    "data_norm (a number); a private bound is released for "
                    "LinearRegression, HuberRegressor and DPSGDRegressor"
                )
            norm = private_norm_kwargs(self.data_norm, epsilon, mechanism)
        else:
            norm = dict(data_norm=require_data_norm(self.data_norm, call))
        kwargs = dict(
            huber_threshold=self._scaled_threshold(self._threshold(bounds), bounds),
            target_lower=bounds[0],
            target_upper=bounds[1],
            clip_targets=bool(self.clip_targets),
            epsilon=epsilon if math.isfinite(epsilon) else 1.0,
            delta=delta,
            clip_rows=bool(self.clip_rows),
            intercept=_number("intercept_scaling", self.intercept_scaling)
            if self.fit_intercept
            else None,
            **self._mechanism_kwargs(shape, bounds, mechanism),
        )
        kwargs.update(norm)
        record = None
        if ledger is not None:
            record = ledger.charge(epsilon, delta, what=type(self).__name__, mechanism=released)
        try:
            model, report = self._fit_rust(y, seed, call, kwargs)
        except (DPMLValueError, DPMLMemoryError):
            # Refused before any noise was drawn: nothing was spent.
            if record is not None:
                ledger.refund(record)
            raise
        if record is not None and (curve := self._ledger_curve(report)) is not None:
            ledger._attach_curve(record, curve)
        self._model = model
        test_mode = testing.infer_public_facts()
        self.privacy_ = {
            "epsilon": epsilon,
            "delta": report.get("delta", 0.0),
            "private": mechanism != "non-private" and seed is None and not test_mode,
            "seeded": seed is not None,
            "test_mode": test_mode,
            "mechanism": released,
            "calibration": self.calibration if mechanism == "objective" else None,
            "regularization": report["regularization"],
            "loss": "least-squares" if adassp else "huber-regression",
            "huber_threshold": None if adassp else self._threshold(bounds),
            "data_norm": kwargs["data_norm"],
            "clip_rows": kwargs["clip_rows"],
            **private_norm_report(report, kwargs),
            "bounds": bounds,
            "clip_targets": kwargs["clip_targets"],
            "intercept_scaling": kwargs["intercept"],
            "neighbouring": NEIGHBOURS.replace("its label", "its target"),
            "noise": report.get("calibration"),
            # Objective perturbation's noise shaped to this many groups (None: spherical).
            "noise_groups": model.info()["noise_groups"],
            "outlook": report.get("outlook"),
            "library_version": _dpml.__version__,
            **self._privacy_extra(report, kwargs),
        }
        if seed is not None:
            self.privacy_["warning"] = (
                "trained with dpml.InsecureSeed: the noise is predictable and this model "
                "is NOT private"
            )
        warn_outlook(self.privacy_.get("outlook"), type(self).__name__)
        return self

    # What the DP-SGD regressor (dpml.DPSGDRegressor) replaces.

    #: Whether ``data_norm="private"`` is taken (a norm bound released from a share of ε).
    _private_norm_supported = True

    def _check_ledger(self, ledger):
        """Refuses a ledger the fit cannot be charged to (none here)."""

    def _epsilon_mechanism_delta(self):
        epsilon, mechanism = epsilon_and_mechanism(self, self._mechanisms)
        delta = _delta(self.delta, required=False) if mechanism != "non-private" else 0.0
        if mechanism == "adassp" and delta == 0:
            raise DPMLValueError(
                "delta=0: mechanism='adassp' releases Gaussian noise and has no pure-epsilon "
                "form; pass delta > 0 (well below 1/n, e.g. 1e-6), or use mechanism="
                "'objective' or 'output' for pure epsilon"
            )
        return epsilon, mechanism, delta

    def _mechanism_kwargs(self, shape, bounds, mechanism):
        return dict(
            mechanism_name=mechanism,
            calibration=self.calibration,
            regularization=self._regularization(shape[0], bounds),
            tol=None if self.tol is None else _number("tol", self.tol),
            feature_groups=feature_groups_kwarg(
                self.feature_groups, _delta(self.delta, required=False), mechanism
            ),
        )

    def _fit_rust(self, y, seed, call, kwargs):
        return _dpml.fit_regression_model(y=y, seed=seed, **call, **kwargs)

    def _ledger_curve(self, report):
        """The fit's privacy curve for a ledger (DP-SGD's), None for the others."""
        return None

    def _privacy_extra(self, report, kwargs):
        return {}

    def _check_fitted(self):
        if getattr(self, "_model", None) is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )

    def predict(self, X):
        """The predicted target of each row of ``X``, within the public ``bounds``."""
        self._check_fitted()
        _, call = _validation.rows(self, X, reset=False)
        return self._model.predict(**call)

    @property
    def coef_(self):
        """Weights in the input's and the target's units, shape (n_features,)."""
        self._check_fitted()
        return self._model.coefficients()[0]

    @property
    def intercept_(self):
        """The intercept in the target's units (the bounds' centre without fit_intercept)."""
        self._check_fitted()
        return self._model.coefficients()[1]

    def save(self, path):
        """Writes the model file the Rust crates and ``dpml predict`` read
        (``dp_erm::RegressionModel::load``)."""
        self._check_fitted()
        self._model.save(str(path))

    @classmethod
    def load(cls, path, **params):
        """An estimator predicting with the regressor's model file at ``path``."""
        estimator = cls(**params)
        model = _dpml.Regressor.load(str(path))
        info = model.info()
        estimator._model = model
        estimator.n_features_in_ = info["features"]
        estimator.privacy_ = {
            **info,
            "neighbouring": NEIGHBOURS.replace("its label", "its target"),
            "from_file": True,
            "note": "read from a plain model file: its epsilon and mechanism are claims, "
            "not evidence (see dp-erm's file format)",
        }
        return estimator

    def __getstate__(self):
        state = dict(super().__getstate__())
        model = state.pop("_model", None)
        if model is not None:
            state["_model_file"] = bytes(model.to_bytes())
        return state

    def __setstate__(self, state):
        state = dict(state)
        file = state.pop("_model_file", None)
        if file is not None:
            state["_model"] = _dpml.Regressor.from_bytes(file)
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class HuberRegressor(_PrivateRegressor):
    __doc__ = (
        """ε-differentially private (or, with ``delta > 0``, (ε, δ)-DP) linear Huber
    regression (dp-erm's ``Loss::HuberRegression``).

    The loss of the residual r is r²/2 within ``huber_threshold`` of 0 and linear beyond:
    robust to outliers, and 1-Lipschitz once divided by the threshold, which is what
    objective and output perturbation need (docs/src/reference/algorithms.md §10).

    huber_threshold : float or None, default=None
        The threshold in the target's units; None: half the target's range (the rule's
        threshold, 1 on the scaled target).
    regularization : "auto" or float, default="auto"
        Λ on the scaled problem; "auto": dp-erm's ``RegularizationRule::REGRESSION`` (or,
        with ``delta > 0``, ``GaussianRule``), from n, d and ε — dp-fit's recipe, the same
        as every face's.
"""
        + _SHARED_DOC
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=0.0,
        data_norm=None,
        bounds=None,
        clip_targets=False,
        clip_rows=False,
        huber_threshold=None,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        feature_groups=None,
        fit_intercept=True,
        intercept_scaling=_INTERCEPT_SCALING,
        tol=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.bounds = bounds
        self.clip_targets = clip_targets
        self.clip_rows = clip_rows
        self.huber_threshold = huber_threshold
        self.mechanism = mechanism
        self.calibration = calibration
        self.regularization = regularization
        self.feature_groups = feature_groups
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.random_state = random_state

    def _threshold(self, bounds):
        if self.huber_threshold is None:
            return 0.5 * (bounds[1] - bounds[0])
        return _number("huber_threshold", self.huber_threshold)

    def _regularization(self, n_rows, bounds):
        return self._regularization_rule(self.regularization, n_rows)


class LinearRegression(HuberRegressor):
    __doc__ = (
        """ε-differentially private (or (ε, δ)-DP) least-squares linear regression.

    Least squares is not Lipschitz, so it is trained as Huber regression whose threshold
    is the target's whole range: every residual between a prediction and a target inside
    ``bounds`` is in the squared part, so on every model that predicts within the bounds
    the loss is exactly the squared error (scaled); only predictions outside the bounds
    have their gradient capped, which is what bounds the sensitivity. Λ from
    ``RegularizationRule::REGRESSION`` unless ``regularization`` is given.

    With ``mechanism="adassp"`` (and ``delta > 0``) it is trained by AdaSSP instead: exact
    least squares on noisy sufficient statistics with an adaptive ridge λ. Then
    ``regularization="auto"`` adds nothing to that λ, and a number Λ adds the ridge 2nΛ
    (on the scaled problem, as for the other mechanisms); ``privacy_["regularization"]``
    is the Λ = λ/(2n) the model records.
"""
        + _SHARED_DOC
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=0.0,
        data_norm=None,
        bounds=None,
        clip_targets=False,
        clip_rows=False,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        feature_groups=None,
        fit_intercept=True,
        intercept_scaling=_INTERCEPT_SCALING,
        tol=None,
        random_state=None,
    ):
        super().__init__(
            epsilon,
            delta=delta,
            data_norm=data_norm,
            bounds=bounds,
            clip_targets=clip_targets,
            clip_rows=clip_rows,
            huber_threshold=None,
            mechanism=mechanism,
            calibration=calibration,
            regularization=regularization,
            feature_groups=feature_groups,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            tol=tol,
            random_state=random_state,
        )

    _mechanisms = ("objective", "output", "adassp")

    def _threshold(self, bounds):
        return bounds[1] - bounds[0]


class Ridge(LinearRegression):
    __doc__ = (
        """ε-differentially private (or (ε, δ)-DP) ridge regression: ``LinearRegression``
    with scikit-learn's ``alpha``.

    alpha : float, default=1.0
        scikit-learn's penalty in ``‖y − Xw‖² + alpha·‖w‖²``, in the input's and the
        target's units. On the scaled problem it is Λ = alpha/(n·h·B²·(1 + c²)), with h
        the threshold (2, the scaled range), B ``data_norm`` and c ``intercept_scaling``
        (the intercept is penalized too: the proofs cover nothing else). With
        ``mechanism="adassp"`` it is added to AdaSSP's adaptive λ: the same penalty on the
        same scaled problem, costing no privacy (the solve is post-processing).
"""
        + _SHARED_DOC
    )

    _private_norm_supported = False

    def __init__(
        self,
        alpha=1.0,
        *,
        epsilon=1.0,
        delta=0.0,
        data_norm=None,
        bounds=None,
        clip_targets=False,
        clip_rows=False,
        mechanism="objective",
        calibration="cliff-free",
        feature_groups=None,
        fit_intercept=True,
        intercept_scaling=_INTERCEPT_SCALING,
        tol=None,
        random_state=None,
    ):
        self.alpha = alpha
        super().__init__(
            epsilon,
            delta=delta,
            data_norm=data_norm,
            bounds=bounds,
            clip_targets=clip_targets,
            clip_rows=clip_rows,
            mechanism=mechanism,
            calibration=calibration,
            regularization="auto",
            feature_groups=feature_groups,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            tol=tol,
            random_state=random_state,
        )

    def get_params(self, deep=True):
        params = super().get_params(deep)
        params.pop("regularization", None)
        return params

    def _regularization(self, n_rows, bounds):
        alpha = _number("alpha", self.alpha)
        norm = self.data_norm if self.data_norm is not None else 1.0
        c = self.intercept_scaling if self.fit_intercept else 0.0
        return alpha / (n_rows * 2.0 * norm**2 * (1.0 + c**2))


__all__ = ["HuberRegressor", "LinearRegression", "Ridge"]
