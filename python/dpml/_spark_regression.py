"""``dpml.spark``'s regressors: ``LinearRegression``, ``Ridge`` and ``HuberRegressor``
fitted over a Spark DataFrame of feature vectors and real targets (pyspark.ml's
``featuresCol`` / ``labelCol`` / ``predictionCol``), or of raw columns that a regression
``dpml.Schema`` encodes on the executors (``schema=``: the classifiers' encoder and column
checks, the target's public bounds the schema's), by the in-memory regressors' recipe
(dp-fit's regression plan, its calibration and release over the partitions' merged sums),
with the classifiers' passes, checks and ledger (see ``dpml.spark``'s Privacy section).
"""

import inspect
import math
import numbers

import numpy as np

from . import _dpml, regression, testing
from ._active import resolve_ledger
from ._base import NEIGHBOURS, _delta, _number, epsilon_and_mechanism, warn_outlook
from ._errors import DPMLError, DPMLTypeError, DPMLValueError
from ._randomness import resolve_seed
from ._spark_vectors import _FEATURES
from .spark import (
    _check_column_types,
    _checked_schema,
    _first_line,
    _Passes,
    _require_pyspark,
    _validated,
)

_REGRESSION_BLOCK_SCHEMA = (
    "partition long, rows long, checksum string, block binary, targets binary, error string"
)
_SUMS_SCHEMA = "partition long, rows long, checksum string, sums binary, error string"
_CHECK_SCHEMA = "partition long, error string"


def _block_record(partition, rows, checksum, block, targets, error):
    """One partition's encoded block (or its refusal, ``error``) as the one-record Arrow
    batch of ``_REGRESSION_BLOCK_SCHEMA``."""
    import pyarrow as pa

    return pa.RecordBatch.from_pydict(
        {
            "partition": [partition],
            "rows": [rows],
            "checksum": [str(checksum)],
            "block": [bytes(block)],
            "targets": [bytes(targets)],
            "error": [error],
        },
        schema=pa.schema(
            [
                ("partition", pa.int64()),
                ("rows", pa.int64()),
                ("checksum", pa.string()),
                ("block", pa.binary()),
                ("targets", pa.binary()),
                ("error", pa.string()),
            ]
        ),
    )


def _encode_function(n_features, options):
    """What each partition runs once per fit: its feature vectors and targets encoded into
    one block and its scaled targets (``options``: the row transform and the target
    bounds), as one record, or the refusal, naming the row within the partition."""

    def run(batches):
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused
        from dpml._spark_regression import _block_record
        from dpml._spark_vectors import _dense_batch, _RowRefused

        partition = TaskContext.get().partitionId()
        xs, ys, first_row, error = [], [], 0, None
        for batch in batches:
            try:
                x, y = _dense_batch(batch, n_features, True)
            except _RowRefused as e:
                error = f"DPMLValueError: row {first_row + e.row}: {e.why}"
                break
            xs.append(x)
            ys.append(y)
            first_row += batch.num_rows
        rows, checksum, block, targets = 0, 0, b"", b""
        if error is None:
            x = np.concatenate(xs) if xs else np.zeros((0, n_features))
            y = np.concatenate(ys) if ys else np.zeros(0)
            try:
                rows, checksum, block, targets = core.spark_regression_encode(x, y, **options)
            except Refused as e:
                error = f"{type(e).__name__}: {e}"
        yield _block_record(partition, rows, checksum, block, targets, error)

    return run


def _schema_encode_function(schema_text, schema_hash, options):
    """What each partition runs once per fit with a regression schema: its raw columns
    encoded by the schema (the classifiers' encoder: public bounds and levels, every
    record checked, the target against the schema's bounds), then its rows and targets
    encoded into one block as ``_encode_function`` encodes them; a refused record is sent
    back naming its row within the partition and its column, never its value."""

    def run(batches):
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused
        from dpml._spark_regression import _block_record
        from dpml.spark import _partition_reader

        partition = TaskContext.get().partitionId()
        encoder = core.Schema.from_toml(schema_text)
        if encoder.hash != schema_hash:
            yield _block_record(
                partition, 0, 0, b"", b"", "the executor's schema differs from the driver's"
            )
            return
        try:
            x, y = encoder.encode_stream(_partition_reader(batches).__arrow_c_stream__(), True)
            rows, checksum, block, targets = core.spark_regression_encode(x, y, **options)
        except Refused as e:
            # The data's fault, not the executor's: sent back, never retried.
            yield _block_record(partition, 0, 0, b"", b"", f"{type(e).__name__}: {e}")
            return
        yield _block_record(partition, rows, checksum, block, targets, None)

    return run


