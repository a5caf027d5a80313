"""Private hyperparameter selection: the whole search is differentially private.

Choosing Λ (or the loss, the mechanism, the kernel width...) by comparing models on the
private data leaks, however private each model is; scikit-learn's ``GridSearchCV`` over
private estimators is private only at the sum of every fit's ε, and the choice itself is
not covered. ``PrivateSearch`` hands the grid to dp-tune, whose selections are private end
to end: Rust trains, scores and selects, so the guarantee is dp-tune's.
"""

import math

from . import _dpml, _validation, testing
from ._base import NEIGHBOURS, PrivateClassifier, _choice, _number
from ._errors import (
    BudgetExceededError,
    DPMLMemoryError,
    DPMLTypeError,
    DPMLValueError,
    NotFittedError,
)
from ._active import LedgerMarked, resolve_ledger
from ._randomness import resolve_seed

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, clone
except ImportError as _e:  # pragma: no cover - scikit-learn is an optional extra
    raise ImportError(
        "dpml.model_selection uses scikit-learn's BaseEstimator: pip install 'dp-ml[sklearn]'"
    ) from _e

# Parameters the search sets itself, or that must be the same for every candidate.
_SEARCH_OWNS = {
    "epsilon": "the search's epsilon sets every candidate's",
    "random_state": "pass random_state to PrivateSearch: one generator serves the whole search",
    "classes": "classes are a public fact of the task, the same for every candidate",
}
# The linear estimators' row transform: the rows are scaled once, before the split.
_SAME_ROWS = ("data_norm", "clip_rows", "fit_intercept", "intercept_scaling")
_MAX_EPSILON = _dpml.MAX_EPSILON


def _grid(param_grid, estimator):
    """The candidates as a list of parameter dicts (scikit-learn's ParameterGrid order:
    each dict's keys sorted, the last key varying fastest), or a DPMLValueError naming
    what is wrong."""
    if isinstance(param_grid, dict):
        grids = [param_grid]
    elif isinstance(param_grid, (list, tuple)) and param_grid:
        grids = list(param_grid)
    else:
        raise DPMLTypeError(
            "param_grid must be a dict of parameter name -> list of values, or a non-empty "
            f"list of such dicts; got {param_grid!r}"
        )
    known = estimator.get_params(deep=False)
    candidates = []
    for grid in grids:
        if not isinstance(grid, dict):
            raise DPMLTypeError(f"param_grid holds {grid!r}, which is not a dict")
        if not grid:
            raise DPMLValueError(
                "param_grid holds a dict with no parameter: name at least one parameter "
                "and its candidate values"
            )
        for name in sorted(grid):
            values = grid[name]
            if not isinstance(name, str) or name not in known:
                raise DPMLValueError(
                    f"param_grid names {name!r}, which is not a parameter of "
                    f"{type(estimator).__name__} (its parameters: {sorted(known)})"
                )
            if name in _SEARCH_OWNS:
                raise DPMLValueError(f"param_grid must not vary {name!r}: {_SEARCH_OWNS[name]}")
            if estimator._kind == "linear" and name in _SAME_ROWS:
                raise DPMLValueError(
                    f"param_grid must not vary {name!r}: the rows are scaled once for every "
                    "candidate; set it on the estimator"
                )
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise DPMLTypeError(
                    f"param_grid[{name!r}] must be a list of values; got {values!r}"
                )
            if len(values) == 0:
                raise DPMLValueError(f"param_grid[{name!r}] is empty: it gives no candidate")
        points = [{}]
        for name in sorted(grid):
            points = [{**p, name: v} for p in points for v in grid[name]]
        candidates += points
    if not candidates:
        raise DPMLValueError("param_grid describes no candidate")
    return candidates


