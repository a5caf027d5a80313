"""dpml.spark on a local[2] Spark (2 threads, a failed task retried once): the distributed
fit against the in-memory one, retries, bad rows, executor errors, changing data, batch
prediction, public facts only in what a fit returns, DataFrame operations only (and a fit
and prediction on a local Spark Connect server), Schema.from_data over DataFrames. Skipped
where pyspark or Java is missing; python/ci.sh installs both."""
import ast
import functools
import inspect
import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings

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
        # 2 threads; a task may fail twice (a Python worker whose channel Spark closed under
        # load, seen once in CI, fails a task without any fault of the code under test).
        SparkSession.builder.master("local[2,3]")
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
    return {
        **dict(
            epsilon=1.0,
            data_norm=1.0,
            fit_intercept=False,
            classes=schema.classes,
            regularization=1e-2,
            random_state=dpml.InsecureSeed(7),
        ),
        **extra,
    }


# What dpml.spark's fits report about Spark: public facts only.
PUBLIC_SPARK_FACTS = {"n_rows", "n_rows_source", "noise_drawn_on"}


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
        # Public facts only (no pass or partition counts: they depend on the data).
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
        assert fitted.privacy_["spark"]["n_rows"] == N
        assert np.array_equal(fitted.predict(X), local.predict(X))
        # The model file is the in-memory estimator's (the Rust loader reads it).
        path = tmp_path / f"{Local.__name__}.model"
        fitted.save(path)
        loaded = Local.load(path, classes=schema.classes)
        assert np.array_equal(loaded.coef_, fitted.coef_)


def test_group_shaped_noise_over_spark_is_the_in_memory_grouped_fit_to_the_certificate(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows()
    X, y = schema.encode(data)
    grouped = params(feature_groups=schema.feature_groups, regularization="auto")
    local = dpml.HuberSVC(**grouped).fit(X, y)
    ledger = dpml.Ledger(1.0)
    fitted = dpml.spark.HuberSVC(**grouped).fit(
        frame(spark, data), schema=schema, n_rows=N, ledger=ledger
    )
    assert ledger.spent_epsilon == 1.0
    noise = fitted.privacy_["noise"]
    # The same group-shaped calibration and Λ from the grouped rule, and the same seeded
    # noise: the two certified points lie within 2γ/μ of each other.
    assert noise == local.privacy_["noise"]
    assert fitted.privacy_["regularization"] == local.privacy_["regularization"]
    mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
    assert np.linalg.norm(fitted.coef_ - local.coef_) <= 2 * noise["tolerance"] / mu
    # Euclidean noise from the same seed is another model: the groups shaped this one.
    euclidean = dpml.HuberSVC(**params(regularization=local.privacy_["regularization"])).fit(X, y)
    assert np.linalg.norm(euclidean.coef_ - local.coef_) > 2 * noise["tolerance"] / mu


def test_a_row_beyond_group_norm_one_is_refused_before_any_noise(spark):
    # Groups that join the numeric column with the colour levels: encoded rows keep their
    # Euclidean norm ≤ 1 but can exceed group norm 1. Refused in the validation pass,
    # naming the partition and row; nothing charged.
    schema = dpml.Schema.from_toml(SCHEMA)
    merged = [0] * len(schema.feature_groups)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match=r"partition \d+ of the DataFrame: .*group norm"):
        dpml.spark.HuberSVC(**params(feature_groups=merged)).fit(
            frame(spark, rows(60, seed=3)), schema=schema, n_rows=60, ledger=ledger
        )
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0


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
    assert pickle.dumps(first.privacy_) == pickle.dumps(retried.privacy_)


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
    passes = []
    monkeypatch.setattr(dpml.spark._Passes, "__call__", _counted(passes))
    fitted = dpml.spark.LogisticRegression(**params()).fit(changing, schema=schema, n_rows=N)
    assert len(passes) >= 3 and not np.array_equal(fitted.coef_, np.zeros_like(fitted.coef_))
    assert open(counter).read() == "1", "partition 0's source read more than once"
    os.remove(counter)
    monkeypatch.setattr(dpml.spark, "_CACHE_BLOCKS", False)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLError, match="changed between passes") as e:
        dpml.spark.LogisticRegression(**params()).fit(
            changing, schema=schema, n_rows=N, ledger=ledger
        )
    # Refused after the noise was drawn: the charge stays, nothing is released; the error
    # names no pass, partition, row count or checksum (no number at all).
    assert ledger.spent_epsilon == 1.0
    assert not any(c.isdigit() for c in str(e.value)), str(e.value)


