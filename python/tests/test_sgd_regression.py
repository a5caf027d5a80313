"""dpml.DPSGDRegressor: DP-SGD on the regressors' data (public target bounds), its report,
its ledger charge with DP-SGD's curve, its file, and scikit-learn's regressor checks."""

import math
import pickle

import numpy as np
import pytest
from sklearn.linear_model import Ridge as SkRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpml


@pytest.fixture
def linear_truth():
    """20,000 rows of 5 features in [0, 1], a linear target in [0, 100] plus noise."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(20_000, 5))
    y = np.clip(40 + X @ np.array([20.0, -15.0, 10.0, 5.0, 0.0]) + rng.normal(0, 3, 20_000), 0, 100)
    return X[:15_000], y[:15_000], X[15_000:], y[15_000:]


def test_dpsgd_regression_approaches_the_non_private_ridge(linear_truth):
    X, y, X_test, y_test = linear_truth
    reference = SkRidge(alpha=1e-3).fit(X, y).score(X_test, y_test)
    model = dpml.DPSGDRegressor(
        epsilon=1.0, delta=1e-5, data_norm=math.sqrt(5), bounds=(0, 100)
    ).fit(X, y)
    assert model.score(X_test, y_test) >= 0.8 * reference, (model.score(X_test, y_test), reference)
    predictions = model.predict(X_test)
    assert predictions.min() >= 0 and predictions.max() <= 100
    inside = np.clip(X_test @ model.coef_ + model.intercept_, 0, 100)
    np.testing.assert_allclose(inside, predictions, rtol=1e-9, atol=1e-9)
    privacy = model.privacy_
    assert privacy["mechanism"] == "dp-sgd" and privacy["accountant"] == "pld"
    assert privacy["epsilon"] == 1.0 and privacy["delta"] == 1e-5
    assert privacy["noise_multiplier"] > 0 and privacy["steps"] == math.ceil(10 * 15_000 / 256)
    assert privacy["bounds"] == (0.0, 100.0) and privacy["private"]


def test_the_ledger_is_charged_with_dpsgds_curve_and_refusals_cost_nothing():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(2_000, 2))
    y = X.sum(axis=1)
    ledger = dpml.Ledger(3.0, delta=2e-5)
    for _ in range(2):
        dpml.DPSGDRegressor(epsilon=1.0, delta=1e-5, data_norm=2.0, bounds=(0, 2)).fit(
            X, y, ledger=ledger
        )
    # Each fit records DP-SGD's curve: the two compose below basic composition's (2, 2e-5).
    assert ledger.composition == "privacy-loss distribution"
    assert ledger.spent_epsilon < 1.6 and ledger.spent_delta == 2e-5
    assert [r["mechanism"] for r in ledger.records] == ["dp-sgd", "dp-sgd"]
    spent = ledger.spent_epsilon
    bad = y.copy()
    bad[3] = 9.0
    with pytest.raises(dpml.DPMLValueError, match="row 3"):
        dpml.DPSGDRegressor(epsilon=1.0, delta=1e-5, data_norm=2.0, bounds=(0, 2)).fit(
            X, bad, ledger=ledger
        )
    assert ledger.spent_epsilon == spent and len(ledger) == 2
    with pytest.raises(dpml.DPMLValueError, match="add-remove"):
        dpml.DPSGDRegressor(
            epsilon=1.0,
            delta=1e-5,
            data_norm=2.0,
            bounds=(0, 2),
            neighbouring="add-remove",
            public_rows=2_000,
        ).fit(X, y, ledger=ledger)


def test_a_small_epsilon_is_warned_of(linear_truth):
    X, y, _, _ = linear_truth
    with pytest.warns(dpml.DPMLUtilityWarning, match="DP-SGD regression"):
        model = dpml.DPSGDRegressor(
            epsilon=0.2, delta=1e-5, data_norm=math.sqrt(5), bounds=(0, 100)
        ).fit(X, y)
    assert model.privacy_["outlook"]["at_risk"]


def test_the_public_facts_and_delta_are_required_by_name():
    X = np.random.default_rng(2).uniform(0, 1, size=(50, 2))
    y = X.sum(axis=1)
    with pytest.raises(dpml.DPMLValueError, match="delta is required"):
        dpml.DPSGDRegressor(data_norm=2.0, bounds=(0, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="bounds is required"):
        dpml.DPSGDRegressor(delta=1e-5, data_norm=2.0).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="data_norm"):
        dpml.DPSGDRegressor(delta=1e-5, bounds=(0, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="batch_size"):
        dpml.DPSGDRegressor(delta=1e-5, data_norm=2.0, bounds=(0, 2), batch_size=51).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="epsilon=inf"):
        dpml.DPSGDRegressor(epsilon=math.inf, delta=1e-5, data_norm=2.0, bounds=(0, 2)).fit(X, y)


def test_files_and_pickles_round_trip_across_regressors(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, size=(500, 3))
    y = 10 * X[:, 0] + 5
    model = dpml.DPSGDRegressor(epsilon=1.0, delta=1e-5, data_norm=2.0, bounds=(0, 20)).fit(X, y)
    path = tmp_path / "sgd.dpml"
    model.save(path)
    # The one regression model file: any regressor class reads it.
    loaded = dpml.LinearRegression.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.privacy_["mechanism"] == "dp-sgd"
    unpickled = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(unpickled.predict(X), model.predict(X))


# DP-SGD has no non-private mode, so only the private checks run. The expected batch must
# fit the checks' smallest training sets (one row), hence batch_size=1.
NOISE = {
    "check_regressors_train": "R² on the check's few dozen rows at epsilon=1 is below its "
    "floor: the noise, not the model",
}


@parametrize_with_checks(
    [dpml.DPSGDRegressor(epsilon=1.0, delta=1e-5, batch_size=1, epochs=20)],
    expected_failed_checks=lambda e: NOISE,
)
def test_sklearn_checks_dpsgd_regressor(estimator, check):
    with dpml.testing.check_mode():
        check(estimator)
