"""Inputs into the form the Rust core reads in place.

A C-contiguous float64 numpy array and a scipy CSR matrix with float64 data are handed to
Rust as they are: no copy. Anything else -- lists, pandas or polars frames, Fortran-ordered
or strided arrays, float32, integers, booleans, other sparse formats -- is converted once,
here, into one of those two forms. Values are checked in Rust (NaN and infinities are
refused there, naming the row and feature).
"""

import warnings

import numpy as np

from ._errors import DPMLTypeError, DPMLValueError

try:
    from sklearn.exceptions import DataConversionWarning
except ImportError:  # pragma: no cover - scikit-learn is an optional extra

    class DataConversionWarning(UserWarning):
        """A conversion of the input that the caller may not have expected."""


def fit_params(estimator, params):
    """The keyword arguments of ``fit`` beyond ``ledger``: ``sample_weight`` (which
    scikit-learn's tools pass) refused by name unless None, anything else refused as
    Python refuses an unknown keyword. A private fit takes no per-row weights: the noise is
    calibrated to one row's largest effect on the model, and a weight w multiplies it by w
    (a weight read from the data would also leak); reweight by resampling rows, or train
    separate models on the groups."""
    name = type(estimator).__name__
    for key, value in params.items():
        if key == "sample_weight":
            if value is not None:
                raise DPMLValueError(
                    f"{name}.fit does not take sample_weight: a private fit's noise is "
                    "calibrated to one row's largest effect on the model, and a weight "
                    "would multiply that effect (the guarantee would no longer hold); "
                    "pass sample_weight=None, or resample the rows instead of weighting them"
                )
        else:
            raise DPMLTypeError(f"{name}.fit() got an unexpected keyword argument {key!r}")


def _is_sparse(X):
    return hasattr(X, "tocsr") and hasattr(X, "format") and hasattr(X, "nnz")


def _feature_names(X):
    if _is_sparse(X):
        return None
    # pyarrow's Table and RecordBatch: ``columns`` holds the arrays, ``column_names`` the
    # names; pandas and polars: ``columns`` holds the names.
    # (A pandas column named "column_names" is a Series, not a list: not taken for names.)
    columns = getattr(X, "column_names", None)
    if not isinstance(columns, (list, tuple)):
        columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = [c for c in columns]
    if names and all(isinstance(c, str) for c in names):
        return np.asarray(names, dtype=object)
    return None


def _check_feature_names(estimator, X, reset):
    names = _feature_names(X)
    cls = type(estimator).__name__
    if reset:
        if names is not None:
            estimator.feature_names_in_ = names
        elif hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    if fitted is None and names is None:
        return
    if fitted is not None and names is None:
        warnings.warn(
            f"X does not have valid feature names, but {cls} was fitted with feature names",
            UserWarning,
        )
        return
    if fitted is None:
        warnings.warn(
            f"X has feature names, but {cls} was fitted without feature names", UserWarning
        )
        return
    if len(fitted) != len(names) or np.any(fitted != names):
        raise DPMLValueError(
            "The feature names should match those that were passed during fit.\n"
            f"Fitted with: {list(fitted)}\nGot: {list(names)}"
        )


def _dense(X):
    """X as a 2-D float64 C-contiguous array; no copy when it already is one."""
    if (
        isinstance(X, np.ndarray)
        and X.dtype == np.float64
        and X.flags.c_contiguous
        and X.flags.aligned
    ):
        array = X
    else:
        try:
            array = np.asarray(X)
            if np.iscomplexobj(array):
                raise DPMLValueError("Complex data not supported: X must hold real numbers")
            # Aligned too: a buffer read at an odd offset (np.frombuffer) is contiguous but
            # not readable in place as f64 (ascontiguousarray would return it unchanged).
            array = np.require(array, dtype=np.float64, requirements=["C", "A"])
        except DPMLValueError:
            raise
        except (TypeError, ValueError) as e:
            raise DPMLTypeError(f"X must hold numbers ({e})") from e
    if array.ndim != 2:
        raise DPMLValueError(
            f"Expected 2D array, got {array.ndim}D array instead: X must be a matrix of "
            "n_samples rows and n_features columns. Reshape your data either using "
            "X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it "
            "contains a single sample."
        )
    return array


def _csr(X):
    """X as a CSR matrix with float64 data and no repeated entries (scipy sums repeats:
    that is what such a matrix means)."""
    csr = X.tocsr()
    if np.iscomplexobj(csr.data):
        raise DPMLValueError("Complex data not supported: X must hold real numbers")
    if csr.dtype != np.float64:
        try:
            csr = csr.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise DPMLTypeError(f"X must hold numbers ({e})") from e
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    parts = (csr.data, csr.indices, csr.indptr)
    if not all(a.flags.c_contiguous and a.flags.aligned for a in parts):
        # Strided or unaligned parts (e.g. np.frombuffer at an odd offset): copied once.
        csr = csr.copy()
    if len(csr.shape) != 2:
        raise DPMLValueError(f"Expected a 2D sparse matrix; got shape {csr.shape}")
    return csr