def test_a_spark_job_failing_after_the_noise_names_no_pass_and_keeps_the_charge(
    spark, tmp_path, monkeypatch
):
    """A job failing after the validation pass (a partition's source failing when encoded
    again, the blocks not cached): a DPMLError that names no pass and does not carry
    Spark's exception (its job and stage numbers count the passes); the charge stays."""
    schema = dpml.Schema.from_toml(SCHEMA)
    clean = frame(spark, rows(seed=8))
    counter = str(tmp_path / "runs")

    def fails_after_first_pass(batches):
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 0:
            runs = int(open(counter).read()) if os.path.exists(counter) else 0
            with open(counter, "w") as f:
                f.write(str(runs + 1))
            if runs >= 1:
                raise RuntimeError("executor lost its disk at job 12345")
        yield from batches

    failing = clean.mapInArrow(fails_after_first_pass, clean.schema)
    monkeypatch.setattr(dpml.spark, "_CACHE_BLOCKS", False)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLError, match="failed after the noise was drawn") as e:
        dpml.spark.LogisticRegression(**params()).fit(
            failing, schema=schema, n_rows=N, ledger=ledger
        )
    assert not isinstance(e.value, dpml.DPMLValueError)
    assert e.value.__cause__ is None and e.value.__context__ is None
    # No number (Spark's exception class may be named, e.g. Py4JJavaError).
    assert not re.search(r"\b\d+\b", str(e.value)), str(e.value)
    assert ledger.spent_epsilon == 1.0


def _counted(calls):
    """``_Passes.__call__`` that also records each pass (the tests' own count: a fit
    reports none)."""
    original = dpml.spark._Passes.__call__

    def call(self, w, with_hessian, model=0):
        calls.append(bool(with_hessian))
        return original(self, w, with_hessian, model)

    return call


def test_batch_prediction_equals_local_prediction(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=5)
    X, y = schema.encode(data)
    model = dpml.LogisticRegression(**params()).fit(X, y)
    scored = dpml.spark.predict(model, frame(spark, data), schema=schema).toPandas()
    assert list(scored.columns) == ["age", "colour", "label", "decision", "prediction"]
    assert np.array_equal(scored["decision"].to_numpy(), model.decision_function(X))
    # In the schema's label classes, as model.predict(X) gives them in memory
    # (classes=schema.classes: "yes", the positive class, for a score >= 0, "no" below).
    assert model.predict(X).tolist() == scored["prediction"].tolist()
    assert set(scored["prediction"]) == {"yes", "no"}
    # A model with labels of its own predicts them (classes_[1] for a score >= 0).
    numbered = dpml.LogisticRegression(**params(classes=[0, 1])).fit(X, (y == "yes").astype(int))
    scored = dpml.spark.predict(numbered, frame(spark, data), schema=schema).toPandas()
    assert scored["prediction"].tolist() == numbered.predict(X).tolist()
    # A model on the ±1 encoding (classes=[-1.0, 1.0]) predicts the schema's two classes...
    signed = dpml.LogisticRegression(**params(classes=[-1.0, 1.0])).fit(
        X, np.where(y == "yes", 1.0, -1.0)
    )
    scored = dpml.spark.predict(signed, frame(spark, data), schema=schema).toPandas()
    assert scored["prediction"].tolist() == model.predict(X).tolist()
    # ...but the ±1 encoding of a label with three classes has no one class for -1.
    three = dpml.Schema.from_toml(SCHEMA.replace('["no", "yes"]', '["no", "yes", "maybe"]'))
    with pytest.raises(dpml.DPMLValueError, match="3 classes.*decision column"):
        dpml.spark.predict(signed, frame(spark, data), schema=three)
    with pytest.raises(dpml.DPMLValueError, match="already has a column"):
        dpml.spark.predict(model, frame(spark, data), schema=schema, decision_col="age")


THREE = SCHEMA.replace('["no", "yes"]', '["no", "yes", "maybe"]') + 'aliases = { "perhaps" = "maybe" }\n'
THREE_N = 600


def three_rows(n=THREE_N, seed=0):
    """Rows with a label of three classes (one written by its alias), declared
    ["no", "yes", "maybe"]: sorted as in memory, classes_ is ["maybe", "no", "yes"]."""
    data = rows(n, seed)
    rng = np.random.default_rng(seed + 100)
    data["label"] = np.where(
        data["age"] < 33, "maybe", np.where(data["colour"] == "red", "yes", "no")
    )
    flip = rng.uniform(size=n) < 0.1
    data.loc[flip, "label"] = rng.choice(["no", "yes", "maybe"], int(flip.sum()))
    data.loc[data.index[::7], "label"] = data["label"][::7].replace("maybe", "perhaps")
    return data


