"""Which ledger a fit is charged to, and where a ``with ledger:`` block cannot reach.

The rule: **a fit that an open ``with ledger:`` block would charge is never run
uncharged.** Where the block's ledger cannot be charged (another thread that did not
inherit the block, a child process, a pool worker) the fit is refused with
``LedgerUnreachableError`` before any data are touched or noise drawn.

- The active ledger is per thread and per asyncio task: a ``contextvars.ContextVar``
  holds the stack of entered ledgers. A thread starts with an empty context (Python ≤
  3.13 and GIL builds of 3.14), so a plain thread, joblib's threading backend and
  scikit-learn's ``Parallel`` (checked: joblib 1.6, scikit-learn 1.9) do not see the
  block; ``asyncio.to_thread`` and ``contextvars.copy_context().run`` do, and are
  charged.
- A count of the blocks open in this process (all threads): a fit in a context with no
  ledger of its own while another context of this process has a block open is refused
  (it may be that block's own worker).
- While any block is open, the environment variable ``DPML_LEDGER_BLOCK`` names this
  process; a process started meanwhile (spawn, forkserver, loky, subprocess) inherits
  it, and a fit there with no ledger of its own is refused. The variable is put back as
  it was when the last block closes. loky reuses its workers: one started inside a
  block keeps refusing after the block closed until it is replaced (a loud false
  refusal, never a silent uncharged fit).
- An estimator pickled while a block of this process is open carries a mark (an
  attribute, never a parameter); fitted in another process with no ledger of its own,
  it is refused. This catches workers started before the block (a reused loky pool, a
  fork pool made earlier).
- A ``Ledger`` records the process that created it; one used (passed or entered) in
  another process is a forked child's copy, whose spends never reach the original:
  refused.

Not caught: a process started before the block, with no mark on anything it is sent,
that builds its own estimators (a pool made before ``with ledger:`` running a function
that creates and fits an estimator). Nothing crosses into it that dpml could read.
"""

import contextvars
import os
import threading

from ._errors import DPMLError, DPMLTypeError, LedgerUnreachableError

ENV = "DPML_LEDGER_BLOCK"
# While the process's open blocks are all on one ledger file, its path: a child process
# charges that file (the same budget, locked) instead of refusing.
ENV_FILE = "DPML_LEDGER_FILE"
MARK = "_dpml_ledger_block"  # the attribute an estimator pickled inside a block carries

# The ledgers entered with ``with`` in this context, innermost last.
_stack = contextvars.ContextVar("dpml_active_ledgers", default=())
_lock = threading.Lock()
_open = 0  # blocks open in this process, all threads and tasks together
_env_before = None  # the variables' values before this process's first open block
_entered = []  # the ledgers of the open blocks, all threads and tasks together


def _identity():
    """This process, as the variable and the mark name it: its pid and a random tag (a
    pid may be reused, by a later process or one in another container)."""
    return f"{os.getpid()}-{os.urandom(6).hex()}"


_process = _identity()


def _after_fork_in_child():
    # A forked child is a new process: its own identity and lock. Of the parent's open
    # blocks only the forking thread's were copied (as copies: refused when used), and
    # they are the child's count.
    global _lock, _open, _process, _entered
    _lock = threading.Lock()
    _open = len(_stack.get())
    _entered = list(_stack.get())
    _process = _identity()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _pid_of(identity):
    return str(identity).split("-", 1)[0]


def _check_home(ledger, how):
    created = getattr(ledger, "_creator_pid", None)
    if created is not None and created != os.getpid():
        raise LedgerUnreachableError(
            f"this Ledger ({how}) was created in process {created} and is used in process "
            f"{os.getpid()}: it is a copy (a forked child's), and its spends would never "
            "reach the original. Charge a ledger in the process that created it (run the "
            "fits there: n_jobs=None, or threads with ledger= passed to fit), or create a "
            "Ledger in this process; nothing was trained"
        )


def enter(ledger):
    """``with ledger:``: makes ``ledger`` active in the current thread or task."""
    global _open, _env_before
    _check_home(ledger, "entered with `with`")
    with _lock:
        if _open == 0:
            _env_before = (os.environ.get(ENV), os.environ.get(ENV_FILE))
            os.environ[ENV] = _process
        _open += 1
        _entered.append(ledger)
        _publish_file()
    _stack.set(_stack.get() + (ledger,))


def exit(ledger):
    """The end of ``with ledger:`` in the current thread or task."""
    global _open
    stack = _stack.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is ledger:
            break
    else:
        raise DPMLError(
            "a `with ledger:` block ended in a thread or task that did not enter it"
        )
    _stack.set(stack[:i] + stack[i + 1 :])
    with _lock:
        _open -= 1
        for j in range(len(_entered) - 1, -1, -1):
            if _entered[j] is ledger:
                del _entered[j]
                break
        if _open == 0:
            for name, value in zip((ENV, ENV_FILE), _env_before):
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        else:
            _publish_file()


def _file_of_open_blocks():
    """The one ledger file every open block of this process is on, or None."""
    paths = {getattr(ledger, "path", None) for ledger in _entered}
    return paths.pop() if len(paths) == 1 else None


def _publish_file():
    # Under _lock: the variable names the file while every open block is on it.
    path = _file_of_open_blocks()
    if path is None:
        os.environ.pop(ENV_FILE, None)
    else:
        os.environ[ENV_FILE] = path


