"""dpml.model_selection.PrivateRegressionSearch: Λ chosen privately among regressors by
dp-tune's split-and-select or random stopping (held-out clamped squared error), charged
once; refusals before any charge, naming rows and never values. The score's sensitivity
and its mutants are tested in dp-tune (regression_tests.rs, regression_stopping_tests.rs)."""
import math

import numpy as np
import pytest

import dpml
from dpml.model_selection import PrivateRegressionSearch

BOUNDS = (-4.0, 4.0)


def data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.55, 0.55, (n, 3))
    y = np.clip(3.0 * X[:, 0] - 2.0 * X[:, 1] + 0.5 + rng.normal(0, 0.2, n), *BOUNDS)
    return X, y


def regressor(**extra):
    return dpml.LinearRegression(
        **{**dict(epsilon=1.0, data_norm=1.0, bounds=BOUNDS), **extra}
    )


def test_a_search_charges_epsilon_once_and_releases_one_of_the_grid(tmp_path):
    X, y = data()
    ledger = dpml.Ledger(2.0)
    search = PrivateRegressionSearch(
        regressor(), [1e-3, 1e-2, 30.0], random_state=dpml.InsecureSeed(3)
    ).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 1.0 and len(ledger) == 1
    assert search.best_index_ in (0, 1, 2)
    assert search.best_params_ == {"regularization": [1e-3, 1e-2, 30.0][search.best_index_]}
    assert search.privacy_["training_rows"] == 1500
    assert search.privacy_["held_out_rows"] == 1500
    predictions = search.predict(X)
    assert ((predictions >= BOUNDS[0]) & (predictions <= BOUNDS[1])).all()
    # The chosen model is a regressor's model file, as any other.
    search.best_estimator_.save(tmp_path / "chosen.model")
    loaded = dpml.LinearRegression.load(tmp_path / "chosen.model")
    assert np.array_equal(loaded.predict(X), predictions)


def test_refusals_come_before_the_charge_and_name_no_value():
    X, y = data(600, seed=1)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match="bounds is required"):
        PrivateRegressionSearch(regressor(bounds=None), [1e-2, 1e-3]).fit(X, y, ledger=ledger)
    outside = y.copy()
    outside[42] = 123.4567
    with pytest.raises(dpml.DPMLValueError, match="row 42") as e:
        PrivateRegressionSearch(regressor(), [1e-2, 1e-3]).fit(X, outside, ledger=ledger)
    assert "123.45" not in str(e.value)
    with pytest.raises(dpml.DPMLValueError, match="at least"):
        PrivateRegressionSearch(regressor(), [1e-2] * 40).fit(X, y, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="delta=0"):
        PrivateRegressionSearch(regressor(delta=1e-6), [1e-2]).fit(X, y, ledger=ledger)
    assert len(ledger) == 0 and ledger.spent_epsilon == 0.0


def check_random_stopping(report, total, gamma):
    """Liu-Talwar, written out here: each run is b-DP, the best of a geometric number of
    runs 3b-DP, and the cap T adds delta = (1 + e^{3b})(1 - gamma)^T (reported rounded up)."""
    b = report["step_epsilon"]
    assert report["score_epsilon"] == b
    assert 3 * b <= report["epsilon"] <= total
    assert total - report["epsilon"] < 1e-12 * total
    T = report["max_runs"]
    delta = (1 + math.exp(3 * b)) * (1 - gamma) ** T
    assert delta <= report["delta"] <= delta * (1 + 1e-6)
    assert report["delta"] <= 1e-6 and (1 - gamma) ** T <= 1e-9


def test_random_stopping_spends_three_steps_and_a_delta_once():
    X, y = data()
    ledger = dpml.Ledger(2.0, delta=1e-5)
    search = PrivateRegressionSearch(
        regressor(epsilon=0.9),
        [1e-3, 1e-2, 30.0],
        method="random-stopping",
        stop_probability=0.25,
        random_state=dpml.InsecureSeed(5),
    ).fit(X, y, ledger=ledger)
    report = search.privacy_
    check_random_stopping(report, 0.9, 0.25)
    assert report["method"] == "random-stopping" and report["candidates"] == 3
    assert (ledger.spent_epsilon, ledger.spent_delta) == (report["epsilon"], report["delta"])
    assert len(ledger) == 1
    assert report["held_out_rows"] == 600 and report["training_rows"] == 5400
    assert (report["stop_probability"], report["holdout_fraction"]) == (0.25, 0.1)
    # 600 terms in [0, 1] plus noise of scale 1/b in score units.
    assert isinstance(report["noisy_score"], float) and -60 < report["noisy_score"] < 660
    assert search.best_estimator_.epsilon == report["step_epsilon"]
    assert search.best_estimator_.privacy_["selected_by"] == "PrivateRegressionSearch"
    predictions = search.predict(X)
    assert ((predictions >= BOUNDS[0]) & (predictions <= BOUNDS[1])).all()
    # Mutation checks: the step reported as the total, or half the cap's delta, is caught.
    for wrong in (dict(report, epsilon=report["step_epsilon"]), dict(report, delta=report["delta"] / 2)):
        with pytest.raises(AssertionError):
            check_random_stopping(wrong, 0.9, 0.25)


def test_split_reports_the_classifier_search_fields():
    X, y = data(3000)
    report = PrivateRegressionSearch(regressor(), [1e-2, 1e-3]).fit(X, y).privacy_
    assert report["method"] == "split" and report["delta"] == 0.0
    assert report["epsilon"] == report["step_epsilon"] == 1.0
    assert report["training_rows"] == 1000 and report["private"]
    assert "noisy_score" not in report and "max_runs" not in report


def test_random_stopping_refusals_charge_nothing():
    X, y = data(3000, seed=2)
    ledger = dpml.Ledger(10.0)
    stopping = PrivateRegressionSearch(regressor(), [1e-2, 1e-3], method="random-stopping")
    # Its cap adds a delta, which a pure-epsilon ledger cannot pay.
    with pytest.raises(dpml.BudgetExceededError, match=r"not pure epsilon-DP.*delta=0"):
        stopping.fit(X, y, ledger=ledger)
    assert not hasattr(stopping, "best_estimator_")
    with_delta = dpml.Ledger(10.0, delta=1e-5)
    for bad, match in (
        (dict(stop_probability=0.0), "stop_probability"),
        (dict(stop_probability=1.5), "stop_probability"),
        (dict(holdout_fraction=1.0), "holdout_fraction"),
        (dict(method="stopping"), "method"),
    ):
        search = PrivateRegressionSearch(
            regressor(), [1e-2, 1e-3], **{"method": "random-stopping", **bad}
        )
        with pytest.raises(dpml.DPMLValueError, match=match):
            search.fit(X, y, ledger=with_delta)
    # Too few rows for the held-out part (20 rows each part at least).
    with pytest.raises(dpml.DPMLValueError, match="at least"):
        stopping.fit(X[:100], y[:100], ledger=with_delta)
    # Gaussian regressors: refused for random stopping as for split.
    with pytest.raises(dpml.DPMLValueError, match="delta=0"):
        PrivateRegressionSearch(
            regressor(delta=1e-6), [1e-2], method="random-stopping"
        ).fit(X, y, ledger=with_delta)
    for spent in (ledger, with_delta):
        assert len(spent) == 0 and spent.spent_epsilon == 0.0 and spent.spent_delta == 0.0