def test_a_three_class_fit_is_the_in_memory_one_vs_rest_fit(spark):
    """classes=schema.label_classes: one model per class over the partitions, ε split as
    in memory; the same seeded noise as the in-memory estimator on the same rows, and each
    model within the certificate of the in-memory one (the sums run in another order:
    each partition sequentially, partitions merged in order, so not bit for bit)."""
    schema = dpml.Schema.from_toml(THREE)
    data = three_rows()
    X, _ = schema.encode(data, labels=False)
    y = data["label"].replace("perhaps", "maybe").to_numpy()
    for Local, Distributed, mechanism in [
        (dpml.LogisticRegression, dpml.spark.LogisticRegression, "objective"),
        (dpml.HuberSVC, dpml.spark.HuberSVC, "output"),
    ]:
        kwargs = params(classes=schema.label_classes, mechanism=mechanism, regularization="auto")
        local = Local(**kwargs).fit(X, y)
        ledger = dpml.Ledger(2.0)
        fitted = Distributed(**kwargs).fit(
            frame(spark, data), schema=schema, n_rows=THREE_N, ledger=ledger
        )
        assert ledger.spent_epsilon == 1.0
        assert fitted.classes_.tolist() == ["maybe", "no", "yes"] == local.classes_.tolist()
        # The ε split (and Λ, the noise's calibration) as in memory.
        for key in ("epsilon", "epsilon_per_model", "models", "regularization", "noise"):
            assert fitted.privacy_[key] == local.privacy_[key], key
        assert fitted.privacy_["models"] == 3
        assert fitted.privacy_["epsilon_per_model"] <= 1.0 / 3
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
        noise = fitted.privacy_["noise"]
        mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
        if mechanism == "objective":
            bound = 2 * noise["tolerance"] / mu
        else:
            # Output perturbation: two certified points, each within γ/μ of the exact
            # minimizer, then the same noise (released on a grid: at most a grid step
            # apart per weight as well).
            bound = 2 * noise["tolerance"] / mu + 2 * np.sqrt(X.shape[1]) * noise.get(
                "release_grid", 0.0
            )
        weights = fitted._models.coefficients()[0]
        for k in range(3):
            gap = np.linalg.norm(weights[k] - local._models.coefficients()[0][k])
            assert gap <= bound, (Local.__name__, k, gap, bound)
        assert np.array_equal(fitted.predict(X), local.predict(X))
        # predict over Spark: the label's classes by argmax, the K scores as an array.
        scored = dpml.spark.predict(fitted, frame(spark, data), schema=schema).toPandas()
        assert scored["prediction"].tolist() == fitted.predict(X).tolist()
        assert set(scored["prediction"]) <= {"maybe", "no", "yes"}
        assert np.array_equal(np.stack(scored["decision"].to_numpy()), fitted.decision_function(X))


def test_a_two_class_fit_by_the_label_classes_is_the_in_memory_fit(spark):
    """classes=schema.label_classes with two classes: one model, class 1 of the sorted
    classes (here "yes") +1, as in memory; predictions in the label's classes."""
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(600, seed=9)
    X, _ = schema.encode(data, labels=False)
    kwargs = params(classes=schema.label_classes)
    local = dpml.LogisticRegression(**kwargs).fit(X, data["label"].to_numpy())
    fitted = dpml.spark.LogisticRegression(**kwargs).fit(
        frame(spark, data), schema=schema, n_rows=600
    )
    assert fitted.privacy_["models"] == 1 and fitted.classes_.tolist() == ["no", "yes"]
    noise = fitted.privacy_["noise"]
    assert noise == local.privacy_["noise"]
    mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
    assert np.linalg.norm(fitted.coef_ - local.coef_) <= 2 * noise["tolerance"] / mu
    scored = dpml.spark.predict(fitted, frame(spark, data), schema=schema).toPandas()
    assert scored["prediction"].tolist() == local.predict(X).tolist()


def test_what_spark_does_not_build_is_refused_by_name_and_charges_nothing(spark):
    schema = dpml.Schema.from_toml(SCHEMA)
    df = frame(spark, rows(60, seed=10))
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match=r"classes=.*schema\.label_classes"):
        dpml.spark.LogisticRegression(**params(classes=[0, 1])).fit(
            df, schema=schema, n_rows=60, ledger=ledger
        )
    for name in ("DPSGDClassifier", "RandomFeaturesSVC"):
        with pytest.raises(dpml.DPMLValueError, match=rf"dpml\.spark\.{name} is not built for Spark"):
            getattr(dpml.spark, name)(epsilon=1.0, classes=schema.classes)
    kernel = dpml.RandomFeaturesSVC(
        epsilon=1.0, classes=schema.classes, random_state=dpml.InsecureSeed(1)
    ).fit(*schema.encode(rows(60, seed=10)))
    with pytest.raises(dpml.DPMLValueError, match="not built for RandomFeaturesSVC"):
        dpml.spark.predict(kernel, df, schema=schema)
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0


