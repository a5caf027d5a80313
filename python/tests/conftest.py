import os
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def fixtures():
    """The model files the Rust tests write and check (src/binding_tests.rs)."""
    return Path(os.environ.get("DPML_FIXTURES", Path(__file__).parent / "data"))


@pytest.fixture
def reference_data():
    return _reference_data


def _reference_data(classes):
    """The rows of src/binding_tests.rs: x[i][j] = ((7i + 3j) mod 11 - 5) / 8, exact in both
    languages; class of row i = (5i mod 7) mod classes."""
    i = np.arange(40)[:, None]
    j = np.arange(3)[None, :]
    X = (((7 * i + 3 * j) % 11) - 5.0) / 8.0
    y = (5 * np.arange(40) % 7) % classes
    return np.ascontiguousarray(X), y


@pytest.fixture
def blobs():
    """Two well-separated classes in the unit ball, 400 rows."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, size=400)
    X = rng.normal(scale=0.15, size=(400, 4))
    X[:, 0] += np.where(y == 1, 0.5, -0.5)
    return X, y


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs pyspark and Java (dpml.spark)")
    config.addinivalue_line("markers", "slow: seconds, not milliseconds")


def pytest_collection_modifyitems(config, items):
    """``DPML_SHARD=i/n``: keep every n-th test from the i-th (python/ci.sh runs the emulated
    suite as two such processes side by side: the emulation uses one core each)."""
    shard = os.environ.get("DPML_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    if not 0 <= index < count:
        raise pytest.UsageError(f"DPML_SHARD={shard!r}: expected i/n with 0 <= i < n")
    kept = [item for i, item in enumerate(items) if i % count == index]
    config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % count != index])
    items[:] = kept
