"""The share of a total ε that describing a file takes (issue #51): a sweep on synthetic
Adult-shaped data (`cargo xtask datasets synth`: uniform levels, a logistic label), through
`dpml train --private-schema` end to end, against the same fit with the public schema.

    python python/bench/describe_share.py [--dpml target/release/dpml] [--xtask target/release/xtask]

Prints a table of mean test error per (n, total ε, share) and the best share per (n, ε). A
run whose description cannot be used (e.g. the label's second class not released) counts as
the majority class's error. Not part of CI.
"""

import argparse
import itertools
import pathlib
import subprocess
import tempfile

import numpy as np

COLUMNS = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,"
           "race,sex,capital-gain,capital-loss,hours-per-week,native-country,income")
CATEGORICAL = "workclass,education,marital-status,occupation,relationship,race,sex,native-country"
SHARES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
EPSILONS = [0.1, 0.3, 1.0, 3.0]
ROWS = [10_000, 30_000, 100_000]
RUNS = 3


def synth(xtask, rows, seed, out):
    subprocess.run([xtask, "datasets", "synth", "--rows", str(rows), "--seed", str(seed), "--out", str(out)],
                   check=True, capture_output=True)


def error(dpml, model, schema, test):
    out = subprocess.run([dpml, "evaluate", "--model", model, "--schema", schema, "--data", test],
                         check=True, capture_output=True, text=True).stdout
    return float(next(line for line in out.splitlines() if line.startswith("error:")).split()[1])


def described(dpml, data, test, work, epsilon, share):
    schema, model = work / "s.toml", work / "m.dpm"
    for path in work.glob("*"):
        if path.name not in (data.name, test.name):
            path.unlink()
    run = subprocess.run([dpml, "train", "--data", data, "--private-schema", schema, "--columns", COLUMNS,
                          "--label", "income", "--positive", ">50K", "--categorical", CATEGORICAL,
                          "--missing", "?", "--epsilon", str(epsilon), "--describe-share", str(share),
                          "--describe-delta", "1e-6", "--out", model], capture_output=True, text=True)
    if run.returncode != 0:
        return None
    return error(dpml, model, schema, test)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpml", default="target/release/dpml")
    parser.add_argument("--xtask", default="target/release/xtask")
    parser.add_argument("--schema", default="schemas/adult.toml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        test = work / "test.csv"
        synth(args.xtask, 20_000, 99, test)
        majority = None
        print("| n | total ε | public schema | " + " | ".join(f"share {s}" for s in SHARES) + " | best share |")
        print("|---|---|---|" + "---|" * len(SHARES) + "---|")
        for rows, epsilon in itertools.product(ROWS, EPSILONS):
            data = work / f"train-{rows}.csv"
            if not data.exists():
                for old in work.glob("train-*.csv"):
                    old.unlink()
                synth(args.xtask, rows, 7, data)
            public = []
            for _ in range(RUNS):
                model = work / "public.dpm"
                for path in work.glob("public*"):
                    path.unlink()
                subprocess.run([args.dpml, "train", "--data", data, "--schema", args.schema, "--epsilon",
                                str(epsilon), "--out", model], check=True, capture_output=True)
                public.append(error(args.dpml, model, args.schema, test))
            if majority is None:
                labels = [line.rsplit(",", 1)[1].strip() for line in test.read_text().splitlines()]
                majority = min(np.mean([l == ">50K" for l in labels]), np.mean([l != ">50K" for l in labels]))
            cells = []
            for share in SHARES:
                errors = [described(args.dpml, data, test, work, epsilon, share) for _ in range(RUNS)]
                failed = sum(e is None for e in errors)
                mean = float(np.mean([majority if e is None else e for e in errors]))
                cells.append((mean, failed))
            best = SHARES[int(np.argmin([m for m, _ in cells]))]
            row = " | ".join(f"{m:.4f}" + (f" ({f} failed)" if f else "") for m, f in cells)
            print(f"| {rows} | {epsilon} | {np.mean(public):.4f} | {row} | {best} |", flush=True)


if __name__ == "__main__":
    main()
