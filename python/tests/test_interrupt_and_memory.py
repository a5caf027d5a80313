"""A long fit (DP-SGD's steps, or the solvers' iterations) stops on Ctrl-C, and an input too
large for the memory is a MemoryError: each in a child process, which the old code left
running for minutes (the GIL released for the whole fit, no signal checked) or killed
outright (an infallible allocation of the design's size aborts the interpreter)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals and rlimits of Linux")

# A child that fits for minutes unless interrupted: SETUP defines X, y, ledger and clf.
LONG_FIT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import dpml

    rng = np.random.default_rng(0)
    SETUP
    print("fitting", flush=True)
    start = time.monotonic()
    try:
        clf.fit(X, y, ledger=ledger)
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - start:.2f} s", flush=True)
        # The ledger keeps the charge (noise was drawn); nothing was released.
        assert len(ledger) == 1 and ledger.spent_epsilon == 1.0, ledger
        assert not hasattr(clf, "coef_")
        print("charge kept, nothing released", flush=True)
        sys.exit(0)
    print(f"finished without interruption after {time.monotonic() - start:.2f} s", flush=True)
    sys.exit(3)
    """
)

# About 390,000 DP-SGD steps, each visiting every row: many minutes.
DPSGD_SETUP = """X = rng.uniform(-1, 1, size=(200_000, 8))
y = (X[:, 0] > 0).astype(int)
ledger = dpml.Ledger(2.0, delta=1e-5)
clf = dpml.DPSGDClassifier(epsilon=1.0, delta=1e-6, classes=[0, 1], epochs=500)"""

# One-vs-rest: 400 certified solves over every row, each a few Newton iterations.
SOLVER_SETUP = """classes = list(range(400))
X = rng.uniform(-1, 1, size=(100_000, 12))
y = rng.integers(0, len(classes), size=len(X))
ledger = dpml.Ledger(2.0)
clf = dpml.LogisticRegression(epsilon=1.0, data_norm=4.0, classes=classes)"""


@pytest.mark.parametrize("setup", [DPSGD_SETUP, SOLVER_SETUP], ids=["dp-sgd", "solver"])
def test_ctrl_c_stops_a_long_fit_with_keyboard_interrupt(setup):
    code = LONG_FIT.replace("SETUP", setup)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "fitting"
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, (out, err)
    assert "interrupted after" in out and "charge kept, nothing released" in out, (out, err)
    assert took < 5.0, f"KeyboardInterrupt came {took:.1f} s after SIGINT"


TOO_LARGE = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    import dpml

    # A first, small fit: thread pools and the allocator's arenas exist before the limit.
    small = np.full((50, 100), 0.4)
    dpml.LogisticRegression(data_norm=5.0, classes=[0, 1]).fit(small, np.arange(50) % 2)
    X = np.full((400_000, 100), 0.4)          # 320 MB, every entry stored: norm 4
    y = np.arange(len(X)) % 2
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    # Room for MARGIN more bytes: the fit's small allocations, not its copies of the design.
    limit = size + MARGIN
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    ledger = dpml.Ledger(1.0)
    try:
        dpml.LogisticRegression(data_norm=5.0, classes=[0, 1]).fit(X, y, ledger=ledger)
    except MemoryError as e:
        assert isinstance(e, dpml.DPMLMemoryError), type(e)
        assert "not enough memory" in str(e), e
        # Refused before any noise was drawn: the charge is refunded.
        assert len(ledger) == 0, ledger
        print("MemoryError:", e, flush=True)
        sys.exit(0)
    print("fitted", flush=True)
    sys.exit(3)
    """
)


@pytest.mark.parametrize(
    "margin, refused",
    [
        # The binding's scaled copy of the design (python/src/rows.rs) is refused first.
        (16 * 2**20, "not enough memory for the rows' column indices"),
        # Room for that copy: dp-erm's transformed copy (its training set's builder) is.
        (600 * 2**20, "for the transformed rows'"),
    ],
)
def test_a_fit_too_large_for_the_memory_is_a_memory_error_not_an_abort(margin, refused):
    """Under ``ulimit -v`` (RLIMIT_AS) a child fits a design too large for what is left.
    mimalloc (the Rust code's allocator) is told to reserve no address space ahead
    (``MIMALLOC_ARENA_RESERVE=0``), so that each large allocation asks the kernel, under the
    limit, and the test knows which one is refused."""
    code = TOO_LARGE.replace("MARGIN", str(margin))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env={**os.environ, "MIMALLOC_ARENA_RESERVE": "0"},
    )
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    assert "MemoryError:" in result.stdout and refused in result.stdout, result.stdout
