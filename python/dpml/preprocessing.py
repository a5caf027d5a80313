"""Private preprocessing: scikit-learn transformers whose bounds and levels are
differentially private releases, each spending a stated ε (and δ) charged to the ledger,
and which hand their one-hot groups to the estimator.

scikit-learn's own ``MinMaxScaler`` and ``OneHotEncoder`` learn each column's bounds and
levels from the data with no privacy: a model trained behind them is not private, however
private its own fit. Here those facts are released by dp-schema's mechanisms — the recipe
of ``dpml.Schema.from_data`` and ``dpml schema init --private``:

- a numeric column's bounds: a noisy signed power-of-two histogram (no range needed), the
  lowest and highest cells above a threshold;
- a categorical column's levels over a public candidate list: noisy counts and a
  threshold (pure ε); without a list: the stability-based histogram ((ε, δ)-DP).

ε is split equally among the columns (δ among the stability releases), fixed before any
record is read. The neighbouring relation is replace-one with n public. A model fitted
on the transformed data spends its own budget on top: charge both to one ledger.

``make_pipeline(preprocessor, estimator)`` fits both, charging the ledger, and hands the
preprocessor's ``feature_groups`` (and ``data_norm = √groups``) to the estimator, so that
its objective perturbation adds noise shaped to the one-hot groups::

    pre = ColumnTransformer([("cat", dpml.preprocessing.OneHotEncoder(0.05, delta=1e-6), cats),
                             ("num", dpml.preprocessing.MinMaxScaler(0.05), nums)])
    model = dpml.preprocessing.make_pipeline(pre, dpml.LogisticRegression(0.4, classes=[0, 1]))
    with dpml.Ledger(epsilon=0.5, delta=1e-6):
        model.fit(X, y)
"""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from . import _columns, _validation
from ._active import LedgerMarked
from ._errors import DPMLTypeError, DPMLValueError, NotFittedError
from ._pipeline import PrivatePipeline, feature_groups, make_pipeline


