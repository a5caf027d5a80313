"""dpml.model_selection.PrivateSearch: what the search spends, against the spec's formulas
(docs/src/reference/algorithms.md §6 and dp-tune's RandomStopping docs), computed here and
never read from the code under test."""

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

import dpml
from dpml.model_selection import PrivateSearch

GRID = {"regularization": [1e-3, 1e-2, 1e-1]}


def clf(**params):
    return dpml.LogisticRegression(**{"data_norm": 2.0, "classes": [0, 1], **params})


def split_spend(epsilon, m):
    """docs/src/reference/algorithms.md §6: every candidate trains at ε on its own part, the exponential
    mechanism at ε on the held-out part: ε end to end, no δ."""
    return epsilon, 0.0


def check_split(report, epsilon, m, n):
    e, d = split_spend(epsilon, m)
    assert report["epsilon"] == e and report["delta"] == d
    # m + 1 parts of n/(m+1) rows (sizes within one); the last is held out.
    assert report["training_rows"] == n // (m + 1)
    assert abs(report["held_out_rows"] - n / (m + 1)) < 1


def check_random_stopping(report, total, gamma):
    """dp-tune's RandomStopping: each run is ε_B-DP, the best of a geometric number of runs
    is 3ε_B-DP, and the cap T adds δ = (1 + e^{3ε_B})(1 − γ)^T (reported rounded up)."""
    b = report["step_epsilon"]
    assert report["epsilon"] >= 3 * b  # never rounded down
    assert report["epsilon"] <= total  # within what was asked for
    assert total - report["epsilon"] < 1e-12 * total  # and not needlessly below it
    T = report["max_runs"]
    delta = (1 + math.exp(3 * b)) * (1 - gamma) ** T
    assert delta <= report["delta"] <= delta * (1 + 1e-6)
    assert report["delta"] <= 1e-6  # dp-tune's MAX_DELTA
    assert (1 - gamma) ** T <= 1e-9  # the default cap's tail


def test_split_spends_epsilon_once_and_the_ledger_records_it(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=2.0)
    search = PrivateSearch(clf(), GRID, epsilon=0.8).fit(X, y, ledger=ledger)
    check_split(search.privacy_, 0.8, 3, len(X))
    assert ledger.spent_epsilon == 0.8 and ledger.spent_delta == 0.0
    assert len(ledger) == 1 and ledger.records[0]["estimator"] == "PrivateSearch"
    assert search.best_params_ in [{"regularization": r} for r in GRID["regularization"]]
    assert search.best_params_ == {"regularization": GRID["regularization"][search.best_index_]}
    best = search.best_estimator_
    assert isinstance(best, dpml.LogisticRegression) and best.epsilon == 0.8
    assert best.regularization == search.best_params_["regularization"]
    assert best.privacy_["epsilon"] == 0.8 and search.privacy_["private"]
    assert np.array_equal(search.predict(X), best.predict(X))
    pickle.loads(pickle.dumps(best)).predict(X)
    # The chosen model works as any dpml model; blobs are easy (seeded: deterministic).
    seeded = PrivateSearch(clf(), GRID, epsilon=5.0, random_state=dpml.InsecureSeed(4))
    assert seeded.fit(X, y).score(X, y) > 0.9


def test_the_split_check_catches_a_wrong_spend(blobs):
    """Mutation check: a report that charged the candidates' ε and the selection's ε in
    sequence (2ε), or split ε between them, fails the check above."""
    X, y = blobs
    report = PrivateSearch(clf(), GRID, epsilon=0.8).fit(X, y).privacy_
    for wrong in (dict(report, epsilon=1.6), dict(report, epsilon=0.4), dict(report, delta=1e-9)):
        with pytest.raises(AssertionError):
            check_split(wrong, 0.8, 3, len(X))


