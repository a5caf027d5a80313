"""Public schemas (dp-schema): data frames encoded into the unit ball by public facts only.

A schema (TOML, see ``schemas/adult.toml`` in the repository) declares each numeric
column's bounds, each categorical column's levels and the label's classes — facts that
must be public, never computed from the data. ``Schema.encode`` turns a frame into rows in
the unit ball (group norm ≤ 1) and labels named by the schema's classes, by those facts
alone, one record at a time, so a model trained on the rows is exactly as private as its
mechanism says; the one-hot ``feature_groups`` go straight to the linear estimators::

    schema = dpml.Schema.from_file("schemas/adult.toml")
    X, y = schema.encode(frame)
    clf = dpml.LogisticRegression(epsilon=1.0, data_norm=1.0, fit_intercept=False,
                                  classes=schema.classes, feature_groups=schema.feature_groups)

A regression's schema (its label a ``type = "target"`` column with public ``lower`` and
``upper``; ``schema.task == "regression"``) encodes the same rows, and its y is the targets,
checked against those bounds (or clamped, with ``clip = true``); ``schema.target_bounds`` is
the regressors' ``bounds=``, and ``dpml.spark``'s regressors take the schema itself.

Frames: anything with the Arrow PyCapsule interface (``__arrow_c_stream__``: pyarrow
tables, polars frames, pandas frames when pyarrow is installed) is read through Arrow's C
stream by the Rust core, without pyarrow on dpml's side; a pandas frame without pyarrow,
or a dict of columns, is read column by column (numeric columns as float64, NaN and None
missing; other columns as text). ``Schema.from_data`` also describes a Spark DataFrame, its
partitions counted on the executors (see its docstring).
"""

import os

import numpy as np

from . import _dpml
from ._errors import DPMLError, DPMLMemoryError, DPMLTypeError, DPMLValueError


