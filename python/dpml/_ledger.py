"""A privacy budget that survives scikit-learn's tooling."""

import math
import numbers
import os

from . import _active, _dpml
from ._active import active_ledger, resolve_ledger  # noqa: F401 (their former home)
from ._errors import BudgetExceededError, DPMLError, DPMLTypeError, DPMLValueError

# The largest total δ (dp-fit's MAX_DELTA, as for every fit): a useful δ is far below 1/n.
_MAX_DELTA = _dpml.MAX_DELTA


def _check_amount(name, value, upper):
    """``value`` as a float in [0, ``upper``]: a real number (not a string, bool or None,
    which are refused naming ``name``, as the estimators refuse them)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPMLTypeError(f"{name}={value!r} must be a number")
    value = float(value)
    if not (0 <= value <= upper) or math.isnan(value):
        raise DPMLValueError(f"{name}={value!r} must be in [0, {upper!r}]")
    return value


def _check_total(epsilon, delta):
    """A ledger's total: ε finite and > 0, δ 0 (pure ε) or in (0, ``MAX_DELTA``]."""
    epsilon = _check_amount("epsilon", epsilon, math.inf)
    if epsilon == 0 or math.isinf(epsilon):
        raise DPMLValueError(f"epsilon={epsilon!r} must be finite and > 0")
    delta = _check_amount("delta", delta, _MAX_DELTA)
    return epsilon, delta


