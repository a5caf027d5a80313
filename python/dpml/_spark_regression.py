"""``dpml.spark``'s regressors: ``LinearRegression`` and ``HuberRegressor`` fitted over a
Spark DataFrame of feature vectors and real targets (pyspark.ml's ``featuresCol`` /
``labelCol`` / ``predictionCol``), by the in-memory regressors' recipe (dp-fit's
regression plan, its calibration and release over the partitions' merged sums), with the
classifiers' passes, checks and ledger (see ``dpml.spark``'s Privacy section).
"""

import math
import numbers

import numpy as np

from . import _dpml, regression, testing
from ._active import resolve_ledger
from ._base import NEIGHBOURS, _delta, _number, epsilon_and_mechanism, warn_outlook
from ._errors import DPMLError, DPMLTypeError, DPMLValueError
from ._randomness import resolve_seed
from ._spark_vectors import _FEATURES
from .spark import _first_line, _Passes, _require_pyspark

_REGRESSION_BLOCK_SCHEMA = (
    "partition long, rows long, checksum string, block binary, targets binary, error string"
)
_SUMS_SCHEMA = "partition long, rows long, checksum string, sums binary, error string"
_CHECK_SCHEMA = "partition long, error string"


def _encode_function(n_features, options):
    """What each partition runs once per fit: its feature vectors and targets encoded into
    one block and its scaled targets (``options``: the row transform and the target
    bounds), as one record, or the refusal, naming the row within the partition."""

    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused
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
        yield pa.RecordBatch.from_pydict(
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
    blocks of feature vectors and scaled targets."""

    def __init__(self, df, n_features, encode_options, threshold):
        self.df = df
        self.input_features = n_features
        self.encode_options = encode_options
        self.threshold = threshold
        self.n_features = n_features + (encode_options["intercept"] is not None)
        self.partitions = None
        self.jobs = 0
        self._blocks = None

    def _encode(self):
        return (
            _encode_function(self.input_features, self.encode_options),
            _REGRESSION_BLOCK_SCHEMA,
        )

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


def _fit(estimator, df, n_rows, n_features, ledger):
    _require_pyspark()
    ledger = resolve_ledger(ledger, estimator)
    n_rows = _count("n_rows", n_rows)
    n_features = _count("n_features", n_features)
    frame = _features_frame(
        df,
        _column_name("featuresCol", estimator.featuresCol),
        _column_name("labelCol", estimator.labelCol),
    )
    epsilon, mechanism = epsilon_and_mechanism(estimator)
    delta = _delta(estimator.delta, required=False) if mechanism != "non-private" else 0.0
    released = f"gaussian-{mechanism}" if delta > 0 else mechanism
    seed = resolve_seed(estimator.random_state, testing.allow_int_seed())
    # Public bounds, never from the data: the in-memory regressors' refusal of None.
    bounds = regression._bounds(estimator.bounds, None)
    for name in ("fit_intercept", "clip_rows", "clip_targets"):
        if not isinstance(getattr(estimator, name), (bool, np.bool_)):
            raise DPMLTypeError(f"{name}={getattr(estimator, name)!r} must be True or False")
    if estimator.data_norm is None:
        raise DPMLValueError(
            "data_norm is required: pass a public bound B on the Euclidean norm of every "
            "features vector, known without looking at the data; a vector above B is "
            "refused, naming its row, unless you also pass clip_rows=True"
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
        clip_targets=bool(estimator.clip_targets),
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
    passes = _RegressionPasses(frame, n_features, encode, threshold)
    record = None
    if ledger is not None:
        record = ledger.charge(
            epsilon, delta, what=f"dpml.spark.{type(estimator).__name__}", mechanism=released
        )
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


_FIT_DOC = """Trains on the Spark DataFrame ``df``: its ``featuresCol`` (arrays of
        ``n_features`` numbers, or pyspark.ml vectors) and ``labelCol`` (a number within
        ``bounds``), exactly ``n_rows`` rows (public; checked before any noise), charging
        ``ledger`` (or the active one) ε, or (ε, δ) with ``delta > 0``. The in-memory
        regressor's recipe over the partitions' sums; see ``dpml.spark``'s Privacy section.
        Returns ``self``."""

_TRANSFORM_DOC = """``df`` with ``predictionCol`` added: each row's prediction (a double,
        within ``bounds``), as ``predict`` gives it in memory, computed on the executors
        (the model travels as its file bytes). With ``validate=True`` (the default) a first
        job refuses a missing or wrong-length features vector, or one holding a value that
        is not a finite number, naming its partition and row, never a value."""


class _SparkRegressor:
    """``fit(df, n_rows=, n_features=)`` and ``transform(df)`` for the Spark regressors."""

    def fit(self, df, y=None, *, n_rows, n_features, ledger=None):
        if y is not None:
            raise DPMLTypeError("the targets come from df's labelCol; pass y=None")
        return _fit(self, df, n_rows, n_features, ledger)

    fit.__doc__ = _FIT_DOC

    def transform(self, df, validate=True):
        return _transform(self, df, validate)

    transform.__doc__ = _TRANSFORM_DOC


_COLUMNS_DOC = """
    featuresCol, labelCol, predictionCol : str, default "features", "label", "prediction"
        pyspark.ml's column names: the feature vectors (arrays of numbers or pyspark.ml
        vectors), the target (a number), and the column ``transform`` adds.
"""


class LinearRegression(_SparkRegressor, regression.LinearRegression):
    __doc__ = (
        "``dpml.LinearRegression`` fitted over a Spark DataFrame (``fit(df, n_rows=, "
        "n_features=)``, ``transform(df)``); every other parameter is the in-memory "
        "estimator's, and its ``save`` writes the same model file.\n"
        + _COLUMNS_DOC
        + regression.LinearRegression.__doc__
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        featuresCol="features",
        labelCol="label",
        predictionCol="prediction",
        delta=0.0,
        data_norm=None,
        bounds=None,
        clip_targets=False,
        clip_rows=False,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        tol=None,
        random_state=None,
    ):
        self.featuresCol = featuresCol
        self.labelCol = labelCol
        self.predictionCol = predictionCol
        super().__init__(
            epsilon,
            delta=delta,
            data_norm=data_norm,
            bounds=bounds,
            clip_targets=clip_targets,
            clip_rows=clip_rows,
            mechanism=mechanism,
            calibration=calibration,
            regularization=regularization,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            tol=tol,
            random_state=random_state,
        )


class HuberRegressor(_SparkRegressor, regression.HuberRegressor):
    __doc__ = (
        "``dpml.HuberRegressor`` fitted over a Spark DataFrame (``fit(df, n_rows=, "
        "n_features=)``, ``transform(df)``); every other parameter is the in-memory "
        "estimator's, and its ``save`` writes the same model file.\n"
        + _COLUMNS_DOC
        + regression.HuberRegressor.__doc__
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        featuresCol="features",
        labelCol="label",
        predictionCol="prediction",
        delta=0.0,
        data_norm=None,
        bounds=None,
        clip_targets=False,
        clip_rows=False,
        huber_threshold=None,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        tol=None,
        random_state=None,
    ):
        self.featuresCol = featuresCol
        self.labelCol = labelCol
        self.predictionCol = predictionCol
        super().__init__(
            epsilon,
            delta=delta,
            data_norm=data_norm,
            bounds=bounds,
            clip_targets=clip_targets,
            clip_rows=clip_rows,
            huber_threshold=huber_threshold,
            mechanism=mechanism,
            calibration=calibration,
            regularization=regularization,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            tol=tol,
            random_state=random_state,
        )
