"""A privacy budget that survives scikit-learn's tooling."""

import math
import os
import threading
from fractions import Fraction

from . import _active
from ._active import active_ledger, resolve_ledger  # noqa: F401 (their former home)
from ._errors import BudgetExceededError, DPMLError, DPMLValueError


def _check_amount(name, value, upper):
    if isinstance(value, bool):
        raise DPMLValueError(f"{name}={value!r} must be a number")
    try:
        value = float(value)
    except (TypeError, ValueError) as e:
        raise DPMLValueError(f"{name}={value!r} must be a number") from e
    if not (0 <= value <= upper) or math.isnan(value):
        raise DPMLValueError(f"{name}={value!r} must be in [0, {upper}]")
    return value


class Ledger:
    """A total privacy budget ``(epsilon, delta)`` and a record of every fit that spent it.

    Pass it to ``fit(X, y, ledger=ledger)`` or make it active for a block with
    ``with ledger:``. Each private fit charges its ε before any work is done; a fit that
    would take the total above ``epsilon`` is refused with ``BudgetExceededError``, and
    nothing is trained. Spends add up exactly (as rationals, no rounding), so the
    guarantee of everything recorded is ``(spent_epsilon, spent_delta)``-DP by basic
    sequential composition (each fit sees the whole dataset it is given; fits on disjoint
    parts compose better, which this ledger does not claim).

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
        self.epsilon = _check_amount("epsilon", epsilon, math.inf)
        if self.epsilon == 0 or math.isinf(self.epsilon):
            raise DPMLValueError(f"epsilon={epsilon!r} must be finite and > 0")
        self.delta = _check_amount("delta", delta, 1.0)
        self._spent_epsilon = Fraction(0)
        self._spent_delta = Fraction(0)
        self._records = []
        self._lock = threading.Lock()
        self._creator_pid = os.getpid()  # used in another process, it is a copy: refused

    @property
    def spent_epsilon(self):
        """The ε spent so far."""
        return float(self._spent_epsilon)

    @property
    def spent_delta(self):
        """The δ spent so far."""
        return float(self._spent_delta)

    @property
    def remaining_epsilon(self):
        """The ε left, rounded down."""
        left = Fraction(self.epsilon) - self._spent_epsilon
        value = float(left)
        return value if Fraction(value) <= left else math.nextafter(value, 0.0)

    @property
    def records(self):
        """One dict per charged fit: ``estimator``, ``epsilon``, ``delta``, ``mechanism``."""
        return [dict(r) for r in self._records]

    def __len__(self):
        return len(self._records)

    def charge(self, epsilon, delta=0.0, *, what="a fit", mechanism=None):
        """Records a spend, or refuses it (``BudgetExceededError``) if it does not fit.

        Returns the record, which ``refund`` takes back when the fit was refused before
        any noise was drawn.
        """
        epsilon = _check_amount("epsilon", epsilon, math.inf)
        delta = _check_amount("delta", delta, 1.0)
        if math.isinf(epsilon):
            raise BudgetExceededError(f"{what} is not private (epsilon = inf): no ledger covers it")
        if delta > 0 and self.delta == 0:
            raise BudgetExceededError(
                f"{what} is (epsilon, delta)-DP with delta={delta!r}, but this ledger is pure "
                "epsilon (delta=0) and cannot cover any delta; create the ledger with the "
                "total delta you accept, Ledger(epsilon, delta=...); nothing was trained"
            )
        with self._lock:
            total_e = self._spent_epsilon + Fraction(epsilon)
            total_d = self._spent_delta + Fraction(delta)
            if total_e > Fraction(self.epsilon) or total_d > Fraction(self.delta):
                raise BudgetExceededError(
                    f"{what} needs epsilon={epsilon!r}, delta={delta!r}, but the ledger has "
                    f"epsilon={float(Fraction(self.epsilon) - self._spent_epsilon)!r}, "
                    f"delta={float(Fraction(self.delta) - self._spent_delta)!r} left of "
                    f"({self.epsilon!r}, {self.delta!r}); nothing was trained"
                )
            self._spent_epsilon = total_e
            self._spent_delta = total_d
            record = {"estimator": what, "epsilon": epsilon, "delta": delta, "mechanism": mechanism}
            self._records.append(record)
            return record

    def refund(self, record):
        """Takes back a spend whose fit was refused before it drew any noise."""
        with self._lock:
            for i, r in enumerate(self._records):
                if r is record:
                    del self._records[i]
                    self._spent_epsilon -= Fraction(record["epsilon"])
                    self._spent_delta -= Fraction(record["delta"])
                    return
        raise DPMLError("refund of a spend this ledger did not record")

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
        raise DPMLError(
            "a Ledger cannot be pickled: a copy in another process would record spends "
            "this one never sees. Run searches with n_jobs=None, or with a threading backend "
            "and the ledger passed to fit (params={'ledger': ledger})."
        )

    def __repr__(self):
        return (
            f"Ledger(epsilon={self.epsilon!r}, delta={self.delta!r}; spent "
            f"{self.spent_epsilon!r}, {self.spent_delta!r} in {len(self._records)} fits)"
        )