def _gaussian_bound(noise, mu, n, d, mechanism):
    """How far two releases of the same seeded Gaussian fit may lie apart: two certified
    solver points, each within γ/μ of the exact minimizer, then the same noise on a grid
    (at most a grid step apart per weight). The grid, a function of the public
    calibration: at most max(Δ·2⁻²⁰/√d, σ·2⁻²⁹) for output perturbation's discrete
    Gaussian, 2⁻³⁰·σ/(nμ) for objective perturbation's release."""
    if mechanism == "output":
        grid = max(noise["l2_sensitivity"] * 2.0**-20 / np.sqrt(d), noise["sigma"] * 2.0**-29)
    else:
        grid = noise["sigma"] / (n * mu) * 2.0**-30
    return 2 * noise["tolerance"] / mu + 2 * np.sqrt(d) * grid


def test_a_gaussian_fit_over_spark_is_the_in_memory_fit_to_the_certificate(spark):
    """delta > 0 over Spark: dp-erm's GaussianErm::fit_sums, the in-memory fit's
    calibration and seeded noise; privacy_ as in memory, the ledger charged (ε, δ);
    binary and one-vs-rest at (ε/K, δ/K)."""
    schema = dpml.Schema.from_toml(SCHEMA)
    three = dpml.Schema.from_toml(THREE)
    binary = rows(600, seed=4)
    X2, y2 = schema.encode(binary)
    many = three_rows()
    X3, _ = three.encode(many, labels=False)
    y3 = many["label"].replace("perhaps", "maybe").to_numpy()
    cases = [
        (dpml.LogisticRegression, dpml.spark.LogisticRegression, "objective", schema, binary, X2, y2, {}),
        (dpml.HuberSVC, dpml.spark.HuberSVC, "output", schema, binary, X2, y2, {}),
        (
            dpml.LogisticRegression,
            dpml.spark.LogisticRegression,
            "output",
            three,
            many,
            X3,
            y3,
            dict(classes=three.label_classes, regularization="auto"),
        ),
    ]
    for Local, Distributed, mechanism, sch, data, X, y, extra in cases:
        kwargs = params(delta=1e-6, mechanism=mechanism, **extra)
        local = Local(**kwargs).fit(X, y)
        ledger = dpml.Ledger(2.0, 1e-5)
        fitted = Distributed(**kwargs).fit(
            frame(spark, data), schema=sch, n_rows=len(data), ledger=ledger
        )
        assert ledger.spent_epsilon == 1.0 and ledger.spent_delta == 1e-6
        assert ledger.records[0]["mechanism"] == f"gaussian-{mechanism}"
        for key in (
            "epsilon", "delta", "mechanism", "regularization", "noise", "models",
            "epsilon_per_model", "calibration", "loss",
        ):
            assert fitted.privacy_[key] == local.privacy_[key], key
        assert fitted.privacy_["mechanism"] == f"gaussian-{mechanism}"
        assert fitted.privacy_["delta"] == 1e-6
        models = 3 if "classes" in extra else 1
        assert fitted.privacy_["models"] == models
        noise = fitted.privacy_["noise"]
        assert noise["delta_per_model"] <= 1e-6 / models
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
        mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
        bound = _gaussian_bound(noise, mu, len(data), X.shape[1], mechanism)
        for k in range(models):
            gap = np.linalg.norm(
                fitted._models.coefficients()[0][k] - local._models.coefficients()[0][k]
            )
            assert gap <= bound, (Local.__name__, mechanism, k, gap, bound)
        assert not np.array_equal(fitted.coef_, np.zeros_like(fitted.coef_))
        assert np.array_equal(fitted.predict(X), local.predict(X))


def test_a_pure_epsilon_ledger_refuses_a_gaussian_fit_before_any_job(spark, monkeypatch):
    schema = dpml.Schema.from_toml(SCHEMA)
    df = frame(spark, rows(60, seed=10))
    jobs = []
    real = dpml.spark._Passes.__call__

    def counted(self, *args, **kwargs):
        jobs.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(dpml.spark._Passes, "__call__", counted)
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.BudgetExceededError, match="delta"):
        dpml.spark.LogisticRegression(**params(delta=1e-6)).fit(
            df, schema=schema, n_rows=60, ledger=ledger
        )
    assert jobs == []
    assert ledger.spent_epsilon == 0.0 and ledger.spent_delta == 0.0 and len(ledger) == 0
    # The same fit at delta=0 runs its jobs (the counter sees them).
    dpml.spark.LogisticRegression(**params()).fit(df, schema=schema, n_rows=60, ledger=ledger)
    assert jobs and ledger.spent_epsilon == 1.0


# A neighbouring pair (one row replaced) on which output perturbation's solver takes 7 and 6
# passes (the validation pass included) whatever the noise: while privacy_["spark"] held the
# pass count, it told the pair apart with certainty.
NEIGHBOURS_N = 80
NEIGHBOURS_SEED = 0
NEIGHBOURS_ROW = 0
NEIGHBOURS_REPLACEMENT = (100.0, "red", "no")


