"""A ledger keeps its identity and records every fit under scikit-learn's tooling."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

import dpml


def clf(**params):
    return dpml.LogisticRegression(**{"epsilon": 0.5, "data_norm": 2.0, "classes": [0, 1], **params})


def test_grid_search_records_every_fit(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=100.0)
    search = GridSearchCV(clf(), {"regularization": [1e-3, 1e-2, 1e-1, 1.0]}, cv=3)
    search.fit(X, y, ledger=ledger)
    # 4 candidates x 3 folds, and the refit on all rows.
    assert len(ledger) == 13
    assert ledger.spent_epsilon == 6.5
    assert all(r["epsilon"] == 0.5 and r["estimator"] == "LogisticRegression" for r in ledger.records)


def test_cross_val_score_records_every_fit_with_the_context_manager(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=10.0)
    with ledger:
        scores = cross_val_score(clf(epsilon=1.0), X, y, cv=5)
    assert len(scores) == 5 and len(ledger) == 5 and ledger.spent_epsilon == 5.0
    # The fit-parameter route records too.
    other = dpml.Ledger(epsilon=10.0)
    cross_val_score(clf(epsilon=1.0), X, y, cv=5, params={"ledger": other})
    assert other.spent_epsilon == 5.0


def test_identity_survives_clone_copy_and_deepcopy():
    ledger = dpml.Ledger(epsilon=1.0)
    assert copy.copy(ledger) is ledger
    assert copy.deepcopy(ledger) is ledger
    assert copy.deepcopy({"l": ledger})["l"] is ledger
    assert clone(ledger, safe=False) is ledger
    with pytest.raises(dpml.DPMLError, match="cannot be pickled"):
        pickle.dumps(ledger)


def test_overspend_is_refused_before_any_work(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=1.0)
    clf(epsilon=0.75).fit(X, y, ledger=ledger)
    estimator = clf(epsilon=0.5)
    with pytest.raises(dpml.BudgetExceededError, match="needs epsilon=0.5.*has epsilon=0.25, delta=0.0 left.*nothing was trained"):
        estimator.fit(X, y, ledger=ledger)
    assert not hasattr(estimator, "classes_") and not hasattr(estimator, "privacy_")
    assert ledger.spent_epsilon == 0.75 and len(ledger) == 1
    clf(epsilon=0.25).fit(X, y, ledger=ledger)  # exactly what is left: accepted
    assert ledger.spent_epsilon == 1.0 and ledger.remaining_epsilon == 0.0


def test_spends_add_up_exactly_and_round_in_the_safe_direction():
    ledger = dpml.Ledger(epsilon=1.0)
    for _ in range(8):
        ledger.charge(0.125)  # binary fractions: exact
    assert ledger.spent_epsilon == 1.0
    ten = dpml.Ledger(epsilon=1.0)
    for _ in range(9):
        ten.charge(0.1)
    # The double 0.1 is 0.1000000000000000055...: ten such spends exceed 1 exactly, and a
    # ledger that rounded to nearest would accept the tenth.
    with pytest.raises(dpml.BudgetExceededError):
        ten.charge(0.1)
    assert len(ten) == 9


def test_refused_fit_spends_nothing(blobs):
    X, y = blobs
    ledger = dpml.Ledger(epsilon=1.0)
    with pytest.raises(dpml.DPMLValueError, match="above data_norm"):
        clf(data_norm=0.01).fit(X, y, ledger=ledger)
    assert ledger.spent_epsilon == 0.0 and len(ledger) == 0


def test_bad_ledgers():
    for args, pattern in [((0,), "finite and > 0"), ((float("inf"),), "finite and > 0"), ((1, 2), "delta")]:
        with pytest.raises(dpml.DPMLValueError, match=pattern):
            dpml.Ledger(*args)
    with pytest.raises(dpml.DPMLTypeError, match="ledger must be a dpml.Ledger"):
        clf().fit(np.zeros((2, 1)), [0, 1], ledger=3.0)
