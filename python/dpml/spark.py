"""Private fits and batch prediction on Apache Spark (``pip install 'dp-ml[spark]'``).

A fit over a Spark DataFrame runs each solver pass as one Spark job. The first encodes
every partition's rows on its executor by the public ``dpml.Schema`` into one compact block
(dp-erm's encoded-block layout, checked against the data contract), which Spark keeps
cached for the fit; every pass reduces each block with the wheel's Rust kernel to partial
sums (row count, Σ loss, gradient sum, packed Hessian), which come back to the driver as
bytes; the driver merges them in partition order and runs dp-erm's solver and release.
Only DataFrame operations are used (``mapInArrow``, ``persist``, ``collect``; no RDD, no
``SparkContext``, no broadcast), so fits and ``predict`` run on classic Spark and on Spark
Connect alike::

    schema = dpml.Schema.from_file("schemas/adult.toml")
    clf = dpml.spark.LogisticRegression(epsilon=1.0, data_norm=1.0, fit_intercept=False,
                                        classes=schema.classes, regularization=1e-3)
    clf.fit(df, schema=schema, n_rows=32_561)        # n_rows: public, checked
    scored = dpml.spark.predict(clf, df, schema=schema)

The fitted object is a ``dpml.LogisticRegression`` / ``dpml.HuberSVC`` (its ``save``,
``load``, ``predict`` and the Rust model file are the in-memory estimator's).

Classes
-------
``classes=schema.classes`` fits one binary model on the schema's label, its positive class
against the rest, named as ``Schema.encode`` names them (``classes=[-1.0, 1.0]``, the same
model on the ±1 encoding, is still accepted). ``classes=schema.label_classes`` fits on the label's own classes
as the in-memory estimator does with those classes (sorted; a label alias counts as its
class): one model with two (the second class +1), one-vs-rest with more — K models, each
at ε/K (dp-erm's ``OneVsRest`` split, the in-memory one), fitted one after another over
the same cached blocks, their noise drawn from the driver's one generator in class order.
The encoding pass keeps each row's class index (a function of the row and the public
schema) beside its block; every pass relabels the rows ±1 for its model on the executor
and checks them as above; the checksum covers the class indices. On the same rows with
the same ``InsecureSeed`` the models equal the in-memory ones to the certificate (the
same noise; the sums run in another order), not bit for bit.

``delta > 0`` selects the Gaussian (ε, δ) mechanisms (``mechanism="output"`` or
``"objective"``, as in memory: dp-erm's ``GaussianErm::fit_sums``, the in-memory
``GaussianErm::fit``'s calibration, noise and draw order over the merged sums), binary or
one-vs-rest at (ε/K, δ/K) per model; the ledger is charged (ε, δ) and ``privacy_`` is the
in-memory estimator's (mechanism ``"gaussian-output"`` / ``"gaussian-objective"``). On the
same rows with the same ``InsecureSeed`` the models equal the in-memory ones to the
certificate.

``feature_groups=schema.feature_groups`` shapes the noise to the schema's one-hot groups,
as in memory (dp-erm's ``fit_sums`` with ``group_noise``): every partition checks each
row's group norm on every pass, the validation pass before any noise included.

Not built for Spark, refused by name before anything is charged: DP-SGD and the kernel
estimators (``dpml.spark.DPSGDClassifier`` and ``dpml.spark.RandomFeaturesSVC`` raise;
``predict`` scores linear models only).

Regressors
----------
``dpml.spark.LinearRegression``, ``dpml.spark.Ridge`` and ``dpml.spark.HuberRegressor``
(module ``dpml._spark_regression``) fit the in-memory regressors (the same parameters:
``Ridge``'s ``alpha`` included) over a DataFrame of feature vectors and targets, named as
pyspark.ml names them (``featuresCol``, ``labelCol``, ``predictionCol``)::

    reg = dpml.spark.LinearRegression(epsilon=1.0, data_norm=1.0, bounds=(0.0, 100.0))
    reg.fit(df, n_rows=1_000_000, n_features=12)     # both public, checked
    scored = reg.transform(df)                       # + prediction

or over raw columns, with a regression schema (``schema.task == "regression"``: its label a
``type = "target"`` column with public ``lower`` and ``upper``)::

    schema = dpml.Schema.from_file("cost.toml")
    reg = dpml.spark.Ridge(alpha=1.0, epsilon=1.0, data_norm=1.0)
    reg.fit(df, schema=schema, n_rows=1_000_000)     # bounds: the schema's target's
    scored = dpml.spark.predict(reg, df, schema=schema)   # + prediction (a double)

With ``schema=`` each executor encodes its partition's raw columns by the schema exactly as
the classifiers' fits do (its column types checked on the driver first; every record
checked, a refused one named by partition, row and column, never its value), the target
checked against (or, with the schema's ``clip = true``, clamped into) the schema's bounds,
which are the fit's: ``bounds=`` other than them, ``clip_targets=True`` on a target the
schema refuses outside them, or ``n_features`` other than the schema's are refused by name.
The model equals ``dpml.Ridge`` (or ``LinearRegression``, ``HuberRegressor``) fitted on
``schema.encode``'s rows with ``bounds=schema.target_bounds`` and the same
``InsecureSeed``, to the certificate. ``predict(model, df, schema=schema)`` (or the
regressor's ``transform(df, schema=schema)``) scores raw columns the same way. A
classifier's schema given to a regressor, or a regression schema to a classifier or to
``predict`` with a classifier, is refused by name before any Spark job, nothing charged.

The driver runs dp-fit's regression plan (the in-memory Λ, calibration, noise and draw
order) over the same passes as the classifiers (``RegressionPlan::fit_sums``); each
partition's vectors are scaled by ``data_norm`` and its targets by the public ``bounds``
into [−1, 1] on the executor, kept beside the cached block and covered by its checksum,
and every pass re-checks every row (norm ≤ 1, scaled target in [−1, 1]). Everything
below holds for them as for the classifiers, with targets in place of labels: a target
outside ``bounds`` is refused naming its partition and row (never its value), before any
noise and with the charge refunded, unless ``clip_targets=True``. The model file is the
in-memory regressor's (``dpml.LinearRegression.load`` reads a Spark fit;
``dpml.spark.LinearRegression.load(path).transform(df)`` scores with a model trained in
memory).

Private schemas
---------------
``dpml.Schema.from_data(df, ...)`` describes a DataFrame privately with the same
operations: one ``mapInArrow`` job counts each partition's records on its executor into
dp-schema's exact histograms (``DescribePlan.count_stream``, the plan rebuilt from its
plain arguments), one record of bytes per partition; the driver merges them and draws every
release (``describe_counts``), exactly what one pass over the rows would release. The exact
counts, like the fits' partial sums, go from executor to driver only and are never released.
A refused cell comes back as data and is a ``DPMLValueError`` naming the partition, the row
within it and the column; a failed job is a ``DPMLError``; both come before any noise and
refund the charge.

Privacy
-------
The model is ε-differentially private for the replace-one relation (two datasets of the
same size n differing in one row), as the in-memory estimator's, under these conditions
(with ``delta > 0``, (ε, δ)-differentially private, as the in-memory estimator's Gaussian
mechanism, under the same conditions):

- **n is public and given** (``n_rows``): it calibrates nothing before it is checked. A
  first, validation pass (before any noise is drawn) counts each partition's rows and
  refuses a total other than ``n_rows``; every later pass must see the same counts. Under
  replace-one neighbours n is not secret, but it is still never read from the data to set
  the noise: a wrong ``n_rows`` is an error, not a silent correction.
- **Noise only on the driver**, from the driver's secure generator (or ``InsecureSeed``),
  drawn after the validation pass (once per model: K times, one after another, for
  one-vs-rest). Executors compute deterministic functions of their
  rows and w, so a retried or speculative task recomputes the same bits and cannot redraw
  anything.
- **Rows checked on every pass**: the schema's encoding (public bounds and levels) and the
  data contract (after ``data_norm`` scaling, clipping and the intercept: norm ≤ 1, with
  ``feature_groups`` group norm ≤ 1, label ±1, and with classes every class index below K) run on the executor when a partition is
  encoded, and the contract again on every pass (for one-vs-rest on the rows relabelled for
  the pass's model) before a block is summed; a refused row is an error naming the partition, row and
  column.
- **The same rows on every pass**: each pass reports, per partition, its row count and a
  checksum of the rows it decoded (and of their class indices), for every model; a pass that differs from the validation pass is refused
  (a block evicted from Spark's cache and encoded again from a source that changed). The
  checksum detects accidental change, not executors that lie: the driver trusts its
  executors.
- **The certificate** ‖∇F‖ ≤ γ is checked on the merged sums. Their rounding differs from
  the in-memory sum's; the tolerance's rounding floor (dp-erm's ``tolerance_floor``) models
  a sum of n bounded terms by its n − 1 additions, each erring by at most one rounding of a
  partial sum no larger than the sum of the terms' magnitudes — true of any order or
  grouping, so partitions merged in any fixed order are covered as the in-memory order is.

A refusal before the noise (parameters, a refused row, a wrong ``n_rows``, a failed
validation job) refunds the ledger; a failure after it (a later Spark job failing, data
changing) keeps the charge and releases nothing.

What a fit returns holds public facts only. The number of solver passes depends on the data
(for output perturbation on the data alone: two neighbouring datasets can take, say, 7 and 6
passes whatever the noise), and partition counts and sizes on the data and the cluster, so
none of them is in ``privacy_`` or any other attribute, and an error raised after the
validation pass names no pass, partition, row count or checksum and does not chain Spark's
own exception (whose job and stage numbers count the passes): it says only what went wrong.
Spark itself still logs every job and shows it in its UI: whoever can read the cluster's
logs or UI learns the pass count, as they can read the data.

Prediction needs no privacy: ``predict`` adds scores and predicted classes (the schema's
label classes; by argmax for one-vs-rest) to a DataFrame — for a regressor and a regression
schema, the predictions — the model travelling as its file bytes inside the scoring
function.
"""