def neighbours():
    data = rows(NEIGHBOURS_N, seed=NEIGHBOURS_SEED)
    other = data.copy()
    other.loc[NEIGHBOURS_ROW] = NEIGHBOURS_REPLACEMENT
    return data, other


def test_what_a_fit_returns_is_the_same_for_neighbouring_datasets(spark, monkeypatch):
    """Everything a fit returns but the model itself — privacy_, every other attribute, its
    warnings — is identical (pickled) for two datasets differing in one row, whatever the
    seed: it holds public facts only. The pair takes different numbers of passes."""
    schema = dpml.Schema.from_toml(SCHEMA)
    pair = neighbours()
    counts = []
    for seed in range(4):
        returned = []
        for data in pair:
            passes = []
            monkeypatch.setattr(dpml.spark._Passes, "__call__", _counted(passes))
            estimator = dpml.spark.LogisticRegression(
                **params(mechanism="output", random_state=dpml.InsecureSeed(seed))
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fitted = estimator.fit(frame(spark, data), schema=schema, n_rows=NEIGHBOURS_N)
            counts.append(len(passes))
            facts = {k: v for k, v in vars(fitted).items() if k != "_models"}
            # (Not ResourceWarnings: pyspark's sockets, unclosed until the garbage collector
            # runs, whenever it does.)
            said = [
                f"{w.category.__name__}: {w.message}"
                for w in caught
                if not issubclass(w.category, ResourceWarning)
            ]
            returned.append((facts, said))
        assert pickle.dumps(returned[0]) == pickle.dumps(returned[1]), (seed, returned)
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
    # The pass counts (the tests' own: no fit reports them) differ between the neighbours.
    assert counts[0::2] != counts[1::2], counts


# What Spark Connect lacks: RDDs, the SparkContext and its broadcasts (and the JVM handles
# behind them).
_NOT_ON_SPARK_CONNECT = {"rdd", "sparkContext", "broadcast", "_sc", "_jsc", "_jvm", "_jdf"}


def test_dpml_spark_uses_dataframe_operations_only():
    """What Spark Connect can run: no RDD, SparkContext or broadcast in dpml.spark's code
    (its docstrings may name them)."""
    tree = ast.parse(inspect.getsource(dpml.spark))
    used = sorted(
        {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        & _NOT_ON_SPARK_CONNECT
        | {
            node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id in {"SparkContext", "RDD"}
        }
        | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name in {"SparkContext", "RDD", "SparkConf"}
        }
    )
    assert used == [], used


def _forbidden_to_dpml(monkeypatch, cls, name):
    """``cls.name`` (a property or method) raising when dpml's code reaches it (pyspark's
    own classic code still may: its UDFs are built through the SparkContext)."""
    original = cls.__dict__[name]

    def check():
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if caller == "dpml" or caller.startswith("dpml."):
            raise AssertionError(f"{caller} used {cls.__name__}.{name}: not on Spark Connect")

    if isinstance(original, (property, functools.cached_property)):
        compute = original.fget if isinstance(original, property) else original.func

        def get(self):
            check()
            return compute(self)

        monkeypatch.setattr(cls, name, property(get))
    else:

        def call(self, *args, **kwargs):
            check()
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, call)


