"""Parameters a scikit-learn user passes, refused by name with one range everywhere (issue
48): δ in [0, MAX_DELTA] for every fit and ledger, ε and δ real numbers, no zero spend,
parameter errors that are ValueErrors, DP-SGD's batch on small data and its probabilities,
pyarrow's feature names, sample_weight, and messages that name the right parameter."""

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

import dpml


def logistic(**params):
    return dpml.LogisticRegression(**{"data_norm": 2.0, "classes": [0, 1], **params})


def sgd(**params):
    return dpml.DPSGDClassifier(**{"delta": 1e-6, "classes": [0, 1], **params})


# -- δ: one range everywhere ---------------------------------------------------------------


def test_rejects_a_delta_that_protects_no_one_everywhere(blobs):
    X, y = blobs
    assert dpml.MAX_DELTA == 0.1 and dpml.MAX_EPSILON == 1000.0
    for delta in (0.999999, 0.5, math.nextafter(dpml.MAX_DELTA, 1), 1.0):
        with pytest.raises(dpml.DPMLValueError, match=r"delta=.*0\.1\]"):
            logistic(delta=delta).fit(X, y)
        with pytest.raises(dpml.DPMLValueError, match=r"delta=.*0\.1\]"):
            sgd(delta=delta).fit(X, y)
        with pytest.raises(dpml.DPMLValueError, match="delta"):
            dpml.Ledger(1.0, delta=delta)
        with pytest.raises(dpml.DPMLValueError, match="delta"):
            dpml.Ledger(1.0, delta=1e-3).charge(0.1, delta)
    # The cap itself is taken.
    ledger = dpml.Ledger(2.0, delta=dpml.MAX_DELTA)
    logistic(delta=dpml.MAX_DELTA).fit(X, y, ledger=ledger)
    assert ledger.spent_delta == dpml.MAX_DELTA


def test_rejects_a_ledger_file_with_a_delta_of_one(tmp_path):
    with pytest.raises(dpml.DPMLValueError, match="delta"):
        dpml.Ledger.create(tmp_path / "ledger.json", 1.0, delta=1.0)
    assert not (tmp_path / "ledger.json").exists()


@pytest.mark.parametrize("bad", ["1", "1e-6", b"1", True, None, [1.0], 1 + 0j])
def test_rejects_epsilon_and_delta_of_the_wrong_type_naming_them(bad):
    with pytest.raises(dpml.DPMLTypeError, match=r"^epsilon="):
        dpml.Ledger(bad)
    if bad is not None:  # delta=None is no number either
        with pytest.raises(dpml.DPMLTypeError, match=r"^delta="):
            dpml.Ledger(1.0, delta=bad)
    with pytest.raises(dpml.DPMLTypeError, match=r"^epsilon="):
        dpml.Ledger(1.0).charge(bad)


def test_rejects_a_zero_spend():
    ledger = dpml.Ledger(1.0, delta=1e-6)
    for epsilon, delta in [(0, 0), (0.0, 0.0), (0, 1e-7)]:
        with pytest.raises(dpml.DPMLValueError, match="spend must be > 0"):
            ledger.charge(epsilon, delta)
    assert len(ledger) == 0
    ledger.charge(0.25)
    assert len(ledger) == 1


def test_parameter_errors_are_value_errors_as_in_scikit_learn(blobs):
    """scikit-learn's InvalidParameterError is a ValueError and a TypeError: so is every
    parameter error of dpml, of either kind."""
    X, y = blobs
    assert issubclass(dpml.DPMLTypeError, ValueError) and issubclass(dpml.DPMLTypeError, TypeError)
    assert issubclass(dpml.DPMLTypeError, dpml.DPMLValueError)
    for bad in (
        lambda: logistic(epsilon="1").fit(X, y),
        lambda: logistic(delta="1e-6").fit(X, y),
        lambda: logistic(fit_intercept="yes").fit(X, y),
        lambda: sgd(batch_size=2.5).fit(X, y),
        lambda: dpml.Ledger("1"),
    ):
        with pytest.raises(ValueError):
            bad()
        with pytest.raises(TypeError):
            bad()


# -- DP-SGD on small data, and its probabilities ------------------------------------------


def test_rejects_nothing_of_small_data_with_dpsgds_default_batch():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    model = sgd(random_state=dpml.InsecureSeed(1)).fit(X, y)
    assert model.batch_size == "auto"
    assert model.privacy_["batch_size"] == 40 and model.privacy_["sampling_rate"] == 1.0
    # 256 rows or more: today's 256, so the fits of larger data do not move.
    X, y = np.tile(X, (10, 1)), np.tile(y, 10)
    auto = sgd(random_state=dpml.InsecureSeed(1)).fit(X, y)
    given = sgd(batch_size=256, random_state=dpml.InsecureSeed(1)).fit(X, y)
    assert auto.privacy_["batch_size"] == 256
    assert np.array_equal(auto.coef_, given.coef_)