class PrivateSearch(ClassifierMixin, LedgerMarked, BaseEstimator):
    """Differentially private selection among the candidates of ``param_grid``
    (dp-tune). The released best model, its index and parameters together are private.

    Parameters
    ----------
    estimator : dpml.LogisticRegression, dpml.HuberSVC or dpml.RandomFeaturesSVC
        The template: each candidate is ``clone(estimator).set_params(**point)``. Its
        ``classes`` (two of them: dp-tune compares binary models) are required; its
        ``epsilon`` is replaced by the search's, its ``random_state`` must be None. Its
        ``delta`` (linear models; the grid may vary it) is each candidate's own: with
        ``delta > 0`` the candidates are the Gaussian (ε, δ) mechanisms, which
        ``method="split"`` accepts, and ``method="random-stopping"`` with
        ``mechanism="output"`` (Gaussian output perturbation has a Rényi curve; objective
        perturbation has none).
    param_grid : dict or list of dicts
        Parameter name -> list of values, as for scikit-learn's ``GridSearchCV``. It must
        not vary ``epsilon``, ``random_state``, ``classes`` or (linear models) the row
        scaling ``data_norm``, ``clip_rows``, ``fit_intercept``, ``intercept_scaling``.
    epsilon : float, default=1.0
        The total ε of the whole search, in (0, 1000].
    method : {"split", "random-stopping"}, default="split"
        ``"split"``: split-and-select (Chaudhuri-Monteleoni-Sarwate 2011, Algorithm 4).
        The rows are shuffled and cut into m + 1 parts; candidate i trains on part i at ε;
        the exponential mechanism at ε picks one by its mistakes on the last part. The
        search is **ε-DP** (max of the two, the same ε) — **(ε, δ)-DP** with δ the largest
        candidate ``delta`` when candidates have one (each row reaches one candidate's
        part, so nothing adds up).
        ``"random-stopping"`` (Liu-Talwar 2019): 10% of the rows are held out; runs draw a
        candidate at random, train it on the other 90% and score it with discrete Laplace
        noise; after each run the search stops with probability ``stop_probability``; the
        best run is released. Each run spends b and the search is **(3b, δ)-DP**, with b
        the largest step whose 3b (rounded up) is at most ``epsilon``, and
        ``δ = (1 + e^{3b})(1 − γ)^T`` from the cap T on runs (at most 1e-6). It is not
        pure ε-DP: a ``dpml.Ledger`` with ``delta=0`` refuses it. With (ε, δ) candidates
        (``delta > 0``, ``mechanism="output"``) the search is accounted by Rényi DP
        (Papernot-Steinke 2022, Theorem 2): it is **(ε, δ)-DP** with δ the largest
        candidate ``delta``, and every candidate trains at the largest step ε
        (``privacy_["step_epsilon"]``) whose accounting meets ``epsilon``; each score's ε
        is the largest whose cost stays under the candidates' at every Rényi order.
    stop_probability : float or None, default=None
        γ for random stopping, in [1e-4, 1]; None: 1/m (m runs expected).
    holdout_fraction : float, default=0.1
        The held-out share for random stopping, in (0, 1).
    random_state : None or dpml.InsecureSeed, default=None
        As for the estimators: None is private, ``InsecureSeed`` reproducible and NOT
        private.

    Attributes
    ----------
    best_estimator_ : the chosen candidate, fitted (it trained on its part of the rows:
        n/(m+1) rows with split, 90% with random stopping) — use it as any dpml estimator.
    best_params_, best_index_ : the chosen point of the grid and its position.
    privacy_ : the guarantee of the whole search: ``epsilon``, ``delta``, ``method``,
        ``step_epsilon``, ``candidates``, rows per candidate and held out, the cap, the
        neighbouring relation. The ledger is charged this once, before anything is drawn.
    classes_, n_features_in_, feature_names_in_.
    """

    def __init__(
        self,
        estimator,
        param_grid,
        epsilon=1.0,
        *,
        method="split",
        stop_probability=None,
        holdout_fraction=0.1,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.method = method
        self.stop_probability = stop_probability
        self.holdout_fraction = holdout_fraction
        self.random_state = random_state

    def _checked(self):
        if not isinstance(self.estimator, PrivateClassifier):
            raise DPMLTypeError(
                "estimator must be a dpml estimator (LogisticRegression, HuberSVC, "
                f"RandomFeaturesSVC); got {type(self.estimator).__name__}"
            )
        if getattr(self.estimator, "_searchable", True) is False:
            raise DPMLValueError(
                f"estimator={type(self.estimator).__name__}: PrivateSearch selects among "
                "dpml.LogisticRegression, dpml.HuberSVC and dpml.RandomFeaturesSVC "
                "candidates (with delta > 0, the Gaussian mechanisms); DP-SGD's noise is "
                "calibrated to the rows it trains on and is not searched here"
            )
        if self.estimator.random_state is not None:
            raise DPMLValueError(
                f"estimator.random_state={self.estimator.random_state!r}: "
                f"{_SEARCH_OWNS['random_state']}"
            )
        epsilon = _number("epsilon", self.epsilon)
        if epsilon > _MAX_EPSILON:
            raise DPMLValueError(f"epsilon={epsilon!r} must be at most {_MAX_EPSILON}")
        method = _choice("method", self.method, ("split", "random-stopping"))
        grid = _grid(self.param_grid, self.estimator)
        gamma = self.stop_probability
        gamma = 1.0 / len(grid) if gamma is None else _number("stop_probability", gamma)
        if not 1e-4 <= gamma <= 1.0:
            raise DPMLValueError(f"stop_probability={gamma!r} must be in [1e-4, 1]")
        holdout = _number("holdout_fraction", self.holdout_fraction)
        if not holdout < 1.0:
            raise DPMLValueError(f"holdout_fraction={holdout!r} must be in (0, 1)")
        return epsilon, method, grid, gamma, holdout

    def _training_rows(self, n, method, m, holdout):
        """Rows each candidate trains on (public: from n), for ``C``'s Λ = 1/(C·rows)."""
        if method == "split":
            return n // (m + 1)
        return n - min(math.ceil(n * holdout), n)

    def fit(self, X, y, ledger=None, **params):
        """Runs the search on ``X``, ``y``, charging ``ledger`` (or the active one) the
        search's (ε, δ) once, before any noise is drawn on the data. Returns ``self``.
        ``sample_weight`` must be None (a private fit takes no per-row weights)."""
        ledger = resolve_ledger(ledger, self)
        _validation.fit_params(self, params)
        epsilon, method, grid, gamma, holdout = self._checked()
        seed = resolve_seed(self.random_state, testing.allow_int_seed())
        shape, call = _validation.rows(self, X, reset=True)
        y = _validation.labels(y, shape[0])
        classes = _validation.public_classes(self.estimator.classes, y, False)
        indices = _validation.class_indices(y, classes)
        rows = self._training_rows(shape[0], method, len(grid), holdout)
        candidates, kwargs = [], []
        for point in grid:
            candidate = clone(self.estimator).set_params(**point, epsilon=epsilon)
            _, mechanism = candidate._epsilon_and_mechanism()
            delta = candidate._delta()
            kw = candidate._fit_kwargs((max(rows, 1), shape[1]), call, epsilon, mechanism)
            if delta > 0:
                kw["delta"] = delta
            kwargs.append(kw)
            candidates.append(candidate)
        record = None

        def charge(plan):
            nonlocal record
            if ledger is None:
                return
            if plan["delta"] > 0 and ledger.delta == 0:
                why = (
                    "its cap on runs adds a delta"
                    if method == "random-stopping"
                    else "its candidates have a delta"
                )
                instead = (
                    ", or method='split' with pure-epsilon candidates"
                    if method == "random-stopping"
                    else ""
                )
                raise BudgetExceededError(
                    f"method={method!r} is (epsilon={plan['epsilon']!r}, "
                    f"delta={plan['delta']!r})-DP, not pure epsilon-DP ({why}): a Ledger "
                    "with delta=0 cannot pay for it. Use dpml.Ledger(epsilon, delta=...) "
                    f"with delta >= {plan['delta']!r}{instead}; nothing was trained"
                )
            record = ledger.charge(
                plan["epsilon"], plan["delta"], what="PrivateSearch", mechanism=method
            )

        try:
            models, index, plan, noisy = _dpml.private_search(
                y=indices,
                n_classes=len(classes),
                kind=self.estimator._kind,
                candidates=kwargs,
                epsilon=epsilon,
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
        best = clone(candidates[index]).set_params(epsilon=plan["step_epsilon"])
        best.classes_ = classes
        best.n_features_in_ = shape[1]
        if hasattr(self, "feature_names_in_"):
            best.feature_names_in_ = self.feature_names_in_
        best._models = models
        self.privacy_ = self._privacy_report(plan, method, len(grid), gamma, holdout, seed, noisy)
        _, chosen = best._epsilon_and_mechanism()
        best.privacy_ = dict(
            self.privacy_,
            selected_by="dpml.model_selection.PrivateSearch",
            mechanism=best._released_mechanism(chosen, best._delta()),
        )
        self.best_estimator_ = best
        self.best_index_ = index
        self.best_params_ = dict(grid[index])
        self.classes_ = classes
        self.n_candidates_ = len(grid)
        return self

    def _privacy_report(self, plan, method, m, gamma, holdout, seed, noisy):
        private = seed is None
        report = {
            "epsilon": plan["epsilon"],
            "delta": plan["delta"],
            "private": private,
            "seeded": seed is not None,
            "method": method,
            "candidates": m,
            "step_epsilon": plan["step_epsilon"],
            "training_rows": plan["training_rows"],
            "held_out_rows": plan["held_out_rows"],
            "regularization": plan["regularization"],
            "neighbouring": NEIGHBOURS,
            "library_version": _dpml.__version__,
        }
        if method == "split":
            report["guarantee"] = (
                "split-and-select (CMS11 Alg. 4): max(candidate epsilon, selection epsilon) "
                "= epsilon; the released (index, model) pair is epsilon-DP"
                if plan["delta"] == 0
                else "split-and-select (CMS11 Alg. 4) among (epsilon, delta) candidates: "
                "max(candidate epsilon, selection epsilon) = epsilon, delta = the largest "
                "candidate delta (each row reaches one candidate); the released (index, "
                "model) pair is (epsilon, delta)-DP"
            )
        else:
            report.update(
                stop_probability=gamma,
                holdout_fraction=holdout,
                max_runs=plan["max_runs"],
                score_epsilon=plan["score_epsilon"],
                noisy_mistakes=noisy,
                guarantee=(
                    "random stopping (Liu-Talwar 2019): 3 x step_epsilon (rounded up), plus "
                    "delta = (1 + e^epsilon)(1 - stop_probability)^max_runs from the cap; "
                    "the number of runs and the time taken are not covered"
                    if not plan["renyi"]
                    else "random stopping among (epsilon, delta) candidates, accounted by "
                    "Renyi DP (Papernot-Steinke 2022, Theorem 2, geometric number of runs): "
                    "each run's Renyi curve is the largest of the candidates' and the "
                    "score's, the best-of-runs curve is converted to epsilon at 99% of "
                    "delta, and the cap on runs adds at most 0.5% of delta; the number of "
                    "runs and the time taken are not covered"
                ),
            )
        if seed is not None:
            report["warning"] = (
                "searched with dpml.InsecureSeed: the noise is predictable and the result "
                "is NOT private"
            )
        return report

    # -- the chosen model ---------------------------------------------------------------

    def _best(self):
        best = getattr(self, "best_estimator_", None)
        if best is None:
            raise NotFittedError(
                "This PrivateSearch instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )
        return best

    def predict(self, X):
        """The chosen model's classes for ``X``."""
        return self._best().predict(X)

    def decision_function(self, X):
        """The chosen model's scores for ``X``."""
        return self._best().decision_function(X)

    def predict_proba(self, X):
        """The chosen model's probabilities (logistic regression only)."""
        return self._best().predict_proba(X)


__all__ = ["PrivateSearch"]


# The regressors' search (its own module; it uses dp-tune's RegressionSplitAndSelect).
from ._regression_search import PrivateRegressionSearch  # noqa: E402
__all__ += ["PrivateRegressionSearch"]
