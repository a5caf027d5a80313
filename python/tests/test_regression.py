"""The private regressors: utility against scikit-learn's, the public facts they require,
bad input refused by name, the ledger, files and pickles, scikit-learn's checks."""

import math
import pickle
import re

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
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


def r2(model, X, y):
    return model.score(X, y)


@pytest.mark.parametrize("estimator", [dpml.LinearRegression, dpml.HuberRegressor])
def test_private_regressors_approach_the_non_private_ridge(linear_truth, estimator):
    X, y, X_test, y_test = linear_truth
    reference = SkRidge(alpha=1e-3).fit(X, y).score(X_test, y_test)
    norm = math.sqrt(5)
    model = estimator(epsilon=1.0, data_norm=norm, bounds=(0, 100)).fit(X, y)
    assert r2(model, X_test, y_test) >= 0.8 * reference, (r2(model, X_test, y_test), reference)
    predictions = model.predict(X_test)
    assert predictions.min() >= 0 and predictions.max() <= 100
    # coef_ and intercept_ reproduce predict inside the bounds.
    inside = np.clip(X_test @ model.coef_ + model.intercept_, 0, 100)
    np.testing.assert_allclose(inside, predictions, rtol=1e-9, atol=1e-9)
    assert model.privacy_["epsilon"] == 1.0 and model.privacy_["bounds"] == (0.0, 100.0)
    assert model.privacy_["mechanism"] == "objective"
    # Gaussian (ε, δ) mechanisms through the same recipe.
    gaussian = estimator(epsilon=1.0, delta=1e-6, data_norm=norm, bounds=(0, 100)).fit(X, y)
    assert gaussian.privacy_["mechanism"] == "gaussian-objective"
    assert r2(gaussian, X_test, y_test) >= 0.5 * reference


def test_ridge_alpha_matches_scikit_learn_without_privacy(linear_truth):
    X, y, X_test, y_test = linear_truth
    with dpml.testing.check_mode(non_private=True):
        ours = dpml.Ridge(alpha=1.0, epsilon=math.inf, data_norm=math.sqrt(5), bounds=(0, 100),
                          fit_intercept=False).fit(X, y)
    # Targets are scaled about the bounds' centre, so without an intercept the model is
    # centre + X·coef: scikit-learn's ridge on y − centre.
    theirs = SkRidge(alpha=1.0, fit_intercept=False).fit(X, y - 50.0)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-6)
    assert ours.intercept_ == 50.0


