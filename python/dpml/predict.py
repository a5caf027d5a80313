"""Private prediction (Dwork & Feldman 2018) over dp-predict: no model is released; each
*answer* is ε-differentially private with respect to the training data, and charged.

A predictor here holds a budget ``total_epsilon``. Every call to ``predict`` answers each
row at ``epsilon`` (the per-query ε) and costs ``q·epsilon`` for q rows, by basic
composition; a call the budget cannot pay for is refused whole (``BudgetExceededError``)
before anything is computed. ``remaining_`` is the ε left. Neighbouring datasets differ in
one example (replaced).

- ``SubsampleAndAggregate``: k non-private linear models on disjoint random parts; a
  query's answer aggregates their votes privately (soft majority: the exponential
  mechanism over the counts; or Laplace averaging of the vote fraction).
- ``ExponentialWalk``: points on a line with two labels; answers from the exponential
  projected walk (1-Lipschitz per step).
- ``StableRegression``: real values from a non-private λ-regularized Huber regression,
  each prediction released with Laplace noise calibrated to its replace-one sensitivity.
- ``SubsampleAndAggregateRegressor``: real values from k non-private regressors on
  disjoint random parts, aggregated per query by a private median or a clipped mean.

The regressors take the target's public bounds (``bounds``) and the rows' public
norm bound (``data_norm``); every answer lies within the bounds, in the target's units.

With ``slot`` (seconds) answers are served by dp-predict's ``ServingInterface``: the
Laplace noise is drawn ahead and every call returns a whole number of slots after it
began, so the time of an answer does not reveal its noise. Without it, the answer is
covered, not its timing. A predictor cannot be pickled or copied: a copy would be a
second budget over the same data.
"""

import numbers

import numpy as np

from . import _dpml, _validation, testing
from ._base import NEIGHBOURS, _choice, _number
from ._errors import DPMLError, DPMLMemoryError, DPMLTypeError, DPMLValueError, NotFittedError
from ._active import LedgerMarked, resolve_ledger
from ._randomness import resolve_seed
from .regression import _bounds, _targets

try:
    from sklearn.base import BaseEstimator
except ImportError as _e:  # pragma: no cover - scikit-learn is an optional extra
    raise ImportError("dpml.predict uses scikit-learn's BaseEstimator: pip install 'dp-ml[sklearn]'") from _e

_MAX_EPSILON = _dpml.MAX_EPSILON


def _epsilon(name, value):
    value = _number(name, value)
    if value > _MAX_EPSILON:
        raise DPMLValueError(f"{name}={value!r} must be at most {_MAX_EPSILON}")
    return value


def _slot(slot):
    if slot is None:
        return None
    slot = _number("slot", slot)
    if slot > 60:
        raise DPMLValueError(f"slot={slot!r} seconds must be at most 60")
    return slot