def test_a_fit_and_a_prediction_reach_no_rdd_and_no_spark_context(spark, monkeypatch):
    """On classic Spark, with DataFrame.rdd, SparkSession.sparkContext and
    SparkContext.broadcast raising whenever dpml's code reaches them (what Spark Connect
    lacks), a fit and a prediction run."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=6)
    df = frame(spark, data)  # parallelize: the test's, before the guards
    _forbidden_to_dpml(monkeypatch, SparkSession, "sparkContext")
    _forbidden_to_dpml(monkeypatch, ClassicDataFrame, "rdd")
    _forbidden_to_dpml(monkeypatch, SparkContext, "broadcast")
    # The guards: the tests' (and pyspark's) own use goes through, dpml's is refused.
    assert df.sparkSession.sparkContext is not None
    with pytest.raises(AssertionError, match="not on Spark Connect"):
        exec("df.sparkSession.sparkContext", {"__name__": "dpml.spark", "df": df})
    fitted = dpml.spark.LogisticRegression(**params()).fit(df, schema=schema, n_rows=N)
    scored = dpml.spark.predict(fitted, df, schema=schema).toPandas()
    X, _ = schema.encode(data)
    assert np.array_equal(scored["decision"].to_numpy(), fitted.decision_function(X))


CONNECT_SCRIPT = r'''
import json, os, pickle, sys

import numpy as np

os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

import dpml
import dpml.spark

work = sys.argv[1]
with open(os.path.join(work, "input.pickle"), "rb") as f:
    schema_text, spark_types, data, bad, n = pickle.load(f)
spark = (
    SparkSession.builder.remote("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .getOrCreate()
)
schema = dpml.Schema.from_toml(schema_text)
counts = os.path.join(work, "reads")
os.makedirs(counts)


def counted(batches):
    # Each read of a source partition leaves a file: the blocks are cached, read once.
    from pyspark import TaskContext

    task = TaskContext.get()
    open(os.path.join(counts, f"{task.partitionId()}-{task.stageId()}-{task.attemptNumber()}"), "w").close()
    yield from batches


source = spark.createDataFrame(data, spark_types).repartition(3)
df = source.mapInArrow(counted, source.schema)
assert isinstance(df, ConnectDataFrame), type(df)
params = dict(epsilon=1.0, data_norm=1.0, fit_intercept=False, classes=schema.classes,
              regularization=1e-2, random_state=dpml.InsecureSeed(7))
ledger = dpml.Ledger(3.0)
fitted = dpml.spark.LogisticRegression(**params).fit(df, schema=schema, n_rows=n, ledger=ledger)
reads = sorted(os.listdir(counts))
scored = dpml.spark.predict(fitted, df, schema=schema).toPandas()
try:
    dpml.spark.LogisticRegression(**params).fit(
        spark.createDataFrame(bad, spark_types).repartition(3), schema=schema, n_rows=n,
        ledger=ledger,
    )
    refusal = None
except dpml.DPMLValueError as e:
    refusal = str(e)
# A private schema from the Connect DataFrame (its partitions counted on the executors).
described = dpml.Schema.from_data(
    spark.createDataFrame(data, spark_types).repartition(3), label="label", positive="yes",
    categorical=["colour"], epsilon=1.0, delta=1e-6, random_state=dpml.InsecureSeed(4),
)
with open(os.path.join(work, "output.pickle"), "wb") as f:
    pickle.dump(dict(fitted=fitted, reads=reads, scored=scored, spent=ledger.spent_epsilon,
                     refusal=refusal, described=described.to_toml()), f)
spark.stop()
'''


def _connect_available():
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies("pyspark.sql.connect.session")
    except Exception as e:  # pragma: no cover - requirements-spark.txt installs them
        return str(e)
    return None


def test_a_fit_and_a_prediction_run_on_spark_connect(tmp_path):
    """A local Spark Connect server (pyspark's own, started in a child process: a classic
    SparkContext already runs in this one): the fit's passes, cache and prediction through
    the Connect client's DataFrames alone."""
    missing = _connect_available()
    if missing:  # pragma: no cover
        pytest.skip(f"Spark Connect's client needs {missing}")
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=7)
    bad = data.copy()
    bad.loc[11, "label"] = "maybe-secret"
    with open(tmp_path / "input.pickle", "wb") as f:
        pickle.dump((SCHEMA, SPARK_TYPES, data, bad, N), f)
    (tmp_path / "connect.py").write_text(CONNECT_SCRIPT)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")
    }
    done = subprocess.run(
        [sys.executable, str(tmp_path / "connect.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with open(tmp_path / "output.pickle", "rb") as f:
        out = pickle.load(f)
    X, y = schema.encode(data)
    local = dpml.LogisticRegression(**params()).fit(X, y)
    fitted = out["fitted"]
    noise = fitted.privacy_["noise"]
    assert noise == local.privacy_["noise"]
    mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
    assert np.linalg.norm(fitted.coef_ - local.coef_) <= 2 * noise["tolerance"] / mu
    assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
    # Each source partition read once (the encoded blocks cached by DataFrame.persist).
    assert sorted(r.split("-")[0] for r in out["reads"]) == ["0", "1", "2"], out["reads"]
    scored = out["scored"]
    assert list(scored.columns) == ["age", "colour", "label", "decision", "prediction"]
    assert len(scored) == N
    # The rows come back in another order (repartition): scored against their own encoding.
    Xs, _ = schema.encode(scored[["age", "colour", "label"]])
    assert np.array_equal(scored["decision"].to_numpy(), fitted.decision_function(Xs))
    assert scored["prediction"].tolist() == fitted.predict(Xs).tolist()
    # A refused row: a DPMLValueError naming its column, not its value; nothing charged.
    assert out["refusal"] is not None and "maybe-secret" not in out["refusal"], out["refusal"]
    assert 'column "label"' in out["refusal"], out["refusal"]
    assert out["spent"] == 1.0
    # Schema.from_data over Connect: the pandas frame's schema, for the same seed.
    described = dpml.Schema.from_data(
        data, label="label", positive="yes", categorical=["colour"], epsilon=1.0,
        delta=1e-6, random_state=dpml.InsecureSeed(4),
    )
    assert out["described"] == described.to_toml()


def test_rejects_a_decimal_column_telling_to_cast_it_to_double(spark):
    """A decimal(10,3) column got the remedy for dictionary columns ("cast to strings"):
    refused on the driver, before any job, by fit and predict alike, saying to cast it to
    double; and in memory (Arrow's decimal128) likewise."""
    import pyarrow as pa
    from pyspark.sql.functions import col

    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(60, seed=11)
    df = frame(spark, data).withColumn("age", col("age").cast("decimal(10,3)"))
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match=r"'age' has Spark type decimal\(10,3\).*cast it to double") as e:
        dpml.spark.LogisticRegression(**params()).fit(df, schema=schema, n_rows=60, ledger=ledger)
    assert "dictionary" not in str(e.value) and "string" not in str(e.value).split(":")[-1]
    assert len(ledger) == 0
    model = dpml.LogisticRegression(**params()).fit(*schema.encode(data))
    with pytest.raises(dpml.DPMLValueError, match=r"decimal\(10,3\).*cast it to double"):
        dpml.spark.predict(model, df, schema=schema)
    # In memory, through Arrow: the decimal is told to become float64, a dictionary strings.
    table = pa.table(
        {
            "age": pa.array([30, 40], pa.decimal128(10, 3)),
            "colour": ["red", "blue"],
            "label": ["no", "yes"],
        }
    )
    with pytest.raises(dpml.DPMLValueError, match="cast the decimal column to float64") as e:
        schema.encode(table)
    assert "dictionary" not in str(e.value)
    coded = table.set_column(0, "age", pa.array([30.0, 40.0])).set_column(
        1, "colour", pa.array(["red", "blue"]).dictionary_encode()
    )
    with pytest.raises(dpml.DPMLValueError, match="dictionary column to strings"):
        schema.encode(coded)


def test_predict_refuses_a_bad_row_as_fit_does(spark):
    """predict surfaced a record the schema refuses as pyspark's PythonException, when the
    result was computed; fit, as DPMLValueError naming partition, row and column. predict
    now runs the same check before it returns (validate=True, the default)."""
    schema = dpml.Schema.from_toml(SCHEMA)
    data = rows(seed=12)
    model = dpml.LogisticRegression(**params()).fit(*schema.encode(data))
    bad = data.copy()
    bad.loc[N - 3, "age"] = np.nan  # the last partition (rows 1000..1499): its row 497
    df = frame(spark, bad)
    with pytest.raises(dpml.DPMLValueError, match=r'partition 2 .*row 497, column "age"') as fitted:
        dpml.spark.LogisticRegression(**params()).fit(df, schema=schema, n_rows=N)
    with pytest.raises(dpml.DPMLValueError, match=r'partition 2 .*row 497, column "age"') as predicted:
        dpml.spark.predict(model, df, schema=schema)
    assert type(predicted.value) is type(fitted.value)
    with pytest.raises(dpml.DPMLTypeError, match="validate"):
        dpml.spark.predict(model, df, schema=schema, validate="yes")
    # validate=False: no pass ahead; the record fails the job when the result is computed.
    from pyspark.errors import PythonException

    lazy = dpml.spark.predict(model, df, schema=schema, validate=False)
    with pytest.raises(PythonException, match='column "age"'):
        lazy.collect()
    # A clean DataFrame predicts as before.
    scored = dpml.spark.predict(model, frame(spark, data), schema=schema).toPandas()
    assert np.array_equal(scored["decision"].to_numpy(), model.decision_function(schema.encode(data)[0]))


# Schema.from_data over a Spark DataFrame: each partition counted on its executor, the
# counts merged and released on the driver.
DESCRIBE = dict(
    label="label",
    positive="yes",
    categorical=["colour"],
    ignore=["note"],
    epsilon=1.0,
    delta=1e-6,
    numeric_missing_zero=True,
)
DESCRIBE_TYPES = "age double, colour string, note string, label string"


def describe_rows(seed=0):
    """``rows`` with missing ages and colours, a rare colour and an ignored column."""
    data = rows(seed=seed)
    data["colour"] = data["colour"].astype(object)
    data.loc[::17, "age"] = np.nan
    data.loc[::23, "colour"] = None
    data.loc[5, "colour"] = "rare"
    data.insert(2, "note", [f"n{i}" for i in range(len(data))])
    return data


def describe_frame(spark, data, types=DESCRIBE_TYPES):
    """``data`` in 3 partitions of 500 rows (as ``frame``) and a fourth, empty one; NaN
    ages as Spark nulls (pandas' NaN reaches Arrow as null)."""
    records = [
        tuple(None if isinstance(v, float) and v != v else v for v in r)
        for r in data.itertuples(index=False, name=None)
    ]
    sc = spark.sparkContext
    full = spark.createDataFrame(sc.parallelize(records, PARTITIONS), types)
    return full.union(spark.createDataFrame(sc.parallelize([], 1), types))


def partition_sizes(df):
    def sizes(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        rows = sum(b.num_rows for b in batches)
        yield pa.RecordBatch.from_pydict(
            {"partition": [TaskContext.get().partitionId()], "rows": [rows]}
        )

    return sorted(tuple(r) for r in df.mapInArrow(sizes, "partition long, rows long").collect())


def test_from_data_over_spark_releases_what_pandas_releases(spark):
    data = describe_rows(seed=21)
    df = describe_frame(spark, data)
    assert partition_sizes(df) == [(0, 500), (1, 500), (2, 500), (3, 0)]
    for seed in (3, 8):
        ledgers = [dpml.Ledger(3.0, delta=1e-5), dpml.Ledger(3.0, delta=1e-5)]
        local = dpml.Schema.from_data(
            data, **DESCRIBE, ledger=ledgers[0], random_state=dpml.InsecureSeed(seed)
        )
        spread = dpml.Schema.from_data(
            df, **DESCRIBE, ledger=ledgers[1], random_state=dpml.InsecureSeed(seed)
        )
        assert spread.to_toml() == local.to_toml()
        assert spread.privacy_ == local.privacy_
        assert f"from {N} records" in spread.to_toml()
        assert "rare" not in spread.feature_names and "colour=red" in spread.feature_names
        assert [(r["epsilon"], r["delta"]) for r in ledgers[1].records] == [(1.0, 1e-6)]
        assert ledgers[1].records == ledgers[0].records
    # Other rows, other counts: the comparison can fail.
    fewer = dpml.Schema.from_data(
        describe_frame(spark, data.iloc[:-40]), **DESCRIBE, random_state=dpml.InsecureSeed(8)
    )
    assert fewer.to_toml() != spread.to_toml()


def test_from_data_over_spark_refuses_a_bad_cell_by_partition_and_refunds(spark):
    data = describe_rows(seed=22)
    data["age"] = data["age"].astype(object)
    data.loc[1003, "age"] = "secret-value"  # partition 2 (rows 1000..1499): its row 4
    df = describe_frame(spark, data, types="age string, colour string, note string, label string")
    ledger = dpml.Ledger(3.0, delta=1e-5)
    with pytest.raises(
        dpml.DPMLValueError, match=r"partition 2 of the DataFrame .*row 4, column age"
    ) as e:
        dpml.Schema.from_data(df, **DESCRIBE, ledger=ledger)
    assert "secret" not in str(e.value)
    assert "Py4J" not in str(e.value) and "Traceback" not in str(e.value)
    assert len(ledger) == 0
    # A DataFrame without rows: refused (no data rows) before any draw, refunded.
    with pytest.raises(dpml.DPMLValueError, match="no data rows"):
        dpml.Schema.from_data(df.limit(0), **DESCRIBE, ledger=ledger)
    assert len(ledger) == 0


def test_from_data_over_spark_refuses_columns_before_the_charge(spark):
    from pyspark.sql.functions import col

    df = describe_frame(spark, describe_rows(seed=23))
    ledger = dpml.Ledger(3.0, delta=1e-5)
    with pytest.raises(dpml.DPMLValueError, match="'shade' is not in the frame"):
        dpml.Schema.from_data(df, **{**DESCRIBE, "categorical": ["shade"]}, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="label='income'"):
        dpml.Schema.from_data(df, **{**DESCRIBE, "label": "income"}, ledger=ledger)
    decimal = df.withColumn("age", col("age").cast("decimal(10,3)"))
    with pytest.raises(
        dpml.DPMLTypeError, match=r"'age' has Spark type decimal\(10,3\).*cast it to double"
    ):
        dpml.Schema.from_data(decimal, **DESCRIBE, ledger=ledger)
    assert len(ledger) == 0


def test_partition_counts_merge_to_the_whole_and_foreign_counts_are_refused():
    """The core's halves, without Spark: two blocks' counts release what one stream does;
    bytes that are no counts, or counts of another plan, are refused before any draw."""
    import pyarrow as pa

    from dpml import _dpml

    def plan(colour="categorical"):
        spec = [("age", "numeric", None), ("colour", colour, None), ("note", "ignore", None),
                ("label", "label", None)]
        return _dpml.DescribePlan.build(
            spec, "yes", None, {}, [], "unit_norm", True, True, 1.0, 1e-6
        )

    table = pa.Table.from_pandas(describe_rows(seed=24), preserve_index=False)
    whole = plan().describe_stream(table.__arrow_c_stream__(), 3)
    halves = [
        plan().count_stream(part.__arrow_c_stream__())
        for part in (table.slice(0, 700), table.slice(700))
    ]
    assert plan().describe_counts(halves[::-1], 3) == whole
    assert plan().describe_counts(halves[:1], 3) != whole
    with pytest.raises(dpml.DPMLValueError, match="not a describing pass's counts"):
        plan().describe_counts([b"junk"], 3)
    with pytest.raises(dpml.DPMLValueError, match="do not match the plan: column colour"):
        plan("ignore").describe_counts(halves, 3)