import numbers

import numpy as np

from . import _dpml, _validation, linear
from ._errors import DPMLError, DPMLTypeError, DPMLValueError
from ._active import resolve_ledger
from ._base import warn_outlook
from .schema import Schema

_BLOCK_SCHEMA = (
    "partition long, rows long, checksum string, block binary, classes binary, error string"
)
_SUMS_SCHEMA = "partition long, rows long, checksum string, sums binary, error string"

# Whether the encoded blocks are kept in Spark's cache between passes (always, but for the
# test that makes every pass encode its partitions again, as after an eviction).
_CACHE_BLOCKS = True


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:  # pragma: no cover - the extra is missing
        raise ImportError("dpml.spark needs pyspark and pyarrow: pip install 'dp-ml[spark]'") from e


_CHECK_SCHEMA = "partition long, error string"


def _checked_schema(schema, task, what):
    """``schema``, a ``dpml.Schema`` read from a file or TOML text whose ``task`` is
    ``task`` ("classification" or "regression"); anything else is refused by name, before
    any Spark job and before anything is charged (``what``: the refusing function)."""
    if not isinstance(schema, Schema) or schema._text is None:
        raise DPMLTypeError(
            "schema must be a dpml.Schema built with Schema.from_file or Schema.from_toml"
        )
    if schema.task != task:
        if schema.task == "regression":
            has = "its label is a regression target (type = \"target\")"
            fix = "fit it with dpml.spark.LinearRegression, Ridge or HuberRegressor"
        else:
            has = "its label has classes"
            fix = "fit it with dpml.spark.LogisticRegression or HuberSVC"
        raise DPMLValueError(
            f"{what} takes a {task} schema, and this schema is a {schema.task} schema "
            f"({schema.label_name!r}: {has}): {fix}"
        )
    return schema


