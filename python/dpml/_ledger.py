"""A privacy budget that survives scikit-learn's tooling."""

import math
import threading
from fractions import Fraction

from ._errors import BudgetExceededError, DPMLError, DPMLValueError

_active = []  # the ledgers entered with `with ledger:`, innermost last (process-wide)
_active_lock = threading.Lock()


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
    than silently unaccounted; use threads or ``n_jobs=None``.
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
        with _active_lock:
            _active.append(self)
        return self

    def __exit__(self, *exc):
        with _active_lock:
            for i in range(len(_active) - 1, -1, -1):
                if _active[i] is self:
                    del _active[i]
                    break
        return False

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise DPMLError(
            "a Ledger cannot be pickled: a copy in another process would record spends "
            "this one never sees. Run searches with n_jobs=None or a threading backend."
        )

    def __repr__(self):
        return (
            f"Ledger(epsilon={self.epsilon!r}, delta={self.delta!r}; spent "
            f"{self.spent_epsilon!r}, {self.spent_delta!r} in {len(self._records)} fits)"
        )


def active_ledger():
    """The innermost ledger entered with ``with``, or None."""
    with _active_lock:
        return _active[-1] if _active else None
