"""Fits the peers of `cargo xtask bench peers` on the data file xtask wrote.

Usage: peers.py DATA_FILE TOOL JOBS_JSON

TOOL is sklearn-liblinear, sklearn-lbfgs, diffprivlib or dpml (this workspace's Python
package, the fit through Python that the Rust row is compared with). JOBS_JSON is a list of
{"lambda": L, "epsilon": E or null, "tol": T, "seed": S}. After one unmeasured warm-up fit
of every job, for each job the script fits
one model on the training rows and prints one JSON line: the weights (xtask computes the
objective and the test error from them, in Rust, on the same data), the fit's wall time
and the resident memory before and at the peak of the fit. A tool that cannot be imported
prints {"skipped": why} and exits 0: a missing peer is a message, not a failure.

The objective of every tool is J(w) = (1/n) sum log(1 + exp(-y w.x)) + (L/2) |w|^2 with
no intercept: scikit-learn's C is 1/(n L) (liblinear minimizes C sum loss + |w|^2/2 = J/L;
lbfgs and diffprivlib minimize the mean loss + |w|^2/(2 C n) = J).
"""

import json
import struct
import sys
import time

def read_split(buffer, offset, np, sparse, d):
    n, nnz = struct.unpack_from("<QQ", buffer, offset)
    offset += 16
    indptr = np.frombuffer(buffer, dtype="<u8", count=n + 1, offset=offset)
    offset += 8 * (n + 1)
    indices = np.frombuffer(buffer, dtype="<u4", count=nnz, offset=offset)
    offset += 4 * nnz
    values = np.frombuffer(buffer, dtype="<f8", count=nnz, offset=offset)
    offset += 8 * nnz
    labels = np.frombuffer(buffer, dtype="<f8", count=n, offset=offset)
    offset += 8 * n
    # The values sit at an offset of the file that is not a multiple of 8: a view of them
    # is an unaligned float64 array, which no tool reads in place (dpml copies it on every
    # fit). Every array is copied once, before any timing, into memory of its own, as a
    # user's arrays are.
    x = sparse.csr_matrix(
        (values.copy(), indices.astype(np.int32), indptr.astype(np.int64)), shape=(n, d)
    )
    assert all(a.flags.aligned for a in (x.data, x.indices, x.indptr))
    return x, labels.copy(), offset


def load(path, np, sparse):
    with open(path, "rb") as f:
        buffer = f.read()
    if buffer[:8] != b"DPMLCSR1":
        raise SystemExit(f"{path}: not a dp-ml exchange file")
    (d,) = struct.unpack_from("<Q", buffer, 8)
    x, y, _ = read_split(buffer, 16, np, sparse, d)
    return x, y


def status_kib(field):
    """A VmRSS/VmHWM line of /proc/self/status in KiB, or None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak():
    """Resets VmHWM to the current RSS (Linux: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def make_model(tool, job, n):
    c = 1.0 / (n * job["lambda"])
    if tool == "sklearn-liblinear":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(
            C=c, fit_intercept=False, solver="liblinear", tol=job["tol"], max_iter=100000
        )
    if tool == "sklearn-lbfgs":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(
            C=c, fit_intercept=False, solver="lbfgs", tol=job["tol"], max_iter=100000
        )
    if tool == "diffprivlib":
        from diffprivlib.models import LogisticRegression

        return LogisticRegression(
            epsilon=job["epsilon"],
            data_norm=1.0,
            fit_intercept=False,
            C=c,
            tol=job["tol"],
            max_iter=100000,
            random_state=job["seed"],
        )
    if tool == "dpml":
        import dpml

        # The Rust row's problem exactly: ErmParams::objective_perturbation(Logistic, L, E)
        # on the same unit-ball rows (data_norm 1, no intercept), the default calibration
        # and tolerance; seeded as the Rust row is (a benchmark, not a release).
        return dpml.LogisticRegression(
            epsilon=job["epsilon"],
            data_norm=1.0,
            classes=[-1.0, 1.0],
            regularization=job["lambda"],
            fit_intercept=False,
            random_state=dpml.InsecureSeed(job["seed"]),
        )
    raise SystemExit(f"unknown tool {tool!r}")


def iterations(model):
    """The solver's iterations (dpml does not report them: 0)."""
    n_iter = getattr(model, "n_iter_", None)
    return 0 if n_iter is None else int(max(n_iter.ravel()))


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    path, tool, jobs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    try:
        import numpy as np
        from scipy import sparse

        if tool == "diffprivlib":
            import diffprivlib  # noqa: F401
        if tool == "dpml":
            import dpml
        import sklearn
        import warnings

        warnings.simplefilter("ignore")
    except ImportError as e:
        print(json.dumps({"skipped": f"{tool}: cannot import ({e})"}))
        return
    x, y = load(path, np, sparse)
    versions = {"numpy": np.__version__, "sklearn": sklearn.__version__}
    if tool == "diffprivlib":
        versions["diffprivlib"] = diffprivlib.__version__
    if tool == "dpml":
        versions["dpml"] = dpml.__version__
    if tool == "diffprivlib":
        # diffprivlib 0.6.6 refuses sparse input; the conversion is not timed.
        x = x.toarray()
    # Unmeasured fits first, as on our side (bench/peers.rs): lazy initialization and cold
    # caches are paid before the timer runs, by every tool alike. Every job once, not only
    # the first: a fresh process's allocator grows its heaps over its first fits, and each
    # new problem (another Λ, another noise draw, another number of solver steps) asks for
    # blocks of other sizes (dpml on Adult: +28, then +10 to +20 MiB resident over the first
    # fits, and 4-8 MiB more within measured fits of new problems after three warm-up fits
    # of the first job only), while our side's process has fitted every problem of the
    # round before. (What a process's first fit costs: docs/src/performance.md.)
    for job in jobs:
        make_model(tool, job, x.shape[0]).fit(x, y)
    for job in jobs:
        model = make_model(tool, job, x.shape[0])
        reset_peak()
        before = status_kib("VmRSS")
        start = time.perf_counter()
        model.fit(x, y)
        seconds = time.perf_counter() - start
        peak = status_kib("VmHWM")
        weights = model.coef_.ravel()
        # scikit-learn orders classes as (-1, +1): coef_ scores the +1 class.
        print(
            json.dumps(
                {
                    "tool": tool,
                    "lambda": job["lambda"],
                    "epsilon": job["epsilon"],
                    "seconds": seconds,
                    "iterations": iterations(model),
                    "rss_before_kib": before,
                    "rss_peak_kib": peak,
                    "weights": [float(w) for w in weights],
                    "versions": versions,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