def test_rejects_a_batch_above_n_naming_n_and_the_fix():
    X = np.random.default_rng(1).uniform(-1, 1, size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(dpml.DPMLValueError, match=r"batch_size=256 is above the n=100 rows.*'auto'"):
        sgd(batch_size=256).fit(X, y)
    # Under add/remove the public estimate is named, never the data's count.
    with pytest.raises(dpml.DPMLValueError, match=r"public_rows=50 rows") as e:
        sgd(batch_size=64, neighbouring="add-remove", public_rows=50).fit(X, y)
    assert "100" not in str(e.value)
    with pytest.raises(dpml.DPMLValueError, match="batch_size='big'"):
        sgd(batch_size="big").fit(X, y)


def test_dpsgd_with_the_logistic_loss_has_predict_proba(blobs):
    X, y = blobs
    model = sgd(random_state=dpml.InsecureSeed(2)).fit(X, y)
    p = model.predict_proba(X[:5])
    assert p.shape == (5, 2) and np.allclose(p.sum(axis=1), 1)
    assert np.array_equal(model.classes_[np.argmax(p, axis=1)], model.predict(X[:5]))
    assert np.allclose(np.log(p), model.predict_log_proba(X[:5]))
    three = sgd(classes=[0, 1, 2], random_state=dpml.InsecureSeed(2)).fit(X, y)
    assert np.allclose(three.predict_proba(X[:5]).sum(axis=1), 1)
    # The Huber loss has no probabilities: no such method, as in scikit-learn.
    huber = sgd(loss="huber")
    assert not hasattr(huber, "predict_proba")
    assert hasattr(sgd(), "predict_proba")


def test_one_vs_rest_probabilities_keep_the_order_of_saturated_scores():
    """DP-SGD's large weights give scores whose σ underflows to 0 or rounds to 1: the most
    probable class must still be the predicted one (scikit-learn's check_classifiers_train
    failed on 38 of 300 rows)."""
    from dpml.linear import logistic_proba

    scores = np.array([[-800.0, -900.0, -850.0], [40.0, 39.0, -1.0], [39.0, 40.0, 38.5], [0.3, -0.2, 0.1]])
    p = logistic_proba(scores)
    assert np.array_equal(np.argmax(p, axis=1), np.argmax(scores, axis=1))
    assert np.allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    sigma = 1 / (1 + np.exp(-scores[3]))
    assert np.allclose(p[3], sigma / sigma.sum(), rtol=1e-15)


# -- input and fit keywords ----------------------------------------------------------------


def test_pyarrow_input_records_feature_names(blobs):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    X, y = blobs
    names = ["a", "b", "c", "d"]
    table = pa.table({n: X[:, j] for j, n in enumerate(names)})
    model = logistic(random_state=dpml.InsecureSeed(0)).fit(table, y)
    assert list(model.feature_names_in_) == names
    frame = pd.DataFrame(X, columns=names)
    assert np.array_equal(model.predict(table), model.predict(frame))
    with pytest.raises(dpml.DPMLValueError, match="feature names should match"):
        model.predict(table.rename_columns(["a", "b", "c", "e"]))
    batch = pa.RecordBatch.from_pandas(frame)
    assert list(logistic().fit(batch, y).feature_names_in_) == names
    # A pandas column named "column_names" is a column, not the names.
    odd = pd.DataFrame(X, columns=["column_names", "b", "c", "d"])
    assert list(logistic().fit(odd, y).feature_names_in_) == ["column_names", "b", "c", "d"]


def test_rejects_sample_weight_by_name(blobs):
    X, y = blobs
    weights = np.ones(len(y))
    for estimator in (logistic(), sgd(), dpml.HuberSVC(data_norm=2.0, classes=[0, 1])):
        with pytest.raises(dpml.DPMLValueError, match="does not take sample_weight") as e:
            estimator.fit(X, y, sample_weight=weights)
        assert "guarantee" in str(e.value)
        estimator.fit(X, y, sample_weight=None)  # no weights: the ordinary fit
    with pytest.raises(dpml.DPMLValueError, match="sample_weight"):
        cross_val_score(
            logistic(), X, y, cv=2, params={"sample_weight": weights}, error_score="raise"
        )
    with pytest.raises(TypeError, match="unexpected keyword argument 'weights'"):
        logistic().fit(X, y, weights=weights)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match="sample_weight"):
        clone(logistic()).fit(X, y, ledger=ledger, sample_weight=weights)
    assert len(ledger) == 0


def test_check_mode_is_documented():
    doc = dpml.testing.check_mode.__doc__
    for needed in ("tests only", "nothing trained inside it is private", "InsecureSeed",
                   "non_private", "test_mode"):
        assert needed.lower() in doc.lower(), needed


# -- messages that name the right parameter ------------------------------------------------


def test_a_tiny_delta_is_blamed_on_delta_not_epsilon(blobs):
    """Gaussian objective perturbation at δ = 1e-300 needs noise beyond double precision:
    the refusal names δ (it said "epsilon = 1.0 is too small")."""
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError) as e:
        logistic(delta=1e-300).fit(X, y)
    message = str(e.value)
    assert "delta" in message and "1e-300" in message, message
    assert not message.startswith("epsilon"), message


def test_n_components_is_named_n_components(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError, match="n_components") as e:
        dpml.RandomFeaturesSVC(classes=[0, 1], n_components=10**9).fit(X, y)
    assert "features" not in str(e.value).split("n_components")[0]