def _check_column_types(df, schema, labels):
    """The driver's check of ``df``'s column types against what the schema reads, before
    any job: a column the encoding needs that is absent, or of a type it does not read (a
    decimal, a date, a boolean, a nested type), is refused naming the column, its type and
    the cast that fixes it (types are public: no data is read)."""
    columns = [
        (name, kind)
        for name, kind in schema._core.columns
        if not (kind == "ignore" or (kind in ("label", "target") and not labels))
    ]
    _check_read_types(df, columns, "the schema encodes", "the schema reads")


def _check_describe_types(df, spec):
    """``_check_column_types`` for ``Schema.from_data``'s plan (``spec``: its
    ``(name, kind, levels)`` per column), before anything is charged."""
    columns = [(name, kind) for name, kind, _ in spec if kind != "ignore"]
    _check_read_types(df, columns, "Schema.from_data describes", "Schema.from_data reads")


def _check_read_types(df, columns, needs, reads):
    """Refuses a ``(name, kind)`` of ``columns`` absent from ``df`` or of a Spark type the
    core does not read, naming the cast that fixes it."""
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in df.schema.fields}
    names = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType",
             "StringType", "CharType", "VarcharType")
    readable = tuple(getattr(T, n) for n in names if hasattr(T, n))
    for name, kind in columns:
        spark_type = fields.get(name)
        if spark_type is None:
            raise DPMLValueError(f"df has no column {name!r}, which {needs}")
        if isinstance(spark_type, readable):
            continue
        if isinstance(spark_type, T.DecimalType) or kind in ("numeric", "target"):
            fix = f"cast it to double first: df.withColumn({name!r}, df[{name!r}].cast('double'))"
        else:
            fix = f"cast it to string first: df.withColumn({name!r}, df[{name!r}].cast('string'))"
        raise DPMLTypeError(
            f"column {name!r} has Spark type {spark_type.simpleString()}; {reads} "
            f"numbers (integers, float, double) or strings: {fix}"
        )


_COUNTS_SCHEMA = "partition long, counts binary, error string"


def _count_function(build):
    """What each partition runs for ``Schema.from_data`` (pickled to the executors): its
    records counted by the plan rebuilt from ``build`` (``DescribePlan.build``'s plain
    arguments), sent back as one record holding the exact counts' bytes (not private: for
    the driver only) or the first refusal, naming its row within the partition and its
    column (never its value); nothing for an empty partition."""

    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused

        batches = iter(batches)
        first = next(batches, None)
        if first is None:
            return
        counts, error = b"", None
        try:
            reader = pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches))
            plan = core.DescribePlan.build(*build)
            counts = bytes(plan.count_stream(reader.__arrow_c_stream__()))
        except Refused as e:
            # The data's fault, not the executor's: sent back, never retried.
            error = f"{type(e).__name__}: {e}"
        yield pa.RecordBatch.from_pydict(
            {
                "partition": [TaskContext.get().partitionId()],
                "counts": [counts],
                "error": [error],
            },
            schema=pa.schema(
                [("partition", pa.int64()), ("counts", pa.binary()), ("error", pa.string())]
            ),
        )

    return run