class Schema:
    """A checked public schema and its encoding. Build with ``Schema.from_file(path)`` or
    ``Schema.from_toml(text)``.

    Attributes
    ----------
    feature_names : list of str
        The encoded features (``age``, ``workclass=Private``, ``workclass:other``...).
    n_features : int
    feature_groups : numpy array of int
        The group of each encoded feature (each categorical column's one-hot slots form one
        group): pass it as the estimators' ``feature_groups=``.
    classes : list of str
        The schema's binary task, ``[other, label_positive]``: the positive class against
        the rest, as the command line trains it. ``other`` is the label's other class when it
        declares two, else ``"not <positive>"`` (every other class). These are the labels
        ``encode`` returns; pass it as the estimators' ``classes=``, and predictions come
        back in these names.
    label_name, label_classes, label_positive : the label column as the schema declares it
        (``label_name`` also names a regression's target column).
    task : str
        ``"classification"`` (a label with classes) or ``"regression"`` (a column of
        ``type = "target"``: a number within public bounds, which ``dpml.spark``'s regressors
        and ``dpml train --task regression`` fit; ``classes`` and ``label_*`` other than
        ``label_name`` are refused for it).
    target_bounds : (float, float) or None
        A regression schema's public target bounds ``(lower, upper)`` (pass them as the
        regressors' ``bounds=``); None for a classifier's schema.
    hash : str
        SHA-256 of the schema's canonical form.
    """

    __slots__ = ("_core", "_text", "_privacy")

    def __init__(self, core, text=None):
        if not isinstance(core, _dpml.Schema):
            raise DPMLTypeError(
                "build a Schema with Schema.from_file(path) or Schema.from_toml(text)"
            )
        self._core = core
        # The TOML it was read from: what dpml.spark ships to the executors.
        self._text = text
        self._privacy = None

    @classmethod
    def from_file(cls, path):
        """Reads and checks the schema file at ``path`` (errors name the file and line)."""
        if not isinstance(path, (str, os.PathLike)):
            raise DPMLTypeError(f"path must be a str or path; got {type(path).__name__}")
        core = _dpml.Schema.load(os.fspath(path))
        with open(os.fspath(path), encoding="utf-8") as f:
            return cls(core, f.read())

    @classmethod
    def from_toml(cls, text):
        """Checks a schema written in code, as TOML text."""
        if not isinstance(text, str):
            raise DPMLTypeError(f"text must be a str (TOML); got {type(text).__name__}")
        return cls(_dpml.Schema.from_toml(text), text)

    @classmethod
    def from_data(
        cls,
        frame,
        *,
        label,
        positive,
        epsilon,
        delta=0.0,
        ledger=None,
        categorical=(),
        ignore=(),
        levels=None,
        classes=None,
        aliases=None,
        missing=(),
        row_scaling="unit_norm",
        intercept=True,
        numeric_missing_zero=False,
        random_state=None,
    ):
        """A schema whose bounds, levels and classes are **private releases** from ``frame``
        (pandas, polars, pyarrow, a dict of columns, or a Spark DataFrame), for data nobody
        has documented.

        Public inputs: the column names (the frame's), which are ``categorical`` (every
        other column not in ``ignore`` and not the ``label`` is numeric), the ``positive``
        class, and optionally public ``levels`` (``{column: [candidates]}``, released with
        pure ε) and the label's ``classes``. Each numeric column's bounds (a noisy
        power-of-two histogram), each categorical column's levels and the label's classes
        (when not given) are released by dp-schema's mechanisms — the same code as
        ``dpml schema init --private`` — with ``epsilon`` split equally among the facts
        and ``delta`` among the releases of levels without a public list (which need it:
        ``delta=0`` refuses them before anything is charged).

        The description is a spend like a fit: charged to ``ledger`` (a ``dpml.Ledger``, or
        the active ``with ledger:`` block's) before any noise is drawn, refunded only when
        refused before any draw. The schema's text annotates each released fact with its
        mechanism and spend; ``schema.privacy_`` lists them. A model trained with the
        schema on the same data spends its own budget on top.

        Before any noise is drawn, the description's outlook (``privacy_["outlook"]``, from
        the plan's thresholds and the number of rows alone) says how many records a level,
        a class or a numeric range needs to be released; above half the rows it warns
        (``DPMLUtilityWarning``) that a model trained on the schema may be no better than
        the majority class — the part of a described fit's outlook that the fit's own
        cannot see.

        A Spark DataFrame (classic or Spark Connect; ``pip install 'dp-ml[spark]'``) is
        counted where it lies: one ``mapInArrow`` job counts each partition's records on its
        executor into exact histograms, which come back to the driver as bytes (exact
        counts: not private, like the fits' partial sums they go from executor to driver
        only); the driver sums them and draws every release. For the same rows and
        ``random_state`` the schema and ``privacy_`` are the pandas frame's. Column types
        are checked on the driver before anything is charged (cast decimals to double); a
        cell refused on an executor is a ``DPMLValueError`` naming its partition, its row
        within that partition and its column, and a failed job a ``DPMLError``: both
        before any noise, so the charge is refunded.
        """
        from . import _active, _columns
        from ._base import warn_outlook
        from ._randomness import resolve_seed

        if not isinstance(label, str) or not isinstance(positive, str):
            raise DPMLTypeError("label and positive must be str (a column name and a class)")
        names = _frame_names(frame)
        if label not in names:
            raise DPMLValueError(
                f"label={label!r}: the frame has no column of that name (its columns: "
                f"{', '.join(names)})"
            )
        categorical = [str(c) for c in categorical]
        ignore = [str(c) for c in ignore]
        levels = dict(levels or {})
        for name in [*categorical, *ignore, *levels]:
            if name not in names:
                raise DPMLValueError(f"column {name!r} is not in the frame")
        for name in levels:
            if name not in categorical:
                raise DPMLValueError(f"levels[{name!r}]: {name!r} is not among categorical")
        spec = []
        for name in names:
            if name == label:
                kind = "label"
            elif name in ignore:
                kind = "ignore"
            elif name in categorical:
                kind = "categorical"
            else:
                kind = "numeric"
            candidates = levels.get(name)
            spec.append(
                (name, kind, None if candidates is None else [str(v) for v in candidates])
            )
        # Plain, picklable arguments: a Spark executor rebuilds the plan from them.
        build = (
            spec,
            positive,
            None if classes is None else [str(c) for c in classes],
            {str(k): str(v) for k, v in (aliases or {}).items()},
            [str(m) for m in missing],
            str(row_scaling),
            bool(intercept),
            bool(numeric_missing_zero),
            float(epsilon),
            float(delta),
        )
        plan = _dpml.DescribePlan.build(*build)
        seed = resolve_seed(random_state, allow_int=False)
        spark = _is_spark(frame)
        if spark:
            from .spark import _check_describe_types

            _check_describe_types(frame, spec)
        charged_epsilon, charged_delta = plan.charge
        ledger = _active.resolve_ledger(ledger)
        record = None
        if ledger is not None:
            record = ledger.charge(
                charged_epsilon,
                charged_delta,
                what="Schema.from_data",
                mechanism="private schema description (dp-schema)",
            )
        counts = None
        if spark:
            from .spark import _describe_counts

            try:
                counts = _describe_counts(frame, build)
            except DPMLError:
                # A partition's refusal or a failed job: no noise was drawn yet.
                if record is not None:
                    ledger.refund(record)
                raise
        try:
            if spark:
                text, facts, outlook = plan.describe_counts(counts, seed)
            else:
                text, facts, outlook = _describe(plan, frame, spec, seed)
        except (DPMLValueError, DPMLMemoryError):
            # Refused before any noise was drawn: nothing was spent.
            if record is not None:
                ledger.refund(record)
            raise
        outlook = _columns.outlook_report(outlook)
        warn_outlook(outlook, "Schema.from_data")
        schema = cls.from_toml(text)
        schema_privacy = {
            "epsilon": charged_epsilon,
            "delta": charged_delta,
            "facts": [
                dict(zip(("column", "fact", "mechanism", "epsilon", "delta", "released"), f))
                for f in facts
            ],
            "outlook": outlook,
        }
        schema._privacy = schema_privacy
        return schema

    def to_toml(self):
        """The schema's TOML text (for ``from_data``: with each released fact annotated)."""
        return self._text

    def save(self, path):
        """Writes ``to_toml()`` to ``path``, never replacing an existing file (a private
        description is a spend: its file is its only record)."""
        with open(os.fspath(path), "x", encoding="utf-8") as f:
            f.write(self._text)

    @property
    def privacy_(self):
        """For a schema from ``from_data``: the (ε, δ) it spent and each released fact
        (column, fact, mechanism, epsilon, delta, released); None for a public schema."""
        return self._privacy

    @property
    def feature_names(self):
        return list(self._core.feature_names)

    @property
    def n_features(self):
        return self._core.n_features

    @property
    def feature_groups(self):
        return np.asarray(self._core.feature_groups, dtype=np.int64)

    @property
    def task(self):
        return "classification" if self._core.target is None else "regression"

    @property
    def target_bounds(self):
        target = self._core.target
        return None if target is None else (float(target[1]), float(target[2]))

    def _classifiers(self, what):
        """Refuses ``what`` (a classifier's fact) for a regression schema, naming the target."""
        if self._core.target is not None:
            raise DPMLValueError(
                f"{what}: the schema's label {self.label_name!r} is a regression target "
                "(type = \"target\"), which has no classes; fit it with a regressor "
                "(dpml.spark.LinearRegression, Ridge or HuberRegressor with schema=, or "
                "dpml.Ridge on encode's X, y with bounds=schema.target_bounds)"
            )

    @property
    def classes(self):
        self._classifiers("classes")
        positive = self.label_positive
        others = [c for c in self.label_classes if c != positive]
        if len(others) == 1:
            return [others[0], positive]
        rest = f"not {positive}"
        while rest in others:  # a declared class of that very name: keep the two apart
            rest = f"({rest})"
        return [rest, positive]

    @property
    def label_name(self):
        return self._core.label[0]

    @property
    def label_classes(self):
        self._classifiers("label_classes")
        return list(self._core.label[1])

    @property
    def label_positive(self):
        self._classifiers("label_positive")
        return self._core.label[2]

    @property
    def hash(self):
        return self._core.hash

    def encode(self, frame, labels=True):
        """``(X, y)``: the frame's rows encoded by the schema (X dense float64, n × d, every
        row in the unit ball) and, with ``labels``, their labels named by ``classes``
        (``label_positive``, or the other name; a numpy array of str) — for a regression
        schema the targets (float64, within ``target_bounds``) — else y is None.

        A record the schema refuses (a missing value where the schema says "error", a level
        not declared under ``unseen = "error"``, a label outside the classes) is an error
        naming its row and column, never its content; nothing is dropped silently.
        """
        if not isinstance(labels, (bool, np.bool_)):
            raise DPMLTypeError(f"labels={labels!r} must be True or False")
        stream = getattr(frame, "__arrow_c_stream__", None)
        if stream is not None:
            try:
                capsule = stream()
            except (ImportError, ValueError, TypeError):
                # pandas without pyarrow, or a column Arrow cannot type (an object column
                # of mixed values): read its columns below.
                capsule = None
            if capsule is not None:
                return self._named(*self._core.encode_stream(capsule, bool(labels)))
        return self._named(*self._core.encode_columns(self._columns(frame), bool(labels)))

    def _named(self, X, signs):
        """``(X, y)`` with the core's ±1 labels named by ``classes`` (a regression's
        targets as they are: float64, checked against ``target_bounds`` or clamped)."""
        if signs is None:
            return X, None
        if self._core.target is not None:
            return X, np.asarray(signs, dtype=np.float64)
        return X, np.asarray(self.classes)[(np.asarray(signs) > 0).astype(np.intp)]

    def _columns(self, frame):
        """One entry per schema column: None (absent), float64 (numeric data) or text."""
        if isinstance(frame, dict):
            has = frame.__contains__
        elif hasattr(frame, "columns") and hasattr(frame, "__getitem__"):
            names = set(frame.columns)
            has = names.__contains__
        else:
            raise DPMLTypeError(
                "frame must be a data frame (pandas, polars, pyarrow: anything with "
                f"__arrow_c_stream__ or columns) or a dict of columns; got {type(frame).__name__}"
            )
        columns = []
        for name, kind in self._core.columns:
            if kind == "ignore" or not has(name):
                columns.append(None)
                continue
            values = frame[name]
            raw = values.to_numpy() if hasattr(values, "to_numpy") else values
            # dtype=object for text: numpy would turn a NaN among strings into 'nan'.
            array = np.asarray(raw)
            if array.ndim != 1:
                raise DPMLTypeError(f"column {name!r} must be one-dimensional")
            if array.dtype.kind in "biuf":
                columns.append(np.ascontiguousarray(array, dtype=np.float64))
            else:
                columns.append([_text(v) for v in np.asarray(raw, dtype=object).tolist()])
        return columns

    def __repr__(self):
        label = "target" if self._core.target is not None else "label"
        return (
            f"Schema({self.n_features} features, {label} {self.label_name!r}, "
            f"hash {self.hash[:12]})"
        )


