"""dpml.model_selection.PrivateRegressionSearch: Λ chosen privately among regressors by
dp-tune's split-and-select (held-out clamped squared error), charged once; refusals before
any charge, naming rows and never values. The score's sensitivity and its mutants are
tested in dp-tune (regression_tests.rs)."""
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