def _describe_counts(df, build):
    """``Schema.from_data``'s pass over a Spark DataFrame: the exact counts of each
    partition (``_count_function``) as bytes, for the driver's ``describe_counts``. The
    columns described are selected first (ignored ones never leave Spark). A partition's
    refusal is a ``DPMLValueError`` naming it, a failed job a ``DPMLError`` (Spark's
    message chained): both before any noise."""
    _require_pyspark()
    read = [f"`{name.replace('`', '``')}`" for name, kind, _ in build[0] if kind != "ignore"]
    try:
        records = df.select(*read).mapInArrow(_count_function(build), _COUNTS_SCHEMA).collect()
    except Exception as e:
        raise DPMLError(
            "the Spark job of Schema.from_data's counting pass failed (after Spark's task "
            f"retries; before any noise): {type(e).__name__}: {_first_line(e)}"
        ) from e
    records = sorted(((int(r[0]), r[1], r[2]) for r in records), key=lambda r: r[0])
    refused = [r for r in records if r[2] is not None]
    if refused:
        partition, _, error = refused[0]
        raise DPMLValueError(
            f"partition {partition} of the DataFrame (rows counted from the partition's "
            f"first): {error}"
        )
    partitions = [r[0] for r in records]
    if len(set(partitions)) != len(partitions):
        raise DPMLError("the counting pass returned two records for one partition")
    return [bytes(r[1]) for r in records]


def _check_function(schema_text, labels):
    """What each partition runs for ``predict``'s validation pass: its records encoded by
    the schema, batch by batch (nothing kept), and the first refusal, naming its row within
    the partition and its column, sent back as a record (nothing for a clean partition)."""

    def run(batches):
        import re as _re

        import pyarrow as pa
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused

        partition = TaskContext.get().partitionId()
        encoder = core.Schema.from_toml(schema_text)
        first_row = 0
        for batch in batches:
            try:
                encoder.encode_stream(
                    pa.RecordBatchReader.from_batches(batch.schema, [batch]).__arrow_c_stream__(),
                    labels,
                )
            except Refused as e:
                # The batch's row number, as the partition's.
                message = _re.sub(
                    r"\brow (\d+)", lambda m: f"row {first_row + int(m.group(1))}", str(e), count=1
                )
                yield pa.RecordBatch.from_pydict(
                    {"partition": [partition], "error": [f"{type(e).__name__}: {message}"]},
                    schema=pa.schema([("partition", pa.int64()), ("error", pa.string())]),
                )
                return
            first_row += batch.num_rows

    return run


def _validated(df, schema_text, labels):
    """``predict``'s validation pass: refuses, as ``fit`` does, the first record of ``df``
    the schema refuses (``DPMLValueError`` naming its partition, row and column), and a
    job that fails (``DPMLError``, Spark's message chained)."""
    try:
        refused = df.mapInArrow(_check_function(schema_text, labels), _CHECK_SCHEMA).collect()
    except Exception as e:
        raise DPMLError(
            "the Spark job of predict's validation pass failed (after Spark's task retries): "
            f"{type(e).__name__}: {_first_line(e)}"
        ) from e
    if refused:
        partition, error = min((int(r[0]), r[1]) for r in refused)
        raise DPMLValueError(f"partition {partition} of the DataFrame: {error}")


def _encode_function(schema_text, schema_hash, transform, class_of):
    """What each partition runs once per fit (pickled to the executors): its rows encoded
    by the schema into one block (and, with ``class_of``, each row's class index: a
    function of the row and the public schema), as one output record (or the refusal, as a
    record)."""

    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused

        partition = TaskContext.get().partitionId()

        def record(rows, checksum, block, classes, error):
            return pa.RecordBatch.from_pydict(
                {
                    "partition": [partition],
                    "rows": [rows],
                    "checksum": [str(checksum)],
                    "block": [block],
                    "classes": [classes],
                    "error": [error],
                },
                schema=pa.schema(
                    [
                        ("partition", pa.int64()),
                        ("rows", pa.int64()),
                        ("checksum", pa.string()),
                        ("block", pa.binary()),
                        ("classes", pa.binary()),
                        ("error", pa.string()),
                    ]
                ),
            )

        schema = core.Schema.from_toml(schema_text)
        if schema.hash != schema_hash:
            yield record(0, 0, b"", b"", "the executor's schema differs from the driver's")
            return
        reader = _partition_reader(batches)
        try:
            rows, checksum, block, classes = core.spark_partition_encode(
                schema, reader.__arrow_c_stream__(), class_of=class_of, **transform
            )
        except Refused as e:
            # The data's fault, not the executor's: sent back, never retried.
            yield record(0, 0, b"", b"", f"{type(e).__name__}: {e}")
            return
        yield record(rows, checksum, bytes(block), bytes(classes), None)

    return run


def _block_sums_function(n_features, w, with_hessian, options, labels):
    """What each partition runs on every pass (a ``mapInArrow`` function over the cached
    blocks): its block's sums at ``w``, as ``(partition, rows, checksum, sums, error)``;
    ``options``: the loss and, for group-shaped noise, the feature groups and intercept;
    ``labels``: None (the schema's ±1 labels) or ``(n_classes, model)``, the rows
    relabelled by their classes for one-vs-rest model ``model``."""

    def run(batches):
        import pyarrow as pa

        from dpml import _dpml as core
        from dpml._errors import DPMLValueError

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
            out = {name: [] for name in out_schema.names}
            columns = batch.to_pydict()
            for partition, block, classes, error in zip(
                columns["partition"], columns["block"], columns["classes"], columns["error"]
            ):
                rows, checksum, sums = 0, 0, b""
                if error is None:
                    relabel = {} if labels is None else dict(
                        classes=classes, n_classes=labels[0], model=labels[1]
                    )
                    try:
                        rows, checksum, sums = core.spark_block_sums(
                            block, n_features, w, with_hessian=with_hessian, **relabel, **options
                        )
                    except DPMLValueError as refused:
                        # A row the pass's contract refuses (a group norm above 1): reported
                        # as the encoding's refusals are, for the driver to name.
                        error = str(refused)
                out["partition"].append(partition)
                out["rows"].append(rows)
                out["checksum"].append(str(checksum))
                out["sums"].append(bytes(sums))
                out["error"].append(error)
            yield pa.RecordBatch.from_pydict(out, schema=out_schema)

    return run


