"""``PrivateRegressionSearch``: private selection of a regressor's Λ (dp-tune's
split-and-select over Huber regressors, the held-out score the squared error of
predictions clamped to the public target bounds; see dp-tune's
``RegressionSplitAndSelect`` for the derivation of its sensitivity)."""

import math

from . import _dpml, _validation, regression, testing
from ._active import LedgerMarked, resolve_ledger
from ._base import NEIGHBOURS, _number, require_data_norm
from ._errors import DPMLMemoryError, DPMLTypeError, DPMLValueError, NotFittedError
from ._randomness import resolve_seed

from sklearn.base import BaseEstimator, RegressorMixin, clone


class PrivateRegressionSearch(RegressorMixin, LedgerMarked, BaseEstimator):
    """Private selection of Λ for ``dpml.LinearRegression`` / ``dpml.HuberRegressor``
    (pure ε, objective perturbation): split-and-select, the data shuffled with fresh
    randomness and cut into one part per Λ plus a held-out part; each candidate trains at
    ε on its part, and the exponential mechanism (ε, sensitivity 1) picks one by its
    held-out score ``Σ ((clip(ŷ) − y)/(upper − lower))²``, each row's term in [0, 1]. The
    search is ε-DP end to end (replace-one, n public), charged once to the ledger before
    anything is drawn. Random stopping is not built for regressors.

    Parameters
    ----------
    estimator : dpml.LinearRegression or dpml.HuberRegressor
        Its parameters (``epsilon``, ``bounds``, ``data_norm``...) are every candidate's.
    regularizations : list of float
        The Λ values to choose among (public, fixed before the data).
    random_state : None or dpml.InsecureSeed
    """

    def __init__(self, estimator, regularizations, *, random_state=None):
        self.estimator = estimator
        self.regularizations = regularizations
        self.random_state = random_state

    def fit(self, X, y, ledger=None, **params):
        """Runs the search on ``X``, ``y``, charging ``ledger`` (or the active one) ε once,
        after every refusal and before any noise. Returns ``self``."""
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        estimator = self.estimator
        if not isinstance(estimator, regression.HuberRegressor) or isinstance(
            estimator, regression.Ridge
        ):
            raise DPMLTypeError(
                "estimator must be a dpml.LinearRegression or dpml.HuberRegressor (Ridge "
                "fixes its Λ by alpha)"
            )
        grid = [_number("regularizations", v) for v in list(self.regularizations)]
        if not grid:
            raise DPMLValueError("regularizations must hold at least one value")
        epsilon = _number("epsilon", estimator.epsilon)
        if not math.isfinite(epsilon):
            raise DPMLValueError("a private search needs a finite epsilon")
        if estimator.delta != 0 or estimator.mechanism != "objective":
            raise DPMLValueError(
                "PrivateRegressionSearch selects among pure-epsilon objective-perturbation "
                "regressors: pass delta=0 and mechanism='objective'"
            )
        seed = resolve_seed(self.random_state, testing.allow_int_seed())
        shape, call = _validation.rows(self, X, reset=True)
        y = regression._targets(y, shape[0])
        bounds = regression._bounds(estimator.bounds, y)
        record = None

        def charge(facts):
            nonlocal record
            if ledger is not None:
                record = ledger.charge(
                    facts["epsilon"], 0.0, what="PrivateRegressionSearch", mechanism="split"
                )

        try:
            file, index, facts = _dpml.private_regression_search(
                y=y,
                regularizations=grid,
                huber_threshold=estimator._scaled_threshold(estimator._threshold(bounds), bounds),
                target_lower=bounds[0],
                target_upper=bounds[1],
                clip_targets=bool(estimator.clip_targets),
                epsilon=epsilon,
                calibration=estimator.calibration,
                tol=None if estimator.tol is None else _number("tol", estimator.tol),
                data_norm=require_data_norm(estimator.data_norm, call),
                clip_rows=bool(estimator.clip_rows),
                intercept=_number("intercept_scaling", estimator.intercept_scaling)
                if estimator.fit_intercept
                else None,
                seed=seed,
                charge=charge,
                **call,
            )
        except (DPMLValueError, DPMLMemoryError):
            # Refused before any noise was drawn on the data: nothing was spent.
            if record is not None:
                ledger.refund(record)
            raise
        best = clone(estimator).set_params(regularization=grid[index])
        best._model = _dpml.Regressor.from_bytes(bytes(file))
        best.n_features_in_ = shape[1]
        self.privacy_ = {
            "epsilon": facts["epsilon"],
            "delta": 0.0,
            "method": "split-and-select over regressors (dp-tune's RegressionSplitAndSelect)",
            "score": "held-out sum of ((clip(prediction) - y)/(upper - lower))^2, each row's "
            "term in [0, 1]: sensitivity 1",
            "training_rows": facts["training_rows"],
            "held_out_rows": facts["held_out_rows"],
            "regularizations": grid,
            "seeded": seed is not None,
            "neighbouring": NEIGHBOURS.replace("its label", "its target"),
        }
        best.privacy_ = dict(self.privacy_, selected_by="PrivateRegressionSearch")
        self.best_estimator_ = best
        self.best_index_ = index
        self.best_params_ = {"regularization": grid[index]}
        return self

    def predict(self, X):
        """The chosen regressor's predictions (within the public bounds)."""
        if getattr(self, "best_estimator_", None) is None:
            raise NotFittedError("This PrivateRegressionSearch instance is not fitted yet.")
        return self.best_estimator_.predict(X)