def active_ledger():
    """The innermost ledger entered with ``with`` in this thread or task, or None."""
    stack = _stack.get()
    return stack[-1] if stack else None


def _charge_in_child(mark):
    """The ledger a fit in a child process may charge for the block ``mark`` names (the
    estimator's mark, or ``{"process": ...}`` from the variable), or None: refused.

    A block on a ledger file (``Ledger.open``) is reached: the child opens the same file
    and each charge locks it, so the block's budget is charged exactly as in the block's
    own process. An in-memory ledger cannot be reached from another process: None."""
    path = mark.get("ledger_file")
    if not path:
        return None
    from ._ledger import Ledger

    return Ledger.open(path)


def resolve_ledger(explicit, estimator=None):
    """The ledger a fit charges: ``explicit`` (``fit(..., ledger=)``), else the active one
    of this thread or task, else None when no open block could be meant; refuses
    (``LedgerUnreachableError``) a fit that an open block would charge but cannot.
    Call it first in ``fit``, before any data are read."""
    from ._ledger import Ledger

    if explicit is not None:
        if not isinstance(explicit, Ledger):
            raise DPMLTypeError(f"ledger must be a dpml.Ledger; got {type(explicit).__name__}")
        _check_home(explicit, "passed as ledger=")
        return explicit
    active = active_ledger()
    if active is not None:
        _check_home(active, "active in a `with` block")
        return active
    with _lock:
        others = _open
    if others:
        raise LedgerUnreachableError(
            f"a `with ledger:` block is open in another thread or asyncio task of this "
            f"process (pid {os.getpid()}), and this one has no ledger: the block's ledger "
            "cannot be charged from here (context variables do not cross into new threads; "
            "this may be the block's own worker, e.g. joblib's threading backend or a "
            "ThreadPoolExecutor), and the fit would run uncharged. Pass the ledger to fit "
            "(fit(X, y, ledger=ledger), or params={'ledger': ledger} in scikit-learn's "
            "searches: a Ledger is safe to share between threads), enter it in this thread, "
            "or run with n_jobs=None; nothing was trained"
        )
    mark = None if estimator is None else estimator.__dict__.get(MARK)
    if mark is not None and mark.get("process") != _process:
        charged = _charge_in_child(mark)
        if charged is None:
            raise LedgerUnreachableError(
                f"this {type(estimator).__name__} was pickled while a `with ledger:` block "
                f"was open in process {_pid_of(mark.get('process'))} and is fitted in process "
                f"{os.getpid()} (a worker of n_jobs, a process pool...), with no ledger of "
                "its own: that block's ledger cannot be charged from here, and the fit would "
                "run uncharged. Run the fits in the block's process (n_jobs=None, or a "
                "threading backend with params={'ledger': ledger}), or give this process a "
                "ledger of its own (fit(..., ledger=...)). An estimator that is no worker's "
                "copy (one saved inside a block) can be rebuilt: "
                "type(est)(**est.get_params()); nothing was trained"
            )
        return charged
    block = os.environ.get(ENV)
    if block and block != _process:
        charged = _charge_in_child({"process": block, "ledger_file": os.environ.get(ENV_FILE)})
        if charged is None:
            raise LedgerUnreachableError(
                f"this process (pid {os.getpid()}) was started while a `with ledger:` block "
                f"was open in process {_pid_of(block)} (the environment variable {ENV} "
                "says so), and it has no ledger of its own: that block's ledger cannot be "
                "charged from here, and the fit would run uncharged. Run the fits in the "
                "block's process (n_jobs=None, or a threading backend with "
                "params={'ledger': ledger}), or give this process a ledger of its own "
                "(fit(..., ledger=...) or `with ledger:` here). A reused worker (loky's) "
                "started inside a block refuses until it is replaced: "
                "joblib.externals.loky.get_reusable_executor().shutdown(); nothing was "
                "trained"
            )
        return charged
    return None


def pickling_mark():
    """The mark for an estimator pickled now: this process, if a block of it is open."""
    with _lock:
        open_ = _open
    if open_ or _stack.get():
        mark = {"process": _process}
        active = active_ledger()
        path = getattr(active, "path", None) if active is not None else None
        with _lock:
            path = path or _file_of_open_blocks()
        if path is not None:
            mark["ledger_file"] = path
        return mark
    return None


class LedgerMarked:
    """Mixin for the estimators: pickled while a block is open, an estimator carries the
    mark (an attribute, not a parameter: ``get_params``, ``privacy_`` and the model are
    unchanged); ``sklearn.base.clone`` keeps a mark from another process (a worker that
    clones what it was sent is still that block's worker)."""

    def __getstate__(self):
        state = dict(super().__getstate__())
        mark = state.pop(MARK, None)
        if mark is not None and mark.get("process") == _process:
            mark = None  # this process's own, from an earlier pickle: it means nothing
        mark = pickling_mark() or mark
        if mark is not None:
            state[MARK] = mark
        return state

    def __sklearn_clone__(self):
        clone = super().__sklearn_clone__()
        mark = self.__dict__.get(MARK)
        if mark is not None and mark.get("process") != _process:
            clone.__dict__[MARK] = mark
        return clone
