"""dpml.predict: per-query charges (docs/src/reference/algorithms.md §7: q answers cost q·ε by basic
composition), remaining_, and refusals before any work."""

import copy
import pickle

import numpy as np
import pytest

import dpml
from dpml.predict import ExponentialWalk, SubsampleAndAggregate


def ensemble(**params):
    return SubsampleAndAggregate(
        **{"epsilon": 0.5, "total_epsilon": 5.0, "n_parts": 20, "data_norm": 2.0,
           "classes": [0, 1], **params}
    )


def line(n=1000):
    x = np.arange(n) / n
    return x, (x >= 0.5).astype(int)


def test_each_answer_is_charged_and_remaining_falls(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=10.0)
    # Seeded: the answers' accuracy below is checked once, not left to chance (with fresh
    # noise, 4 of 7 answers were wrong in 2 of 200 fits: the soft majority at ε = 0.5).
    predictor = ensemble(random_state=dpml.InsecureSeed(11)).fit(X, y, ledger=ledger)
    # The interface's whole budget is what the training data may lose: charged at fit.
    assert ledger.spent_epsilon == 5.0 and ledger.records[0]["estimator"] == "SubsampleAndAggregate"
    assert predictor.spent_ == 0.0 and predictor.remaining_ == 5.0
    assert predictor.queries_left_ == 10  # 5.0 / 0.5, exact in binary
    labels = predictor.predict(X[:3])
    assert set(labels) <= {0, 1}
    assert predictor.spent_ == 1.5 and predictor.remaining_ == 3.5
    assert predictor.queries_left_ == 7
    # Soft majority of 20 models on well-separated blobs: the answers are mostly right.
    assert np.mean(predictor.predict(X[3:10]) == y[3:10]) >= 4 / 7
    assert predictor.queries_left_ == 0 and predictor.remaining_ == 0.0


def test_a_batch_the_budget_cannot_pay_is_refused_whole_before_any_work(blobs):
    X, y = blobs
    predictor = ensemble().fit(X, y)
    predictor.predict(X[:8])
    with pytest.raises(dpml.BudgetExceededError, match="3 queries.*nothing was answered"):
        predictor.predict(X[:3])
    assert predictor.spent_ == 4.0 and predictor.queries_left_ == 2
    predictor.predict(X[:2])  # exactly what is left
    with pytest.raises(dpml.BudgetExceededError):
        predictor.predict(X[:1])
    assert predictor.spent_ == 5.0


def test_charges_round_up(blobs):
    """0.1 is not exact in binary: the sum of charges is rounded up, so ten answers at
    0.1 do not fit in 1.0 (a ledger rounding to nearest would allow the tenth)."""
    X, y = blobs
    predictor = ensemble(epsilon=0.1, total_epsilon=1.0).fit(X, y)
    assert predictor.queries_left_ == 9
    predictor.predict(X[:9])
    assert predictor.spent_ >= 0.9
    with pytest.raises(dpml.BudgetExceededError):
        predictor.predict(X[:1])


def test_malformed_queries_cost_nothing(blobs):
    X, y = blobs
    predictor = ensemble().fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="4 features"):
        predictor.predict(np.zeros((2, 3)))
    bad = X[:2].copy()
    bad[1, 0] = np.nan
    with pytest.raises(dpml.DPMLValueError, match="NaN|finite"):
        predictor.predict(bad)
    assert predictor.spent_ == 0.0


def test_laplace_averaging_releases_a_probability(blobs):
    X, y = blobs
    predictor = ensemble(aggregation="laplace", vote="sigmoid").fit(X, y)
    p = predictor.predict_proba(X[:4])
    assert p.shape == (4, 2) and np.all((p >= 0) & (p <= 1))
    assert np.allclose(p.sum(axis=1), 1.0)
    assert predictor.spent_ == 2.0
    with pytest.raises(dpml.DPMLValueError, match="aggregation='laplace'"):
        ensemble().fit(X, y).predict_proba(X[:1])


def test_serving_at_fixed_slots(blobs):
    X, y = blobs
    predictor = ensemble(aggregation="laplace", slot=0.002).fit(X, y)
    assert predictor.predict(X[:2]).shape == (2,) and predictor.spent_ == 1.0
    assert "covered" in predictor.privacy_["timing"]


