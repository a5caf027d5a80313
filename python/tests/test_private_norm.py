"""data_norm="private": a linear classifier whose row-norm bound is released privately from
a share of its ε (dp-fit's private_norm: the 0.9-quantile of the rows' norms, rows above it
clipped), the fit at the rest, the whole ε charged once."""

import math

import numpy as np
import pytest

import dpml


@pytest.fixture
def unscaled():
    """6,000 rows of 5 features of scale ~30 (no public bound known), two classes."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=6_000)
    X = rng.normal(scale=30.0, size=(6_000, 5))
    X[:, 0] += np.where(y == 1, 40.0, -40.0)
    return X, y


def test_the_bound_is_released_from_a_share_and_the_fit_gets_the_rest(unscaled):
    X, y = unscaled
    ledger = dpml.Ledger(2.0)
    model = dpml.LogisticRegression(epsilon=1.0, data_norm="private", classes=[0, 1]).fit(
        X, y, ledger=ledger
    )
    privacy = model.privacy_
    assert privacy["epsilon"] == 1.0 and ledger.spent_epsilon == pytest.approx(1.0)
    assert privacy["data_norm_epsilon"] == pytest.approx(0.1)
    assert privacy["epsilon_per_model"] == pytest.approx(0.9)
    assert "quantile" in privacy["data_norm_mechanism"] and privacy["clip_rows"]
    # Near the rows' 0.9-quantile norm (a grid step is 2^(1/4)).
    quantile = np.quantile(np.linalg.norm(X, axis=1), 0.9)
    assert quantile / 1.5 < privacy["data_norm"] < quantile * 1.5, (privacy["data_norm"], quantile)
    assert model.score(X, y) > 0.85
    # coef_ is in the input's units: the scores follow from it and the released bound.
    scores = model.decision_function(X[:20])
    np.testing.assert_allclose(scores, X[:20] @ model.coef_[0] + model.intercept_[0], rtol=1e-9, atol=1e-9)


def test_a_saved_model_keeps_its_released_bound(unscaled, tmp_path):
    X, y = unscaled
    model = dpml.HuberSVC(epsilon=1.0, delta=1e-6, data_norm="private", classes=[0, 1]).fit(X, y)
    assert model.privacy_["mechanism"] == "gaussian-objective"
    path = tmp_path / "m.dpml"
    model.save(path)
    loaded = dpml.HuberSVC.load(path, classes=[0, 1])
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_bad_spellings_and_a_non_private_fit_are_refused_by_name(unscaled):
    X, y = unscaled
    with pytest.raises(dpml.DPMLValueError, match="data_norm"):
        dpml.LogisticRegression(data_norm="privat", classes=[0, 1]).fit(X, y)
    with dpml.testing.check_mode(non_private=True):
        with pytest.raises(dpml.DPMLValueError, match="finite epsilon"):
            dpml.LogisticRegression(
                epsilon=math.inf, data_norm="private", classes=[0, 1]
            ).fit(X, y)


@pytest.fixture
def unscaled_targets():
    """6,000 rows of 5 features of scale ~30, a target linear in them within [−300, 300]."""
    rng = np.random.default_rng(7)
    X = rng.normal(scale=30.0, size=(6_000, 5))
    y = np.clip(X @ np.array([3.0, -2.0, 1.0, 0.5, 0.0]) + rng.normal(size=6_000), -300, 300)
    return X, y


@pytest.mark.parametrize("estimator", [dpml.LinearRegression, dpml.HuberRegressor])
def test_regressors_release_their_bound_from_a_share(unscaled_targets, estimator):
    X, y = unscaled_targets
    ledger = dpml.Ledger(2.0)
    model = estimator(epsilon=1.0, data_norm="private", bounds=(-300, 300)).fit(
        X, y, ledger=ledger
    )
    privacy = model.privacy_
    assert privacy["epsilon"] == 1.0 and ledger.spent_epsilon == pytest.approx(1.0)
    assert len(ledger) == 1
    assert privacy["data_norm_epsilon"] == pytest.approx(0.1) and privacy["clip_rows"]
    quantile = np.quantile(np.linalg.norm(X, axis=1), 0.9)
    assert quantile / 1.5 < privacy["data_norm"] < quantile * 1.5, (privacy["data_norm"], quantile)
    assert model.score(X, y) > 0.5
    # coef_ is in the input's units: predictions follow from it and the released bound
    # (within the target's bounds, where predictions are clamped).
    inside = np.abs(X[:50] @ model.coef_ + model.intercept_) < 290
    np.testing.assert_allclose(
        model.predict(X[:50])[inside],
        (X[:50] @ model.coef_ + model.intercept_)[inside],
        rtol=1e-9,
        atol=1e-9,
    )


def test_regressors_without_a_private_bound_refuse_it_charging_nothing(unscaled_targets):
    X, y = unscaled_targets
    ledger = dpml.Ledger(2.0)
    with pytest.raises(dpml.DPMLValueError, match="Ridge needs a public data_norm"):
        dpml.Ridge(epsilon=1.0, data_norm="private", bounds=(-300, 300)).fit(X, y, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="replace-one"):
        dpml.DPSGDRegressor(
            epsilon=1.0,
            delta=1e-6,
            data_norm="private",
            bounds=(-300, 300),
            neighbouring="add-remove",
            public_rows=6_000,
        ).fit(X, y)
    assert len(ledger) == 0


def test_dpsgd_regressor_releases_its_bound_and_charges_the_sum(unscaled_targets):
    X, y = unscaled_targets
    ledger = dpml.Ledger(2.0, delta=1e-5)
    model = dpml.DPSGDRegressor(
        epsilon=1.0, delta=1e-6, data_norm="private", bounds=(-300, 300), epochs=5
    ).fit(X, y, ledger=ledger)
    privacy = model.privacy_
    assert privacy["epsilon"] == 1.0 and privacy["data_norm_epsilon"] == pytest.approx(0.1)
    # DP-SGD is calibrated to the other 90% (its accountant's replace-one ε at most that).
    assert privacy["replace_one_epsilon"] <= 0.9 + 1e-12
    assert privacy["replace_one_epsilon"] > 0.8
    quantile = np.quantile(np.linalg.norm(X, axis=1), 0.9)
    assert quantile / 1.5 < privacy["data_norm"] < quantile * 1.5, (privacy["data_norm"], quantile)
    # The ledger holds the sequential sum: DP-SGD's own curve would leave the bound out.
    assert len(ledger) == 1
    assert ledger.spent_epsilon == pytest.approx(1.0) and ledger.spent_delta == pytest.approx(1e-6)
    assert model.score(X, y) > 0.5


def test_a_saved_regressor_keeps_its_released_bound(unscaled_targets, tmp_path):
    X, y = unscaled_targets
    model = dpml.LinearRegression(
        epsilon=1.0, delta=1e-6, mechanism="adassp", data_norm="private", bounds=(-300, 300)
    ).fit(X, y)
    assert model.privacy_["mechanism"] == "adassp" and model.privacy_["data_norm"] > 1
    path = tmp_path / "r.dpml"
    model.save(path)
    loaded = dpml.LinearRegression.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_dpsgd_classifier_releases_its_scale_and_charges_the_sum(unscaled):
    X, y = unscaled
    ledger = dpml.Ledger(2.0, delta=1e-5)
    model = dpml.DPSGDClassifier(
        epsilon=1.0, delta=1e-6, data_norm="private", classes=[0, 1], epochs=3
    ).fit(X, y, ledger=ledger)
    privacy = model.privacy_
    assert privacy["epsilon"] == 1.0 and privacy["data_norm_epsilon"] == pytest.approx(0.1)
    assert 0.8 < privacy["replace_one_epsilon_per_model"] <= 0.9 + 1e-12
    quantile = np.quantile(np.linalg.norm(X, axis=1), 0.9)
    assert quantile / 1.5 < privacy["data_norm"] < quantile * 1.5, (privacy["data_norm"], quantile)
    # The sequential sum, not DP-SGD's curve (which would report about 0.9 alone).
    assert len(ledger) == 1
    assert ledger.spent_epsilon == pytest.approx(1.0) and ledger.spent_delta == pytest.approx(1e-6)
    assert model.score(X, y) > 0.85
    # Scores follow from coef_ in the input's units and the released scale.
    np.testing.assert_allclose(
        model.decision_function(X[:20]),
        X[:20] @ model.coef_[0] + model.intercept_[0],
        rtol=1e-9,
        atol=1e-9,
    )
    with pytest.raises(dpml.DPMLValueError, match="replace-one"):
        dpml.DPSGDClassifier(
            epsilon=1.0, delta=1e-6, data_norm="private", classes=[0, 1],
            neighbouring="add-remove", public_rows=6_000,
        ).fit(X, y)