def _is_spark(frame):
    """Whether ``frame`` is a pyspark DataFrame, classic or Spark Connect (without importing
    pyspark)."""
    return type(frame).__module__.startswith("pyspark.sql.") and hasattr(frame, "mapInArrow")


def _frame_names(frame):
    """The frame's column names, in order."""
    if isinstance(frame, dict):
        return [str(k) for k in frame]
    columns = getattr(frame, "columns", None)
    if columns is not None:
        return [str(c) for c in columns]
    schema = getattr(frame, "schema", None)
    if schema is not None and hasattr(schema, "names"):
        return [str(n) for n in schema.names]
    raise DPMLTypeError(
        "frame must be a data frame (pandas, polars, pyarrow) or a dict of columns; got "
        f"{type(frame).__name__}"
    )


def _describe(plan, frame, spec, seed):
    """The describing pass over ``frame``: through Arrow's C stream when it has one, else
    column by column."""
    stream = getattr(frame, "__arrow_c_stream__", None)
    if stream is not None and not isinstance(frame, dict):
        try:
            capsule = stream()
        except (ImportError, ValueError, TypeError):
            # pandas without pyarrow, or a column Arrow cannot type (an object column of
            # mixed values): read its columns below.
            capsule = None
        if capsule is not None:
            return plan.describe_stream(capsule, seed)
    columns = []
    for name, kind, _ in spec:
        if kind == "ignore":
            columns.append(None)
            continue
        values = frame[name]
        raw = values.to_numpy() if hasattr(values, "to_numpy") else values
        array = np.asarray(raw)
        if array.ndim != 1:
            raise DPMLTypeError(f"column {name!r} must be one-dimensional")
        if kind == "numeric" and array.dtype.kind in "biuf":
            columns.append(np.ascontiguousarray(array, dtype=np.float64))
        elif array.dtype.kind in "biu":
            columns.append([str(v) for v in array.tolist()])
        else:
            columns.append([_text(v) for v in np.asarray(raw, dtype=object).tolist()])
    return plan.describe_columns(columns, seed)


def _text(value):
    """A cell as text, or None when missing (None, NaN, pandas' NA)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value if isinstance(value, str) else str(value)


__all__ = ["Schema"]