def _chain(first, rest):
    yield first
    yield from rest


def _partition_reader(batches):
    """A partition's Arrow record batches (``mapInArrow``'s iterator) as one stream reader,
    for the schema's encoder to read the whole partition (its rows numbered from 0)."""
    import pyarrow as pa

    batches = iter(batches)
    first = next(batches, None)
    if first is None:
        return pa.RecordBatchReader.from_batches(pa.schema([]), iter(()))
    return pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches))


class _Passes:
    """``ask(w, with_hessian, model)`` for the Rust fit: one Spark job a pass, one partial
    per partition, in partition order (``model``: which one-vs-rest model the rows are
    labelled for, when ``class_of`` keeps each row's class; 0 for a binary fit). The first pass encodes every partition into one block
    that Spark keeps cached (a persisted DataFrame); every pass (the first included) sums
    the blocks with ``mapInArrow`` and collects one small record per partition. DataFrame
    operations only, so that it runs on Spark Connect. The first (validation) pass fixes the
    set of partitions; every later pass must answer for exactly that set. Counts its jobs
    (never reported: the count depends on the data). A refusal by a partition in the
    validation pass raises DPMLValueError; anything refused later raises DPMLError naming
    no pass, partition or count. ``close()`` drops the cache."""

    def __init__(self, df, schema, kernel, class_of=None):
        self.df = df
        self.schema = schema
        self.class_of = class_of
        self.transform = {k: kernel[k] for k in ("data_norm", "clip_rows", "intercept")}
        self.sums_options = {k: kernel[k] for k in ("loss_name", "huber_width")}
        # Group-shaped noise: every partition checks each row's group norm on every pass,
        # the validation pass (before any noise) included.
        if kernel["feature_groups"] is not None:
            self.sums_options.update(
                feature_groups=list(kernel["feature_groups"]),
                intercept=kernel["intercept"] is not None,
            )
        self.n_features = schema.n_features + (kernel["intercept"] is not None)
        self.partitions = None  # the validation pass's partition ids
        self.jobs = 0
        self._blocks = None

    def _encode(self):
        """``(function, output schema)`` of the encoding ``mapInArrow``."""
        encode = _encode_function(
            self.schema._text, self.schema.hash, self.transform, self.class_of
        )
        return encode, _BLOCK_SCHEMA

    def _sums(self, w, with_hessian, model):
        """The ``mapInArrow`` function of one pass over the encoded blocks."""
        labels = None if self.class_of is None else (len(self.class_of), int(model))
        return _block_sums_function(
            self.n_features, list(w), bool(with_hessian), self.sums_options, labels
        )

    def _encoded_blocks(self):
        if self._blocks is None:
            from pyspark import StorageLevel

            blocks = self.df.mapInArrow(*self._encode())
            if _CACHE_BLOCKS:
                blocks = blocks.persist(StorageLevel.MEMORY_AND_DISK)
            self._blocks = blocks
        return self._blocks

    def close(self):
        if self._blocks is not None and _CACHE_BLOCKS:
            self._blocks.unpersist(blocking=False)
        self._blocks = None

    def __call__(self, w, with_hessian, model=0):
        self.jobs += 1
        validation = self.jobs == 1
        run = self._sums(w, with_hessian, model)
        failure = None
        try:
            records = self._encoded_blocks().mapInArrow(run, _SUMS_SCHEMA).collect()
        except Exception as e:
            if validation:
                raise DPMLError(
                    "the Spark job of pass 0 failed (the validation pass, before any noise; "
                    f"after Spark's task retries): {type(e).__name__}: {_first_line(e)}"
                ) from e
            failure = type(e).__name__
        if failure is not None:
            # After the noise: Spark's message (its job and stage numbers count the passes)
            # is neither repeated nor chained; Spark's own log has it.
            raise DPMLError(
                "a Spark job of the fit failed after the noise was drawn (after Spark's task "
                f"retries; {failure}, see Spark's log): nothing was released and the charge "
                "stays"
            )
        records = sorted(
            ((int(r[0]), int(r[1]), r[2], r[3], r[4]) for r in records), key=lambda r: r[0]
        )
        refused = [r for r in records if r[4] is not None]
        seen = [r[0] for r in records]
        if validation:
            if refused:
                r = refused[0]
                raise DPMLValueError(f"partition {r[0]} of the DataFrame: {r[4]}")
            if len(set(seen)) != len(seen):
                raise DPMLError(
                    "the validation pass returned two partials for one partition (before any "
                    "noise; nothing was charged)"
                )
            self.partitions = seen
        elif refused:
            # A block encoded again (evicted) from a source that changed: after the noise, so
            # neither its row nor its column is named.
            raise DPMLError(
                "a partition's rows were refused on a later pass, which the validation pass "
                "accepted: the data changed between passes (cache or checkpoint the "
                "DataFrame); nothing was released and the charge stays"
            )
        elif seen != self.partitions:
            raise DPMLError(
                "a later pass returned partials for other partitions than the validation pass: "
                "the data changed between passes (cache or checkpoint the DataFrame); nothing "
                "was released and the charge stays"
            )
        return [(int(r[2]), bytes(r[3])) for r in records]