def test_random_stopping_spends_three_steps_and_a_delta(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=1.0, delta=1e-5)
    search = PrivateSearch(
        clf(), GRID, epsilon=0.9, method="random-stopping", stop_probability=0.25
    ).fit(X, y, ledger=ledger)
    report = search.privacy_
    check_random_stopping(report, 0.9, 0.25)
    assert ledger.spent_epsilon == report["epsilon"] and ledger.spent_delta == report["delta"]
    assert len(ledger) == 1
    # Every candidate trains on the rows outside the held-out 10%.
    assert report["held_out_rows"] == math.ceil(0.1 * len(X))
    assert report["training_rows"] == len(X) - report["held_out_rows"]
    assert isinstance(report["noisy_mistakes"], int)
    assert search.best_estimator_.epsilon == report["step_epsilon"]
    # Mutation check: the step ε reported as the total (3x under-reported) is caught.
    with pytest.raises(AssertionError):
        check_random_stopping(dict(report, epsilon=report["step_epsilon"]), 0.9, 0.25)
    with pytest.raises(AssertionError):
        check_random_stopping(dict(report, delta=report["delta"] / 2), 0.9, 0.25)


def test_a_pure_epsilon_ledger_refuses_random_stopping(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=10.0)
    search = PrivateSearch(clf(), GRID, epsilon=0.9, method="random-stopping")
    with pytest.raises(dpml.BudgetExceededError, match=r"not pure epsilon-DP.*delta=0"):
        search.fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0
    assert not hasattr(search, "best_estimator_")
    # The same search with a δ in the ledger runs; split needs none.
    PrivateSearch(clf(), GRID, epsilon=0.9).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.9


def test_an_overspent_ledger_refuses_before_any_work(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=1.0)
    ledger.charge(0.5)
    search = PrivateSearch(clf(), GRID, epsilon=0.8)
    with pytest.raises(dpml.BudgetExceededError, match="nothing was trained"):
        search.fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.5 and not hasattr(search, "best_estimator_")
    with ledger:  # the active ledger is charged too
        with pytest.raises(dpml.BudgetExceededError):
            search.fit(X, y)


def test_refusals_before_the_selection_refund_the_ledger(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=5.0)
    # dp-tune needs 20 rows per part: 4 parts need 80 rows.
    with pytest.raises(dpml.DPMLValueError, match="rows"):
        PrivateSearch(clf(), GRID, epsilon=1.0).fit(X[:60], y[:60], ledger=ledger)
    # A row above the public bound, named.
    with pytest.raises(dpml.DPMLValueError, match="above data_norm"):
        PrivateSearch(clf(data_norm=0.01), GRID, epsilon=1.0).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0


@pytest.mark.parametrize(
    "grid, error, pattern",
    [
        ({}, dpml.DPMLValueError, "no parameter"),
        ([], dpml.DPMLTypeError, "non-empty list"),
        ("regularization", dpml.DPMLTypeError, "must be a dict"),
        ([GRID, 3], dpml.DPMLTypeError, "not a dict"),
        ({"regularization": []}, dpml.DPMLValueError, "is empty"),
        ({"regularization": 0.1}, dpml.DPMLTypeError, "must be a list"),
        ({"regularization": "auto"}, dpml.DPMLTypeError, "must be a list"),
        ({"alpha": [1.0]}, dpml.DPMLValueError, "'alpha', which is not a parameter"),
        ({"epsilon": [0.5, 1.0]}, dpml.DPMLValueError, "must not vary 'epsilon'"),
        ({"random_state": [None]}, dpml.DPMLValueError, "must not vary 'random_state'"),
        ({"classes": [[0, 1]]}, dpml.DPMLValueError, "must not vary 'classes'"),
        ({"data_norm": [1.0, 2.0]}, dpml.DPMLValueError, "must not vary 'data_norm'"),
        ({"fit_intercept": [True, False]}, dpml.DPMLValueError, "must not vary 'fit_intercept'"),
        ({"regularization": [0.1, -1.0]}, dpml.DPMLValueError, "regularization=-1.0"),
        ({"mechanism": ["objective", "laplace"]}, dpml.DPMLValueError, "mechanism='laplace'"),
    ],
)
def test_bad_grids_are_refused_before_any_charge(blobs, grid, error, pattern):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=5.0)
    with pytest.raises(error, match=pattern):
        PrivateSearch(clf(), grid, epsilon=1.0).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0


