"""Private linear regression against diffprivlib's LinearRegression and the non-private
ridge, in one run, on the same public bounds (issue #50's comparison; not part of CI).

    python python/bench/regression_vs_diffprivlib.py [--data-dir ../shared/datasets]

in an environment holding dpml, scikit-learn and diffprivlib (xtask's bench environment
pins diffprivlib 0.6.6 with scikit-learn 1.5.2). Datasets:

- adult-hours: Adult's hours-per-week (public range [1, 100], adult.names) from age,
  education-num, capital gain and loss (public bounds of schemas/adult.toml) and six
  categorical attributes one-hot over adult.names' levels; adult.data trains (32,561 rows),
  adult.test tests;
- synthetic: 40,000 rows of 10 features uniform in [0, 1], y = 50 + x·w + N(0, 5²) clipped to
  the public [0, 100] (30,000 train / 10,000 test);
- diabetes: scikit-learn's 442 rows (10 features, each column scaled to unit norm, so
  |x| ≤ 1 is a public bound), target in the public [0, 400]; 5-fold.

Every feature is scaled into [0, 1] by its public bounds for all three tools; dpml's row
bound is √(numeric + attributes) (one-hot blocks contribute 1 each). Reported: test RMSE
over the non-private ridge's, and R², mean of 3 repetitions; and each tool's mean fit time
(seconds, wall clock, over every ε and repetition).
"""

import argparse
import math
import pathlib
import time
import tomllib
import warnings

import numpy as np
from diffprivlib.models import LinearRegression as DiffprivlibLR
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

import dpml

EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0]
REPEATS = 3


def adult(data_dir):
    schema = tomllib.loads((pathlib.Path(__file__).parents[2] / "schemas/adult.toml").read_text())
    columns = [c["name"] for c in schema["columns"]]
    kinds = {c["name"]: c for c in schema["columns"]}
    numeric = ["age", "education-num", "capital-gain", "capital-loss"]
    categorical = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]

    def read(name):
        rows = []
        for line in (data_dir / name).read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == len(columns):
                rows.append(dict(zip(columns, fields)))
        return rows

    def encode(rows):
        X = []
        for r in rows:
            x = []
            for c in numeric:
                low, high = kinds[c]["lower"], kinds[c]["upper"]
                x.append((min(max(float(r[c]), low), high) - low) / (high - low))
            for c in categorical:
                levels = kinds[c]["levels"]
                x.extend(1.0 if r[c] == level else 0.0 for level in levels)
            X.append(x)
        y = np.array([float(r["hours-per-week"]) for r in rows])
        return np.array(X), y

    train, test = encode(read("adult.data")), encode(read("adult.test"))
    return [(train, test)], (1.0, 100.0), math.sqrt(len(numeric) + len(categorical))


def synthetic():
    rng = np.random.default_rng(50)
    X = rng.uniform(0, 1, size=(40_000, 10))
    w = rng.uniform(-10, 10, size=10)
    y = np.clip(50 + (X - 0.5) @ w + rng.normal(0, 5, 40_000), 0, 100)
    return [((X[:30_000], y[:30_000]), (X[30_000:], y[30_000:]))], (0.0, 100.0), math.sqrt(10)


def diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = (X + 1.0) / 2.0  # |x| ≤ 1 (unit-norm columns) into [0, 1]
    folds = [((X[a], y[a]), (X[b], y[b])) for a, b in KFold(5, shuffle=True, random_state=0).split(X)]
    return folds, (0.0, 400.0), math.sqrt(10)


def rmse(model, X, y):
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def run(name, folds, bounds, norm):
    tools = {
        "dpml LinearRegression (ε)": lambda e: dpml.LinearRegression(epsilon=e, data_norm=norm, bounds=bounds),
        "dpml HuberRegressor (ε)": lambda e: dpml.HuberRegressor(epsilon=e, data_norm=norm, bounds=bounds),
        "dpml LinearRegression (ε, 1e-5)": lambda e: dpml.LinearRegression(epsilon=e, delta=1e-5, data_norm=norm, bounds=bounds),
        "dpml LinearRegression AdaSSP (ε, 1e-5)": lambda e: dpml.LinearRegression(epsilon=e, delta=1e-5, mechanism="adassp", data_norm=norm, bounds=bounds),
        "diffprivlib LinearRegression (ε)": lambda e: DiffprivlibLR(epsilon=e, bounds_X=(0.0, 1.0), bounds_y=bounds),
    }
    ridge = np.mean([rmse(Ridge(alpha=1e-3).fit(*tr), *te) for tr, te in folds])
    variance = np.mean([np.sqrt(np.mean((te[1] - tr[1].mean()) ** 2)) for tr, te in folds])
    n = len(folds[0][0][1])
    print(f"\n## {name}: n = {n} training rows, d = {folds[0][0][0].shape[1]}; ridge RMSE {ridge:.4g} (R² {1 - (ridge / variance) ** 2:.3f}), training-mean RMSE {variance:.4g}\n")
    print("| tool | " + " | ".join(f"ε = {e}" for e in EPSILONS) + " |")
    print("|---|" + "---|" * len(EPSILONS))
    seconds = {}
    for tool, make in tools.items():
        cells = []
        times = []
        for e in EPSILONS:
            values = []
            for _ in range(REPEATS):
                for tr, te in folds:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model = make(e).fit(*tr)
                        times.append(time.perf_counter() - start)
                        values.append(rmse(model, *te))
            mean = float(np.mean(values))
            cells.append(f"{mean / ridge:.3g} (R² {1 - (mean / variance) ** 2:.2f})")
        seconds[tool] = float(np.mean(times))
        print(f"| {tool} | " + " | ".join(cells) + " |")
    print("\nMean fit time: " + "; ".join(f"{tool} {s:.3g} s" for tool, s in seconds.items()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path("../shared/datasets"))
    args = parser.parse_args()
    print("Test RMSE over the non-private ridge's (R² in brackets), mean of", REPEATS, "runs.")
    if (args.data_dir / "adult.data").exists():
        run("adult-hours", *adult(args.data_dir))
    run("synthetic", *synthetic())
    run("diabetes", *diabetes())


if __name__ == "__main__":
    main()