def _first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else ""


def _spark_classes(given, schema):
    """``(classes_, class_of)``: the ±1 encoding (``classes=[-1.0, 1.0]``: the schema's
    positive class against the rest, one model; ``class_of`` None), the same task named
    (``classes=schema.classes``; ``class_of`` maps each declared class to the positive
    name or the rest's), or the label's own
    classes (``classes=schema.label_classes``, sorted as in memory; ``class_of[c]`` the
    index in them of the schema's declared class c): one model with two classes, one per
    class (one-vs-rest) with more."""
    classes = _validation.public_classes(given, None, False)
    if classes.dtype.kind in "iuf" and [float(c) for c in classes] == [-1.0, 1.0]:
        return classes, None
    declared = list(schema.label_classes)
    names = classes.tolist()
    if all(isinstance(c, str) for c in names) and sorted(names) == sorted(declared):
        return classes, [names.index(c) for c in declared]
    binary = schema.classes
    if all(isinstance(c, str) for c in names) and sorted(names) == sorted(binary):
        # The positive class against the rest, named: each declared class's index in the
        # sorted names (every class but the positive one is the rest).
        rest, positive = binary
        return classes, [names.index(positive if c == positive else rest) for c in declared]
    raise DPMLValueError(
        f"classes={given!r}: pass classes=schema.classes ({schema.classes!r}: "
        f"{schema.label_positive!r} against the rest, one binary model) or "
        f"classes=schema.label_classes ({declared!r}: one-vs-rest over them with more "
        "than two)"
    )


def _fit(estimator, df, schema, n_rows, ledger):
    _require_pyspark()
    ledger = resolve_ledger(ledger, estimator)
    _checked_schema(schema, "classification", f"dpml.spark.{type(estimator).__name__}")
    if isinstance(n_rows, bool) or not isinstance(n_rows, numbers.Integral) or n_rows <= 0:
        raise DPMLValueError(
            f"n_rows={n_rows!r} must be a positive integer: the public number of rows in df"
        )
    n_rows = int(n_rows)
    _check_column_types(df, schema, labels=True)
    epsilon, mechanism = estimator._epsilon_and_mechanism()
    # δ > 0: dp-erm's GaussianErm over the partial sums, at (ε/K, δ/K) per model as in memory.
    delta = estimator._delta() if mechanism != "non-private" else 0.0
    released = estimator._released_mechanism(mechanism, delta)
    seed = estimator._seed()
    if estimator.data_norm is None:
        raise DPMLValueError(
            "data_norm is required: rows encoded by a schema have norm ≤ 1, so pass "
            "data_norm=1.0 (a public bound, never read from the data)"
        )
    classes, class_of = _spark_classes(estimator.classes, schema)
    d = schema.n_features
    kwargs = estimator._fit_kwargs((n_rows, d), {}, epsilon, mechanism)
    if delta > 0:
        kwargs["delta"] = delta
    kernel = dict(
        loss_name=kwargs["loss_name"],
        huber_width=kwargs["huber_width"],
        data_norm=kwargs["data_norm"],
        clip_rows=kwargs["clip_rows"],
        intercept=kwargs["intercept"],
        feature_groups=kwargs["feature_groups"],
    )
    passes = _Passes(df, schema, kernel, class_of)
    record = None
    if ledger is not None:
        record = ledger.charge(
            epsilon, delta, what=f"dpml.spark.{type(estimator).__name__}", mechanism=released
        )
    try:
        models, report = _dpml.fit_linear_partitions_model(
            passes, n_rows, d, seed=seed, n_classes=len(classes), **kwargs
        )
    except DPMLError:
        # Refused or failed before any noise was drawn (parameters, rows, n_rows, the
        # validation job: at most one job ran): nothing was spent. Anything after the
        # validation pass keeps the charge, whatever its kind.
        if record is not None and passes.jobs <= 1:
            ledger.refund(record)
        raise
    finally:
        passes.close()
    estimator.classes_ = classes
    estimator.n_features_in_ = d
    estimator._models = models
    estimator.privacy_ = estimator._privacy_report(report, epsilon, released, seed, kwargs)
    # Public facts only: no pass, job or partition counts, sizes or timings (they depend on
    # the data and the cluster; see the module's Privacy section).
    estimator.privacy_["spark"] = {
        "n_rows": n_rows,
        "n_rows_source": "given (n_rows, public under replace-one neighbours); checked "
        "against the partitions' counts before any noise was drawn",
        "noise_drawn_on": "the driver",
    }
    # dp-fit's outlook of the planned fit, from public facts, as in memory.
    if report.get("outlook") is not None:
        estimator.privacy_["outlook"] = report["outlook"]
        warn_outlook(report["outlook"], type(estimator).__name__)
    return estimator


