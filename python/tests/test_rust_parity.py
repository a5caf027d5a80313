"""Python and Rust give the same model for the same seed and data."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import dpml


def seeded(**params):
    return dpml.LogisticRegression(
        epsilon=1.0,
        data_norm=2.0,
        regularization=0.01,
        random_state=dpml.InsecureSeed(42),
        **params,
    )


@pytest.mark.parametrize("n_classes,name", [(2, "seeded_binary"), (3, "seeded_ovr")])
def test_seeded_fit_is_the_rust_fit_byte_for_byte(fixtures, reference_data, n_classes, name):
    X, y = reference_data(n_classes)
    clf = seeded(classes=list(range(n_classes))).fit(X, y)
    files = clf._models.to_bytes()
    expected = [(fixtures / f"{name}_{k}.dpm").read_bytes() for k in range(len(files))]
    assert len(files) == (1 if n_classes == 2 else n_classes)
    assert [bytes(f) for f in files] == expected


def test_sparse_and_dense_inputs_give_the_same_model(reference_data):
    X, y = reference_data(2)
    dense = seeded(classes=[0, 1]).fit(X, y)
    for matrix in (sp.csr_matrix(X), sp.csc_matrix(X), sp.coo_matrix(X)):
        sparse = seeded(classes=[0, 1]).fit(matrix, y)
        assert sparse._models.to_bytes() == dense._models.to_bytes()
        np.testing.assert_array_equal(sparse.decision_function(matrix), dense.decision_function(X))


def test_a_rust_model_file_loads_and_predicts_like_the_python_fit(fixtures, reference_data):
    X, y = reference_data(2)
    fitted = seeded(classes=[0, 1]).fit(X, y)
    loaded = dpml.LogisticRegression.load(fixtures / "seeded_binary_0.dpm", classes=[0, 1])
    np.testing.assert_array_equal(loaded.decision_function(X), fitted.decision_function(X))
    np.testing.assert_array_equal(loaded.coef_, fitted.coef_)
    assert loaded.privacy_["epsilon"] == 1.0 and loaded.privacy_["from_file"]


def test_save_writes_the_rust_file(tmp_path, fixtures, reference_data):
    X, y = reference_data(2)
    path = tmp_path / "model.dpm"
    seeded(classes=[0, 1]).fit(X, y).save(path)
    assert path.read_bytes() == (fixtures / "seeded_binary_0.dpm").read_bytes()


def test_decision_function_is_coef_times_x_plus_intercept(reference_data):
    X, y = reference_data(3)
    clf = seeded(classes=[0, 1, 2]).fit(X, y)
    np.testing.assert_allclose(
        clf.decision_function(X), X @ clf.coef_.T + clf.intercept_, rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: seeded(classes=["a", "b", "c"]),
        lambda: dpml.HuberSVC(epsilon=2.0, data_norm=2.0, classes=["a", "b", "c"]),
        lambda: dpml.RandomFeaturesSVC(
            epsilon=2.0, classes=["a", "b", "c"], n_components=30, gamma=0.5
        ),
    ],
)
def test_pickle_round_trip_keeps_the_model(make, reference_data):
    X, y = reference_data(3)
    labels = np.array(["a", "b", "c"])[y]
    clf = make().fit(X, labels)
    copy = pickle.loads(pickle.dumps(clf))
    assert copy._models.to_bytes() == clf._models.to_bytes()
    np.testing.assert_array_equal(copy.predict(X), clf.predict(X))
    np.testing.assert_array_equal(copy.decision_function(X), clf.decision_function(X))
    assert copy.privacy_ == clf.privacy_
    import joblib

    assert joblib.load(_dump(joblib, clf))._models.to_bytes() == clf._models.to_bytes()


def _dump(joblib, obj):
    import io

    buffer = io.BytesIO()
    joblib.dump(obj, buffer)
    buffer.seek(0)
    return buffer


def test_kernel_file_round_trip(tmp_path, reference_data):
    X, y = reference_data(2)
    clf = dpml.RandomFeaturesSVC(epsilon=1.0, classes=[0, 1], n_components=20).fit(X, y)
    clf.save(tmp_path / "k.dpm")
    loaded = dpml.RandomFeaturesSVC.load(tmp_path / "k.dpm", classes=[0, 1])
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_multiclass_save_is_refused_with_the_alternative(tmp_path, reference_data):
    X, y = reference_data(3)
    clf = seeded(classes=[0, 1, 2]).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="one-vs-rest models"):
        clf.save(tmp_path / "m.dpm")
