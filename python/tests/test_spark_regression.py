"""dpml.spark's regressors on a local[2] Spark: the distributed fit against the in-memory
one (the same recipe and seeded noise: within the certificate's radius), the ledger and its
refunds, the refusals (bounds, targets outside them, n_rows, bad vectors) naming rows and
never values, and the model file shared with the in-memory regressors both ways. Skipped
where pyspark or Java is missing; python/ci.sh installs both."""
import os
import shutil
import sys

import numpy as np
import pytest

import dpml

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and "JAVA_HOME" not in os.environ:  # pragma: no cover
    pytest.skip("Spark needs Java 17", allow_module_level=True)

import dpml.spark  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]

N = 1200
D = 3
PARTITIONS = 3
BOUNDS = (-4.0, 4.0)
PUBLIC_SPARK_FACTS = {"n_rows", "n_rows_source", "noise_drawn_on"}


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,3]")
        .appName("dpml-spark-regression-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def data(n=N, seed=0):
    """Rows inside the unit ball and targets within BOUNDS."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.55, 0.55, (n, D))
    y = np.clip(3.0 * X[:, 0] - 2.0 * X[:, 1] + 0.5 + rng.normal(0, 0.2, n), *BOUNDS)
    return X, y


def frame(spark, X, y, vectors=False):
    if vectors:
        from pyspark.ml.linalg import Vectors

        from pyspark.ml.linalg import VectorUDT
        from pyspark.sql.types import DoubleType, StructField, StructType

        records = [(Vectors.dense(x.tolist()), float(t)) for x, t in zip(X, y)]

        types = StructType(
            [StructField("features", VectorUDT()), StructField("label", DoubleType())]
        )
    else:
        records = [(x.tolist(), float(t)) for x, t in zip(X, y)]
        types = "features array<double>, label double"
    return spark.createDataFrame(spark.sparkContext.parallelize(records, PARTITIONS), types)


def params(**extra):
    return {
        **dict(
            epsilon=1.0,
            data_norm=1.0,
            bounds=BOUNDS,
            regularization=1e-2,
            random_state=dpml.InsecureSeed(7),
        ),
        **extra,
    }


def test_the_distributed_regressor_equals_the_in_memory_one_to_the_certificate(spark):
    X, y = data()
    df = frame(spark, X, y)
    for Local, Distributed, extra in [
        (dpml.LinearRegression, dpml.spark.LinearRegression, {}),
        (dpml.HuberRegressor, dpml.spark.HuberRegressor, dict(mechanism="output")),
        (dpml.LinearRegression, dpml.spark.LinearRegression, dict(delta=1e-6)),
    ]:
        local = Local(**params(**extra)).fit(X, y)
        ledger = dpml.Ledger(2.0, delta=1e-5)
        fitted = Distributed(**params(**extra)).fit(df, n_rows=N, n_features=D, ledger=ledger)
        assert ledger.spent_epsilon == 1.0
        assert ledger.spent_delta == extra.get("delta", 0.0)
        assert fitted.privacy_["mechanism"] == local.privacy_["mechanism"]
        noise = fitted.privacy_["noise"]
        assert noise == local.privacy_["noise"]
        assert fitted.privacy_["regularization"] == local.privacy_["regularization"]
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
        if "delta" in extra:
            # The Gaussian release rounds onto its own grid: close, not within a radius.
            assert np.linalg.norm(fitted.coef_ - local.coef_) < 0.05
            continue
        # The same seeded noise on the same μ-strongly convex objective, both certified to
        # ‖∇J‖ ≤ γ: the scaled weights lie within 2γ/μ (mapped to the target's units).
        mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
        half_width = (BOUNDS[1] - BOUNDS[0]) / 2
        gap = np.linalg.norm(fitted.coef_ - local.coef_)
        assert gap <= 2 * noise["tolerance"] / mu * half_width * 1.01 + 1e-9, gap
        assert not np.allclose(fitted.coef_, 0)
        scored = fitted.transform(df).toPandas()
        assert list(scored.columns) == ["features", "label", "prediction"]
        ordered = np.array(scored["features"].tolist())
        assert np.allclose(scored["prediction"], fitted.predict(ordered), atol=1e-12)
        assert scored["prediction"].between(*BOUNDS).all()


def test_a_model_file_crosses_between_spark_and_memory_both_ways(spark, tmp_path):
    X, y = data(seed=1)
    df = frame(spark, X, y)
    fitted = dpml.spark.LinearRegression(**params()).fit(df, n_rows=N, n_features=D)
    path = tmp_path / "spark.model"
    fitted.save(path)
    loaded = dpml.LinearRegression.load(path)
    scored = fitted.transform(df).toPandas()
    ordered = np.array(scored["features"].tolist())
    assert np.array_equal(loaded.predict(ordered), scored["prediction"].to_numpy())
    assert np.array_equal(loaded.coef_, fitted.coef_)
    # And back: a model trained in memory scores a DataFrame on the executors.
    local = dpml.LinearRegression(**params()).fit(X, y)
    local.save(tmp_path / "local.model")
    spark_model = dpml.spark.LinearRegression.load(
        tmp_path / "local.model", predictionCol="cost"
    )
    scored = spark_model.transform(df).toPandas()
    ordered = np.array(scored["features"].tolist())
    assert np.array_equal(scored["cost"].to_numpy(), local.predict(ordered))


def test_pyspark_ml_vectors_fit_as_arrays_do(spark):
    X, y = data(300, seed=2)
    arrays = dpml.spark.HuberRegressor(**params()).fit(
        frame(spark, X, y), n_rows=300, n_features=D
    )
    vectors = dpml.spark.HuberRegressor(**params()).fit(
        frame(spark, X, y, vectors=True), n_rows=300, n_features=D
    )
    assert np.array_equal(arrays.coef_, vectors.coef_)
    scored = vectors.transform(frame(spark, X, y, vectors=True)).toPandas()
    assert len(scored) == 300 and scored["prediction"].between(*BOUNDS).all()


def test_refusals_name_the_problem_never_a_value_and_charge_nothing(spark):
    X, y = data(300, seed=3)
    secret = 123.456789
    outside = y.copy()
    outside[205] = secret  # the last partition (rows 200..299): its row 5
    ledger = dpml.Ledger(1.0)
    with pytest.raises(dpml.DPMLValueError, match="bounds is required"):
        dpml.spark.LinearRegression(**params(bounds=None)).fit(
            frame(spark, X, y), n_rows=300, n_features=D, ledger=ledger
        )
    with pytest.raises(dpml.DPMLValueError, match="lower < upper"):
        dpml.spark.LinearRegression(**params(bounds=(1.0, 1.0))).fit(
            frame(spark, X, y), n_rows=300, n_features=D, ledger=ledger
        )
    with pytest.raises(dpml.DPMLValueError, match=r"partition 2 .*row 5: the target") as e:
        dpml.spark.LinearRegression(**params()).fit(
            frame(spark, X, outside), n_rows=300, n_features=D, ledger=ledger
        )
    assert "123.45" not in str(e.value) and "clip_targets=True" in str(e.value)
    with pytest.raises(dpml.DPMLValueError, match="n_rows"):
        dpml.spark.LinearRegression(**params()).fit(
            frame(spark, X, y), n_rows=301, n_features=D, ledger=ledger
        )
    with pytest.raises(dpml.DPMLValueError, match=r"row \d+: its features vector's length"):
        dpml.spark.LinearRegression(**params()).fit(
            frame(spark, X, y), n_rows=300, n_features=D + 1, ledger=ledger
        )
    big = X.copy()
    big[7] = [0.9, 0.9, 0.9]
    with pytest.raises(dpml.DPMLValueError, match=r"partition 0 .*row 7"):
        dpml.spark.LinearRegression(**params()).fit(
            frame(spark, big, y), n_rows=300, n_features=D, ledger=ledger
        )
    with pytest.raises(dpml.DPMLTypeError, match="labelCol 'label' has Spark type string"):
        dpml.spark.LinearRegression(**params()).fit(
            frame(spark, X, y).selectExpr("features", "cast(label as string) as label"),
            n_rows=300,
            n_features=D,
            ledger=ledger,
        )
    assert len(ledger) == 0 and ledger.spent_epsilon == 0.0
    # With clip_targets=True the row is clipped to the bounds (per row: no privacy cost).
    clipped = dpml.spark.LinearRegression(**params(clip_targets=True)).fit(
        frame(spark, X, outside), n_rows=300, n_features=D, ledger=ledger
    )
    assert clipped.privacy_["clip_targets"] is True and ledger.spent_epsilon == 1.0
    # transform refuses a vector it cannot score, naming its row.
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(dpml.DPMLValueError, match=r"partition 0 .*row 3"):
        clipped.transform(frame(spark, bad, y))
    # The classifiers' predict points regressors to transform.
    with pytest.raises(dpml.DPMLValueError, match="transform"):
        dpml.spark.predict(clipped, frame(spark, X, y), schema=None)


CONNECT_SCRIPT = r'''
import os, pickle, sys

import pandas as pd

os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

import dpml
import dpml.spark

work = sys.argv[1]
with open(os.path.join(work, "input.pickle"), "rb") as f:
    X, y, outside, params = pickle.load(f)
spark = (
    SparkSession.builder.remote("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .getOrCreate()
)


def frame(targets):
    data = pd.DataFrame({"features": [list(x) for x in X], "label": targets})
    return spark.createDataFrame(data, "features array<double>, label double").repartition(3)


df = frame(y)
assert isinstance(df, ConnectDataFrame), type(df)
ledger = dpml.Ledger(2.0)
fitted = dpml.spark.LinearRegression(**params).fit(df, n_rows=len(y), n_features=X.shape[1],
                                                   ledger=ledger)
scored = fitted.transform(df).toPandas()
try:
    dpml.spark.LinearRegression(**params).fit(frame(outside), n_rows=len(y),
                                              n_features=X.shape[1], ledger=ledger)
    refusal = None
except dpml.DPMLValueError as e:
    refusal = str(e)
with open(os.path.join(work, "output.pickle"), "wb") as f:
    pickle.dump(dict(fitted=fitted, scored=scored, spent=ledger.spent_epsilon,
                     refusal=refusal), f)
spark.stop()
'''


def test_a_regressor_fits_and_transforms_on_spark_connect(tmp_path):
    """A local Spark Connect server (pyspark's own, in a child process): the regressor's
    passes, cache and transform through the Connect client's DataFrames alone."""
    import pickle
    import subprocess

    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies("pyspark.sql.connect.session")
    except Exception as e:  # pragma: no cover - requirements-spark.txt installs them
        pytest.skip(f"Spark Connect's client needs {e}")
    X, y = data(600, seed=5)
    outside = y.copy()
    outside[17] = 987.654
    with open(tmp_path / "input.pickle", "wb") as f:
        pickle.dump((X, y, outside, params()), f)
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
    local = dpml.LinearRegression(**params()).fit(X, y)
    fitted = out["fitted"]
    noise = fitted.privacy_["noise"]
    assert noise == local.privacy_["noise"]
    mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
    half_width = (BOUNDS[1] - BOUNDS[0]) / 2
    assert np.linalg.norm(fitted.coef_ - local.coef_) <= 2 * noise["tolerance"] / mu * half_width * 1.01 + 1e-9
    scored = out["scored"]
    assert list(scored.columns) == ["features", "label", "prediction"]
    ordered = np.array(scored["features"].tolist())
    assert np.array_equal(scored["prediction"].to_numpy(), fitted.predict(ordered))
    assert out["refusal"] is not None and "987" not in out["refusal"], out["refusal"]
    assert "the target" in out["refusal"]
    assert out["spent"] == 1.0