_FIT_DOC = """Trains on the Spark DataFrame ``df`` (columns named as in ``schema``), whose
        rows must number exactly ``n_rows`` (public; checked before any noise), charging
        ``ledger`` (or the active one) ε, or (ε, δ) with ``delta > 0``.
        ``classes=schema.classes``: the schema's ±1 label, one binary model;
        ``classes=schema.label_classes``: the label's own classes, one-vs-rest beyond two
        (ε — and δ — split evenly, as in memory). ``feature_groups=schema.feature_groups``:
        group-shaped noise, as in memory.
        See ``dpml.spark``'s Privacy section. Returns ``self``."""


class LogisticRegression(linear.LogisticRegression):
    __doc__ = (
        "``dpml.LogisticRegression`` fitted over a Spark DataFrame (``fit(df, schema=, "
        "n_rows=)``); every parameter is the in-memory estimator's.\n"
        + linear.LogisticRegression.__doc__
    )

    def fit(self, df, y=None, *, schema, n_rows, ledger=None):
        if y is not None:
            raise DPMLTypeError("the labels come from df's label column (the schema's); pass y=None")
        return _fit(self, df, schema, n_rows, ledger)

    fit.__doc__ = _FIT_DOC


class HuberSVC(linear.HuberSVC):
    __doc__ = (
        "``dpml.HuberSVC`` fitted over a Spark DataFrame (``fit(df, schema=, n_rows=)``); "
        "every parameter is the in-memory estimator's.\n" + linear.HuberSVC.__doc__
    )

    def fit(self, df, y=None, *, schema, n_rows, ledger=None):
        if y is not None:
            raise DPMLTypeError("the labels come from df's label column (the schema's); pass y=None")
        return _fit(self, df, schema, n_rows, ledger)

    fit.__doc__ = _FIT_DOC


