"""Does a fit copy its input? Peak memory of dpml fits on a large array, against its size.

Usage: python python/bench/memory.py [ROWS] [FEATURES]   (defaults 1,000,000 x 16: 122 MiB)

For each input layout the script fits, in a fresh process (so that memory freed by an
earlier fit and kept by the allocator does not hide the next one's), ``dpml.LogisticRegression`` once (seeded: a
measurement, not a release) and prints one JSON line:

- ``python_peak_mib``: the peak of memory allocated through Python during the fit
  (``tracemalloc``; numpy registers its buffers there), i.e. the copies made on the Python
  side. A C-contiguous float64 array is handed to Rust in place: this stays far below the
  array's size. A Fortran-ordered or float32 array is converted once: it shows one copy.
- ``rss_growth_mib``: the resident set's peak during the fit minus the resident set before
  it (Linux ``VmHWM`` after resetting it), which includes the Rust core's own working
  memory: dp-erm trains on its own scaled copy of the rows (a ``TrainingSet``: the rows
  divided by ``data_norm``), and the solver's vectors.
"""

import gc
import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import dpml

MIB = 1024.0 * 1024.0


def status_kib(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def measure(name, X, y):
    clf = dpml.LogisticRegression(
        epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=dpml.InsecureSeed(1)
    )
    gc.collect()
    tracemalloc.start()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM")
    _, python_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "input": name,
                "shape": list(X.shape),
                "dtype": str(X.dtype),
                "c_contiguous": bool(X.flags.c_contiguous),
                "array_mib": round(X.nbytes / MIB, 1),
                "python_peak_mib": round(python_peak / MIB, 2),
                "rss_growth_mib": None
                if before is None or peak is None
                else round((peak - before) / 1024.0, 1),
                "seconds": round(seconds, 3),
                "dpml": dpml.__version__,
            }
        ),
        flush=True,
    )


LAYOUTS = {
    "C-contiguous float64 (read in place)": lambda X: X,
    "Fortran-ordered float64 (converted once)": np.asfortranarray,
    "C-contiguous float32 (converted once)": lambda X: X.astype(np.float32),
}


def one(layout, rows, features):
    rng = np.random.default_rng(0)
    X = rng.random((rows, features))
    X /= np.sqrt(features)  # every row in the unit ball: data_norm = 1 is a true bound
    y = (X[:, 0] > X[:, 1]).astype(np.int64)
    measure(layout, LAYOUTS[layout](X), y)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    features = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    for layout in LAYOUTS:
        subprocess.run(
            [sys.executable, __file__, "--one", layout, str(rows), str(features)], check=True
        )


if __name__ == "__main__":
    main()