def _sums_function(n_features, w, with_hessian, threshold):
    """What each partition runs on every pass: its block's sums at ``w``, every row
    checked again by the regression contract."""

    def run(batches):
        import pyarrow as pa

        from dpml import _dpml as core
        from dpml._errors import DPMLValueError as Refused

        names = ["partition", "rows", "checksum", "sums", "error"]
        out_schema = pa.schema(
            [
                ("partition", pa.int64()),
                ("rows", pa.int64()),
                ("checksum", pa.string()),
                ("sums", pa.binary()),
                ("error", pa.string()),
            ]
        )
        for batch in batches:
            out = {name: [] for name in names}
            columns = batch.to_pydict()
            for partition, block, targets, error in zip(
                columns["partition"], columns["block"], columns["targets"], columns["error"]
            ):
                rows, checksum, sums = 0, 0, b""
                if error is None:
                    try:
                        rows, checksum, sums = core.spark_regression_block_sums(
                            block,
                            targets,
                            n_features,
                            w,
                            with_hessian=with_hessian,
                            huber_threshold=threshold,
                        )
                    except Refused as refused:
                        error = str(refused)
                out["partition"].append(partition)
                out["rows"].append(rows)
                out["checksum"].append(str(checksum))
                out["sums"].append(bytes(sums))
                out["error"].append(error)
            yield pa.RecordBatch.from_pydict(out, schema=out_schema)

    return run


class _RegressionPasses(_Passes):
    """The classifiers' passes (one Spark job a pass, the encoded blocks cached, the
    validation pass's partitions, counts and checksums required of every later pass) over
    blocks of feature vectors and scaled targets; ``encode``: each partition's encoding
    (``_encode_function`` or ``_schema_encode_function``), ``n_features`` the encoded
    rows' length with the intercept."""

    def __init__(self, df, encode, n_features, threshold):
        self.df = df
        self.encode = encode
        self.threshold = threshold
        self.n_features = n_features
        self.partitions = None
        self.jobs = 0
        self._blocks = None

    def _encode(self):
        return self.encode, _REGRESSION_BLOCK_SCHEMA

    def _sums(self, w, with_hessian, model):
        return _sums_function(self.n_features, list(w), bool(with_hessian), self.threshold)


def _column_name(name, value):
    if not isinstance(value, str) or not value:
        raise DPMLTypeError(f"{name}={value!r} must be a column name (a non-empty str)")
    return value


_NUMBER_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")


def _is_number(kind):
    return type(kind).__name__ in _NUMBER_TYPES


def _features_column(df, features_col):
    """``df``'s feature vectors as an array column, checked by type on the driver (types
    are public): an array of numbers, or a pyspark.ml vector (turned into an array by
    ``vector_to_array``)."""
    from pyspark.sql import functions as F

    fields = {f.name: f.dataType for f in df.schema.fields}
    kind = fields.get(features_col)
    if kind is None:
        raise DPMLValueError(f"df has no column {features_col!r} (featuresCol)")
    if type(kind).__name__ == "ArrayType" and _is_number(kind.elementType):
        return F.col(features_col)
    if type(kind).__name__ == "VectorUDT":
        from pyspark.ml.functions import vector_to_array

        return vector_to_array(F.col(features_col))
    raise DPMLTypeError(
        f"featuresCol {features_col!r} has Spark type {kind.simpleString()}; dpml.spark's "
        "regressors read an array of numbers or a pyspark.ml vector"
    )


