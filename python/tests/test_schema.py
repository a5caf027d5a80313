"""dpml.Schema: frames encoded by a public schema (dp-schema), through pandas columns or
the Arrow PyCapsule interface (pyarrow only where the test environment has it)."""

import math
import pathlib

import numpy as np
import pandas as pd
import pytest

import dpml

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCHEMA = """
version = 1
row_scaling = "attributes"
intercept = true

[[columns]]
name = "age"
type = "numeric"
lower = 0
upper = 100

[[columns]]
name = "colour"
type = "categorical"
levels = ["red", "green", "blue"]
unseen = "other"
missing = "level"

[[columns]]
name = "note"
type = "ignore"

[[columns]]
name = "label"
type = "label"
classes = ["no", "yes"]
positive = "yes"
"""


def frame():
    return pd.DataFrame(
        {
            "age": [50.0, 150.0, 0.0, 25.0],
            "colour": ["red", "blue", None, "purple"],
            "note": ["a", "b", "c", "d"],
            "label": ["yes", "no", "no", "yes"],
        }
    )


def expected():
    """The encoding by hand, from dp-schema's documented rule: numeric clamped to its
    bounds and scaled to [0, 1]; one-hot over red, green, blue, other, missing; the
    intercept 1; the row divided by sqrt(3 attributes) times (1 - 1e-12)."""
    s = (1 - 1e-12) / math.sqrt(3)
    rows = [
        [0.5, 1, 0, 0, 0, 0, 1],
        [1.0, 0, 0, 1, 0, 0, 1],  # 150 clamped to 100
        [0.0, 0, 0, 0, 0, 1, 1],  # missing colour: its own level
        [0.25, 0, 0, 0, 1, 0, 1],  # purple: other
    ]
    return np.array(rows) * s, np.array(["yes", "no", "no", "yes"])


def test_a_schema_in_code_encodes_a_pandas_frame_without_pyarrow():
    schema = dpml.Schema.from_toml(SCHEMA)
    assert schema.n_features == 7
    assert schema.feature_names[:2] == ["age", "colour=red"]
    groups = schema.feature_groups
    assert len(groups) == 7 and len(set(groups[1:6])) == 1  # the one-hot slots share a group
    assert len(set(groups)) == 3  # age, colour, intercept
    assert schema.classes == ["no", "yes"]
    X, y = schema.encode(frame())
    want_X, want_y = expected()
    assert X.dtype == np.float64 and X.flags.c_contiguous
    np.testing.assert_allclose(X, want_X, rtol=1e-15)
    assert np.array_equal(y, want_y)
    assert np.all(np.linalg.norm(X, axis=1) <= 1.0)
    X2, none = schema.encode(frame().drop(columns="label"), labels=False)
    assert none is None and np.array_equal(X, X2)
    # A dict of columns is a frame too.
    X3, y3 = schema.encode({k: list(v) for k, v in frame().items()})
    assert np.array_equal(X, X3) and np.array_equal(y, y3)


def test_the_encoding_feeds_the_estimators_with_group_noise():
    schema = dpml.Schema.from_toml(SCHEMA)
    rng = np.random.default_rng(0)
    n = 600
    ages = rng.uniform(0, 100, n)
    data = pd.DataFrame(
        {
            "age": ages,
            "colour": rng.choice(["red", "green", "blue"], n),
            "note": ["x"] * n,
            "label": np.where(ages > 50, "yes", "no"),
        }
    )
    X, y = schema.encode(data)
    clf = dpml.LogisticRegression(
        epsilon=5.0,
        data_norm=1.0,
        fit_intercept=False,
        classes=schema.classes,
        feature_groups=schema.feature_groups,
        random_state=dpml.InsecureSeed(0),  # deterministic accuracy check
    ).fit(X, y)
    assert clf.privacy_["epsilon"] == 5.0 and clf.score(X, y) > 0.6
    # Predictions come back in the label's own names.
    assert set(clf.predict(X)) <= {"no", "yes"} and clf.classes_.tolist() == ["no", "yes"]


def test_a_label_of_many_classes_is_named_positive_against_the_rest():
    text = SCHEMA.replace('classes = ["no", "yes"]', 'classes = ["no", "yes", "maybe"]')
    assert text != SCHEMA
    schema = dpml.Schema.from_toml(text)
    assert schema.classes == ["not yes", "yes"]
    data = frame()
    data.loc[1, "label"] = "maybe"
    _, y = schema.encode(data)
    assert y.tolist() == ["yes", "not yes", "not yes", "yes"]


def test_refused_records_name_row_and_column_never_the_value():
    schema = dpml.Schema.from_toml(SCHEMA)
    bad = frame()
    bad.loc[2, "label"] = "maybe-secret"
    with pytest.raises(dpml.DPMLValueError, match=r"row 2, column \"label\"") as e:
        schema.encode(bad)
    assert "maybe-secret" not in str(e.value)
    with pytest.raises(dpml.DPMLValueError, match=r"no column \"colour\""):
        schema.encode(frame().drop(columns="colour"))
    with pytest.raises(dpml.DPMLValueError, match="labels=False"):
        schema.encode(frame().drop(columns="label"))
    with pytest.raises(dpml.DPMLTypeError, match="data frame"):
        schema.encode([[1, 2]])


def test_bad_schemas_are_refused_with_the_reason():
    with pytest.raises(dpml.DPMLValueError, match="label"):
        dpml.Schema.from_toml('version = 1\n[[columns]]\nname = "a"\ntype = "numeric"\nlower = 0\nupper = 1\n')
    with pytest.raises(dpml.DPMLValueError):
        dpml.Schema.from_toml("this is not toml")
    with pytest.raises(dpml.DPMLValueError, match="nope.toml"):
        dpml.Schema.from_file("nope.toml")
    with pytest.raises(dpml.DPMLTypeError):
        dpml.Schema.from_toml(3)
    with pytest.raises(dpml.DPMLTypeError):
        dpml.Schema("adult.toml")


def test_the_adult_schema_file():
    schema = dpml.Schema.from_file(ROOT / "schemas" / "adult.toml")
    assert schema.label_positive == ">50K" and len(schema.hash) == 64
    assert schema.n_features == len(schema.feature_groups) == len(schema.feature_names)


def test_arrow_pycapsule_stream_when_pyarrow_is_installed():
    pa = pytest.importorskip("pyarrow")
    schema = dpml.Schema.from_toml(SCHEMA)
    table = pa.table(
        {
            "age": pa.array([50, 150, 0, 25], type=pa.int32()),
            "colour": pa.array(["red", "blue", None, "purple"]),
            "note": pa.array(["a", "b", "c", "d"]),
            "label": pa.array(["yes", "no", "no", "yes"], type=pa.large_string()),
        }
    )
    X, y = schema.encode(table)
    want_X, want_y = expected()
    np.testing.assert_allclose(X, want_X, rtol=1e-15)
    assert np.array_equal(y, want_y)
    # Several batches, and a type the schema cannot read, named.
    batches = pa.Table.from_batches(table.to_batches(max_chunksize=1))
    assert np.array_equal(schema.encode(batches)[0], X)
    with pytest.raises(dpml.DPMLTypeError, match="column \"age\".*Arrow type"):
        schema.encode(pa.table({"age": pa.array([True]), "colour": ["red"], "label": ["no"]}))
