"""dpml.spark's regressors on a local[2] Spark: the distributed fit against the in-memory
one (the same recipe and seeded noise: within the certificate's radius), the ledger and its
refunds, the refusals (bounds, targets outside them, n_rows, bad vectors) naming rows and
never values, and the model file shared with the in-memory regressors both ways; Ridge, and
fits and predictions from raw columns by a regression schema, against the in-memory ones,
with their refusals (the wrong task's schema, bounds other than the schema's) charging
nothing. Skipped where pyspark or Java is missing; python/ci.sh installs both."""
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
    with pytest.raises(dpml.DPMLValueError, match="feature_groups: dpml.spark.LinearRegression adds"):
        dpml.spark.LinearRegression(**params(feature_groups=[0, 1, 2])).fit(
            frame(spark, X, y), n_rows=300, n_features=D, ledger=ledger
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


def radius(fitted, bounds=BOUNDS):
    """How far a model certified to ‖∇J‖ ≤ γ on the same μ-strongly convex objective with
    the same seeded noise may lie from ``fitted`` (2γ/μ, in the target's units)."""
    noise = fitted.privacy_["noise"]
    mu = fitted.privacy_["regularization"] + noise["extra_regularization"]
    return 2 * noise["tolerance"] / mu * (bounds[1] - bounds[0]) / 2 * 1.01 + 1e-9


def within_the_certificate(fitted, local, bounds=BOUNDS):
    """The Spark fit is the in-memory fit: the same noise and Λ, the weights and the
    intercept within the certificate's radius."""
    assert fitted.privacy_["noise"] == local.privacy_["noise"]
    assert fitted.privacy_["regularization"] == local.privacy_["regularization"]
    r = radius(fitted, bounds)
    gap = np.linalg.norm(fitted.coef_ - local.coef_)
    return gap <= r and abs(fitted.intercept_ - local.intercept_) <= r


def test_spark_ridge_is_the_in_memory_ridge(spark, tmp_path):
    X, y = data(seed=4)
    df = frame(spark, X, y)
    ridge = dict(epsilon=1.0, data_norm=1.0, bounds=BOUNDS, random_state=dpml.InsecureSeed(7))
    for extra in [dict(alpha=3.0), dict(alpha=0.5, mechanism="output", fit_intercept=False)]:
        local = dpml.Ridge(**ridge, **extra).fit(X, y)
        ledger = dpml.Ledger(2.0)
        fitted = dpml.spark.Ridge(**ridge, **extra).fit(df, n_rows=N, n_features=D, ledger=ledger)
        assert ledger.spent_epsilon == 1.0 and len(ledger) == 1
        assert fitted.privacy_["mechanism"] == local.privacy_["mechanism"]
        assert set(fitted.privacy_["spark"]) == PUBLIC_SPARK_FACTS
        assert within_the_certificate(fitted, local)
        assert not np.allclose(fitted.coef_, 0)
        # alpha reaches the fit: another alpha's model is not within the certificate.
        other = dpml.Ridge(**ridge, **{**extra, "alpha": extra["alpha"] * 50}).fit(X, y)
        assert np.linalg.norm(fitted.coef_ - other.coef_) > 10 * radius(fitted)
    # scikit-learn's parameters: the in-memory Ridge's plus the columns, no regularization.
    params = dpml.spark.Ridge(alpha=2.0, labelCol="cost").get_params()
    assert params == {**dpml.Ridge(alpha=2.0).get_params(), "featuresCol": "features",
                      "labelCol": "cost", "predictionCol": "prediction"}
    # Its model file is the in-memory Ridge's; transform scores as predict does.
    fitted.save(tmp_path / "ridge.model")
    loaded = dpml.Ridge.load(tmp_path / "ridge.model")
    scored = fitted.transform(df).toPandas()
    ordered = np.array(scored["features"].tolist())
    assert np.array_equal(scored["prediction"].to_numpy(), loaded.predict(ordered))


# A regression schema: two bounded numbers, a colour, and the target within public bounds.
REGRESSION_SCHEMA = """
version = 1
[[columns]]
name = "x1"
type = "numeric"
lower = -1
upper = 1
[[columns]]
name = "x2"
type = "numeric"
lower = -1
upper = 1
[[columns]]
name = "colour"
type = "categorical"
levels = ["red", "green", "blue"]
[[columns]]
name = "cost"
type = "target"
lower = -4
upper = 4
"""

RAW_TYPES = "x1 double, x2 double, colour string, cost double"


def raw_data(n=N, seed=0):
    """Raw records (x1, x2, colour, cost): the target linear in the encoded row."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2))
    colours = rng.choice(["red", "green", "blue"], n)
    shift = np.select([colours == "red", colours == "green"], [1.0, -0.5], 0.0)
    cost = np.clip(2.0 * x[:, 0] - x[:, 1] + shift + rng.normal(0, 0.2, n), -4, 4)
    return [(float(a), float(b), str(c), float(t)) for (a, b), c, t in zip(x, colours, cost)]


def raw_frame(spark, records):
    return spark.createDataFrame(spark.sparkContext.parallelize(records, PARTITIONS), RAW_TYPES)


def encoded(schema, records, labels=True):
    """The records encoded in memory by the schema (the in-memory fit's input)."""
    columns = list(zip(*records))
    frame = {
        "x1": np.array(columns[0]),
        "x2": np.array(columns[1]),
        "colour": list(columns[2]),
        "cost": np.array(columns[3]),
    }
    return schema.encode(frame, labels=labels)


def test_a_fit_from_raw_columns_by_a_regression_schema_is_the_in_memory_fit(spark):
    schema = dpml.Schema.from_toml(REGRESSION_SCHEMA)
    assert schema.task == "regression" and schema.target_bounds == (-4.0, 4.0)
    records = raw_data()
    df = raw_frame(spark, records)
    X, y = encoded(schema, records)
    common = dict(epsilon=1.0, data_norm=1.0, random_state=dpml.InsecureSeed(11))
    for Local, Distributed, extra in [
        (dpml.Ridge, dpml.spark.Ridge, dict(alpha=2.0)),
        (dpml.LinearRegression, dpml.spark.LinearRegression, dict(regularization=1e-2)),
        (dpml.HuberRegressor, dpml.spark.HuberRegressor, dict(mechanism="output")),
    ]:
        local = Local(bounds=schema.target_bounds, **common, **extra).fit(X, y)
        ledger = dpml.Ledger(2.0)
        fitted = Distributed(**common, **extra).fit(
            df, schema=schema, n_rows=N, ledger=ledger
        )
        assert ledger.spent_epsilon == 1.0 and len(ledger) == 1
        assert fitted.n_features_in_ == schema.n_features == X.shape[1]
        assert fitted.privacy_["bounds"] == (-4.0, 4.0)
        assert within_the_certificate(fitted, local, schema.target_bounds), Local
        assert not np.allclose(fitted.coef_, 0)
    # The same bounds given explicitly (as ints) are the schema's: accepted.
    again = dpml.spark.Ridge(bounds=(-4, 4), alpha=2.0, **common).fit(
        df, schema=schema, n_rows=N, n_features=schema.n_features
    )
    assert within_the_certificate(again, dpml.Ridge(bounds=(-4, 4), alpha=2.0, **common).fit(X, y))
    # Prediction from raw columns equals the in-memory prediction on the encoded rows, by
    # dpml.spark.predict and by transform, for the Spark fit and for an in-memory model.
    local = dpml.Ridge(bounds=schema.target_bounds, alpha=2.0, **common).fit(X, y)
    for model, scored in [
        (again, dpml.spark.predict(again, df, schema=schema)),
        (again, again.transform(df.drop("cost"), schema=schema)),
        (local, dpml.spark.predict(local, df.drop("cost"), schema=schema, prediction_col="p")),
    ]:
        scored = scored.toPandas()
        column = scored.columns[-1]
        assert list(scored.columns[:-1]) == [c for c in ["x1", "x2", "colour", "cost"]
                                             if c in scored.columns]
        rows = [tuple(r) for r in scored[["x1", "x2", "colour"]].itertuples(index=False)]
        X_scored, _ = encoded(schema, [r + (0.0,) for r in rows], labels=False)
        assert np.array_equal(scored[column].to_numpy(), model.predict(X_scored))
        assert scored[column].between(-4, 4).all() and scored[column].std() > 0.1


CLASSIFIER_SCHEMA = REGRESSION_SCHEMA.replace(
    'type = "target"\nlower = -4\nupper = 4',
    'type = "label"\nclasses = ["low", "high"]\npositive = "high"',
)


def test_raw_column_refusals_name_the_problem_never_a_value_and_charge_nothing(spark):
    schema = dpml.Schema.from_toml(REGRESSION_SCHEMA)
    classifier_schema = dpml.Schema.from_toml(CLASSIFIER_SCHEMA)
    assert classifier_schema.task == "classification"
    records = raw_data(300, seed=6)
    df = raw_frame(spark, records)
    ledger = dpml.Ledger(1.0)
    common = dict(epsilon=1.0, data_norm=1.0, random_state=dpml.InsecureSeed(3))

    def fit(schema=schema, frame=df, n_rows=300, **extra):
        return dpml.spark.Ridge(**{**common, **extra}).fit(
            frame, schema=schema, n_rows=n_rows, ledger=ledger
        )

    # The wrong task's schema, either way, by name.
    with pytest.raises(dpml.DPMLValueError, match="dpml.spark.Ridge takes a regression schema"):
        fit(schema=classifier_schema)
    with pytest.raises(dpml.DPMLValueError, match="takes a classification schema.*'cost'"):
        dpml.spark.LogisticRegression(epsilon=1.0, data_norm=1.0, classes=["low", "high"]).fit(
            df, schema=schema, n_rows=300, ledger=ledger
        )
    with pytest.raises(dpml.DPMLTypeError, match="dpml.Schema"):
        fit(schema="schema.toml")
    # Facts that disagree with the schema's, by name.
    with pytest.raises(dpml.DPMLValueError, match=r"bounds=\(-5.0, 4.0\) disagrees with"):
        fit(bounds=(-5.0, 4.0))
    with pytest.raises(dpml.DPMLValueError, match="clip_targets=True: the schema refuses"):
        fit(clip_targets=True)
    with pytest.raises(dpml.DPMLValueError, match="the schema encodes 5 features"):
        dpml.spark.Ridge(**common).fit(df, schema=schema, n_rows=300, n_features=3, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="n_rows"):
        fit(n_rows=301)
    with pytest.raises(dpml.DPMLTypeError, match="column 'x1' has Spark type decimal"):
        fit(frame=df.withColumn("x1", df["x1"].cast("decimal(10,4)")))
    # Records the schema refuses, by partition, row and column, never the value.
    secret = 123.456789
    outside = list(records)
    outside[205] = outside[205][:3] + (secret,)  # the last partition (rows 200..299): row 5
    with pytest.raises(dpml.DPMLValueError, match=r'partition 2 .*row 5, column "cost"') as e:
        fit(frame=raw_frame(spark, outside))
    assert "123.45" not in str(e.value)
    unseen = list(records)
    unseen[7] = unseen[7][:2] + ("mauve-secret",) + unseen[7][3:]
    with pytest.raises(dpml.DPMLValueError, match=r'partition 0 .*row 7, column "colour"') as e:
        fit(frame=raw_frame(spark, unseen))
    assert "mauve" not in str(e.value)
    assert len(ledger) == 0 and ledger.spent_epsilon == 0.0
    # Prediction refuses the wrong task's schema, and names a refused record's row.
    fitted = fit()
    assert ledger.spent_epsilon == 1.0
    with pytest.raises(dpml.DPMLValueError, match="takes a regression schema"):
        dpml.spark.predict(fitted, df, schema=classifier_schema)
    with pytest.raises(dpml.DPMLValueError, match=r'partition 0 .*row 7, column "colour"') as e:
        dpml.spark.predict(fitted, raw_frame(spark, unseen), schema=schema)
    assert "mauve" not in str(e.value)
    classifier = dpml.LogisticRegression(
        epsilon=1.0, data_norm=1.0, classes=["low", "high"], random_state=dpml.InsecureSeed(1)
    ).fit(*encoded(classifier_schema, [r[:3] + ("high" if r[3] > 0 else "low",) for r in records]))
    with pytest.raises(dpml.DPMLValueError, match="takes a classification schema"):
        dpml.spark.predict(classifier, df, schema=schema)




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
