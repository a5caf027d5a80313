"""Test-only switches. **Nothing in this module is private**; never use it on real data.

``check_mode()`` is what scikit-learn's estimator checks run under. It exists because those
checks build their own data and labels and set ``random_state`` to integers, while a private
fit requires its public facts from the caller. Inside the block:

- a missing ``classes`` is read from the labels, a missing ``data_norm`` from the rows (the
  largest row norm): both reveal facts about the data;
- an integer ``random_state`` is taken as ``InsecureSeed`` (predictable noise);
- with ``non_private=True``, ``epsilon=float("inf")`` trains without any noise.

A model trained in the block says so in ``privacy_["test_mode"]`` and has
``privacy_["private"] = False``. No estimator parameter reaches these behaviours.
"""

import contextlib
import threading

_state = threading.local()


def _mode():
    return getattr(_state, "mode", None)


@contextlib.contextmanager
def check_mode(non_private=False):
    """A context manager for tests only: **nothing trained inside it is private**.

    Inside the ``with`` block, in the current thread only:

    - a missing ``classes`` is read from the labels, a missing ``data_norm`` from the rows
      (the largest row norm);
    - an integer ``random_state`` is taken as ``dpml.InsecureSeed`` (predictable noise);
    - with ``non_private=True``, ``epsilon=float("inf")`` trains without noise.

    A model trained in the block has ``privacy_["private"] = False`` and
    ``privacy_["test_mode"] = True``. It is what scikit-learn's estimator checks need::

        with dpml.testing.check_mode():
            sklearn.utils.estimator_checks.check_estimator(dpml.LogisticRegression())

    For reproducible tests of private code, pass ``random_state=dpml.InsecureSeed(s)``
    instead. The guide's Python page ("Testing code that uses dpml") says more.
    """
    previous = _mode()
    _state.mode = {"non_private": bool(non_private)}
    try:
        yield
    finally:
        _state.mode = previous


def infer_public_facts():
    """Whether missing classes / data_norm may be read from the data (check mode)."""
    return _mode() is not None


def allow_int_seed():
    """Whether an int random_state is taken as an InsecureSeed (check mode)."""
    return _mode() is not None


def allow_non_private():
    """Whether epsilon = inf trains without noise (check mode with non_private=True)."""
    mode = _mode()
    return mode is not None and mode["non_private"]