class _PrivateTransformer(TransformerMixin, LedgerMarked, BaseEstimator):
    """What both transformers share: the table read, the release charged, the checks."""

    def _release(self, X, ledger, kind_of, candidates_of, delta):
        what = type(self).__name__
        names, columns, named = _columns.table(X, f"{what}.fit")
        if not columns or len(columns[0]) == 0:
            raise DPMLValueError(f"{what}.fit: X has no columns or no rows")
        spec = [(n, kind_of, candidates_of(k)) for k, n in enumerate(names)]
        data = [self._column(n, c, f"{what}.fit") for n, c in zip(names, columns)]
        releases, facts, charged, outlook = _columns.release(
            self, spec, data, self.epsilon, delta, ledger, what
        )
        if named:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = len(names)
        seed = None if self.random_state is None else self.random_state.seed
        self.privacy_ = _columns.privacy_report(charged, facts, seed, outlook)
        return releases

    def _check_fitted(self):
        if not hasattr(self, "privacy_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet: call fit first"
            )

    def _input(self, X):
        """X's columns for transform, checked against fit's."""
        self._check_fitted()
        what = f"{type(self).__name__}.transform"
        _validation._check_feature_names(self, X, reset=False)
        names, columns, _ = _columns.table(X, what)
        if len(columns) != self.n_features_in_:
            raise DPMLValueError(
                f"{what}: X has {len(columns)} features, but {type(self).__name__} was "
                f"fitted with {self.n_features_in_}"
            )
        return names, columns

    def _input_names(self, input_features):
        self._check_fitted()
        if input_features is not None:
            names = [str(n) for n in input_features]
            if len(names) != self.n_features_in_:
                raise DPMLValueError(
                    f"input_features has {len(names)} names for {self.n_features_in_} features"
                )
            return names
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None:
            return [str(n) for n in fitted]
        return [f"x{k}" for k in range(self.n_features_in_)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.requires_fit = True
        return tags


class MinMaxScaler(_PrivateTransformer):
    """Scales each column into [0, 1] between **privately released** bounds.

    ``fit(X)`` releases each column's bounds with dp-schema's histogram bounds (a noisy
    signed power-of-two histogram: no public range needed), ``epsilon / n_features`` each;
    ``transform`` clips each value to its column's released bounds and maps them onto
    [0, 1]. A column whose release gave nothing (no cell above the threshold: too few
    records for its ε) is transformed to 0, with NaN bounds, and a ``privacy_`` entry
    saying so.

    Parameters
    ----------
    epsilon : float
        The ε of the whole release, split equally among the columns (ε-DP, replace-one
        with n public). Charged to ``fit``'s ``ledger`` or the active ``with ledger:``.
    random_state : None or dpml.InsecureSeed, default=None
        None: noise from the operating system's entropy (private). ``InsecureSeed(s)``:
        reproducible and NOT private.

    Attributes
    ----------
    data_min_, data_max_ : ndarray of float
        The released bounds (NaN for a dropped column): a differentially private release,
        not the data's minimum and maximum.
    feature_groups_ : ndarray of int
        One group per column (each output lies in [0, 1]).
    privacy_ : dict
        The (ε, δ) spent and, per column, the mechanism, its ε and what it released;
        ``"outlook"``: the records a level or a numeric range needs to be released, from
        the thresholds and n alone (above half the rows a ``DPMLUtilityWarning``).
    n_features_in_, feature_names_in_ (frames with text column names).

    Missing and infinite values are refused (by column name) before anything is charged.
    """

    def __init__(self, epsilon, *, random_state=None):
        self.epsilon = epsilon
        self.random_state = random_state

    @staticmethod
    def _column(name, column, what):
        return _columns.numbers_of(name, column, what)

    def fit(self, X, y=None, ledger=None):
        """Releases the bounds of X's columns, charging ``ledger`` (or the active one)
        ``epsilon`` before any noise is drawn. ``y`` is ignored. Returns ``self``."""
        releases = self._release(X, ledger, "numeric", lambda _: None, 0.0)
        bounds = np.array(
            [r[1] if r[0] == "bounds" else [np.nan, np.nan] for r in releases], dtype=np.float64
        ).reshape(len(releases), 2)
        self.data_min_ = bounds[:, 0]
        self.data_max_ = bounds[:, 1]
        self.feature_groups_ = np.arange(len(releases), dtype=np.int64)
        return self

    def transform(self, X):
        """Each column clipped to its released bounds and scaled into [0, 1]."""
        names, columns = self._input(X)
        what = f"{type(self).__name__}.transform"
        out = np.zeros((len(columns[0]) if columns else 0, len(columns)), dtype=np.float64)
        for k, (name, column) in enumerate(zip(names, columns)):
            values = _columns.numbers_of(name, column, what)
            low, high = self.data_min_[k], self.data_max_[k]
            if np.isnan(low):
                continue  # a dropped column: no released bounds, a constant 0
            out[:, k] = (np.clip(values, low, high) - low) / (high - low)
        return out

    def get_feature_names_out(self, input_features=None):
        return np.asarray(self._input_names(input_features), dtype=object)


class OneHotEncoder(_PrivateTransformer):
    """One-hot encodes each column over its **privately released** levels.

    ``fit(X)`` releases each column's levels, ``epsilon / n_features`` each:

    - with public ``categories`` (a candidate list per column: known without looking at
      the data), the candidates whose noisy count passes a threshold (pure ε);
    - with ``categories=None``, the stability-based histogram: the levels present whose
      noisy count passes a threshold set by δ (needs ``delta > 0``, split among the
      columns; ``delta=0`` is refused before anything is charged).

    A rare level does not pass the threshold, and a level that did not (or one never
    seen) encodes as all zeros in its column's block, as does a missing value (None, NaN):
    never an error, since which levels were refused would be telling. Levels are matched
    as text (integers and integral floats as ``3``); without a candidate list
    ``categories_`` holds that text.

    Parameters
    ----------
    epsilon : float
        The ε of the whole release, split equally among the columns. Charged (with δ) to
        ``fit``'s ``ledger`` or the active ``with ledger:``.
    categories : None or list, default=None
        Public candidate levels: one list per column (None for a column released without
        one).
    delta : float, default=0.0
        The δ of the stability releases (only with ``categories=None``).
    random_state : None or dpml.InsecureSeed, default=None

    Attributes
    ----------
    categories_ : list of ndarray
        The released levels of each column (a column with none has no output).
    feature_groups_ : ndarray of int
        The group of each output: one group per input column with a released level.
    privacy_ : dict
    n_features_in_, feature_names_in_ (frames with text column names).
    """

    def __init__(self, epsilon, *, categories=None, delta=0.0, random_state=None):
        self.epsilon = epsilon
        self.categories = categories
        self.delta = delta
        self.random_state = random_state

    @staticmethod
    def _column(name, column, what):
        return _columns.texts_of(column)

    def _candidates(self, n_columns):
        """Per column: the candidates' text and their original values, or None."""
        if self.categories is None:
            return [None] * n_columns
        if isinstance(self.categories, str) or len(self.categories) != n_columns:
            raise DPMLValueError(
                f"categories must hold one list of public levels per column ({n_columns}), "
                "or be None"
            )
        lists = []
        for k, candidates in enumerate(self.categories):
            if candidates is None:
                lists.append(None)
                continue
            if isinstance(candidates, str):
                raise DPMLTypeError(f"categories[{k}] must be a list of levels, not a str")
            values = list(candidates)
            texts = [_columns.level_text(v) for v in values]
            if any(t is None for t in texts):
                raise DPMLValueError(
                    f"categories[{k}]: a missing value (None, NaN) is not a level"
                )
            lists.append((texts, values))
        return lists

    def fit(self, X, y=None, ledger=None):
        """Releases the levels of X's columns, charging ``ledger`` (or the active one)
        ``(epsilon, delta)`` before any noise is drawn. ``y`` is ignored. Returns
        ``self``."""
        n_columns = len(_columns.table(X, "OneHotEncoder.fit")[0])
        lists = self._candidates(n_columns)
        delta = self.delta
        if all(c is not None for c in lists) and delta != 0:
            raise DPMLValueError(
                "delta applies to the levels released without public categories; with "
                "every column's categories given the release is pure epsilon: leave delta=0"
            )
        releases = self._release(
            X, ledger, "categorical", lambda k: None if lists[k] is None else lists[k][0], delta
        )
        categories = []
        for k, (kind, _, levels) in enumerate(releases):
            released = levels if kind == "levels" else []
            if lists[k] is not None:
                original = dict(zip(*lists[k]))
                categories.append(np.asarray([original[t] for t in released], dtype=object))
            else:
                categories.append(np.asarray(released, dtype=object))
        self.categories_ = categories
        self._levels = [{_columns.level_text(v): j for j, v in enumerate(c)} for c in categories]
        groups, group = [], 0
        for c in categories:
            groups.extend([group] * len(c))
            group += 1 if len(c) else 0
        self.feature_groups_ = np.asarray(groups, dtype=np.int64)
        return self

    def transform(self, X):
        """One column per released level, 1 where the row holds it: at most one 1 per
        input column (a level not released, or a missing value: all zeros)."""
        _, columns = self._input(X)
        n = len(columns[0]) if columns else 0
        widths = [len(c) for c in self.categories_]
        out = np.zeros((n, sum(widths)), dtype=np.float64)
        start = 0
        for column, levels, width in zip(columns, self._levels, widths):
            for i, text in enumerate(_columns.texts_of(column)):
                j = levels.get(text)
                if j is not None:
                    out[i, start + j] = 1.0
            start += width
        return out

    def get_feature_names_out(self, input_features=None):
        names = self._input_names(input_features)
        return np.asarray(
            [f"{name}_{level}" for name, c in zip(names, self.categories_) for level in c],
            dtype=object,
        )


__all__ = ["MinMaxScaler", "OneHotEncoder", "PrivatePipeline", "feature_groups", "make_pipeline"]
