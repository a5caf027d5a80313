"""Which row scaling should a schema default to? Measures test error of the library's defaults
(LogisticRegression, pure ε, Λ from the rule, the schema's intercept) on small public tables
that ship with scikit-learn, each column bounded to its observed range (what a newcomer who
knows their columns would declare), under the two row scalings a schema offers:

- "attributes": every row divided by √(number of attributes), so a row is in the unit ball
  whatever its values;
- "unit_norm": every row divided by its own norm (per row, so privacy-free).

Prints one line per table, scaling and ε: mean test error over REPEATS random 70/30 splits and
noise draws, beside the majority class and scikit-learn's non-private logistic regression (C = 10⁴) on
the same encoded rows.

    python python/bench/row_scaling.py
"""

import sys

import numpy as np
import pandas as pd

import dpml
from sklearn.linear_model import LogisticRegression as SklearnLogistic

EPSILONS = (0.5, 1.0, 2.0, 5.0)
REPEATS = 20


def tables():
    """``(name, frame, label column, positive class)`` for scikit-learn's bundled tables."""
    from sklearn import datasets

    cancer = datasets.load_breast_cancer(as_frame=True).frame
    cancer["target"] = np.where(cancer["target"] == 1, "benign", "malignant")
    yield "breast_cancer (569 × 30)", cancer, "target", "benign"
    wine = datasets.load_wine(as_frame=True).frame
    wine["target"] = np.where(wine["target"] == 0, "class_0", "other")
    yield "wine, class 0 (178 × 13)", wine, "target", "class_0"
    digits = datasets.load_digits(as_frame=True).frame
    digits["target"] = np.where(digits["target"] % 2 == 0, "even", "odd")
    yield "digits, even (1797 × 64)", digits, "target", "even"


def schema_text(frame, label, positive, scaling):
    """Each feature column bounded by its observed range; the label's two classes."""
    lines = [f'version = 1\nrow_scaling = "{scaling}"\nintercept = true\n']
    for name in frame.columns:
        if name == label:
            continue
        lower, upper = float(frame[name].min()), float(frame[name].max())
        if lower == upper:
            upper = lower + 1.0
        lines.append(
            f'[[columns]]\nname = "{name}"\ntype = "numeric"\nlower = {lower!r}\nupper = {upper!r}\n'
        )
    classes = sorted(set(frame[label]))
    lines.append(
        f'[[columns]]\nname = "{label}"\ntype = "label"\nclasses = {classes!r}\n'
        f'positive = "{positive}"\n'.replace("'", '"')
    )
    return "\n".join(lines)


def measure(frame, label, positive, scaling):
    schema = dpml.Schema.from_toml(schema_text(frame, label, positive, scaling))
    frame = frame.rename(columns=str)
    X, y = schema.encode(frame)
    rng = np.random.default_rng(2026)
    rows = {}
    for repeat in range(REPEATS):
        order = rng.permutation(len(y))
        cut = int(0.7 * len(y))
        train, test = order[:cut], order[cut:]
        majority = max(np.mean(y[test] == c) for c in schema.classes)
        rows.setdefault("majority", []).append(1 - majority)
        base = dict(data_norm=1.0, fit_intercept=False, classes=schema.classes)
        for epsilon in EPSILONS:
            with np.errstate(all="ignore"), _quiet():
                clf = dpml.LogisticRegression(epsilon=epsilon, **base).fit(X[train], y[train])
            rows.setdefault(epsilon, []).append(1 - clf.score(X[test], y[test]))
        plain = SklearnLogistic(C=1e4, max_iter=10_000).fit(X[train], y[train])
        rows.setdefault("non-private", []).append(1 - plain.score(X[test], y[test]))
    return {k: float(np.mean(v)) for k, v in rows.items()}


class _quiet:
    """Silences the outlook's warnings (this script prints its own numbers)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", dpml.DPMLUtilityWarning)

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)


def main():
    header = ["table", "scaling", "majority", "non-private"] + [f"ε={e}" for e in EPSILONS]
    print(" | ".join(header))
    for name, frame, label, positive in tables():
        frame.columns = [str(c) for c in frame.columns]
        for scaling in ("attributes", "unit_norm"):
            r = measure(frame, label, positive, scaling)
            cells = [name, scaling, f"{r['majority']:.3f}", f"{r['non-private']:.3f}"]
            cells += [f"{r[e]:.3f}" for e in EPSILONS]
            print(" | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