class Ledger:
    """A total privacy budget ``(epsilon, delta)`` and a record of every fit that spent it.

    Pass it to ``fit(X, y, ledger=ledger)`` or make it active for a block with
    ``with ledger:``. Each private fit charges its ε before any work is done; a fit that
    would take the total above ``epsilon`` is refused with ``BudgetExceededError``, and
    nothing is trained. A pure-ε ledger (and any ledger of pure-ε spends) adds ε up
    exactly (as rationals, no rounding): basic sequential composition. An ``(ε, δ)``
    ledger composes tightly: each spend records its mechanism's privacy curve where it has
    one (a Gaussian output perturbation's ρ-zCDP, a DP-SGD fit's rate, σ and steps), and
    the total is the least ε certified at the ledger's δ by basic composition or by the
    privacy-loss distributions of all the spends convolved — never more than basic
    composition. ``composition`` says which certified the total; the guarantee of
    everything recorded is ``(spent_epsilon, spent_delta)``-DP (each fit sees the whole
    dataset it is given; fits on disjoint parts compose better, which this ledger does not
    claim).

    A ledger keeps its identity under ``copy``, ``deepcopy`` and ``sklearn.base.clone``
    (it is not an estimator parameter), so ``GridSearchCV(...).fit(X, y, ledger=l)`` and
    ``cross_val_score(..., params={"ledger": l})`` record every fit they make. It cannot
    be pickled: a copy in another process would record spends the original never sees,
    so process-based parallelism (``n_jobs`` with the loky backend) is refused rather
    than silently unaccounted; use threads or ``n_jobs=None``. A ledger is safe to share
    between threads: passed as ``ledger=``, it is charged from any thread.

    **A fit that an open ``with ledger:`` block would charge is charged to it or refused
    (``LedgerUnreachableError``, before any work), never run uncharged:**

    - the block is active in the thread or asyncio task that entered it, and in what runs
      in a copy of its context (``asyncio.to_thread``, ``contextvars.copy_context()``):
      those fits are charged. Two threads may each enter their own ledger (or the same
      one) at once; each fit charges its own thread's.
    - a thread that did not inherit the block (a plain ``threading.Thread``, a
      ``ThreadPoolExecutor``, joblib's threading backend, scikit-learn's ``n_jobs`` with
      it: none of them carries context variables) fitting with no ledger of its own while
      any block of the process is open is refused. Pass the ledger to ``fit`` there
      (``params={"ledger": ledger}`` in scikit-learn's searches) and every fit is charged.
    - a process started while a block was open (``multiprocessing`` with spawn or
      forkserver, loky's workers for ``n_jobs``, a subprocess) inherits the environment
      variable ``DPML_LEDGER_BLOCK``, and its fits with no ledger of its own are refused;
      so are fits, in any other process, of an estimator pickled while a block was open
      (a worker started earlier, such as a reused loky pool), and any use of a ledger
      outside the process that created it (a forked child's copy, entered or passed).
    - loky reuses its workers: one started inside a block keeps refusing after the block
      closed, until it is replaced (``joblib.externals.loky.get_reusable_executor()
      .shutdown()``) — a loud false refusal, never a silent uncharged fit. So does a
      model pickled to a file inside a block and refitted, with no ledger, in another
      process (rebuild it: ``type(est)(**est.get_params())``).
    - not seen: a process started *before* the block that builds and fits its own
      estimators (a pool made before ``with ledger:`` running a function that creates an
      estimator): nothing of the block reaches it. Pass such work a ledger of its own.
    """

    def __init__(self, epsilon, delta=0.0):
        epsilon, delta = _check_total(epsilon, delta)
        self._core = _dpml.LedgerCore.in_memory(epsilon, delta)
        self._creator_pid = os.getpid()  # used in another process, it is a copy: refused

    @classmethod
    def open(cls, path, *, wait=10.0):
        """The ledger file at ``path`` (``dpml ledger init`` writes one; ``Ledger.create``
        too): the **same budget as the command line's** ``--ledger path``. Each charge
        locks the file, checks and records the spend, and releases it, waiting up to
        ``wait`` seconds for another process (a ``dpml train`` run holds the lock for its
        whole fit). Symbolic links reach the one file; a file with several hard links is
        refused. Unlike an in-memory ledger it may be used from other processes (it
        pickles as its path): a worker charges the same file."""
        ledger = cls.__new__(cls)
        ledger._core = _dpml.LedgerCore.open(os.fspath(path), wait)
        ledger._creator_pid = None  # a file is reachable from any process
        return ledger

    @classmethod
    def create(cls, path, epsilon, delta=0.0, *, dataset="", wait=10.0):
        """A new ledger file at ``path`` (never replacing a file) with a total
        ``(epsilon, delta)`` for ``dataset``, opened: see ``Ledger.open``."""
        epsilon, delta = _check_total(epsilon, delta)
        ledger = cls.__new__(cls)
        ledger._core = _dpml.LedgerCore.create(os.fspath(path), epsilon, delta, str(dataset), wait)
        ledger._creator_pid = None
        return ledger

    @property
    def path(self):
        """The ledger file's path, or None for a ledger held in memory."""
        return self._core.path()

    def _state(self):
        return self._core.state()

    @property
    def epsilon(self):
        """The total ε."""
        return self._state()["total_epsilon"]

    @property
    def delta(self):
        """The total δ (0: pure ε, which refuses any δ)."""
        return self._state()["total_delta"]

    @property
    def spent_epsilon(self):
        """The ε spent so far (the exact sum, rounded up)."""
        return self._state()["spent_epsilon"]

    @property
    def spent_delta(self):
        """The δ spent so far: the exact sum, rounded up (basic composition), or the
        ledger's δ (privacy-loss distribution composition, whose ε is stated at it)."""
        return self._state()["spent_delta"]

    @property
    def composition(self):
        """Which composition certified ``spent_epsilon``: ``"basic"`` (ε and δ added up)
        or ``"privacy-loss distribution"`` (the spends' curves composed at the whole δ)."""
        return self._state()["composition"]

    @property
    def remaining_epsilon(self):
        """The ε left, rounded down."""
        return self._state()["remaining_epsilon"]

    @property
    def identity(self):
        """The ledger's random identity (recorded with every spend's number)."""
        return self._state()["id"]

    @property
    def records(self):
        """One dict per charged fit: ``estimator``, ``epsilon``, ``delta``, ``mechanism``
        and ``sequence`` (the spend's number in the ledger). A file's spends by the command
        line have ``estimator`` ``'dpml train'``."""
        return [_record(spend) for spend in self._state()["spends"]]

    def __len__(self):
        return len(self._state()["spends"])

    def charge(self, epsilon, delta=0.0, *, what="a fit", mechanism=None, classes=None):
        """Records a spend, or refuses it (``BudgetExceededError``) if it does not fit.
        The sums are exact (ten spends of 0.1 exceed 1, as in the reals).

        Returns the record, which ``refund`` takes back when the fit was refused before
        any noise was drawn. A spend of nothing (``epsilon`` 0 and ``delta`` 0) is refused:
        every private fit spends some ε, so a zero spend records no fit.
        """
        epsilon = _check_amount("epsilon", epsilon, math.inf)
        delta = _check_amount("delta", delta, _MAX_DELTA)
        if math.isinf(epsilon):
            raise BudgetExceededError(f"{what} is not private (epsilon = inf): no ledger covers it")
        if epsilon == 0:
            raise DPMLValueError(
                f"epsilon={epsilon!r}: a spend must be > 0 (every private fit spends some "
                "epsilon; a zero spend would record a fit that spent nothing)"
            )
        sequence = self._core.charge(
            epsilon, delta, str(what), str(mechanism or ""), None if classes is None else int(classes)
        )
        return {
            "estimator": what,
            "epsilon": epsilon,
            "delta": delta,
            "mechanism": mechanism,
            "sequence": sequence,
        }

    def _attach_curve(self, record, curve):
        """Gives the spend of ``record`` its DP-SGD curve ``(q, sigma, steps)``, known after
        the fit; kept only where it does not raise the composed total."""
        return self._core.attach_sgd_curve(record["sequence"], *curve)

    def refund(self, record):
        """Takes back a spend whose fit was refused before it drew any noise."""
        sequence = record.get("sequence") if isinstance(record, dict) else None
        if sequence is None:
            raise DPMLError("refund of a spend this ledger did not record")
        self._core.refund(sequence)

    def __enter__(self):
        _active.enter(self)
        return self

    def __exit__(self, *exc):
        _active.exit(self)
        return False

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        if self.path is not None:
            return (_reopen, (self.path,))
        raise DPMLError(
            "a Ledger cannot be pickled: a copy in another process would record spends "
            "this one never sees. Run searches with n_jobs=None, or with a threading backend "
            "and the ledger passed to fit (params={'ledger': ledger})."
        )

    def __repr__(self):
        state = self._state()
        where = f"{self.path!r}: " if self.path is not None else ""
        return (
            f"Ledger({where}epsilon={state['total_epsilon']!r}, "
            f"delta={state['total_delta']!r}; spent {state['spent_epsilon']!r}, "
            f"{state['spent_delta']!r} in {len(state['spends'])} fits, "
            f"{state['composition']} composition)"
        )


def _reopen(path):
    """A file-backed ledger, unpickled: the same file, opened in this process."""
    return Ledger.open(path)


def _record(spend):
    command = spend["command"]
    return {
        "estimator": command[len("python: ") :] if command.startswith("python: ") else f"dpml {command}",
        "epsilon": spend["epsilon"],
        "delta": spend["delta"],
        "mechanism": spend["model"] or None,
        "sequence": spend["sequence"],
    }
