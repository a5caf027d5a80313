"""``PrivateRegressionSearch``: private selection of a regressor's Λ (dp-fit's regression
tuner: dp-tune's split-and-select or random stopping over Huber regressors, the held-out
score the squared error of predictions clamped to the public target bounds; see dp-tune's
``RegressionSplitAndSelect`` and ``RegressionRandomStopping`` for the derivation of its
sensitivity)."""

import math

from . import _dpml, _validation, regression, testing
from ._active import LedgerMarked, resolve_ledger
from ._base import NEIGHBOURS, _choice, _number, require_data_norm
from ._errors import (
    BudgetExceededError,
    DPMLMemoryError,
    DPMLTypeError,
    DPMLValueError,
    NotFittedError,
)
from ._randomness import resolve_seed

from sklearn.base import BaseEstimator, RegressorMixin, clone


class PrivateRegressionSearch(RegressorMixin, LedgerMarked, BaseEstimator):
    """Private selection of Λ for ``dpml.LinearRegression`` / ``dpml.HuberRegressor``
    (pure ε, objective perturbation). Every candidate is scored on held-out rows by
    ``Σ ((clip(ŷ) − y)/(upper − lower))²``: each row's term is in [0, 1], so the score
    moves by at most 1 when one row is replaced. The search is private end to end
    (replace-one, n public), charged once to the ledger before anything is drawn; a
    refusal charges nothing.

    Parameters
    ----------
    estimator : dpml.LinearRegression or dpml.HuberRegressor
        Its parameters (``bounds``, ``data_norm``...) are every candidate's; its
        ``epsilon`` is the total ε of the whole search. Its ``delta`` must be 0.
    regularizations : list of float
        The Λ values to choose among (public, fixed before the data).
    method : {"split", "random-stopping"}, default="split"
        ``"split"``: split-and-select. The rows are shuffled and cut into m + 1 parts;
        candidate i trains at ε on part i, and the exponential mechanism at ε (sensitivity
        1) picks one by its held-out score. The search is **ε-DP**.
        ``"random-stopping"`` (Liu-Talwar 2019): ``holdout_fraction`` of the rows are held
        out; runs draw a candidate at random, train it on the other rows at the step b and
        score it with discrete Laplace noise (scale 1/b in score units); after each run
        the search stops with probability ``stop_probability``; the best run is released.
        It is **(3b, δ)-DP**, b the largest step whose 3b (rounded up) is at most
        ``epsilon``, ``δ = (1 + e^{3b})(1 − γ)^T`` from the cap T on runs (at most 1e-6):
        a ``dpml.Ledger`` with ``delta=0`` refuses it. The number of runs and the time
        taken are not covered.
    stop_probability : float or None, default=None
        γ for random stopping, in [1e-4, 1]; None: 1/m (m runs expected).
    holdout_fraction : float, default=0.1
        The held-out share for random stopping, in (0, 1).
    random_state : None or dpml.InsecureSeed

    Attributes
    ----------
    best_estimator_, best_index_, best_params_ : the chosen regressor (trained on its
        part: n/(m+1) rows with split, the non-held-out rows with random stopping), its
        position and its Λ.
    privacy_ : the guarantee of the whole search: ``epsilon``, ``delta``, ``method``,
        ``step_epsilon``, ``candidates``, rows per candidate and held out, and (random
        stopping) ``stop_probability``, ``holdout_fraction``, ``max_runs``,
        ``score_epsilon``, ``noisy_score``; the neighbouring relation.
    """

    def __init__(
        self,
        estimator,
        regularizations,
        *,
        method="split",
        stop_probability=None,
        holdout_fraction=0.1,
        random_state=None,
    ):
        self.estimator = estimator
        self.regularizations = regularizations
        self.method = method
        self.stop_probability = stop_probability
        self.holdout_fraction = holdout_fraction
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
        method = _choice("method", self.method, ("split", "random-stopping"))
        gamma = self.stop_probability
        gamma = 1.0 / len(grid) if gamma is None else _number("stop_probability", gamma)
        if not 1e-4 <= gamma <= 1.0:
            raise DPMLValueError(f"stop_probability={gamma!r} must be in [1e-4, 1]")
        holdout = _number("holdout_fraction", self.holdout_fraction)
        if not holdout < 1.0:
            raise DPMLValueError(f"holdout_fraction={holdout!r} must be in (0, 1)")
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
            if ledger is None:
                return
            if facts["delta"] > 0 and ledger.delta == 0:
                raise BudgetExceededError(
                    f"method={method!r} is (epsilon={facts['epsilon']!r}, "
                    f"delta={facts['delta']!r})-DP, not pure epsilon-DP (its cap on runs "
                    "adds a delta): a Ledger with delta=0 cannot pay for it. Use "
                    f"dpml.Ledger(epsilon, delta=...) with delta >= {facts['delta']!r}, or "
                    "method='split'; nothing was trained"
                )
            record = ledger.charge(
                facts["epsilon"],
                facts["delta"],
                what="PrivateRegressionSearch",
                mechanism=method,
            )

        try:
            file, index, facts, noisy = _dpml.private_regression_search(
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
                method_name=method,
                stop_probability=gamma,
                holdout_fraction=holdout,
                seed=seed,
                charge=charge,
                **call,
            )
        except (DPMLValueError, DPMLMemoryError):
            # Refused before any noise was drawn on the data: nothing was spent.
            if record is not None:
                ledger.refund(record)
            raise
        best = clone(estimator).set_params(
            regularization=grid[index], epsilon=facts["step_epsilon"]
        )
        best._model = _dpml.Regressor.from_bytes(bytes(file))
        best.n_features_in_ = shape[1]
        self.privacy_ = self._privacy_report(facts, method, grid, gamma, holdout, seed, noisy)
        best.privacy_ = dict(self.privacy_, selected_by="PrivateRegressionSearch")
        self.best_estimator_ = best
        self.best_index_ = index
        self.best_params_ = {"regularization": grid[index]}
        return self

    def _privacy_report(self, facts, method, grid, gamma, holdout, seed, noisy):
        report = {
            "epsilon": facts["epsilon"],
            "delta": facts["delta"],
            "private": seed is None,
            "seeded": seed is not None,
            "method": method,
            "candidates": len(grid),
            "step_epsilon": facts["step_epsilon"],
            "training_rows": facts["training_rows"],
            "held_out_rows": facts["held_out_rows"],
            "regularization": facts["regularization"],
            "regularizations": grid,
            "score": "held-out sum of ((clip(prediction) - y)/(upper - lower))^2, each row's "
            "term in [0, 1]: sensitivity 1",
            "neighbouring": NEIGHBOURS.replace("its label", "its target"),
            "library_version": _dpml.__version__,
        }
        if method == "split":
            report["guarantee"] = (
                "split-and-select over regressors (dp-tune's RegressionSplitAndSelect): "
                "max(candidate epsilon, selection epsilon) = epsilon; the released (index, "
                "model) pair is epsilon-DP"
            )
        else:
            report.update(
                stop_probability=gamma,
                holdout_fraction=holdout,
                max_runs=facts["max_runs"],
                score_epsilon=facts["score_epsilon"],
                noisy_score=noisy,
                guarantee=(
                    "random stopping over regressors (Liu-Talwar 2019; dp-tune's "
                    "RegressionRandomStopping): 3 x step_epsilon (rounded up), plus delta = "
                    "(1 + e^epsilon)(1 - stop_probability)^max_runs from the cap; the number "
                    "of runs and the time taken are not covered"
                ),
            )
        if seed is not None:
            report["warning"] = (
                "searched with dpml.InsecureSeed: the noise is predictable and the result "
                "is NOT private"
            )
        return report

    def predict(self, X):
        """The chosen regressor's predictions (within the public bounds)."""
        if getattr(self, "best_estimator_", None) is None:
            raise NotFittedError("This PrivateRegressionSearch instance is not fitted yet.")
        return self.best_estimator_.predict(X)