def test_the_public_facts_are_required_and_bad_targets_refused_by_name():
    X = np.random.default_rng(0).uniform(0, 1, size=(50, 2))
    y = X.sum(axis=1)
    with pytest.raises(dpml.DPMLValueError, match="bounds is required"):
        dpml.LinearRegression(data_norm=2.0).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="data_norm is required"):
        dpml.LinearRegression(bounds=(0, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="lower < upper"):
        dpml.LinearRegression(data_norm=2.0, bounds=(2, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLTypeError, match="pair"):
        dpml.LinearRegression(data_norm=2.0, bounds=3.0).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="y must hold numbers"):
        dpml.LinearRegression(data_norm=2.0, bounds=(0, 2)).fit(X, np.array(["a"] * 50))
    outside = y.copy()
    outside[7] = 5.0
    with pytest.raises(dpml.DPMLValueError, match="row 7") as refused:
        dpml.LinearRegression(data_norm=2.0, bounds=(0, 2)).fit(X, outside)
    assert "5.0" not in str(refused.value)  # the value is the data's
    outside[7] = np.nan
    with pytest.raises(dpml.DPMLValueError, match="row 7"):
        dpml.LinearRegression(data_norm=2.0, bounds=(0, 2), clip_targets=True).fit(X, outside)
    outside[7] = 5.0
    clipped = dpml.LinearRegression(data_norm=2.0, bounds=(0, 2), clip_targets=True).fit(X, outside)
    assert clipped.privacy_["clip_targets"] is True
    with pytest.raises(dpml.DPMLValueError, match="sample_weight"):
        dpml.LinearRegression(data_norm=2.0, bounds=(0, 2)).fit(X, y, sample_weight=np.ones(50))


def test_the_ledger_is_charged_and_a_refusal_refunds():
    X = np.random.default_rng(1).uniform(0, 1, size=(200, 2))
    y = X.sum(axis=1)
    ledger = dpml.Ledger(epsilon=2.0)
    dpml.HuberRegressor(epsilon=0.5, data_norm=2.0, bounds=(0, 2)).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(0.5)
    bad = y.copy()
    bad[3] = 9.0
    with pytest.raises(dpml.DPMLValueError):
        dpml.HuberRegressor(epsilon=0.5, data_norm=2.0, bounds=(0, 2)).fit(X, bad, ledger=ledger)
    assert ledger.spent_epsilon == pytest.approx(0.5)
    with pytest.raises(dpml.BudgetExceededError):
        dpml.HuberRegressor(epsilon=2.0, data_norm=2.0, bounds=(0, 2)).fit(X, y, ledger=ledger)


def test_files_and_pickles_round_trip(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    model = dpml.LinearRegression(epsilon=1.0, data_norm=1.0, bounds=(25, 346)).fit(X, y)
    path = tmp_path / "diabetes.dpml"
    model.save(path)
    loaded = dpml.LinearRegression.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.privacy_["epsilon"] == 1.0 and loaded.privacy_["from_file"]
    unpickled = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(unpickled.predict(X), model.predict(X))
    # A classifier's loader refuses a regressor's file by its type, naming both.
    with pytest.raises(dpml.DPMLError, match="linear-regression"):
        dpml.LogisticRegression.load(path, classes=[0, 1])
    with pytest.raises(dpml.DPMLValueError, match="3 features"):
        model.predict(X[:, :3])


def test_the_outlook_warns_where_the_mean_would_do_as_well():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(300, 10))
    y = X[:, 0]
    with pytest.warns(dpml.DPMLUtilityWarning, match="predicting the mean"):
        model = dpml.LinearRegression(epsilon=0.5, data_norm=4.0, bounds=(0, 1)).fit(X, y)
    assert model.privacy_["outlook"]["at_risk"]


def estimators(epsilon):
    return [dpml.LinearRegression(epsilon=epsilon), dpml.HuberRegressor(epsilon=epsilon),
            dpml.Ridge(epsilon=epsilon)]


# The checks' regression data are a few dozen rows; at epsilon = 1 the noise, not the model,
# keeps R² below the floor of check_regressors_train (passes with epsilon = inf). No other
# check fails.
NOISE = {
    "check_regressors_train": "R² on the check's few dozen rows at epsilon=1 is below its "
    "floor: the noise, not the model (passes with epsilon=inf)",
}


@parametrize_with_checks(estimators(1.0), expected_failed_checks=lambda e: NOISE)
def test_sklearn_checks_private(estimator, check):
    with dpml.testing.check_mode():
        check(estimator)


@parametrize_with_checks(estimators(math.inf))
def test_sklearn_checks_non_private(estimator, check):
    with dpml.testing.check_mode(non_private=True):
        check(estimator)


def test_a_regression_schema_encodes_targets_and_refuses_the_classifiers_facts():
    text = """
version = 1
[csv]
header = true
[[columns]]
name = "x"
type = "numeric"
lower = 0
upper = 1
[[columns]]
name = "cost"
type = "target"
lower = 0
upper = 10
"""
    schema = dpml.Schema.from_toml(text)
    assert schema.task == "regression" and schema.target_bounds == (0.0, 10.0)
    assert schema.label_name == "cost" and "target 'cost'" in repr(schema)
    X, y = schema.encode({"x": np.array([0.5, 1.0]), "cost": np.array([2.5, 10.0])})
    assert X.shape == (2, schema.n_features) and y.dtype == np.float64
    assert np.array_equal(y, [2.5, 10.0])
    # A target outside the public bounds is refused naming its row and column, not its value.
    with pytest.raises(dpml.DPMLValueError, match='row 1, column "cost"') as e:
        schema.encode({"x": np.array([0.5, 1.0]), "cost": np.array([2.5, 10.123456])})
    assert "10.12" not in str(e.value)
    for fact in ("classes", "label_classes", "label_positive"):
        with pytest.raises(dpml.DPMLValueError, match=f"{fact}: .*regression target"):
            getattr(schema, fact)
    # A classifier's schema says so, and has no target bounds.
    classes = dpml.Schema.from_toml(text.replace('type = "target"', 'type = "label"').replace(
        "lower = 0\nupper = 10", 'classes = ["a", "b"]\npositive = "b"'))
    assert classes.task == "classification" and classes.target_bounds is None
    assert classes.classes == ["a", "b"]


def test_adassp_fits_least_squares_and_ridge_close_to_the_non_private_ridge(linear_truth, tmp_path):
    X, y, X_test, y_test = linear_truth
    reference = SkRidge(alpha=1e-3).fit(X, y).score(X_test, y_test)
    norm = math.sqrt(5)
    model = dpml.LinearRegression(
        epsilon=1.0,
        delta=1e-5,
        mechanism="adassp",
        data_norm=norm,
        bounds=(0, 100),
        random_state=dpml.InsecureSeed(5),
    ).fit(X, y)
    # Seeded: over 30 unseeded fits R² was 0.83 on average against the ridge's 0.87, at
    # least 0.73, and a CI run drew 0.60 — a floor on fresh noise would be flaky.
    assert r2(model, X_test, y_test) >= 0.7 * reference, (r2(model, X_test, y_test), reference)
    privacy = model.privacy_
    assert privacy["mechanism"] == "adassp" and privacy["delta"] == 1e-5
    assert privacy["loss"] == "least-squares" and privacy["huber_threshold"] is None
    assert privacy["noise"]["epsilon"] <= 1.0 and privacy["noise"]["rho"] > 0
    assert privacy["regularization"] > 0
    # Ridge's alpha adds to the adaptive λ: a large alpha shrinks the weights.
    shrunk = dpml.Ridge(
        alpha=1e4, epsilon=1.0, delta=1e-5, mechanism="adassp", data_norm=norm, bounds=(0, 100)
    ).fit(X, y)
    assert shrunk.privacy_["regularization"] > privacy["regularization"]
    assert np.linalg.norm(shrunk.coef_) < np.linalg.norm(model.coef_)
    # The model file names AdaSSP and loads back.
    model.save(tmp_path / "ridge.dpm")
    loaded = dpml.LinearRegression.load(tmp_path / "ridge.dpm")
    assert loaded.privacy_["mechanism"] == "adassp"
    np.testing.assert_allclose(loaded.predict(X_test), model.predict(X_test))
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(again.predict(X_test), model.predict(X_test))


def test_adassp_is_refused_by_name_at_delta_zero_and_for_huber_regression():
    X = np.random.default_rng(0).uniform(0, 1, size=(50, 2))
    y = X.sum(axis=1)
    with pytest.raises(dpml.DPMLValueError, match="adassp.*'objective' or 'output'"):
        dpml.LinearRegression(mechanism="adassp", data_norm=2.0, bounds=(0, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="mechanism='adassp'"):
        dpml.HuberRegressor(mechanism="adassp", delta=1e-5, data_norm=2.0, bounds=(0, 2)).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="calibration"):
        dpml.LinearRegression(
            mechanism="adassp", delta=1e-5, calibration="cms11", data_norm=2.0, bounds=(0, 2)
        ).fit(X, y)
    # A ledger is charged the (ε, δ) and nothing when refused before any work.
    ledger = dpml.Ledger(epsilon=5.0, delta=1e-4)
    dpml.LinearRegression(
        mechanism="adassp", delta=1e-5, data_norm=2.0, bounds=(0, 2)
    ).fit(X, y, ledger=ledger)
    assert ledger.spent_delta == pytest.approx(1e-5)


def _one_hot_rows(n, seed):
    """n rows of two one-hot attributes (3 levels each) and one number in [0, 1]: group
    norm ≤ 1 everywhere, row norm ≤ √3; a linear target in [0, 10]."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
    X = np.zeros((n, 7))
    X[np.arange(n), a] = 1.0
    X[np.arange(n), 3 + b] = 1.0
    X[:, 6] = rng.uniform(0, 1, n)
    y = np.clip(2 + 2 * a + b + 3 * X[:, 6] + rng.normal(0, 0.5, n), 0, 10)
    return X, y


@pytest.mark.parametrize("estimator", [dpml.LinearRegression, dpml.HuberRegressor, dpml.Ridge])
def test_feature_groups_shape_the_objective_noise_and_are_refused_where_they_shape_nothing(
    estimator,
):
    X, y = _one_hot_rows(4_000, 6)
    groups = [0, 0, 0, 1, 1, 1, 2]
    common = dict(epsilon=1.0, data_norm=math.sqrt(3), bounds=(0, 10))
    grouped = estimator(
        feature_groups=groups, random_state=dpml.InsecureSeed(2), **common
    ).fit(X, y)
    spherical = estimator(random_state=dpml.InsecureSeed(2), **common).fit(X, y)
    # The model file records the shaped noise: three groups and the intercept's own.
    assert grouped._model.info()["noise_groups"] == grouped.privacy_["noise_groups"] == 4
    assert spherical.privacy_["noise_groups"] is None
    assert not np.allclose(grouped.coef_, spherical.coef_)
    assert grouped.score(X, y) > 0.5
    ledger = dpml.Ledger(epsilon=5.0, delta=1e-5)
    refusals = [
        (dict(delta=1e-6), "the Gaussian mechanisms (delta > 0) add spherical noise"),
        (dict(mechanism="output"), "does not apply to mechanism='output'"),
        (dict(feature_groups=[0, 0, 1]), "feature_groups has 3 entries for 7 features"),
        (dict(feature_groups=[0.5] * 7), "one non-negative integer group index per feature"),
    ]
    for change, message in refusals:
        params = {**common, "feature_groups": groups, **change}
        with pytest.raises(dpml.DPMLValueError, match=re.escape(message)):
            estimator(**params).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0 and ledger.spent_delta == 0


def test_the_regressors_default_intercept_feature_is_the_recipes():
    """c = 0.5 (dp-fit's DEFAULT_INTERCEPT_SCALING), not the classifiers' 1: the rows are
    (x/B, c)/√(1 + c²), so the model file's feature map records c."""
    X, y = _one_hot_rows(2_000, 7)
    for estimator in (dpml.LinearRegression(), dpml.HuberRegressor(), dpml.Ridge()):
        assert estimator.get_params()["intercept_scaling"] == 0.5
        model = estimator.set_params(data_norm=math.sqrt(3), bounds=(0, 10)).fit(X, y)
        assert model.privacy_["intercept_scaling"] == 0.5
