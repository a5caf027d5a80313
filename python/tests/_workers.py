"""Module-level functions for test_ledger_concurrency.py's process pools (a spawned
child imports them by name, so they cannot live in the test module)."""

import numpy as np

import dpml

# Set by a test before it forks a pool: the children get a copy (not the ledger).
LEDGER = None


def data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(scale=0.15, size=(n, 3))
    X[:, 0] += np.where(y == 1, 0.4, -0.4)
    return X, y


def estimator(epsilon=0.4):
    return dpml.LogisticRegression(epsilon=epsilon, data_norm=2.0, classes=[0, 1])


def fit_one(seed):
    """Builds an estimator and fits it, with no ledger of its own; returns its ε."""
    X, y = data(seed=seed)
    return estimator().fit(X, y).privacy_["epsilon"]


def fit_given(est):
    """Fits an estimator handed over by pickle, with no ledger of its own."""
    X, y = data()
    return est.fit(X, y).privacy_["epsilon"]


def fit_with_copied_ledger(seed):
    """Fits charging LEDGER explicitly: in a forked child, the copy of the parent's."""
    X, y = data(seed=seed)
    return estimator().fit(X, y, ledger=LEDGER).privacy_["epsilon"]


def enter_copied_ledger(seed):
    """Enters LEDGER (a forked child's copy) and fits."""
    X, y = data(seed=seed)
    with LEDGER:
        return estimator().fit(X, y).privacy_["epsilon"]


def resolves_to_no_ledger(est):
    """What a fit of ``est`` here would charge, without fitting: True for no ledger (a
    forked child of a process that has fitted cannot fit: the Rust core's thread pool
    does not survive fork)."""
    from dpml._active import resolve_ledger

    return resolve_ledger(None, est) is None


def fit_in_block_of(path_and_seed):
    """Enters the ledger file at ``path`` (this process's own handle) and fits."""
    path, seed = path_and_seed
    X, y = data(seed=seed)
    with dpml.Ledger.open(path):
        return estimator().fit(X, y).privacy_["epsilon"]