@pytest.mark.parametrize(
    "params, error, pattern",
    [
        (dict(epsilon=0.0), dpml.DPMLValueError, "epsilon=0.0 must be > 0"),
        (dict(epsilon=float("inf")), dpml.DPMLValueError, "epsilon=inf must be finite"),
        (dict(epsilon=2000.0), dpml.DPMLValueError, "at most 1000"),
        (dict(method="grid"), dpml.DPMLValueError, "method='grid'"),
        (dict(method="random-stopping", stop_probability=0.0), dpml.DPMLValueError, "stop_probability"),
        (dict(method="random-stopping", holdout_fraction=1.0), dpml.DPMLValueError, "holdout_fraction"),
        (dict(random_state=42), dpml.DPMLTypeError, "NOT private"),
    ],
)
def test_bad_search_parameters(blobs, params, error, pattern):
    X, y = blobs
    with pytest.raises(error, match=pattern):
        PrivateSearch(clf(), GRID, **params).fit(X, y)


def test_bad_estimators_and_classes(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLTypeError, match="must be a dpml estimator"):
        PrivateSearch(object(), GRID).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="random_state"):
        PrivateSearch(clf(random_state=dpml.InsecureSeed(1)), GRID).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="classes is required"):
        PrivateSearch(clf(classes=None), GRID).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="3 classes.*binary models"):
        PrivateSearch(clf(classes=[0, 1, 2]), GRID).fit(X, y)


def test_seeded_searches_repeat_only_through_insecure_seed(blobs):
    X, y = blobs
    runs = [
        PrivateSearch(clf(), GRID, epsilon=1.0, random_state=dpml.InsecureSeed(7)).fit(X, y)
        for _ in range(2)
    ]
    assert runs[0].best_index_ == runs[1].best_index_
    assert np.array_equal(runs[0].best_estimator_.coef_, runs[1].best_estimator_.coef_)
    assert not runs[0].privacy_["private"] and "NOT private" in runs[0].privacy_["warning"]
    # Without a seed the noise is fresh: the released weights differ.
    fresh = [PrivateSearch(clf(), GRID, epsilon=1.0).fit(X, y) for _ in range(2)]
    assert not np.array_equal(fresh[0].best_estimator_.coef_, fresh[1].best_estimator_.coef_)


def test_clone_is_safe_and_fit_returns_self(blobs):
    X, y = blobs
    search = PrivateSearch(clf(), GRID, epsilon=1.0)
    copy = clone(search)
    assert copy.get_params()["param_grid"] == GRID and copy is not search
    assert search.fit(X, y) is search
    assert not hasattr(clone(search), "best_estimator_")
    with pytest.raises(dpml.NotFittedError):
        copy.predict(X)


def test_huber_and_kernel_candidates(blobs):
    X, y = blobs
    huber = PrivateSearch(
        dpml.HuberSVC(data_norm=2.0, classes=[0, 1]),
        {"huber_width": [0.5, 1.0], "C": [1.0, 10.0]},
        epsilon=1.0,
    ).fit(X, y)
    assert huber.n_candidates_ == 4 and set(huber.best_params_) == {"C", "huber_width"}
    kernel = PrivateSearch(
        dpml.RandomFeaturesSVC(classes=[0, 1], n_components=30),
        [{"gamma": [0.5, 2.0]}, {"kernel": ["laplacian"], "gamma": [1.0]}],
        epsilon=2.0,
    ).fit(X, y)
    assert kernel.n_candidates_ == 3
    assert isinstance(kernel.best_estimator_, dpml.RandomFeaturesSVC)
    assert kernel.predict(X[:5]).shape == (5,)