def test_walk_answers_on_a_line():
    x, y = line()
    ledger = dpml.Ledger(epsilon=5.0)
    walk = ExponentialWalk(epsilon=1.0, total_epsilon=5.0, alpha=0.01, classes=[0, 1]).fit(
        x, y, ledger=ledger
    )
    assert ledger.spent_epsilon == 5.0
    # Far from the threshold the walk is clamped: each answer is right with prob. 0.99.
    answers = walk.predict(np.array([0.05, 0.1, 0.9, 0.95]))
    assert walk.spent_ == 4.0 and walk.queries_left_ == 1
    assert answers.tolist() in ([0, 0, 1, 1], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 1, 1], [0, 1, 1, 1])
    with pytest.raises(dpml.BudgetExceededError):
        walk.predict(np.array([0.2, 0.3]))
    assert walk.spent_ == 4.0


def test_seeded_answers_repeat_only_through_insecure_seed(blobs):
    X, y = blobs
    runs = [
        ensemble(aggregation="laplace", random_state=dpml.InsecureSeed(3)).fit(X, y).predict_proba(X[:5])
        for _ in range(2)
    ]
    assert np.array_equal(runs[0], runs[1])
    with pytest.raises(dpml.DPMLTypeError, match="NOT private"):
        ensemble(random_state=3).fit(X, y)


def test_a_fitted_predictor_cannot_be_copied(blobs):
    X, y = blobs
    predictor = ensemble().fit(X, y)
    with pytest.raises(dpml.DPMLError, match="second budget"):
        pickle.dumps(predictor)
    with pytest.raises(dpml.DPMLError, match="second budget"):
        copy.deepcopy(predictor)
    pickle.dumps(ensemble())  # unfitted: parameters only


@pytest.mark.parametrize(
    "params, pattern",
    [
        (dict(n_parts=None), "n_parts is required"),
        (dict(n_parts=0), "n_parts=0"),
        (dict(n_parts=1000), "above the number of rows"),
        (dict(epsilon=2.0, total_epsilon=1.0), "not one answer would fit"),
        (dict(epsilon=0.0), "epsilon=0.0 must be > 0"),
        (dict(data_norm=None), "data_norm is required"),
        (dict(data_norm=0.01), "above data_norm"),
        (dict(aggregation="mean"), "aggregation='mean'"),
        (dict(vote="sigmoid"), "aggregation='laplace' only"),
        (dict(classes=[0, 1, 2]), "one of two"),
        (dict(slot=120.0), "at most 60"),
    ],
)
def test_bad_parameters_are_refused_and_refunded(blobs, params, pattern):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=100.0)
    with pytest.raises(dpml.DPMLValueError, match=pattern):
        ensemble(**params).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0


def test_bad_walks():
    x, y = line(100)
    with pytest.raises(dpml.DPMLValueError, match="alpha"):
        ExponentialWalk(alpha=0.5, classes=[0, 1]).fit(x, y)
    with pytest.raises(dpml.DPMLValueError, match="points on a line"):
        ExponentialWalk(classes=[0, 1]).fit(np.zeros((100, 2)), y)
    with pytest.raises(dpml.DPMLValueError, match="label 7"):
        ExponentialWalk(classes=[0, 1]).fit(x, np.full(100, 7))
    walk = ExponentialWalk(classes=[0, 1]).fit(x, y)
    with pytest.raises(dpml.DPMLValueError):
        walk.predict(np.array([np.inf]))
    assert walk.spent_ == 0.0
    with pytest.raises(dpml.NotFittedError):
        ExponentialWalk(classes=[0, 1]).predict(x)


# --- Real values: StableRegression and SubsampleAndAggregateRegressor (§7.7, §7.8) ---

from dpml.predict import StableRegression, SubsampleAndAggregateRegressor  # noqa: E402


