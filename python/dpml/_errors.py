"""The exceptions of dpml. The Rust core raises these classes by name, with its message."""


class DPMLError(Exception):
    """Every error dpml raises derives from this class."""


class DPMLValueError(DPMLError, ValueError):
    """A bad value: a parameter, a label, a row (NaN, infinite, above the norm bound)."""


class DPMLTypeError(DPMLValueError, TypeError):
    """A bad type or memory layout (strings where numbers belong, a non-contiguous array
    handed to the low-level functions). Like scikit-learn's ``InvalidParameterError``, it
    is both a ``TypeError`` and a ``ValueError`` (a ``DPMLValueError``): code that catches
    ``ValueError`` for a bad parameter catches every parameter error of dpml."""


class DPMLIOError(DPMLError, OSError):
    """A model file could not be read or written."""


class DPMLMemoryError(DPMLError, MemoryError):
    """An input too large for the memory available (an allocation sized by the input was
    refused); nothing was trained and no noise drawn."""


class DPMLUtilityWarning(UserWarning):
    """A fit's a-priori outlook, from public facts alone (rows, features, ε, δ, a kernel's
    width): the model is expected to be near chance, or may be no better than predicting
    the majority class. The same outlook is in ``privacy_["outlook"]``; silence it with
    ``warnings.filterwarnings("ignore", category=dpml.DPMLUtilityWarning)``."""


class BudgetExceededError(DPMLValueError):
    """A fit would spend more than a ledger has left; refused before any work."""


class LedgerUnreachableError(DPMLError):
    """A fit that an open ``with ledger:`` block would charge runs where that ledger cannot
    be charged (another thread that did not inherit the block, a child process, a pool
    worker), or a ledger is used in a process other than the one that created it;
    refused before any work, so that no fit runs uncharged."""


try:  # scikit-learn's class, so that its tooling recognises it
    from sklearn.exceptions import NotFittedError as _SklearnNotFitted
except ImportError:  # pragma: no cover - scikit-learn is an optional extra
    _SklearnNotFitted = AttributeError


class NotFittedError(DPMLError, _SklearnNotFitted):
    """An estimator used before `fit`. A subclass of scikit-learn's `NotFittedError`
    (when scikit-learn is installed) and of `ValueError`/`AttributeError` like it."""
