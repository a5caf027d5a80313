"""Private fits and batch prediction on Apache Spark (``pip install 'dpml[spark]'``).

A fit over a Spark DataFrame runs each solver pass as one Spark job. The first encodes
every partition's rows on its executor by the public ``dpml.Schema`` into one compact block
(dp-erm's encoded-block layout, checked against the data contract), which Spark keeps
cached for the fit; every pass reduces each block with the wheel's Rust kernel to partial
sums (row count, Σ loss, gradient sum, packed Hessian), which come back to the driver as
bytes; the driver merges them in partition order and runs dp-erm's solver and release::

    schema = dpml.Schema.from_file("schemas/adult.toml")
    clf = dpml.spark.LogisticRegression(epsilon=1.0, data_norm=1.0, fit_intercept=False,
                                        classes=schema.classes, regularization=1e-3)
    clf.fit(df, schema=schema, n_rows=32_561)        # n_rows: public, checked
    scored = dpml.spark.predict(clf, df, schema=schema)

The fitted object is a ``dpml.LogisticRegression`` / ``dpml.HuberSVC`` (its ``save``,
``load``, ``predict`` and the Rust model file are the in-memory estimator's).

Privacy
-------
The model is ε-differentially private for the replace-one relation (two datasets of the
same size n differing in one row), as the in-memory estimator's, under these conditions:

- **n is public and given** (``n_rows``): it calibrates nothing before it is checked. A
  first, validation pass (before any noise is drawn) counts each partition's rows and
  refuses a total other than ``n_rows``; every later pass must see the same counts. Under
  replace-one neighbours n is not secret, but it is still never read from the data to set
  the noise: a wrong ``n_rows`` is an error, not a silent correction.
- **Noise only on the driver**, from the driver's secure generator (or ``InsecureSeed``),
  drawn once after the validation pass. Executors compute deterministic functions of their
  rows and w, so a retried or speculative task recomputes the same bits and cannot redraw
  anything.
- **Rows checked on every pass**: the schema's encoding (public bounds and levels) and the
  data contract (after ``data_norm`` scaling, clipping and the intercept: norm ≤ 1, label
  ±1) run on the executor when a partition is encoded, and the contract again on every
  pass before a block is summed; a refused row is an error naming the partition, row and
  column.
- **The same rows on every pass**: each pass reports, per partition, its row count and a
  checksum of the rows it decoded; a pass that differs from the validation pass is refused
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

Prediction needs no privacy: ``predict`` adds scores and predicted classes to a DataFrame
with the model broadcast as its file bytes.
"""

import numbers

from . import _dpml, _validation, linear
from ._errors import DPMLError, DPMLTypeError, DPMLValueError
from ._active import resolve_ledger
from .schema import Schema

_BLOCK_SCHEMA = "partition long, rows long, checksum string, block binary, error string"

# Whether the encoded blocks are kept in Spark's cache between passes (always, but for the
# test that makes every pass encode its partitions again, as after an eviction).
_CACHE_BLOCKS = True


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:  # pragma: no cover - the extra is missing
        raise ImportError("dpml.spark needs pyspark and pyarrow: pip install 'dpml[spark]'") from e


def _encode_function(schema_text, schema_hash, transform):
    """What each partition runs once per fit (pickled to the executors): its rows encoded
    by the schema into one block, as one output record (or the refusal, as a record)."""

    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from dpml import _dpml as core
        from dpml._errors import DPMLError as Refused

        partition = TaskContext.get().partitionId()

        def record(rows, checksum, block, error):
            return pa.RecordBatch.from_pydict(
                {
                    "partition": [partition],
                    "rows": [rows],
                    "checksum": [str(checksum)],
                    "block": [block],
                    "error": [error],
                },
                schema=pa.schema(
                    [
                        ("partition", pa.int64()),
                        ("rows", pa.int64()),
                        ("checksum", pa.string()),
                        ("block", pa.binary()),
                        ("error", pa.string()),
                    ]
                ),
            )

        schema = core.Schema.from_toml(schema_text)
        if schema.hash != schema_hash:
            yield record(0, 0, b"", "the executor's schema differs from the driver's")
            return
        batches = iter(batches)
        first = next(batches, None)
        if first is None:
            reader = pa.RecordBatchReader.from_batches(pa.schema([]), iter(()))
        else:
            reader = pa.RecordBatchReader.from_batches(
                first.schema, _chain(first, batches)
            )
        try:
            rows, checksum, block = core.spark_partition_encode(
                schema, reader.__arrow_c_stream__(), **transform
            )
        except Refused as e:
            # The data's fault, not the executor's: sent back, never retried.
            yield record(0, 0, b"", f"{type(e).__name__}: {e}")
            return
        yield record(rows, checksum, bytes(block), None)

    return run


