"""What one Spark job costs before any work, in local[2]: the floor under a dpml.spark pass.

Usage: python python/bench/spark_job_floor.py [REPEATS]

Times, on cached data of Adult's size (32,561 rows, 2 partitions): a JVM-only job
(``count`` of a cached DataFrame: what an MLlib iteration's ``treeAggregate`` pays), an
empty PySpark job over a cached RDD (``mapPartitions`` returning one number per partition:
what a dpml.spark pass pays before its kernel runs) and an empty ``mapInArrow`` job over a
cached DataFrame. Prints the median and minimum of REPEATS runs of each (default 8), the
first run dropped (it starts the Python workers).
"""

import os
import statistics
import sys
import time

import pyarrow as pa
from pyspark.sql import SparkSession


def timed(name, job, repeats):
    seconds = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        job()
        seconds.append(time.perf_counter() - start)
    rest = seconds[1:]
    print(f"{name}: median {statistics.median(rest):.3f} s, min {min(rest):.3f} s", flush=True)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(32_561).repartition(2).cache()
    df.count()
    rdd = df.rdd.map(lambda row: row[0]).cache()
    rdd.count()

    def one_record(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"x": [1]})

    timed("JVM-only job (count of a cached DataFrame)", df.count, repeats)
    timed(
        "empty PySpark job (mapPartitions over a cached RDD)",
        lambda: rdd.mapPartitions(lambda rows: [0]).collect(),
        repeats,
    )
    timed(
        "empty mapInArrow job over a cached DataFrame",
        lambda: df.mapInArrow(one_record, "x long").collect(),
        repeats,
    )
    spark.stop()


if __name__ == "__main__":
    main()
