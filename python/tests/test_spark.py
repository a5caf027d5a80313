"""dpml.spark on a local[2] Spark (2 threads, a failed task retried once): the distributed
fit against the in-memory one, retries, bad rows, executor errors, changing data, batch
prediction. Skipped where pyspark or Java is missing; python/ci.sh installs both."""
import os
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

import dpml

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and "JAVA_HOME" not in os.environ:  # pragma: no cover
    pytest.skip("Spark needs Java 17", allow_module_level=True)

import dpml.spark  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = """
version = 1
row_scaling = "attributes"
intercept = true

[[columns]]
name = "age"
type = "numeric"
lower = 0
upper = 100

[[columns]]
name = "colour"
type = "categorical"
levels = ["red", "green", "blue"]
unseen = "other"
missing = "level"

[[columns]]
name = "label"
type = "label"
classes = ["no", "yes"]
positive = "yes"
"""
SPARK_TYPES = "age double, colour string, label string"
N = 1500
PARTITIONS = 3


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,2]")  # 2 threads; a task may fail once
        .appName("dpml-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def rows(n=N, seed=0):
    rng = np.random.default_rng(seed)
    ages = rng.uniform(0, 100, n)
    colours = rng.choice(["red", "green", "blue", "purple"], n)
    noisy = (ages > 45) ^ (rng.uniform(size=n) < 0.15)
    labels = np.where(noisy | (colours == "red"), "yes", "no")
    return pd.DataFrame({"age": ages, "colour": colours, "label": labels})


def frame(spark, data):
    records = list(data.itertuples(index=False, name=None))
    return spark.createDataFrame(
        spark.sparkContext.parallelize(records, PARTITIONS), SPARK_TYPES
    )


def params(**extra):
    schema = dpml.Schema.from_toml(SCHEMA)
    return dict(
        epsilon=1.0,
        data_norm=1.0,
        fit_intercept=False,
        classes=schema.classes,
        regularization=1e-2,
        random_state=dpml.InsecureSeed(7),
        **extra,
    )


def test_the_distributed_fit_equals_the_in_memory_fit_to_the_certificate(spark, tmp_path):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows()
    X, y = schema.encode(data)
    for Local, Distributed in [
        (dpml.LogisticRegression, dpml.spark.LogisticRegression),
        (dpml.HuberSVC, dpml.spark.HuberSVC),
    ]:
        local = Local(**params()).fit(X, y)
        ledger = dpml.Ledger(2.0)
        fitted = Distributed(**params()).fit(
            frame(spark, data), schema=schema, n_rows=N, ledger=ledger
        )
        assert ledger.spent_epsilon == 1.0
        noise = fitted.privacy_["noise"]
        assert noise == local.privacy_["noise"]
        # Both certify ‖∇F‖ ≤ γ on the same μ-strongly convex objective (the same seeded
        # noise): their weights are within 2γ/μ of each other.
        mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
        gap = np.linalg.norm(fitted.coef_ - local.coef_)
        assert gap <= 2 * noise["tolerance"] / mu, gap
        assert not np.array_equal(fitted.coef_, np.zeros_like(fitted.coef_))
        spark_info = fitted.privacy_["spark"]
        assert spark_info["partitions"] == PARTITIONS and spark_info["passes"] >= 3
        assert np.array_equal(fitted.predict(X), local.predict(X))
        # The model file is the in-memory estimator's (the Rust loader reads it).
        path = tmp_path / f"{Local.__name__}.model"
        fitted.save(path)
        loaded = Local.load(path, classes=schema.classes)
        assert np.array_equal(loaded.coef_, fitted.coef_)


def test_a_task_failing_once_changes_nothing_released(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=1)
    clean = frame(spark, data)

    def fail_first_attempt(batches):
        from pyspark import TaskContext

        task = TaskContext.get()
        if task.partitionId() == 1 and task.attemptNumber() == 0:
            raise RuntimeError("injected executor failure")
        yield from batches

    flaky = clean.mapInArrow(fail_first_attempt, clean.schema)
    first = dpml.spark.LogisticRegression(**params()).fit(clean, schema=schema, n_rows=N)
    retried = dpml.spark.LogisticRegression(**params()).fit(flaky, schema=schema, n_rows=N)
    # Bit for bit: the noise was drawn once, on the driver, and every retried partial sum
    # recomputed the same bits.
    assert np.array_equal(first.coef_, retried.coef_)
    assert first.privacy_["spark"]["passes"] == retried.privacy_["spark"]["passes"]


def test_a_row_outside_the_schema_names_partition_row_and_column_and_charges_nothing(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=2)
    data.loc[N - 3, "label"] = "maybe-secret"  # the last partition (rows 1000..1499)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match=r'partition 2 .*row 497, column "label"') as e:
        dpml.spark.LogisticRegression(**params()).fit(
            frame(spark, data), schema=schema, n_rows=N, ledger=ledger
        )
    assert "maybe-secret" not in str(e.value)
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0
    # A wrong public n: refused before any noise, nothing charged.
    with pytest.raises(dpml.DPMLValueError, match=r"n_rows.*1500 rows"):
        dpml.spark.LogisticRegression(**params()).fit(
            frame(spark, rows(seed=2)), schema=schema, n_rows=N + 1, ledger=ledger
        )
    assert ledger.spent_epsilon == 0.0


def test_an_executor_error_surfaces_as_a_dpml_error(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    clean = frame(spark, rows(seed=3))

    def always_fails(batches):
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 0:
            raise RuntimeError("executor lost its disk")
        yield from batches

    broken = clean.mapInArrow(always_fails, clean.schema)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLError, match=r"Spark job of pass 0 failed") as e:
        dpml.spark.LogisticRegression(**params()).fit(
            broken, schema=schema, n_rows=N, ledger=ledger
        )
    assert not isinstance(e.value, dpml.DPMLValueError)
    assert "executor lost its disk" in str(e.value.__cause__)
    # The validation job failed: no noise was drawn, the charge is refunded.
    assert ledger.spent_epsilon == 0.0


def test_blocks_are_encoded_once_and_a_source_that_changed_is_refused(
    spark, tmp_path, monkeypatch
):
    """The source is read once per fit (the encoded blocks stay in Spark's cache); when a
    pass encodes a partition again (an evicted block: simulated by not caching) from a
    source that changed, the pass is refused."""
    schema = dpml.Schema.from_toml(SCHEMA)
    clean = frame(spark, rows(seed=4))
    counter = str(tmp_path / "runs")

    def changes_after_first_pass(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        if TaskContext.get().partitionId() != 0:
            yield from batches
            return
        runs = int(open(counter).read()) if os.path.exists(counter) else 0
        with open(counter, "w") as f:
            f.write(str(runs + 1))
        for batch in batches:
            if runs >= 1:  # a source that changed: one age nudged
                ages = batch.column("age").to_numpy().copy()
                ages[0] = min(ages[0] + 1.0, 100.0) if ages[0] < 99 else ages[0] - 1.0
                batch = pa.RecordBatch.from_arrays(
                    [pa.array(ages)] + batch.columns[1:], schema=batch.schema
                )
            yield batch

    changing = clean.mapInArrow(changes_after_first_pass, clean.schema)
    fitted = dpml.spark.LogisticRegression(**params()).fit(changing, schema=schema, n_rows=N)
    assert fitted.privacy_["spark"]["passes"] >= 3
    assert open(counter).read() == "1", "partition 0's source read more than once"
    os.remove(counter)
    monkeypatch.setattr(dpml.spark, "_CACHE_BLOCKS", False)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLError, match="changed between passes"):
        dpml.spark.LogisticRegression(**params()).fit(
            changing, schema=schema, n_rows=N, ledger=ledger
        )
    # Refused after the noise was drawn: the charge stays, nothing is released.
    assert ledger.spent_epsilon == 1.0


def test_batch_prediction_equals_local_prediction(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=5)
    X, y = schema.encode(data)
    model = dpml.LogisticRegression(**params()).fit(X, y)
    scored = dpml.spark.predict(model, frame(spark, data), schema=schema).toPandas()
    assert list(scored.columns) == ["age", "colour", "label", "decision", "prediction"]
    assert np.array_equal(scored["decision"].to_numpy(), model.decision_function(X))
    assert np.array_equal(scored["prediction"].to_numpy(), model.predict(X))
    with pytest.raises(dpml.DPMLValueError, match="already has a column"):
        dpml.spark.predict(model, frame(spark, data), schema=schema, decision_col="age")