class _PrivatePredictor(LedgerMarked, BaseEstimator):
    """What both predictors share: the budget, the ledger charge, the answers."""

    def _charge_and_build(self, ledger, build):
        """Charges ``ledger`` (``resolve_ledger``'s, from the top of ``fit``) the whole
        budget (what the training data may lose through this predictor), then builds; a
        refusal before any noise refunds it."""
        record = None
        if ledger is not None:
            record = ledger.charge(
                self._total, 0.0, what=type(self).__name__, mechanism="private prediction"
            )
        try:
            self._predictor = build()
        except (DPMLValueError, DPMLMemoryError):
            if record is not None:
                ledger.refund(record)
            raise

    def _checked(self):
        per_query = _epsilon("epsilon", self.epsilon)
        total = _epsilon("total_epsilon", self.total_epsilon)
        if per_query > total:
            raise DPMLValueError(
                f"epsilon={per_query!r} per query is above total_epsilon={total!r}: not "
                "one answer would fit"
            )
        self._total = total
        return per_query, total, _slot(self.slot), resolve_seed(
            self.random_state, testing.allow_int_seed()
        )

    def _fitted(self):
        predictor = getattr(self, "_predictor", None)
        if predictor is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )
        return predictor

    def _answers(self, X):
        predictor = self._fitted()
        _, call = _validation.rows(self, X, reset=False)
        return predictor.answer(**call)

    def predict(self, X):
        """One ε-DP label per row of ``X``, charged ``len(X)·epsilon`` before any work (the
        whole call is refused if the budget cannot pay)."""
        positive, _ = self._answers(X)
        return self.classes_[positive.astype(np.intp)]

    @property
    def remaining_(self):
        """The ε the predictor may still spend."""
        return self._fitted().status()["remaining"]

    @property
    def spent_(self):
        """The ε spent by the answers so far."""
        return self._fitted().status()["spent"]

    @property
    def queries_left_(self):
        """How many more single answers the budget allows."""
        return self._fitted().status()["queries_left"]

    def _report(self, mechanism, seed, **extra):
        status = self._fitted().status()
        report = {
            "epsilon_per_query": status["epsilon_per_query"],
            "total_epsilon": status["limit"],
            "delta": 0.0,
            "mechanism": mechanism,
            "composition": "basic: q answers cost q x epsilon_per_query, refused beyond "
            "total_epsilon",
            "serving_slot": self.slot,
            "timing": "covered (fixed slots, noise drawn ahead)"
            if self.slot is not None
            else "not covered: pass slot= to serve people who can time the answers",
            "private": seed is None,
            "seeded": seed is not None,
            "neighbouring": NEIGHBOURS,
            "library_version": _dpml.__version__,
            **extra,
        }
        if seed is not None:
            report["warning"] = (
                "built with dpml.InsecureSeed: the noise is predictable and the answers are "
                "NOT private"
            )
        return report

    def __getstate__(self):
        if getattr(self, "_predictor", None) is not None:
            raise DPMLError(
                f"a fitted {type(self).__name__} cannot be pickled or copied: the copy would "
                "be a second budget over the same training data"
            )
        return super().__getstate__()


