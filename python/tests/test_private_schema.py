"""dpml.Schema.from_data: a schema whose bounds, levels and classes are private releases
(dp-schema's describe pass, the same code as `dpml schema init --private`), charged to the
ledger before any noise is drawn."""

import numpy as np
import pandas as pd
import pytest

import dpml


def frame(n=3000, extreme=None):
    i = np.arange(n)
    x = (i % 50).astype(float)
    if extreme is not None:
        x[0] = extreme
    c = np.where(i % 7 < 4, "a", "b").astype(object)
    c[5] = "rare"
    y = np.where(i % 7 < 4, "pos", "neg")
    return pd.DataFrame({"x": x, "c": c, "note": [f"n{k}" for k in i], "y": y})


def describe(data, **kwargs):
    args = dict(
        label="y",
        positive="pos",
        categorical=["c"],
        ignore=["note"],
        epsilon=1.0,
        delta=1e-6,
        random_state=dpml.InsecureSeed(5),
    )
    args.update(kwargs)
    return dpml.Schema.from_data(data, **args)


def test_releases_are_annotated_charged_and_encode_the_frame():
    ledger = dpml.Ledger(3.0, delta=1e-5)
    schema = describe(frame(), ledger=ledger)
    assert schema.privacy_["epsilon"] == 1.0
    assert schema.privacy_["delta"] == 1e-6
    facts = {f["column"]: f for f in schema.privacy_["facts"]}
    assert set(facts) == {"x", "c", "y"}
    assert "power-of-two" in facts["x"]["mechanism"]
    assert "stability" in facts["c"]["mechanism"]
    assert "private release" in schema.to_toml()
    assert len(ledger) == 1
    assert ledger.records[0]["epsilon"] == 1.0
    assert "rare" not in schema.feature_names and "c=a" in schema.feature_names
    assert schema.label_classes == ["neg", "pos"]
    X, y = schema.encode(frame())
    assert X.shape[0] == 3000 and np.all(np.linalg.norm(X, axis=1) <= 1.0)
    # The written schema is an ordinary one.
    again = dpml.Schema.from_toml(schema.to_toml())
    assert again.hash == schema.hash


def test_save_never_replaces_a_file(tmp_path):
    schema = describe(frame())
    path = tmp_path / "s.toml"
    schema.save(path)
    assert path.read_text() == schema.to_toml()
    with pytest.raises(FileExistsError):
        schema.save(path)


def test_same_seed_same_schema_and_a_dict_of_columns_agrees():
    a = describe(frame())
    b = describe(frame())
    assert a._text == b._text
    data = {k: (v.to_numpy() if k == "x" else list(v)) for k, v in frame().items()}
    c = describe(data)
    assert c._text == a._text


def test_refusals_charge_nothing():
    ledger = dpml.Ledger(3.0, delta=1e-5)
    with pytest.raises(dpml.DPMLValueError, match="delta = 0"):
        describe(frame(), delta=0.0, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="epsilon"):
        describe(frame(), epsilon=0.0, ledger=ledger)
    with pytest.raises(dpml.DPMLValueError, match="label='income'"):
        describe(frame(), label="income", ledger=ledger)
    bad = frame()
    bad["x"] = bad["x"].astype(object)
    bad.loc[3, "x"] = "secret"
    with pytest.raises(dpml.DPMLValueError, match="row 4, column x") as e:
        describe(bad, ledger=ledger)
    assert "secret" not in str(e.value)
    assert len(ledger) == 0


def test_public_levels_and_classes_need_no_delta():
    schema = describe(
        frame(), delta=0.0, levels={"c": ["a", "b", "z"]}, classes=["neg", "pos"]
    )
    assert schema.privacy_["delta"] == 0.0
    assert [f["column"] for f in schema.privacy_["facts"]] == ["x", "c"]


def test_an_extreme_value_moves_the_distribution_not_the_value():
    def bounds(data):
        out = []
        for seed in range(40):
            s = describe(data, random_state=dpml.InsecureSeed(seed), epsilon=0.5)
            out.append(next(f["released"] for f in s.privacy_["facts"] if f["column"] == "x"))
        return out

    plain, extreme = bounds(frame()), bounds(frame(extreme=1e9))
    assert not any("1073741824" in b for b in extreme)
    assert max(set(plain), key=plain.count) == max(set(extreme), key=extreme.count)


def test_the_outlook_is_reported_and_warns_when_the_thresholds_need_most_rows():
    """The outlook's threshold from the spec's formulas (discrete Laplace of scale
    t = 2/ε' for ε' = ε/k over k facts, q = e^{−1/t}): the stability histogram's
    1 + ⌈t·(ln(1/δ') − ln(1 + q))⌉ and the bounds' ⌈t·ln(4198/(β(1 + q)))⌉ at β = 10⁻³ (the
    f64 grid's 4,198 cells); the outlook reports the largest."""
    import math
    import warnings

    def expected(epsilon, facts, delta_each):
        t = 2.0 / (epsilon / facts)
        q = math.exp(-1.0 / t)
        stability = 1 + math.ceil(t * (math.log(1 / delta_each) - math.log(1 + q)))
        bounds = math.ceil(t * math.log(4198 / (1e-3 * (1 + q))))
        return max(stability, bounds)

    # Three facts (x's bounds, c's levels, y's classes), δ split between the last two.
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpml.DPMLUtilityWarning)
        quiet = describe(frame()).privacy_["outlook"]
    assert quiet["rows"] == 3000 and not quiet["at_risk"] and quiet["warning"] is None
    assert abs(quiet["records_needed"] - expected(1.0, 3, 5e-7)) <= 1, quiet
    assert quiet["share_needed"] == pytest.approx(quiet["records_needed"] / 3000)
    # Public classes, two facts at ε = 0.03: about 1,940 records (65% of the rows) needed.
    # Every record in one cell and one level, so the description still succeeds: warned.
    plain = pd.DataFrame(
        {"x": np.ones(3000), "c": ["a"] * 3000, "y": np.where(np.arange(3000) % 10 < 7, "neg", "pos")}
    )
    with pytest.warns(dpml.DPMLUtilityWarning, match=r"thresholds need \d+ records \(6\d% of the 3000"):
        risky = dpml.Schema.from_data(
            plain, label="y", positive="pos", categorical=["c"], classes=["neg", "pos"],
            epsilon=0.03, delta=1e-6, random_state=dpml.InsecureSeed(2),
        )
    outlook = risky.privacy_["outlook"]
    assert outlook["at_risk"] and not outlook["hopeless"]
    assert abs(outlook["records_needed"] - expected(0.03, 2, 1e-6)) <= 1, outlook
    # At ε = 0.02 on frame() (about 4,370 records of 3,000) nothing can pass: the failure
    # carries the outlook's warning.
    with pytest.raises(dpml.DPMLError, match="outlook had warned.*nothing can pass"):
        describe(frame(), epsilon=0.02)