def linear_data(n=4000, d=3, seed=0):
    """Rows in the unit ball (data_norm 1), y = 10·⟨w*, x⟩ + small noise within [−10, 10]."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    w = np.array([1.0, -0.5, 0.25][:d]) / np.linalg.norm([1.0, -0.5, 0.25][:d])
    y = np.clip(10 * (X @ w) + rng.uniform(-0.5, 0.5, size=n), -10, 10)
    return X, y, w


def regressor(kind, **params):
    common = {"epsilon": 1.0, "total_epsilon": 20.0, "bounds": (-10, 10),
              "data_norm": 1.0, "fit_intercept": False}
    if kind == "stable":
        return StableRegression(**{**common, "regularization": 0.01, **params})
    return SubsampleAndAggregateRegressor(**{**common, "n_parts": 40, "aggregation": kind, **params})


@pytest.mark.parametrize("kind", ["stable", "median", "mean"])
def test_regressors_answer_real_values_near_the_truth_and_charge_each(kind):
    X, y, w = linear_data()
    ledger = dpml.Ledger(epsilon=100.0)
    model = regressor(kind).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 20.0
    queries = X[:10]
    answers = model.predict(queries)
    assert answers.dtype == np.float64 and answers.shape == (10,)
    assert np.all((answers >= -10) & (answers <= 10))
    assert model.spent_ == 10.0 and model.remaining_ == 10.0
    error = np.mean(np.abs(answers - 10 * (queries @ w)))
    assert error < 1.5, error  # a constant answer errs by about 2.6 here
    assert model.privacy_["bounds"] == (-10.0, 10.0)


@pytest.mark.parametrize("kind", ["stable", "median", "mean"])
def test_regressors_refuse_a_batch_beyond_the_budget_whole(kind):
    X, y, _ = linear_data(n=400)
    model = regressor(kind, total_epsilon=3.0).fit(X, y)
    with pytest.raises(dpml.BudgetExceededError):
        model.predict(X[:4])
    assert model.spent_ == 0.0
    model.predict(X[:3])
    assert model.queries_left_ == 0
    with pytest.raises(dpml.BudgetExceededError):
        model.predict(X[:1])


def test_regressors_serve_at_fixed_slots_and_cannot_be_copied():
    X, y, _ = linear_data(n=400)
    for kind in ("stable", "mean", "median"):
        model = regressor(kind, slot=0.002).fit(X, y)
        assert model.predict(X[:2]).shape == (2,) and model.spent_ == 2.0
        assert "covered" in model.privacy_["timing"]
        with pytest.raises(dpml.DPMLError, match="second budget"):
            pickle.dumps(model)
    pickle.dumps(regressor("stable"))


def test_seeded_regression_answers_repeat_only_through_insecure_seed():
    X, y, _ = linear_data(n=400)
    runs = [
        regressor("mean", random_state=dpml.InsecureSeed(5)).fit(X, y).predict(X[:4])
        for _ in range(2)
    ]
    assert np.array_equal(runs[0], runs[1])
    with pytest.raises(dpml.DPMLTypeError, match="NOT private"):
        regressor("stable", random_state=5).fit(X, y)


@pytest.mark.parametrize(
    "kind, params, pattern",
    [
        ("stable", dict(bounds=None), "bounds is required"),
        ("stable", dict(bounds=(1, 1)), "lower < upper"),
        ("stable", dict(bounds=(-1, 1)), "row 0 is not a number within the public bounds"),
        ("stable", dict(data_norm=None), "data_norm is required"),
        ("stable", dict(data_norm=0.01), "above data_norm"),
        ("stable", dict(regularization=-1.0), "regularization=-1.0 must be > 0"),
        ("stable", dict(huber_threshold=1e6), "Huber threshold"),
        ("stable", dict(epsilon=2.0, total_epsilon=1.0), "not one answer would fit"),
        ("median", dict(n_parts=None), "n_parts is required"),
        ("median", dict(n_parts=0), "n_parts=0"),
        ("median", dict(n_parts=10_000), "above the number of rows"),
        ("median", dict(aggregation="mode"), "aggregation='mode'"),
        ("mean", dict(slot=120.0), "at most 60"),
    ],
)
def test_bad_regression_parameters_are_refused_naming_the_problem_and_refunded(
    kind, params, pattern
):
    X, y, _ = linear_data(n=400)
    y = y.copy()
    y[0] = 9.5  # outside (−1, 1), inside (−10, 10)
    ledger = dpml.Ledger(epsilon=100.0)
    with pytest.raises(dpml.DPMLValueError, match=pattern):
        regressor(kind, **params).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0


def test_bad_regression_queries_and_targets():
    X, y, _ = linear_data(n=400)
    with pytest.raises(dpml.DPMLValueError, match="numbers"):
        regressor("stable").fit(X, np.array(["a"] * 400))
    model = regressor("stable").fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="features"):
        model.predict(np.zeros((2, 5)))
    with pytest.raises(dpml.DPMLValueError):
        model.predict(np.array([[np.nan, 0.0, 0.0]]))
    assert model.spent_ == 0.0
    with pytest.raises(dpml.NotFittedError):
        regressor("median").predict(X)
    # Clipped targets are accepted when asked for.
    wide = y * 3
    clipped = regressor("stable", clip_targets=True).fit(X, wide)
    assert np.all(np.abs(clipped.predict(X[:2])) <= 10)
