"""A ledger file from Python: the same budget as the command line's `--ledger`, reached
from threads, child processes and pool workers, and dp-fit's rule for when a spend counts
(issue #47, items 2 and 3)."""

import json
import multiprocessing
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score

import dpml

sys.path.insert(0, str(Path(__file__).parent))
import _workers  # noqa: E402

X, y = _workers.data()
WAIT = 120


@pytest.fixture(autouse=True)
def fresh_workers():
    yield
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        executor.shutdown(wait=True)


def stored(path):
    return json.loads(Path(path).read_text())


def test_a_file_ledger_is_the_command_lines_format(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = dpml.Ledger.create(path, epsilon=1.0, dataset="blobs")
    _workers.estimator(0.25).fit(X, y, ledger=ledger)
    on_disk = stored(path)
    assert on_disk["format"] == "dpml-ledger/1" and on_disk["dataset"] == "blobs"
    assert on_disk["id"] == ledger.identity and len(on_disk["id"]) == 32
    (spend,) = on_disk["spends"]
    assert spend["epsilon"] == 0.25 and spend["sequence"] == 1
    assert spend["command"] == "python: LogisticRegression"
    # A second handle (another process, the command line) sees the same spends.
    again = dpml.Ledger.open(path)
    assert again.spent_epsilon == 0.25 and again.records[0]["sequence"] == 1
    with pytest.raises(dpml.BudgetExceededError, match="needs epsilon=1.0"):
        _workers.estimator(1.0).fit(X, y, ledger=again)
    # A ledger written by `dpml ledger init` before identities loads, and gets one.
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "dpml-ledger/1", "dataset": "x", "total_epsilon": 2.0, "spends": []}))
    _workers.estimator(0.5).fit(X, y, ledger=dpml.Ledger.open(old))
    assert stored(old)["id"] and stored(old)["spends"][0]["sequence"] == 1
    with pytest.raises(dpml.DPMLError, match="cannot create it"):
        dpml.Ledger.create(path, epsilon=5.0)  # never replaces a file


@pytest.mark.skipif(os.name != "posix", reason="links")
def test_a_symbolic_link_is_the_same_ledger_and_a_hard_link_is_refused(tmp_path):
    path = tmp_path / "ledger.json"
    dpml.Ledger.create(path, epsilon=1.0)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    _workers.estimator(0.6).fit(X, y, ledger=dpml.Ledger.open(link))
    with pytest.raises(dpml.BudgetExceededError):
        _workers.estimator(0.6).fit(X, y, ledger=dpml.Ledger.open(path))
    assert link.is_symlink() and len(stored(path)["spends"]) == 1
    os.link(path, tmp_path / "hard.json")
    with pytest.raises(dpml.DPMLError, match="hard links"):
        dpml.Ledger.open(path)


def test_a_file_ledger_pickles_as_its_path_and_loky_workers_charge_it(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = dpml.Ledger.create(path, epsilon=10.0)
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy.path == ledger.path and copy.identity == ledger.identity
    # A with-block on a file: the workers open the file and charge it (3 folds).
    with ledger:
        scores = cross_val_score(_workers.estimator(0.5), X, y, cv=3, n_jobs=2, error_score="raise")
    assert scores.shape == (3,)
    assert ledger.spent_epsilon == 1.5 and len(ledger) == 3
    # Passed explicitly, it crosses to the workers too.
    cross_val_score(
        _workers.estimator(0.5), X, y, cv=3, n_jobs=2, params={"ledger": ledger}, error_score="raise"
    )
    assert ledger.spent_epsilon == 3.0
    # In memory it still cannot cross a process boundary.
    with pytest.raises(dpml.DPMLError, match="cannot be pickled"):
        pickle.dumps(dpml.Ledger(1.0))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_of_a_block_on_a_file_are_charged(tmp_path, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method}")
    # The parent fits first: a forked child then runs on a thread pool of its own (fork
    # copies rayon's pool but not its threads; before, such a child's fit hung).
    _workers.estimator().fit(X, y)
    path = tmp_path / "ledger.json"
    ledger = dpml.Ledger.create(path, epsilon=10.0)
    with ledger:
        with multiprocessing.get_context(method).Pool(2) as pool:
            assert pool.map_async(_workers.fit_one, range(4)).get(WAIT) == [0.4] * 4
    assert len(ledger) == 4 and ledger.spent_epsilon == pytest.approx(1.6)
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map_async(_workers.fit_in_block_of, [(str(path), s) for s in range(2)]).get(WAIT)
    assert got == [0.4, 0.4] and len(ledger) == 6


def test_a_fit_refused_before_its_noise_is_refunded_and_one_after_is_not(tmp_path):
    ledger = dpml.Ledger.create(tmp_path / "ledger.json", epsilon=5.0, delta=1e-5)
    with pytest.raises(dpml.DPMLValueError, match="above data_norm"):
        dpml.LogisticRegression(epsilon=1.0, data_norm=0.01, classes=[0, 1]).fit(X, y, ledger=ledger)
    assert len(ledger) == 0
    # DP-SGD whose iterates diverge drew all its noise: the spend stands (the command line
    # charges the same event).
    diverging = dpml.DPSGDClassifier(
        epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1], learning_rate=1e30, regularization=1.0,
        batch_size=10,
    )
    with pytest.raises(dpml.DPMLError, match="spend stands"):
        diverging.fit(X, y, ledger=ledger)
    assert len(ledger) == 1 and ledger.spent_epsilon == 1.0


def test_spends_from_many_threads_never_overspend_a_file(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    ledger = dpml.Ledger.create(tmp_path / "ledger.json", epsilon=1.0)

    def charge(_):
        try:
            ledger.charge(0.3)
            return True
        except dpml.BudgetExceededError:
            return False

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(charge, range(12)))
    assert sum(outcomes) == 3 and len(ledger) == 3
    assert sorted(r["sequence"] for r in ledger.records) == [1, 2, 3]
    assert np.isclose(ledger.spent_epsilon, 0.9)
