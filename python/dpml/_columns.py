"""The private release of a table's column facts, charged as ``Schema.from_data`` charges:
what ``dpml.preprocessing``'s transformers share (their inputs, their spend, their
report)."""

import math
import numbers

import numpy as np

from . import _active, _dpml
from ._errors import DPMLMemoryError, DPMLTypeError, DPMLValueError
from ._randomness import resolve_seed
from ._base import warn_outlook


def table(X, what):
    """``(names, columns, named)``: X's column names (a frame's own when all are text,
    else ``x0, x1, ...``), its columns as 1-D arrays, and whether the names are the
    frame's. X: a pandas (or polars) frame, a 2-D numpy array or a list of rows."""
    columns_attr = getattr(X, "columns", None)
    if columns_attr is not None and hasattr(X, "__getitem__") and not isinstance(X, np.ndarray):
        names = list(columns_attr)
        columns = []
        for name in names:
            values = X[name]
            raw = values.to_numpy() if hasattr(values, "to_numpy") else values
            columns.append(np.asarray(raw))
        named = bool(names) and all(isinstance(n, str) for n in names)
        if not named:
            names = [f"x{k}" for k in range(len(names))]
        return names, columns, named
    if hasattr(X, "tocsr"):
        raise DPMLTypeError(f"{what}: X must be dense (a sparse matrix was given)")
    array = np.asarray(X, dtype=object if _has_text(X) else None)
    if array.ndim != 2:
        raise DPMLValueError(f"{what}: X must be 2-D (n_samples, n_features); got {array.ndim}-D")
    return [f"x{k}" for k in range(array.shape[1])], list(array.T), False


def _has_text(X):
    """Whether a numpy array or nested list holds anything but numbers."""
    if isinstance(X, np.ndarray):
        return X.dtype.kind not in "biuf"
    try:
        return any(
            not isinstance(v, numbers.Number) or isinstance(v, bool)
            for row in X
            for v in row
        )
    except TypeError:
        return False


def numbers_of(name, column, what):
    """A numeric column as float64, refused by name (never by value) when it is not
    numeric or holds a missing or infinite value."""
    if column.dtype.kind not in "biuf":
        try:
            column = column.astype(np.float64)
        except (TypeError, ValueError):
            raise DPMLTypeError(f"{what}: column {name!r} is not numeric") from None
    values = np.ascontiguousarray(column, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise DPMLValueError(
            f"{what}: column {name!r} has a missing (NaN) or infinite value; impute or drop "
            "it first with public values (a value learned from the data would leak)"
        )
    return values


def level_text(value):
    """A cell as the text a level is matched by, or None when missing (None, NaN, pandas'
    NA): integers and integral floats as integers (``3``, not ``3.0``), as dp-schema
    writes a number cell."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def texts_of(column):
    """A categorical column as a list of str/None."""
    return [level_text(v) for v in column.tolist()]


def release(estimator, spec, columns, epsilon, delta, ledger, what):
    """Releases the facts of ``columns`` (one per ``spec`` entry ``(name, kind,
    candidates)``) by dp-schema's column-only recipe, charged to ``ledger`` (or the
    active one) exactly as ``Schema.from_data`` is charged: the plan is built (refusals
    cost nothing), the whole (ε, δ) charged before any noise, refunded only when refused
    before any draw. Returns ``(releases, facts, (epsilon, delta))``."""
    ledger = _active.resolve_ledger(ledger, estimator)
    plan = _dpml.ColumnPlan.build(spec, _amount("epsilon", epsilon), _amount("delta", delta))
    seed = resolve_seed(estimator.random_state, allow_int=False)
    charged = plan.charge
    record = None
    if ledger is not None:
        record = ledger.charge(
            *charged, what=what, mechanism="private column description (dp-schema)"
        )
    try:
        releases, facts, outlook = plan.release(columns, seed)
    except (DPMLValueError, DPMLMemoryError):
        # Refused before any noise was drawn: nothing was spent.
        if record is not None:
            ledger.refund(record)
        raise
    outlook = outlook_report(outlook)
    warn_outlook(outlook, what)
    return releases, facts, charged, outlook


def outlook_report(outlook):
    """A description's a-priori outlook (dp-schema's ``DescribeOutlook``, from the plan's
    thresholds and the public n) as ``privacy_["outlook"]`` reports it."""
    return dict(
        zip(("rows", "records_needed", "share_needed", "at_risk", "hopeless", "warning"), outlook)
    )


def _amount(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPMLTypeError(f"{name}={value!r} must be a number")
    return float(value)


def privacy_report(charged, facts, seed, outlook):
    """``privacy_``: the (ε, δ) spent, each column's fact (mechanism, ε, δ, released as
    text), whether the randomness was seeded, and the outlook."""
    return {
        "epsilon": charged[0],
        "delta": charged[1],
        "neighbours": "replace-one, n public",
        "seeded": seed is not None,
        "columns": [
            dict(zip(("column", "fact", "mechanism", "epsilon", "delta", "released"), f))
            for f in facts
        ],
        "outlook": outlook,
    }