def _features_frame(df, features_col, label_col):
    """The two columns a fit reads: the feature vectors (``_features_column``) and the
    target, named ``label``, of a number type (a decimal or a string: cast it to double)."""
    from pyspark.sql import functions as F

    features = _features_column(df, features_col)
    target = {f.name: f.dataType for f in df.schema.fields}.get(label_col)
    if target is None:
        raise DPMLValueError(f"df has no column {label_col!r} (labelCol)")
    if not _is_number(target):
        raise DPMLTypeError(
            f"labelCol {label_col!r} has Spark type {target.simpleString()}; the target "
            f"must be a number: cast it to double first: "
            f"df.withColumn({label_col!r}, df[{label_col!r}].cast('double'))"
        )
    return df.select(features.alias(_FEATURES), F.col(label_col).cast("double").alias("label"))


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise DPMLValueError(f"{name}={value!r} must be a positive integer (public)")
    return int(value)


def _schema_target(estimator, schema):
    """``(bounds, clip)``: the target's public bounds and clipping, which a regression
    schema fixes. ``bounds=None`` takes the schema's; other bounds, or ``clip_targets=True``
    on a target the schema refuses outside its bounds (``clip = false``), are refused by
    name (both are public facts, not data)."""
    name, lower, upper, clip = schema._core.target
    if estimator.bounds is not None:
        if regression._bounds(estimator.bounds, None) != (lower, upper):
            raise DPMLValueError(
                f"bounds={estimator.bounds!r} disagrees with the schema's bounds "
                f"({lower!r}, {upper!r}) of its target {name!r}: leave bounds=None (the "
                "schema's) or correct the schema"
            )
    if estimator.clip_targets and not clip:
        raise DPMLValueError(
            f"clip_targets=True: the schema refuses a target {name!r} outside its bounds "
            "(clip = false); set clip = true on that column in the schema to clip them"
        )
    return (lower, upper), bool(clip)