def _prediction_labels(model, schema):
    """``([label for a score < 0, label for a score ≥ 0], Spark type, Arrow type alias)``:
    the model's classes; a model trained on the schema's encoding (classes ``[-1.0, 1.0]``,
    every ``dpml.spark`` fit) predicts the schema's label classes, ``label_positive`` for
    +1."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType

    classes = np.asarray(model.classes_)
    if classes.dtype.kind in "iuf" and [float(c) for c in classes] == [-1.0, 1.0]:
        levels = schema.label_classes
        positive = schema.label_positive
        if len(levels) != 2:
            raise DPMLValueError(
                f"the schema's label {schema.label_name!r} declares {len(levels)} classes: "
                f"the model scores {positive!r} against all the others, which are no one "
                "class to predict; read the decision column (a score ≥ 0 means "
                f"{positive!r})"
            )
        negative = levels[0] if levels[1] == positive else levels[1]
        return [negative, positive], StringType(), "string"
    if classes.dtype.kind == "O" and all(isinstance(c, str) for c in classes):
        return [str(c) for c in classes], StringType(), "string"
    types = {
        "U": (StringType, "string"),
        "b": (BooleanType, "bool"),
        "i": (LongType, "int64"),
        "u": (LongType, "int64"),
        "f": (DoubleType, "double"),
    }
    if classes.dtype.kind not in types:
        raise DPMLTypeError(
            f"the model's classes {classes.tolist()!r} have no Spark column type: "
            "dpml.spark.predict takes classes of str, bool, int or float"
        )
    spark_type, arrow_type = types[classes.dtype.kind]
    return classes.tolist(), spark_type(), arrow_type


def predict(
    model, df, *, schema, decision_col="decision", prediction_col="prediction", validate=True
):
    """``df`` with two columns added: the model's score (``decision_col``) and predicted
    class (``prediction_col``), as ``model.decision_function`` and ``model.predict``
    give them; for a regressor (``dpml.spark.LinearRegression``, ``Ridge``,
    ``HuberRegressor`` or an in-memory dpml regressor) with a regression schema, one
    column, ``prediction_col``: each row's prediction (a double within the model's bounds)
    from the raw columns the schema encodes, as the regressor's ``predict`` gives it on
    ``schema.encode``'s rows (``decision_col`` is not added). A schema of the other task
    than the model's is refused by name. A binary model's score is a double, and its
    class, in the user's labels, the schema's label classes (``schema.label_positive``
    when the score is ≥ 0, the label's other class when it is < 0) for a model trained on
    the schema's ±1 encoding (``classes=schema.classes``), else the model's own
    ``classes_`` (``classes_[1]`` when the score is ≥ 0). A one-vs-rest model's (K > 2 classes) score is an array of K
    doubles, one per class in ``classes_`` order, and its class the ``classes_`` entry of
    the largest (the first on a tie, as ``numpy.argmax``). Computed on the executors by
    ``mapInArrow``, the model travelling as its file bytes inside the scoring function (no
    broadcast: it runs on Spark Connect too).

    Refused as ``fit`` refuses them, before the DataFrame is returned: a column of a type
    the schema does not read (a decimal: cast it to double), checked on the driver; and,
    with ``validate=True`` (the default), a record the schema refuses, found by a
    validation pass (one Spark job encoding every partition, nothing kept):
    ``DPMLValueError`` naming its partition, row and column, never its value. With
    ``validate=False`` that pass is skipped and such a record fails the job when the result
    is computed (pyspark's ``PythonException``, carrying the same message). ``model``: a
    fitted ``dpml.LogisticRegression``
    / ``dpml.HuberSVC`` (or any linear dpml model: ``dpml.DPSGDClassifier`` trained in
    memory predicts too); a schema whose label declares more than two classes needs a
    model with its own ``classes_`` (the ±1 encoding's −1 is no one class)."""
    _require_pyspark()
    from pyspark.sql.types import ArrayType, DoubleType, StructField, StructType

    from .regression import _PrivateRegressor

    if isinstance(model, _PrivateRegressor):
        if schema is None:
            raise DPMLValueError(
                "dpml.spark.predict scores a regressor from raw columns by its regression "
                "schema (schema=); a features column is scored with transform: "
                "dpml.spark.LinearRegression.load(path).transform(df) (or the fitted "
                "dpml.spark regressor's transform)"
            )
        from ._spark_regression import _predict_by_schema

        return _predict_by_schema(model, df, schema, prediction_col, validate)
    _checked_schema(schema, "classification", "dpml.spark.predict (of a classifier)")
    model._check_fitted()
    if model._models.info()["kind"] != "linear":
        raise DPMLValueError(
            f"dpml.spark.predict is not built for {type(model).__name__} (a kernel model): "
            "it takes linear models; score kernel models in memory"
        )
    if model.n_features_in_ != schema.n_features:
        raise DPMLValueError(
            f"the model has {model.n_features_in_} features, the schema encodes "
            f"{schema.n_features}"
        )
    for name in (decision_col, prediction_col):
        if name in df.columns:
            raise DPMLValueError(f"df already has a column {name!r}")
    if not isinstance(validate, (bool, np.bool_)):
        raise DPMLTypeError(f"validate={validate!r} must be True or False")
    _check_column_types(df, schema, labels=False)
    labels, label_type, arrow_type = _prediction_labels(model, schema)
    one_vs_rest = len(model._models) > 1
    if len(model._models) != (len(labels) if one_vs_rest else 1):
        raise DPMLValueError(
            f"the model holds {len(model._models)} binary models for {len(labels)} classes"
        )
    files = [bytes(f) for f in model._models.to_bytes()]
    text = schema._text
    if validate:
        _validated(df, text, False)
    out = StructType(
        list(df.schema.fields)
        + [
            StructField(decision_col, ArrayType(DoubleType()) if one_vs_rest else DoubleType()),
            StructField(prediction_col, label_type),
        ]
    )

    def score(batches):
        import numpy
        import pyarrow as pa

        from dpml import _dpml as core

        encoder = core.Schema.from_toml(text)
        models = core.Models.from_bytes("linear", files)
        classes = pa.array(labels, pa.type_for_alias(arrow_type))
        k = len(files)
        for batch in batches:
            x, _ = encoder.encode_stream(
                pa.RecordBatchReader.from_batches(batch.schema, [batch]).__arrow_c_stream__(),
                False,
            )
            scores = models.decision(x=x) if len(x) else numpy.zeros((0, k))
            if one_vs_rest:
                index = pa.array(numpy.argmax(scores, axis=1).astype(numpy.int64))
                offsets = pa.array(numpy.arange(0, k * len(scores) + 1, k, dtype=numpy.int32))
                decision = pa.ListArray.from_arrays(
                    offsets, pa.array(numpy.ascontiguousarray(scores).ravel(), pa.float64())
                )
            else:
                index = pa.array((scores[:, 0] >= 0).astype(numpy.int64))
                decision = pa.array(scores[:, 0], pa.float64())
            yield batch.append_column(decision_col, decision).append_column(
                prediction_col, classes.take(index)
            )

    return df.mapInArrow(score, out)


def _not_built(name, why):
    message = (
        f"dpml.spark.{name} is not built for Spark: {why}. Fit dpml.{name} in memory; "
        "dpml.spark fits LogisticRegression, HuberSVC, LinearRegression, Ridge and "
        "HuberRegressor"
    )

    class NotBuilt:
        __doc__ = f"Not built for Spark (raises DPMLValueError): {why}."

        def __init__(self, *args, **kwargs):
            raise DPMLValueError(message)

    NotBuilt.__name__ = NotBuilt.__qualname__ = name
    return NotBuilt


DPSGDClassifier = _not_built(
    "DPSGDClassifier",
    "DP-SGD samples a Poisson batch of rows at every step, a pass over the data per step "
    "that dp-erm's fit over partial sums does not make",
)
RandomFeaturesSVC = _not_built(
    "RandomFeaturesSVC",
    "its random feature map is drawn before the rows are mapped, and dp-kernel has no fit "
    "over partial sums",
)


__all__ = ["HuberSVC", "LogisticRegression", "predict"]


# The regressors (their own module, which builds on the passes above), imported when first
# asked for: the executors import ``dpml._spark_regression`` on its own, which imports this
# module, so this one must not import it back while loading.
_REGRESSORS = ("HuberRegressor", "LinearRegression", "Ridge")
__all__ += list(_REGRESSORS)


def __getattr__(name):
    if name in _REGRESSORS:
        from . import _spark_regression

        return getattr(_spark_regression, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
