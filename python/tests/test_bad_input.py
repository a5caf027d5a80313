"""Bad input by class: a dpml exception naming the problem, never a crash or a panic."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import dpml
from dpml import _dpml


def clf(**params):
    params = {"epsilon": 1.0, "data_norm": 2.0, "classes": [0, 1], **params}
    return dpml.LogisticRegression(**params)


@pytest.fixture
def data(blobs):
    return blobs


@pytest.mark.parametrize(
    "value,pattern", [(np.nan, "not finite: NaN"), (np.inf, "not finite: inf"), (-np.inf, "not finite: -inf")]
)
def test_non_finite_values_are_refused_naming_row_and_feature(data, value, pattern):
    X, y = data
    X = X.copy()
    X[17, 2] = value
    with pytest.raises(dpml.DPMLValueError, match=f"feature 2 of row 17 is {pattern}"):
        clf().fit(X, y)
    fitted = clf().fit(data[0], y)
    with pytest.raises(dpml.DPMLValueError, match="not finite"):
        fitted.predict(X)


def test_wrong_dimensions(data):
    X, y = data
    with pytest.raises(dpml.DPMLValueError, match="Expected 2D array, got 1D array"):
        clf().fit(X[:, 0], y)
    with pytest.raises(dpml.DPMLValueError, match="Expected 2D array, got 3D array"):
        clf().fit(X[:, :, None], y)
    with pytest.raises(dpml.DPMLValueError, match="y has 399 labels for 400 rows"):
        clf().fit(X, y[1:])
    fitted = clf().fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="X has 3 features, but LogisticRegression is expecting 4"):
        fitted.predict(X[:, :3])
    with pytest.raises(dpml.DPMLValueError, match="0 sample"):
        clf().fit(X[:0], y[:0])


def test_object_and_string_arrays(data):
    X, y = data
    words = X.astype(str).astype(object)
    words[3, 1] = "seven"
    with pytest.raises(dpml.DPMLTypeError, match="X must hold numbers .*seven"):
        clf().fit(words, y)
    with pytest.raises(dpml.DPMLValueError, match="Complex data not supported"):
        clf().fit(X + 1j, y)
    # Numbers stored as objects or strings are numbers: converted once.
    clf().fit(X.astype(object), y)


def test_non_contiguous_and_float32_are_converted_by_estimators_refused_by_the_core(data):
    X, y = data
    model = clf(random_state=dpml.InsecureSeed(3)).fit(X, y)
    for converted in (np.asfortranarray(X), X.astype(np.float32).astype(np.float64)):
        clf(random_state=dpml.InsecureSeed(3)).fit(converted, y)
    np.testing.assert_array_equal(
        clf(random_state=dpml.InsecureSeed(3)).fit(np.asfortranarray(X), y).coef_, model.coef_
    )
    clf().fit(X.astype(np.float32), y)
    clf().fit(X[::2], y[::2])  # strided
    # The core reads in place only: it refuses what it would have to copy, naming it.
    with pytest.raises(dpml.DPMLTypeError, match="C-contiguous.*not C-contiguous"):
        model._models.decision(np.asfortranarray(X))
    with pytest.raises(dpml.DPMLTypeError, match="2-D float64 numpy array.*float32"):
        model._models.decision(X.astype(np.float32))
    with pytest.raises(dpml.DPMLTypeError, match="2-D float64 numpy array.*list"):
        model._models.decision([[1.0, 2.0, 3.0, 4.0]])


def unaligned(a):
    """A C-contiguous float64 copy of ``a`` at an odd address (as ``np.frombuffer`` gives
    for a buffer read at an offset that is not a multiple of 8)."""
    raw = np.zeros(a.nbytes + 4, dtype=np.uint8)
    out = np.frombuffer(raw.data, dtype=np.float64, count=a.size, offset=4).reshape(a.shape)
    assert out.flags.c_contiguous and not out.flags.aligned
    np.copyto(out, a)
    return out


def test_unaligned_arrays_are_converted_once(data):
    """A contiguous but unaligned float64 array (dense, or a CSR matrix's data) cannot be
    read in place as f64: it is copied once and fits as the aligned one does (before the
    fix, `bench peers` found the CSR case refused with a confusing TypeError)."""
    X, y = data
    seeded = dict(random_state=dpml.InsecureSeed(5))
    model = clf(**seeded).fit(X, y)
    np.testing.assert_array_equal(clf(**seeded).fit(unaligned(X), y).coef_, model.coef_)
    csr = sp.csr_matrix(X)
    odd = sp.csr_matrix((unaligned(csr.data), csr.indices, csr.indptr), shape=csr.shape)
    assert not odd.data.flags.aligned
    np.testing.assert_array_equal(clf(**seeded).fit(odd, y).coef_, clf(**seeded).fit(csr, y).coef_)
    np.testing.assert_array_equal(model.predict(unaligned(X)), model.predict(X))


def test_sparse_matrices_of_the_wrong_shape(data):
    X, y = data
    fitted = clf().fit(sp.csr_matrix(X), y)
    with pytest.raises(dpml.DPMLValueError, match="X has 5 features, but LogisticRegression is expecting 4"):
        fitted.predict(sp.csr_matrix(np.hstack([X, X[:, :1]])))
    with pytest.raises(dpml.DPMLValueError, match="y has 400 labels for 399 rows"):
        clf().fit(sp.csr_matrix(X[1:]), y)
    m = sp.csr_matrix(X)
    with pytest.raises(dpml.DPMLValueError, match="column index out of range"):
        fitted._models.decision(m.data, csr=(m.indices, m.indptr), n_features=2)
    bad = m.indptr.copy()
    bad[5] = 10**6
    with pytest.raises(dpml.DPMLValueError, match="invalid indptr"):
        fitted._models.decision(m.data, csr=(m.indices, bad), n_features=4)


def test_labels_outside_classes(data):
    X, y = data
    labels = y.copy()
    labels[11] = 2
    with pytest.raises(dpml.DPMLValueError, match=r"label 2 \(row 11\), which is not one of classes=\[0, 1\]"):
        clf().fit(X, labels)
    with pytest.raises(dpml.DPMLValueError, match="not one of classes"):
        clf(classes=["no", "yes"]).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="classes is required"):
        clf(classes=None).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="repeated labels"):
        clf(classes=[0, 1, 1]).fit(X, y)


def test_numeric_labels_that_match_no_class_are_named(data):
    # The vectorized paths (two classes: comparisons; more: a sorted search) hand every
    # mismatch to the error that names it.
    X, y = data
    labels = y.astype(float)
    labels[7] = np.nan
    with pytest.raises(dpml.DPMLValueError, match=r"label nan \(row 7\)"):
        clf(classes=[0.0, 1.0]).fit(X, labels)
    labels[7] = 0.5
    with pytest.raises(dpml.DPMLValueError, match="continuous values in y"):
        clf().fit(X, labels)
    with pytest.raises(dpml.DPMLValueError, match=r"label 0.5 \(row 7\)"):
        clf(classes=[0.0, 1.0]).fit(X, labels)
    labels = y.copy()
    labels[3] = 5
    with pytest.raises(dpml.DPMLValueError, match=r"label 5 \(row 3\)"):
        clf(classes=[0, 1, 2]).fit(X, labels)
    # Labels of another numeric type than the classes still match them.
    model = clf(classes=[0, 1]).fit(X, y.astype(np.float32))
    assert model.classes_.tolist() == [0, 1]
    assert clf(classes=[False, True]).fit(X, y.astype(bool)).classes_.tolist() == [False, True]


def test_missing_or_exceeded_bound(data):
    X, y = data
    with pytest.raises(dpml.DPMLValueError, match="data_norm is required: pass a public bound"):
        clf(data_norm=None).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match=r"row \d+ has a norm above data_norm = 0.1.*clip_rows=True"):
        clf(data_norm=0.1).fit(X, y)
    clipped = clf(data_norm=0.1, clip_rows=True).fit(X, y)
    assert clipped.privacy_["clip_rows"] is True and clipped.privacy_["data_norm"] == 0.1


def test_rows_normalized_to_the_bound_are_accepted_and_norms_never_printed():
    """Rows divided by their computed norm (scikit-learn's Normalizer) land a few ulps outside
    the unit ball; they are settled onto it, not refused. A row really outside is refused
    by index, and its norm (the data's) is not in the message."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2_000, 30)) * rng.uniform(0.1, 40, size=30)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    # The premise, in exact arithmetic: some rows are outside the ball by rounding.
    outside = sum(sum(Fraction(v) ** 2 for v in row) > 1 for row in X[:300])
    assert outside > 0
    y = (X[:, 0] > 0).astype(int)
    model = clf(data_norm=1.0).fit(X, y)
    assert model.privacy_["data_norm"] == 1.0
    X[7] *= 1.5
    with pytest.raises(dpml.DPMLValueError, match=r"row 7 has a norm above data_norm = 1") as refused:
        clf(data_norm=1.0).fit(X, y)
    assert "1.5" not in str(refused.value), refused.value


def test_bad_parameters_are_named(data):
    X, y = data
    cases = [
        (dict(epsilon=0.0), "epsilon=0.0 must be > 0"),
        (dict(epsilon=float("inf")), "epsilon=inf would train without privacy"),
        (dict(epsilon=5000), "at most 1000"),
        (dict(mechanism="laplace"), "mechanism='laplace'"),
        (dict(calibration="paper"), "calibration='paper'"),
        (dict(regularization=-1.0), "regularization=-1.0 must be > 0"),
        (dict(C=1.0, regularization=0.1), "either C=1.0 or regularization=0.1"),
        (dict(tol=1e-300), "tolerance"),
        (dict(feature_groups=[0, 0]), "feature_groups has 2 entries for 4 features"),
        (dict(random_state=0), "random_state=0 is refused: a seeded generator"),
    ]
    for params, pattern in cases:
        with pytest.raises(dpml.DPMLError, match=pattern):
            clf(**params).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="huber_width"):
        dpml.HuberSVC(data_norm=1.0, classes=[0, 1], huber_width=0.0).fit(X, y)
    with pytest.raises(dpml.DPMLError, match="Orthogonal|orthogonal"):
        dpml.RandomFeaturesSVC(classes=[0, 1], kernel="laplacian", sampling="orthogonal").fit(X, y)
    # Counts too large for the core's integers are refused by name, not by the conversion.
    for n, error in [(0, dpml.DPMLValueError), (2.5, dpml.DPMLTypeError), (2**64, dpml.DPMLValueError)]:
        with pytest.raises(error, match="n_components"):
            dpml.RandomFeaturesSVC(classes=[0, 1], n_components=n).fit(X, y)


def test_predicting_before_fit_raises_not_fitted(data):
    from sklearn.exceptions import NotFittedError

    for estimator in (clf(), dpml.HuberSVC(), dpml.RandomFeaturesSVC()):
        with pytest.raises(NotFittedError):
            estimator.predict(data[0])
        with pytest.raises(dpml.NotFittedError):
            estimator.decision_function(data[0])


def test_raw_core_refuses_wrong_types_without_crashing():
    with pytest.raises(dpml.DPMLTypeError, match="y \\(class indices\\) must be a 1-D int64"):
        _dpml.fit_linear_model(
            np.zeros((2, 2)), np.zeros(2), 2, loss_name="logistic", huber_width=1.0,
            mechanism_name="objective", epsilon=1.0, calibration="cliff-free",
            regularization=0.1, feature_groups=None, tol=None, data_norm=1.0,
            clip_rows=False, intercept=None, seed=None,
        )
    with pytest.raises(dpml.DPMLValueError, match="n_features is required"):
        _dpml.fit_linear_model(
            np.zeros(2), np.zeros(2, dtype=np.int64), 2, csr=(np.zeros(2, np.int32), np.zeros(3, np.int32)),
            loss_name="logistic", huber_width=1.0, mechanism_name="objective", epsilon=1.0,
            calibration="cliff-free", regularization=0.1, feature_groups=None, tol=None,
            data_norm=1.0, clip_rows=False, intercept=None, seed=None,
        )
    with pytest.raises(dpml.DPMLValueError, match="invalid model file: 11 bytes"):
        _dpml.Models.from_bytes("linear", [b"not a model"])