def _fit(estimator, df, n_rows, n_features, schema, ledger):
    _require_pyspark()
    ledger = resolve_ledger(ledger, estimator)
    what = f"dpml.spark.{type(estimator).__name__}"
    if schema is not None:
        # The task first: a classifier's schema is refused before any other check.
        _checked_schema(schema, "regression", what)
    n_rows = _count("n_rows", n_rows)
    if estimator.feature_groups is not None:
        # The executors check row norms, not group norms, which group-shaped noise needs.
        raise DPMLValueError(
            f"feature_groups: {what} adds spherical noise (group-shaped noise is built for "
            "the in-memory regressors and dpml.spark's classifiers); leave feature_groups=None"
        )
    for name in ("fit_intercept", "clip_rows", "clip_targets"):
        if not isinstance(getattr(estimator, name), (bool, np.bool_)):
            raise DPMLTypeError(f"{name}={getattr(estimator, name)!r} must be True or False")
    if schema is None:
        if n_features is None:
            raise DPMLValueError(
                "n_features is required: the public length of every features vector (or "
                "pass schema=, whose encoding fixes it)"
            )
        n_features = _count("n_features", n_features)
        frame = _features_frame(
            df,
            _column_name("featuresCol", estimator.featuresCol),
            _column_name("labelCol", estimator.labelCol),
        )
        # Public bounds, never from the data: the in-memory regressors' refusal of None.
        bounds = regression._bounds(estimator.bounds, None)
        clip_targets = bool(estimator.clip_targets)
    else:
        if n_features is not None and _count("n_features", n_features) != schema.n_features:
            raise DPMLValueError(
                f"n_features={n_features!r}: the schema encodes {schema.n_features} features "
                "(leave n_features out with schema=)"
            )
        n_features = schema.n_features
        _check_column_types(df, schema, labels=True)
        bounds, clip_targets = _schema_target(estimator, schema)
        frame = df
    epsilon, mechanism = epsilon_and_mechanism(estimator)
    delta = _delta(estimator.delta, required=False) if mechanism != "non-private" else 0.0
    released = f"gaussian-{mechanism}" if delta > 0 else mechanism
    seed = resolve_seed(estimator.random_state, testing.allow_int_seed())
    if estimator.data_norm is None:
        raise DPMLValueError(
            "data_norm is required: pass a public bound B on the Euclidean norm of every "
            "features vector, known without looking at the data; a vector above B is "
            "refused, naming its row, unless you also pass clip_rows=True"
            + ("" if schema is None else " (rows a schema encodes have norm ≤ 1: data_norm=1.0)")
        )
    threshold = estimator._scaled_threshold(estimator._threshold(bounds), bounds)
    encode = dict(
        data_norm=_number("data_norm", estimator.data_norm),
        clip_rows=bool(estimator.clip_rows),
        intercept=_number("intercept_scaling", estimator.intercept_scaling)
        if estimator.fit_intercept
        else None,
        target_lower=bounds[0],
        target_upper=bounds[1],
        clip_targets=clip_targets,
    )
    kwargs = dict(
        encode,
        huber_threshold=threshold,
        mechanism_name=mechanism,
        epsilon=epsilon if math.isfinite(epsilon) else 1.0,
        delta=delta,
        calibration=estimator.calibration,
        regularization=estimator._regularization(n_rows, bounds),
        tol=None if estimator.tol is None else _number("tol", estimator.tol),
    )
    if schema is None:
        partition_encoding = _encode_function(n_features, encode)
    else:
        partition_encoding = _schema_encode_function(schema._text, schema.hash, encode)
    passes = _RegressionPasses(
        frame, partition_encoding, n_features + (encode["intercept"] is not None), threshold
    )
    record = None
    if ledger is not None:
        record = ledger.charge(epsilon, delta, what=what, mechanism=released)
    try:
        file, report = _dpml.fit_regression_partitions_model(
            passes, n_rows, n_features, seed=seed, **kwargs
        )
    except DPMLError:
        # Refused before any noise (parameters, rows, n_rows, the validation job): nothing
        # was spent. Anything after the validation pass keeps the charge.
        if record is not None and passes.jobs <= 1:
            ledger.refund(record)
        raise
    finally:
        passes.close()
    estimator._model = _dpml.Regressor.from_bytes(bytes(file))
    estimator.n_features_in_ = n_features
    test_mode = testing.infer_public_facts()
    estimator.privacy_ = {
        "epsilon": epsilon,
        "delta": report.get("delta", 0.0),
        "private": mechanism != "non-private" and seed is None and not test_mode,
        "seeded": seed is not None,
        "test_mode": test_mode,
        "mechanism": released,
        "calibration": estimator.calibration if mechanism == "objective" else None,
        "regularization": report["regularization"],
        "loss": "huber-regression",
        "huber_threshold": estimator._threshold(bounds),
        "data_norm": encode["data_norm"],
        "clip_rows": encode["clip_rows"],
        "bounds": bounds,
        "clip_targets": encode["clip_targets"],
        "intercept_scaling": encode["intercept"],
        "neighbouring": NEIGHBOURS.replace("its label", "its target"),
        "noise": report.get("calibration"),
        "outlook": report.get("outlook"),
        "library_version": _dpml.__version__,
        # Public facts only: no pass, job or partition counts (see dpml.spark's Privacy).
        "spark": {
            "n_rows": n_rows,
            "n_rows_source": "given (n_rows, public under replace-one neighbours); checked "
            "against the partitions' counts before any noise was drawn",
            "noise_drawn_on": "the driver",
        },
    }
    if seed is not None:
        estimator.privacy_["warning"] = (
            "trained with dpml.InsecureSeed: the noise is predictable and this model is NOT "
            "private"
        )
    warn_outlook(estimator.privacy_.get("outlook"), type(estimator).__name__)
    return estimator


def _check_function(n_features):
    """``transform``'s validation pass: the first row whose features vector cannot be
    read, or is refused by the model's row check, named by partition and row."""

    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from dpml._spark_vectors import _dense_batch, _RowRefused

        partition = TaskContext.get().partitionId()
        first_row = 0
        for batch in batches:
            try:
                x, _ = _dense_batch(batch, n_features, False)
                bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
                if bad.size:
                    raise _RowRefused(int(bad[0]), "its features vector holds a value that is "
                                      "not a finite number")
            except _RowRefused as e:
                yield pa.RecordBatch.from_pydict(
                    {"partition": [partition],
                     "error": [f"DPMLValueError: row {first_row + e.row}: {e.why}"]},
                    schema=pa.schema([("partition", pa.int64()), ("error", pa.string())]),
                )
                return
            first_row += batch.num_rows

    return run