def _block_sums_function(n_features, w, with_hessian, loss):
    """What each partition runs on every pass: its cached block's sums at ``w``, as
    ``(partition, rows, checksum, sums, error)``."""

    def run(records):
        from dpml import _dpml as core

        for partition, _, _, block, error in records:
            if error is not None:
                yield (partition, 0, "0", b"", error)
                continue
            rows, checksum, sums = core.spark_block_sums(
                block, n_features, w, with_hessian=with_hessian, **loss
            )
            yield (partition, rows, str(checksum), bytes(sums), None)

    return run


def _chain(first, rest):
    yield first
    yield from rest


class _Passes:
    """``ask(w, with_hessian)`` for the Rust fit: one Spark job a pass, one partial per
    partition, in partition order. The first pass encodes every partition into one block
    that Spark keeps cached; every pass (the first included) sums the blocks. Counts its
    jobs; a refusal by a partition raises DPMLValueError. ``close()`` drops the cache."""

    def __init__(self, df, schema, kernel):
        self.df = df
        self.schema = schema
        self.transform = {k: kernel[k] for k in ("data_norm", "clip_rows", "intercept")}
        self.loss = {k: kernel[k] for k in ("loss_name", "huber_width")}
        self.n_features = schema.n_features + (kernel["intercept"] is not None)
        self.partitions = df.rdd.getNumPartitions()
        self.jobs = 0
        self._blocks = None

    def _encoded_blocks(self):
        if self._blocks is None:
            from pyspark import StorageLevel

            encode = _encode_function(self.schema._text, self.schema.hash, self.transform)
            blocks = self.df.mapInArrow(encode, _BLOCK_SCHEMA).rdd.map(
                lambda r: (r["partition"], r["rows"], r["checksum"], bytes(r["block"]), r["error"])
            )
            self._blocks = blocks.persist(StorageLevel.MEMORY_AND_DISK) if _CACHE_BLOCKS else blocks
        return self._blocks

    def close(self):
        if self._blocks is not None and _CACHE_BLOCKS:
            self._blocks.unpersist(blocking=False)
        self._blocks = None

    def __call__(self, w, with_hessian):
        self.jobs += 1
        run = _block_sums_function(self.n_features, list(w), bool(with_hessian), self.loss)
        try:
            records = self._encoded_blocks().mapPartitions(run).collect()
        except Exception as e:
            raise DPMLError(
                f"the Spark job of pass {self.jobs - 1} failed (after Spark's task retries): "
                f"{type(e).__name__}: {_first_line(e)}"
            ) from e
        records = sorted(records, key=lambda r: r[0])
        refused = [r for r in records if r[4] is not None]
        if refused:
            r = refused[0]
            raise DPMLValueError(f"partition {r[0]} of the DataFrame: {r[4]}")
        seen = [r[0] for r in records]
        if seen != list(range(self.partitions)):
            raise DPMLError(
                f"pass {self.jobs - 1} returned partials for partitions {seen[:10]}..., "
                f"expected one for each of {self.partitions}"
            )
        return [(int(r[2]), r[3]) for r in records]


def _first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else ""


