"""The estimators against the command line: the same table, spec and seed release
bit-for-bit the weights that `dpml train` releases (crates/dp-cli/src/parity_tests.rs
writes and checks crates/dp-fit/testdata/parity/models.json; the Rust API is checked against
the command line there). One recipe under both faces, so one model."""

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import dpml

PARITY = Path(__file__).resolve().parents[2] / "crates" / "dp-fit" / "testdata" / "parity"


def _table():
    schema = dpml.Schema.from_file(PARITY / "schema.toml")
    with open(PARITY / "data.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    numeric = {"age", "hours"}
    frame = {
        name: [float(r[name]) if name in numeric else r[name] for r in rows]
        for name in rows[0]
    }
    X, y = schema.encode(frame)
    return schema, X, y


def _committed():
    return json.loads((PARITY / "models.json").read_text())


def _estimator(name, schema, seed):
    """The estimator and parameters that say what each command line case says (the same
    defaults spelled out: rows already scaled by the schema, its intercept among them)."""
    seeded = dict(
        classes=schema.classes, random_state=dpml.InsecureSeed(seed)
    )
    linear = dict(data_norm=1.0, fit_intercept=False, **seeded)
    if name == "huber-grouped":
        return dpml.HuberSVC(
            epsilon=1.0, feature_groups=schema.feature_groups, **linear
        )
    if name == "logistic-euclidean":
        return dpml.LogisticRegression(epsilon=2.0, **linear)
    if name == "huber-gaussian":
        return dpml.HuberSVC(epsilon=1.0, delta=1e-6, **linear)
    if name == "kernel":
        return dpml.RandomFeaturesSVC(
            epsilon=2.0, kernel="gaussian", gamma=1.0, n_components=40,
            sampling="standard", loss="huber", **seeded,
        )
    if name == "dp-sgd":
        return dpml.DPSGDClassifier(
            epsilon=2.0, delta=1e-5, batch_size=64, epochs=2.0, learning_rate=1.0,
            clip_norm=1.0, regularization=0.0, fit_intercept=False, **seeded,
        )
    raise AssertionError(f"no estimator for the parity case {name!r}")


def _bits(weights):
    return [f"{int(b):016x}" for b in np.asarray(weights, dtype=np.float64).view(np.uint64)]


@pytest.mark.parametrize(
    "name",
    ["huber-grouped", "logistic-euclidean", "huber-gaussian", "kernel", "dp-sgd"],
)
def test_each_estimator_releases_the_command_lines_model(name):
    committed = _committed()
    expected = committed["cases"][name]
    schema, X, y = _table()
    clf = _estimator(name, schema, committed["seed"]).fit(X, y)
    if expected["file_sha256"] is not None:
        # A kernel model's file names no schema: every face writes the same bytes.
        (file,) = clf._models.to_bytes()
        assert hashlib.sha256(bytes(file)).hexdigest() == expected["file_sha256"]
        assert clf._models.info()["feature_map"] == expected["map_id"]
    else:
        assert _bits(clf.coef_.ravel()) == expected["weights"]
    assert clf.privacy_["regularization"] == expected["regularization"]


def test_the_fixture_covers_every_case_and_a_changed_weight_is_caught():
    committed = _committed()
    assert set(committed["cases"]) == {
        "huber-grouped", "logistic-euclidean", "huber-gaussian", "kernel", "dp-sgd",
    }
    # The comparison is of exact bits: one ulp apart is a different model.
    w = np.frombuffer(bytes.fromhex(committed["cases"]["huber-grouped"]["weights"][0])[::-1])
    assert _bits([np.nextafter(w[0], np.inf)]) != committed["cases"]["huber-grouped"]["weights"][:1]


def test_from_data_writes_the_command_lines_private_schema():
    """`dpml schema init --private` on the parity table with the parity seed (committed as
    private_schema.toml by crates/dp-cli/src/parity_tests.rs): the same table, spec and seed
    through Schema.from_data write the same text, every released fact and spend alike."""
    with open(PARITY / "data.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    frame = {
        name: [float(r[name]) if name in ("age", "hours") else r[name] for r in rows]
        for name in rows[0]
    }
    schema = dpml.Schema.from_data(
        frame, label="outcome", positive="yes", categorical=["color", "size"],
        epsilon=2.0, delta=1e-6, random_state=dpml.InsecureSeed(_committed()["seed"]),
    )
    assert schema.to_toml() == (PARITY / "private_schema.toml").read_text()
    # Another seed draws another description: the comparison can fail.
    other = dpml.Schema.from_data(
        frame, label="outcome", positive="yes", categorical=["color", "size"],
        epsilon=2.0, delta=1e-6, random_state=dpml.InsecureSeed(1),
    )
    assert other.to_toml() != schema.to_toml()