def _transform(model, df, validate):
    _require_pyspark()
    from pyspark.sql.types import DoubleType, StructField, StructType

    model._check_fitted()
    features_col = _column_name("featuresCol", model.featuresCol)
    prediction_col = _column_name("predictionCol", model.predictionCol)
    if prediction_col in df.columns:
        raise DPMLValueError(f"df already has a column {prediction_col!r} (predictionCol)")
    if _FEATURES in df.columns:
        raise DPMLValueError(f"df has a column {_FEATURES!r}, which dpml.spark uses")
    if not isinstance(validate, (bool, np.bool_)):
        raise DPMLTypeError(f"validate={validate!r} must be True or False")
    d = int(model.n_features_in_)
    # The vectors as an array column beside df's own (a pyspark.ml vector converted; the
    # type checked on the driver).
    work = df.withColumn(_FEATURES, _features_column(df, features_col))
    if validate:
        try:
            refused = work.select(_FEATURES).mapInArrow(_check_function(d), _CHECK_SCHEMA).collect()
        except Exception as e:
            raise DPMLError(
                "the Spark job of transform's validation pass failed (after Spark's task "
                f"retries): {type(e).__name__}: {_first_line(e)}"
            ) from e
        if refused:
            partition, error = min((int(r[0]), r[1]) for r in refused)
            raise DPMLValueError(f"partition {partition} of the DataFrame: {error}")
    file = bytes(model._model.to_bytes())
    keep = [f for f in work.schema.fields if f.name != _FEATURES]
    out = StructType(keep + [StructField(prediction_col, DoubleType())])

    def score(batches):
        import pyarrow as pa

        from dpml import _dpml as core
        from dpml._spark_vectors import _dense_batch

        regressor = core.Regressor.from_bytes(file)
        for batch in batches:
            x, _ = _dense_batch(batch, d, False)
            predictions = regressor.predict(x=x) if len(x) else np.zeros(0)
            kept = batch.drop_columns([_FEATURES])
            yield kept.append_column(prediction_col, pa.array(predictions, pa.float64()))

    return work.mapInArrow(score, out)


def _predict_by_schema(model, df, schema, prediction_col, validate):
    """``df`` with ``prediction_col`` added: each row's prediction (a double within the
    model's bounds) from its raw columns, encoded on the executors by the regression
    ``schema`` as ``schema.encode`` encodes them in memory (the classifiers' column type
    checks and validation pass: a refused record is named by partition, row and column,
    never its value). ``dpml.spark.predict`` and the regressors' ``transform(df,
    schema=)``."""
    _require_pyspark()
    from pyspark.sql.types import DoubleType, StructField, StructType

    _checked_schema(schema, "regression", f"scoring a {type(model).__name__}")
    model._check_fitted()
    prediction_col = _column_name("prediction_col", prediction_col)
    if model.n_features_in_ != schema.n_features:
        raise DPMLValueError(
            f"the model has {model.n_features_in_} features, the schema encodes "
            f"{schema.n_features}"
        )
    if prediction_col in df.columns:
        raise DPMLValueError(f"df already has a column {prediction_col!r}")
    if not isinstance(validate, (bool, np.bool_)):
        raise DPMLTypeError(f"validate={validate!r} must be True or False")
    _check_column_types(df, schema, labels=False)
    text = schema._text
    if validate:
        _validated(df, text, False)
    file = bytes(model._model.to_bytes())
    out = StructType(list(df.schema.fields) + [StructField(prediction_col, DoubleType())])

    def score(batches):
        import pyarrow as pa

        from dpml import _dpml as core

        encoder = core.Schema.from_toml(text)
        regressor = core.Regressor.from_bytes(file)
        for batch in batches:
            x, _ = encoder.encode_stream(
                pa.RecordBatchReader.from_batches(batch.schema, [batch]).__arrow_c_stream__(),
                False,
            )
            predictions = regressor.predict(x=x) if len(x) else np.zeros(0)
            yield batch.append_column(prediction_col, pa.array(predictions, pa.float64()))

    return df.mapInArrow(score, out)


_FIT_DOC = """Trains on the Spark DataFrame ``df``: its ``featuresCol`` (arrays of
        ``n_features`` numbers, or pyspark.ml vectors) and ``labelCol`` (a number within
        ``bounds``) — or, with ``schema=`` (a regression ``dpml.Schema``: its label a
        ``type = "target"`` column), the raw columns the schema names, encoded on the
        executors (``n_features`` the schema's, ``bounds`` its target's: other bounds are
        refused, as is a classifier's schema, before anything is charged) — exactly
        ``n_rows`` rows (public; checked before any noise), charging ``ledger`` (or the
        active one) ε, or (ε, δ) with ``delta > 0``. The in-memory regressor's recipe over
        the partitions' sums; see ``dpml.spark``'s Privacy section. Returns ``self``."""

