"""dpml.spark's private fit against Spark MLlib's non-private LogisticRegression, on the same
rows in the same Spark session (local[2]), repeats interleaved.

Usage: DP_ML_DATA_DIR=/work/shared/datasets python python/bench/spark_vs_mllib.py [COPIES] [REPEATS]

The rows: UCI Adult's 32,561 training rows (``adult.data``), COPIES times over (default 1),
in a cached DataFrame of the raw columns. dpml encodes them through ``schemas/adult.toml``
on the executors once per fit (its first pass; later passes sum the cached blocks); MLlib gets the
same encoding, done once on the driver beforehand, as a cached ``features`` vector column
(0/1 labels), so its iterations do not pay for it. Both minimize
``(1/n) Σ logistic loss + (Λ/2)‖w‖²`` with Λ = 1e-4 and no separate intercept (the
schema's constant feature is regularized like the rest): MLlib with ``regParam=Λ,
elasticNetParam=0, fitIntercept=False, standardization=False`` (L-BFGS to its default
tol 1e-6); dpml.spark objective perturbation at ε = 1 with ``regularization=Λ`` (damped
Newton to the certificate, the noise drawn on the driver; seeded: a measurement, not a
release).

Prints one JSON line per fit: wall seconds, passes / iterations, seconds per pass /
iteration; then the medians. dpml.spark's passes are counted here, by wrapping its private
pass function (a fit reports no pass count: it depends on the data). Wall time on a shared
machine is noisy: compare the interleaved medians, not single fits.
"""

import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np
import pandas as pd

import dpml
import dpml.spark

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAMBDA = 1e-4


def adult(copies):
    schema = dpml.Schema.from_file(ROOT / "schemas" / "adult.toml")
    names = [name for name, _ in schema._core.columns]
    path = pathlib.Path(os.environ.get("DP_ML_DATA_DIR", ROOT / "datasets")) / "adult.data"
    raw = pd.read_csv(path, header=None, names=names, skipinitialspace=True, na_values=["?"])
    raw = raw.dropna(how="all")
    data = pd.concat([raw] * copies, ignore_index=True)
    for name, kind in schema._core.columns:
        if kind in ("categorical", "label", "ignore"):
            data[name] = data[name].astype(object).where(data[name].notna(), None)
        else:
            data[name] = data[name].astype(np.float64)
    return schema, data


def main():
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    from pyspark.ml.classification import LogisticRegression as MLlibLogistic
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    schema, data = adult(copies)
    n = len(data)
    raw = spark.createDataFrame(data).repartition(2).cache()
    raw.count()
    X, y = schema.encode(data)
    encoded = spark.createDataFrame(
        [(Vectors.dense(row), float(label > 0)) for row, label in zip(X, y)],
        ["features", "label"],
    ).repartition(2).cache()
    encoded.count()
    print(json.dumps({"rows": n, "features": schema.n_features, "lambda": LAMBDA}))

    asked = []
    ask = dpml.spark._Passes.__call__

    def counted(self, w, with_hessian):
        asked.append(with_hessian)
        return ask(self, w, with_hessian)

    dpml.spark._Passes.__call__ = counted
    ours, theirs = [], []
    for repeat in range(repeats):
        asked.clear()
        start = time.perf_counter()
        clf = dpml.spark.LogisticRegression(
            epsilon=1.0,
            data_norm=1.0,
            fit_intercept=False,
            classes=schema.classes,
            regularization=LAMBDA,
            random_state=dpml.InsecureSeed(repeat),
        ).fit(raw, schema=schema, n_rows=n)
        seconds = time.perf_counter() - start
        passes = len(asked)
        ours.append((seconds, passes))
        print(json.dumps({"fit": "dpml.spark", "seconds": round(seconds, 3), "passes": passes,
                          "seconds_per_pass": round(seconds / passes, 4)}))
        start = time.perf_counter()
        model = MLlibLogistic(
            regParam=LAMBDA,
            elasticNetParam=0.0,
            fitIntercept=False,
            standardization=False,
        ).fit(encoded)
        seconds = time.perf_counter() - start
        iterations = model.summary.totalIterations
        theirs.append((seconds, iterations))
        print(json.dumps({"fit": "mllib", "seconds": round(seconds, 3), "iterations": iterations,
                          "seconds_per_iteration": round(seconds / max(iterations, 1), 4)}))

    def summary(runs, unit):
        return {
            "median_seconds": round(statistics.median(s for s, _ in runs), 3),
            f"median_{unit}": statistics.median(k for _, k in runs),
            f"median_seconds_per_{unit}": round(
                statistics.median(s / max(k, 1) for s, k in runs), 4
            ),
        }

    print(json.dumps({"dpml.spark": summary(ours, "pass"), "mllib": summary(theirs, "iteration")}))
    spark.stop()


if __name__ == "__main__":
    main()