class SubsampleAndAggregate(_PrivatePredictor):
    """Private prediction by subsample-and-aggregate (Dwork & Feldman 2018, §4;
    dp-predict's ``SoftMajorityEnsemble`` / ``LaplaceAverageEnsemble``).

    ``fit`` shuffles the rows (fresh randomness) into ``n_parts`` disjoint parts and trains
    a non-private L2-regularized linear model on each. Replacing one example changes one
    part, so one vote: each answer is ε-DP (soft majority: the exponential mechanism
    ``∝ exp(ε·count/2)`` over the two vote counts; Laplace averaging: the snapping Laplace
    mechanism on the vote fraction, sensitivity 1/k · k = 1 on the sum).

    Parameters
    ----------
    epsilon : float, default=0.1
        ε of each answer.
    total_epsilon : float, default=1.0
        The budget: answers stop at ``total_epsilon / epsilon`` queries.
    n_parts : int, required
        k, the number of parts (Dwork-Feldman suggest ``⌈(4/ε) ln(2/α)⌉`` for error α).
    aggregation : {"soft-majority", "laplace"}, default="soft-majority"
    vote : {"hard", "sigmoid"}, default="hard"
        With ``aggregation="laplace"``: each model votes 0/1, or its logistic probability.
    loss : {"logistic", "huber"}, default="logistic"
    huber_width : float, default=1.0
    C : float, default=1.0
        Each part's model minimizes ``C·Σ loss + ½‖w‖²`` (Λ = 1/(C·⌊n/k⌋)).
    data_norm, clip_rows, classes, fit_intercept, intercept_scaling
        As for ``dpml.LogisticRegression`` (public facts, never read from the data).
    slot : float or None, default=None
        Serve at fixed slots of this many seconds (dp-predict's ``ServingInterface``).
    random_state : None or dpml.InsecureSeed
    """

    def __init__(
        self,
        epsilon=0.1,
        total_epsilon=1.0,
        *,
        n_parts=None,
        aggregation="soft-majority",
        vote="hard",
        loss="logistic",
        huber_width=1.0,
        C=1.0,
        data_norm=None,
        clip_rows=False,
        classes=None,
        fit_intercept=True,
        intercept_scaling=1.0,
        slot=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.total_epsilon = total_epsilon
        self.n_parts = n_parts
        self.aggregation = aggregation
        self.vote = vote
        self.loss = loss
        self.huber_width = huber_width
        self.C = C
        self.data_norm = data_norm
        self.clip_rows = clip_rows
        self.classes = classes
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.slot = slot
        self.random_state = random_state

    def fit(self, X, y, ledger=None, **params):
        """Trains the ensemble and opens the budget, charging ``ledger`` (or the active
        one) ``total_epsilon`` before any work. Returns ``self``.
        ``sample_weight`` must be None (a private fit takes no per-row weights)."""
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        per_query, total, slot, seed = self._checked()
        k = self.n_parts
        if k is None:
            raise DPMLValueError(
                "n_parts is required: the number k of disjoint parts (Dwork-Feldman suggest "
                "ceil((4/epsilon)·ln(2/alpha)) for a target error alpha)"
            )
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise DPMLValueError(f"n_parts={k!r} must be a positive integer")
        aggregation = _choice("aggregation", self.aggregation, ("soft-majority", "laplace"))
        vote = _choice("vote", self.vote, ("hard", "sigmoid"))
        if aggregation == "soft-majority" and vote != "hard":
            raise DPMLValueError("vote applies to aggregation='laplace' only")
        loss = _choice("loss", self.loss, ("logistic", "huber"))
        width = _number("huber_width", self.huber_width)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise DPMLTypeError(f"fit_intercept={self.fit_intercept!r} must be True or False")
        if not isinstance(self.clip_rows, (bool, np.bool_)):
            raise DPMLTypeError(f"clip_rows={self.clip_rows!r} must be True or False")
        if self.data_norm is None:
            raise DPMLValueError(
                "data_norm is required: pass a public bound B on the Euclidean norm of every "
                "row of X, known without looking at the data"
            )
        data_norm = _number("data_norm", self.data_norm)
        intercept = (
            _number("intercept_scaling", self.intercept_scaling) if self.fit_intercept else None
        )
        C = _number("C", self.C)
        shape, call = _validation.rows(self, X, reset=True)
        y = _validation.labels(y, shape[0])
        classes = _validation.public_classes(self.classes, y, False)
        if len(classes) != 2:
            raise DPMLValueError(
                f"classes has {len(classes)} labels; subsample-and-aggregate answers one of two"
            )
        indices = _validation.class_indices(y, classes)
        if k > shape[0]:
            raise DPMLValueError(f"n_parts={k} is above the number of rows, {shape[0]}")
        regularization = 1.0 / (C * (shape[0] // k))
        self._charge_and_build(
            ledger,
            lambda: _dpml.Predictor.ensemble(
                y=indices,
                n_parts=int(k),
                loss_name=loss,
                huber_width=width,
                regularization=regularization,
                aggregation="soft-majority" if aggregation == "soft-majority" else f"laplace-{vote}",
                epsilon_per_query=per_query,
                total_epsilon=total,
                slot_seconds=slot,
                data_norm=data_norm,
                clip_rows=bool(self.clip_rows),
                intercept=intercept,
                seed=seed,
                **call,
            ),
        )
        self.classes_ = classes
        self.privacy_ = self._report(
            f"subsample-and-aggregate ({aggregation}"
            + (f", {vote} votes)" if aggregation == "laplace" else ")"),
            seed,
            parts=int(k),
            regularization=regularization,
            data_norm=data_norm,
        )
        return self

    def predict_proba(self, X):
        """Laplace averaging only: the released noisy fraction q of votes for
        ``classes_[1]``, as ``[1 − q, q]`` per row; charged like ``predict`` (each call is a
        new release: its labels are not those of an earlier ``predict``)."""
        if self.aggregation != "laplace":
            raise DPMLValueError(
                "predict_proba needs aggregation='laplace' (the soft majority releases a "
                "label, not a probability)"
            )
        _, q = self._answers(X)
        return np.column_stack([1.0 - q, q])


class ExponentialWalk(_PrivatePredictor):
    """Private prediction on a line by the exponential projected walk (dp-predict's
    ``ExponentialWalk``; docs/src/reference/algorithms.md §7.5): labels of points on a line
    (thresholds, unions of intervals), each answer ε-DP.

    Parameters
    ----------
    epsilon : float, default=0.1
        ε of each answer.
    total_epsilon : float, default=1.0
        The budget.
    alpha : float, default=0.05
        Every answer is ``classes[1]`` with probability in [α, 1 − α]; in (0, 1/2).
    classes : two labels, required
    slot : float or None, default=None
        Serve at fixed slots of this many seconds.
    random_state : None or dpml.InsecureSeed
    """

    def __init__(
        self,
        epsilon=0.1,
        total_epsilon=1.0,
        *,
        alpha=0.05,
        classes=None,
        slot=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.total_epsilon = total_epsilon
        self.alpha = alpha
        self.classes = classes
        self.slot = slot
        self.random_state = random_state

    @staticmethod
    def _points(X):
        array = np.asarray(X)
        if array.ndim == 2 and array.shape[1] == 1:
            array = array[:, 0]
        if array.ndim != 1:
            raise DPMLValueError(
                f"X must be points on a line: shape (n,) or (n, 1); got shape {array.shape}"
            )
        try:
            return np.ascontiguousarray(array, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise DPMLTypeError(f"X must hold numbers ({e})") from e

    def fit(self, X, y, ledger=None, **params):
        """Builds the walk and opens the budget, charging ``ledger`` (or the active one)
        ``total_epsilon`` before any work. Returns ``self``.
        ``sample_weight`` must be None (a private fit takes no per-row weights)."""
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        per_query, total, slot, seed = self._checked()
        alpha = _number("alpha", self.alpha)
        if not alpha < 0.5:
            raise DPMLValueError(f"alpha={alpha!r} must be in (0, 1/2)")
        points = self._points(X)
        y = _validation.labels(y, len(points))
        classes = _validation.public_classes(self.classes, y, False)
        if len(classes) != 2:
            raise DPMLValueError(f"classes has {len(classes)} labels; the walk answers one of two")
        positive = (_validation.class_indices(y, classes) == 1).tolist()
        self._charge_and_build(
            ledger,
            lambda: _dpml.Predictor.walk(
                points,
                positive,
                epsilon_per_query=per_query,
                alpha=alpha,
                total_epsilon=total,
                slot_seconds=slot,
                seed=seed,
            ),
        )
        self.classes_ = classes
        self.n_features_in_ = 1
        self.privacy_ = self._report("exponential projected walk", seed, alpha=alpha)
        return self

    def _answers(self, X):
        predictor = self._fitted()
        points = self._points(X)
        if len(points) == 0:
            raise DPMLValueError("X holds no point")
        return predictor.answer(x=np.ascontiguousarray(points.reshape(-1, 1)))


_REGRESSOR_PARAMETERS = """
    bounds : (float, float), required
        The public range of the target, known without looking at the data. Targets are
        scaled into [−1, 1] by it; every answer lies within it.
    data_norm : float, required
        A public bound B on the Euclidean norm of every row (rows are divided by B; a row
        above B is refused, naming it, unless ``clip_rows=True``).
    huber_threshold : float, default=1.0
        The Huber threshold h on the scaled target (its range is 2 wide): the loss is
        ``r²/(2h)`` for residuals ``|r| ≤ h`` and ``|r| − h/2`` beyond, 1-Lipschitz for
        every h (h = 2 is the squared loss ``r²/4`` on every residual between a target and
        a prediction both within the bounds).
    clip_rows, clip_targets : bool, default=False
        Clip rows above ``data_norm`` / targets outside ``bounds`` (per row, no
        privacy cost) instead of refusing them.
    fit_intercept, intercept_scaling
        As for ``dpml.LinearRegression`` (the intercept is a regularized constant feature).
    slot : float or None, default=None
        Serve at fixed slots of this many seconds (dp-predict's ``ServingInterface``).
    random_state : None or dpml.InsecureSeed
    """


class _PrivateRegressor(_PrivatePredictor):
    """What the regression predictors share: bounded targets, real-valued answers."""

    def _fit_regression(self, X, y, ledger, params, *, method, n_parts, regularization):
        """``ledger`` is resolved by ``fit`` (``resolve_ledger``), before anything else."""
        _validation.fit_params(self, params)
        per_query, total, slot, seed = self._checked()
        bounds = _bounds(self.bounds, None)
        threshold = _number("huber_threshold", self.huber_threshold)
        for name in ("fit_intercept", "clip_rows", "clip_targets"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise DPMLTypeError(f"{name}={getattr(self, name)!r} must be True or False")
        if self.data_norm is None:
            raise DPMLValueError(
                "data_norm is required: pass a public bound B on the Euclidean norm of every "
                "row of X, known without looking at the data"
            )
        data_norm = _number("data_norm", self.data_norm)
        intercept = (
            _number("intercept_scaling", self.intercept_scaling) if self.fit_intercept else None
        )
        if regularization is not None:
            regularization = _number("regularization", regularization)
        shape, call = _validation.rows(self, X, reset=True)
        y = _targets(y, shape[0])
        if n_parts is not None and n_parts > shape[0]:
            raise DPMLValueError(f"n_parts={n_parts} is above the number of rows, {shape[0]}")
        self._charge_and_build(
            ledger,
            lambda: _dpml.Predictor.regression(
                y=y,
                method=method,
                n_parts=n_parts,
                regularization=regularization,
                huber_threshold=threshold,
                target_lower=bounds[0],
                target_upper=bounds[1],
                clip_targets=bool(self.clip_targets),
                epsilon_per_query=per_query,
                total_epsilon=total,
                slot_seconds=slot,
                data_norm=data_norm,
                clip_rows=bool(self.clip_rows),
                intercept=intercept,
                seed=seed,
                **call,
            ),
        )
        return seed, bounds, data_norm

    def predict(self, X):
        """One ε-DP real value per row of ``X``, in the target's units and within
        ``bounds``, charged ``len(X)·epsilon`` before any work (the whole call is
        refused if the budget cannot pay)."""
        predictor = self._fitted()
        _, call = _validation.rows(self, X, reset=False)
        return predictor.answer_values(**call)


class StableRegression(_PrivateRegressor):
    __doc__ = (
        """Private prediction of real values by stable regularized ERM (Dwork & Feldman
    2018, §4; dp-predict's ``StableRegression``; docs/src/reference/algorithms.md §7.7).

    ``fit`` trains a λ-regularized Huber regression without noise on the scaled data. Each
    answer is ``⟨w, x⟩`` plus Laplace noise of scale Δ/ε, clamped to [−1, 1] and mapped to
    the target's units: the loss is 1-Lipschitz and the objective λ-strongly convex, so
    replacing one example moves ``⟨w, x⟩`` by at most ``Δ = 2/(λn)`` (plus the solver's
    certified tolerance) for ``‖x‖ ≤ 1``, and each answer is ε-DP.

    Parameters
    ----------
    epsilon : float, default=0.1
        ε of each answer.
    total_epsilon : float, default=1.0
        The budget: answers stop at ``total_epsilon / epsilon`` queries.
    regularization : float or None, default=None
        λ. None: ``2·√((1 + 1/ε)/n)``, the λ that balances the regularization's bias
        against the noise for a comparator of norm 1 on the scaled problem."""
        + _REGRESSOR_PARAMETERS
    )

    def __init__(
        self,
        epsilon=0.1,
        total_epsilon=1.0,
        *,
        regularization=None,
        bounds=None,
        data_norm=None,
        huber_threshold=1.0,
        clip_rows=False,
        clip_targets=False,
        fit_intercept=True,
        intercept_scaling=1.0,
        slot=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.total_epsilon = total_epsilon
        self.regularization = regularization
        self.bounds = bounds
        self.data_norm = data_norm
        self.huber_threshold = huber_threshold
        self.clip_rows = clip_rows
        self.clip_targets = clip_targets
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.slot = slot
        self.random_state = random_state

    def fit(self, X, y, ledger=None, **params):
        """Trains the regressor and opens the budget, charging ``ledger`` (or the active
        one) ``total_epsilon`` before any work. Returns ``self``.
        ``sample_weight`` must be None (a private fit takes no per-row weights)."""
        ledger = resolve_ledger(ledger, self)
        seed, bounds, data_norm = self._fit_regression(
            X, y, ledger, params, method="stable", n_parts=None,
            regularization=self.regularization,
        )
        self.privacy_ = self._report(
            "stable regularized ERM (Huber regression) + Laplace",
            seed,
            bounds=bounds,
            data_norm=data_norm,
        )
        return self


class SubsampleAndAggregateRegressor(_PrivateRegressor):
    __doc__ = (
        """Private prediction of real values by subsample-and-aggregate (Dwork & Feldman
    2018; dp-predict's ``RegressionMedianEnsemble`` / ``RegressionMeanEnsemble``;
    docs/src/reference/algorithms.md §7.8).

    ``fit`` shuffles the rows (fresh randomness) into ``n_parts`` disjoint parts and trains
    a non-private Huber regression on each. A query's k predictions, each clamped to
    ``bounds``, are aggregated privately: ``"median"``, the exponential mechanism
    over 1025 equally spaced candidates spanning the bounds; ``"mean"``, their mean plus
    Laplace noise of scale ``(upper − lower)/(k·ε)``. Replacing one example changes one
    part, so one prediction: each answer is ε-DP.

    Parameters
    ----------
    epsilon : float, default=0.1
        ε of each answer.
    total_epsilon : float, default=1.0
        The budget.
    n_parts : int, required
        k, the number of parts.
    aggregation : {"median", "mean"}, default="median"
    regularization : float or None, default=None
        λ of each part's regressor. None: ``1/⌊n/k⌋``."""
        + _REGRESSOR_PARAMETERS
    )

    def __init__(
        self,
        epsilon=0.1,
        total_epsilon=1.0,
        *,
        n_parts=None,
        aggregation="median",
        regularization=None,
        bounds=None,
        data_norm=None,
        huber_threshold=1.0,
        clip_rows=False,
        clip_targets=False,
        fit_intercept=True,
        intercept_scaling=1.0,
        slot=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.total_epsilon = total_epsilon
        self.n_parts = n_parts
        self.aggregation = aggregation
        self.regularization = regularization
        self.bounds = bounds
        self.data_norm = data_norm
        self.huber_threshold = huber_threshold
        self.clip_rows = clip_rows
        self.clip_targets = clip_targets
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.slot = slot
        self.random_state = random_state

    def fit(self, X, y, ledger=None, **params):
        """Trains the parts' regressors and opens the budget, charging ``ledger`` (or the
        active one) ``total_epsilon`` before any work. Returns ``self``.
        ``sample_weight`` must be None (a private fit takes no per-row weights)."""
        ledger = resolve_ledger(ledger, self)
        k = self.n_parts
        if k is None:
            raise DPMLValueError("n_parts is required: the number k of disjoint parts")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise DPMLValueError(f"n_parts={k!r} must be a positive integer")
        aggregation = _choice("aggregation", self.aggregation, ("median", "mean"))
        seed, bounds, data_norm = self._fit_regression(
            X, y, ledger, params, method=aggregation, n_parts=int(k),
            regularization=self.regularization,
        )
        self.privacy_ = self._report(
            f"subsample-and-aggregate regression ({aggregation})",
            seed,
            parts=int(k),
            bounds=bounds,
            data_norm=data_norm,
        )
        return self


__all__ = [
    "ExponentialWalk",
    "StableRegression",
    "SubsampleAndAggregate",
    "SubsampleAndAggregateRegressor",
]