def _fit(estimator, df, schema, n_rows, ledger):
    _require_pyspark()
    ledger = resolve_ledger(ledger, estimator)
    if not isinstance(schema, Schema) or schema._text is None:
        raise DPMLTypeError(
            "schema must be a dpml.Schema built with Schema.from_file or Schema.from_toml"
        )
    if isinstance(n_rows, bool) or not isinstance(n_rows, numbers.Integral) or n_rows <= 0:
        raise DPMLValueError(
            f"n_rows={n_rows!r} must be a positive integer: the public number of rows in df"
        )
    n_rows = int(n_rows)
    epsilon, mechanism = estimator._epsilon_and_mechanism()
    seed = estimator._seed()
    if estimator.feature_groups is not None:
        raise DPMLValueError(
            "feature_groups do not apply to fits over Spark (group-shaped noise needs every "
            "row's group norms before the noise is drawn); fit in memory for it"
        )
    if estimator.data_norm is None:
        raise DPMLValueError(
            "data_norm is required: rows encoded by a schema have norm ≤ 1, so pass "
            "data_norm=1.0 (a public bound, never read from the data)"
        )
    classes = _validation.public_classes(estimator.classes, None, False)
    if [float(c) for c in classes] != [-1.0, 1.0]:
        raise DPMLValueError(
            f"classes={estimator.classes!r}: a schema encodes its label as -1/+1; pass "
            "classes=schema.classes"
        )
    d = schema.n_features
    kwargs = estimator._fit_kwargs((n_rows, d), {}, epsilon, mechanism)
    kwargs.pop("feature_groups")
    kernel = dict(
        loss_name=kwargs["loss_name"],
        huber_width=kwargs["huber_width"],
        data_norm=kwargs["data_norm"],
        clip_rows=kwargs["clip_rows"],
        intercept=kwargs["intercept"],
    )
    passes = _Passes(df, schema, kernel)
    record = None
    if ledger is not None:
        record = ledger.charge(
            epsilon, 0.0, what=f"dpml.spark.{type(estimator).__name__}", mechanism=mechanism
        )
    try:
        models, report, solver_passes = _dpml.fit_linear_partitions_model(
            passes, n_rows, d, seed=seed, **kwargs
        )
    except DPMLValueError:
        # Refused before any noise was drawn (parameters, rows, n_rows): nothing was spent.
        if record is not None:
            ledger.refund(record)
        raise
    except DPMLError:
        # The validation job failing is before the noise too; a later failure is not.
        if record is not None and passes.jobs <= 1:
            ledger.refund(record)
        raise
    finally:
        passes.close()
    estimator.classes_ = classes
    estimator.n_features_in_ = d
    estimator._models = models
    estimator.privacy_ = estimator._privacy_report(report, epsilon, mechanism, seed, kwargs)
    estimator.privacy_["spark"] = {
        "passes": solver_passes,
        "partitions": passes.partitions,
        "n_rows": n_rows,
        "n_rows_source": "given (n_rows, public under replace-one neighbours); checked "
        "against the partitions' counts before any noise was drawn",
        "noise_drawn_on": "the driver",
    }
    per_model = estimator.privacy_.get("epsilon_per_model")
    if per_model is not None:
        estimator.privacy_["outlook"] = _dpml.utility_outlook(n_rows, models.info()["features"], per_model)
    return estimator


_FIT_DOC = """Trains on the Spark DataFrame ``df`` (columns named as in ``schema``), whose
        rows must number exactly ``n_rows`` (public; checked before any noise), charging
        ``ledger`` (or the active one) ε. Binary only (the schema's ±1 label); not
        ``feature_groups``. See ``dpml.spark``'s Privacy section. Returns ``self``."""


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


def predict(model, df, *, schema, decision_col="decision", prediction_col="prediction"):
    """``df`` with two columns added: the model's score (``decision_col``) and predicted
    class (``prediction_col``: +1.0 when the score is ≥ 0, else -1.0, the schema's label
    encoding), computed on the executors with the model broadcast as its file bytes. A
    record the schema refuses fails the job with an error naming its row and column.
    ``model``: a fitted binary ``dpml.LogisticRegression`` / ``dpml.HuberSVC``."""
    _require_pyspark()
    from pyspark.sql.types import DoubleType, StructField, StructType

    if not isinstance(schema, Schema) or schema._text is None:
        raise DPMLTypeError(
            "schema must be a dpml.Schema built with Schema.from_file or Schema.from_toml"
        )
    model._check_fitted()
    if len(model._models) != 1 or model._models.info()["kind"] != "linear":
        raise DPMLValueError("dpml.spark.predict takes a binary linear model")
    if model.n_features_in_ != schema.n_features:
        raise DPMLValueError(
            f"the model has {model.n_features_in_} features, the schema encodes "
            f"{schema.n_features}"
        )
    for name in (decision_col, prediction_col):
        if name in df.columns:
            raise DPMLValueError(f"df already has a column {name!r}")
    files = df.sparkSession.sparkContext.broadcast([bytes(f) for f in model._models.to_bytes()])
    text = schema._text
    out = StructType(
        list(df.schema.fields)
        + [StructField(decision_col, DoubleType()), StructField(prediction_col, DoubleType())]
    )

    def score(batches):
        import numpy
        import pyarrow as pa

        from dpml import _dpml as core

        encoder = core.Schema.from_toml(text)
        models = core.Models.from_bytes("linear", files.value)
        for batch in batches:
            x, _ = encoder.encode_stream(
                pa.RecordBatchReader.from_batches(batch.schema, [batch]).__arrow_c_stream__(),
                False,
            )
            scores = models.decision(x=x)[:, 0] if len(x) else numpy.zeros(0)
            yield batch.append_column(decision_col, pa.array(scores, pa.float64())).append_column(
                prediction_col, pa.array(numpy.where(scores >= 0, 1.0, -1.0), pa.float64())
            )

    return df.mapInArrow(score, out)


__all__ = ["HuberSVC", "LogisticRegression", "predict"]