def rows(estimator, X, *, reset):
    """`(shape, kwargs)` for the Rust core: dense `x=array`, or CSR parts."""
    if X is None:
        raise DPMLValueError(f"{type(estimator).__name__} requires X; got None")
    _check_feature_names(estimator, X, reset)
    if _is_sparse(X):
        csr = _csr(X)
        shape = csr.shape
        call = dict(x=csr.data, csr=(csr.indices, csr.indptr), n_features=shape[1])
    else:
        array = _dense(X)
        shape = array.shape
        call = dict(x=array)
    if shape[0] == 0:
        raise DPMLValueError(
            f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required."
        )
    if shape[1] == 0:
        raise DPMLValueError(
            f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is required."
        )
    if reset:
        estimator.n_features_in_ = shape[1]
    elif shape[1] != estimator.n_features_in_:
        raise DPMLValueError(
            f"X has {shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    return shape, call


def labels(y, n_rows):
    """y as a 1-D numpy array of n_rows labels."""
    if y is None:
        raise DPMLValueError(
            "fit requires y to be passed, but the target y is None: pass one label per row"
        )
    array = np.asarray(y)
    if array.ndim == 2 and array.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples, ), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        array = array.ravel()
    if array.ndim != 1:
        raise DPMLValueError(f"y should be a 1d array; got shape {array.shape}")
    if len(array) != n_rows:
        raise DPMLValueError(f"y has {len(array)} labels for {n_rows} rows of X")
    return array


def _is_continuous(values):
    if values.dtype.kind == "f":
        return bool(np.any(values != np.round(values)))
    if values.dtype.kind == "O":
        return any(isinstance(v, float) and v != round(v) for v in values if v == v)
    return False


def public_classes(classes, y, infer):
    """The sorted public classes (``classes``), or with ``infer`` (dpml.testing's check
    mode only) the labels found in y."""
    if classes is None:
        if not infer:
            raise DPMLValueError(
                "classes is required: pass the list of possible labels (a public fact "
                "about the task, e.g. classes=[0, 1] or classes=['<=50K', '>50K']). It is "
                "never read from the data, whose label set can reveal a rare person."
            )
        if _is_continuous(y):
            raise DPMLValueError("Unknown label type: continuous values in y")
        try:
            found = np.unique(y)
        except TypeError as e:
            raise DPMLValueError(f"Unknown label type: labels of mixed types ({e})") from e
        return found
    values = np.asarray(classes)
    if values.ndim != 1:
        raise DPMLValueError(f"classes must be a flat list of labels; got shape {values.shape}")
    try:
        unique = np.unique(values)
    except TypeError as e:
        raise DPMLTypeError(f"classes must be labels of one comparable type ({e})") from e
    if len(unique) != len(values):
        raise DPMLValueError(f"classes holds repeated labels: {values.tolist()}")
    if len(unique) < 2:
        raise DPMLValueError(
            f"classes has {len(unique)} class; a classifier needs at least 2 classes"
        )
    return unique


def class_indices(y, classes):
    """The index in ``classes`` of every label, as int64; a label outside them is an
    error naming it."""
    if y.dtype.kind in "biuf" and classes.dtype.kind in "biuf":
        # Numbers, vectorized: two comparisons for two classes, else a search of the
        # sorted classes. Every label equal to a class is the common case; anything else
        # (NaN, a continuous value, a label outside classes) goes on to the error below.
        if len(classes) == 2:
            second = y == classes[1]
            if np.all(second | (y == classes[0])):
                return second.astype(np.int64)
        else:
            at = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
            if np.array_equal(classes[at], y):
                return at.astype(np.int64)
    if classes.dtype.kind not in "f" and _is_continuous(y):
        raise DPMLValueError(
            "Unknown label type: continuous values in y, outside classes "
            f"{classes.tolist()}"
        )
    lookup = {}
    for k, c in enumerate(classes.tolist()):
        lookup[c] = k
    out = np.empty(len(y), dtype=np.int64)
    for i, label in enumerate(y.tolist()):
        k = lookup.get(label)
        if k is None:
            raise DPMLValueError(
                f"y holds the label {label!r} (row {i}), which is not one of classes="
                f"{classes.tolist()}: classes are fixed in advance, never read from the data"
            )
        out[i] = k
    return out