_TRANSFORM_DOC = """``df`` with ``predictionCol`` added: each row's prediction (a double,
        within ``bounds``), as ``predict`` gives it in memory, computed on the executors
        (the model travels as its file bytes). With ``validate=True`` (the default) a first
        job refuses a missing or wrong-length features vector, or one holding a value that
        is not a finite number, naming its partition and row, never a value. With
        ``schema=`` (a regression ``dpml.Schema``), the rows are the raw columns the schema
        encodes instead of ``featuresCol``, as ``dpml.spark.predict(model, df,
        schema=schema)`` scores them."""


class _SparkRegressor:
    """``fit(df, n_rows=, n_features= | schema=)`` and ``transform(df)`` for the Spark
    regressors."""

    def fit(self, df, y=None, *, n_rows, n_features=None, schema=None, ledger=None):
        if y is not None:
            raise DPMLTypeError("the targets come from df's labelCol; pass y=None")
        return _fit(self, df, n_rows, n_features, schema, ledger)

    fit.__doc__ = _FIT_DOC

    def transform(self, df, validate=True, *, schema=None):
        if schema is not None:
            return _predict_by_schema(self, df, schema, self.predictionCol, validate)
        return _transform(self, df, validate)

    transform.__doc__ = _TRANSFORM_DOC


# pyspark.ml's column names, the Spark regressors' parameters beside the in-memory ones.
_COLUMNS = (("featuresCol", "features"), ("labelCol", "label"), ("predictionCol", "prediction"))

_COLUMNS_DOC = """
    featuresCol, labelCol, predictionCol : str, default "features", "label", "prediction"
        pyspark.ml's column names: the feature vectors (arrays of numbers or pyspark.ml
        vectors), the target (a number), and the column ``transform`` adds (with
        ``schema=``, the schema names the columns read; ``predictionCol`` is still added).
"""


def _spark_init(local):
    """The ``__init__`` of ``local``'s Spark face (``local``: an in-memory regressor): the
    in-memory parameters, set by ``local.__init__`` itself, with pyspark.ml's column names
    first among the keyword-only ones. Its signature, which scikit-learn's ``get_params``
    and ``clone`` read, is the in-memory one's plus the columns, so one list of parameters
    serves both faces."""
    signature = inspect.signature(local.__init__)
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind == p.KEYWORD_ONLY), len(parameters))
    columns = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
        for name, default in _COLUMNS
    ]
    signature = signature.replace(parameters=parameters[:at] + columns + parameters[at:])

    def __init__(self, *args, **kwargs):
        arguments = signature.bind(self, *args, **kwargs)
        arguments.apply_defaults()
        arguments = dict(arguments.arguments)
        for name, _ in _COLUMNS:
            setattr(self, name, arguments.pop(name))
        local.__init__(**arguments)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{local.__name__}.__init__"
    return __init__


def _spark_doc(local, fit):
    return (
        f"``dpml.{local.__name__}`` fitted over a Spark DataFrame (``{fit}``, "
        "``transform(df)``); every other parameter is the in-memory estimator's, and its "
        "``save`` writes the same model file.\n" + _COLUMNS_DOC + local.__doc__
    )


_FIT_FORMS = "fit(df, n_rows=, n_features=)`` or ``fit(df, schema=, n_rows=)"


class LinearRegression(_SparkRegressor, regression.LinearRegression):
    __doc__ = _spark_doc(regression.LinearRegression, _FIT_FORMS)
    __init__ = _spark_init(regression.LinearRegression)


class HuberRegressor(_SparkRegressor, regression.HuberRegressor):
    __doc__ = _spark_doc(regression.HuberRegressor, _FIT_FORMS)
    __init__ = _spark_init(regression.HuberRegressor)


class Ridge(_SparkRegressor, regression.Ridge):
    __doc__ = _spark_doc(regression.Ridge, _FIT_FORMS)
    __init__ = _spark_init(regression.Ridge)
