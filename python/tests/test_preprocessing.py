"""dpml.preprocessing: transformers whose bounds and levels are private releases
(dp-schema's column-only recipe, the mechanisms of Schema.from_data), charged to the
ledger, and a pipeline that hands their one-hot groups to the estimator."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import MinMaxScaler as SkMinMaxScaler
from sklearn.preprocessing import OneHotEncoder as SkOneHotEncoder
from sklearn.preprocessing import StandardScaler

import dpml
from dpml.preprocessing import MinMaxScaler, OneHotEncoder, feature_groups, make_pipeline

SEED = dpml.InsecureSeed(11)


def numbers(n=4000):
    i = np.arange(n)
    return pd.DataFrame({"age": 20.0 + i % 61, "hours": 1.0 + (i * 7) % 90})


def colours(n=4000):
    i = np.arange(n)
    c = np.where(i % 10 < 6, "red", np.where(i % 10 < 9, "blue", "green")).astype(object)
    c[7] = "mauve"  # held by one record: far below any threshold
    size = np.where(i % 3 == 0, "S", "L").astype(object)
    return pd.DataFrame({"colour": c, "size": size})


def with_public_label(frame):
    out = frame.copy()
    out["y"] = np.where(np.arange(len(frame)) % 2 == 0, "pos", "neg")
    return out


def test_scaler_bounds_are_the_describe_recipes_release():
    data = numbers()
    scaler = MinMaxScaler(1.0, random_state=SEED).fit(data)
    # The same release through Schema.from_data: a label with public classes draws
    # nothing, so the same seed draws the same noise for the same columns.
    schema = dpml.Schema.from_data(
        with_public_label(data), label="y", positive="pos", classes=["neg", "pos"],
        epsilon=1.0, random_state=SEED,
    )
    assert scaler.privacy_["columns"] == schema.privacy_["facts"]
    # The same plan and n: the same outlook (the label's public classes add no threshold).
    assert scaler.privacy_["outlook"] == schema.privacy_["outlook"]
    assert scaler.privacy_["outlook"]["rows"] == 4000 and not scaler.privacy_["outlook"]["at_risk"]
    released = [f["released"] for f in schema.privacy_["facts"]]
    bounds = zip(scaler.data_min_.tolist(), scaler.data_max_.tolist())
    assert released == [f"[{lo!r}, {hi!r}]" for lo, hi in bounds]
    # Power-of-two cells holding the values, not the data's own minimum and maximum.
    assert 8.0 <= scaler.data_min_[0] <= 20.0 and 80.0 <= scaler.data_max_[0] <= 128.0
    assert scaler.privacy_["epsilon"] == 1.0 and scaler.privacy_["delta"] == 0.0
    assert all(f["epsilon"] == np.nextafter(0.5, 0) for f in scaler.privacy_["columns"])
    assert scaler.privacy_["seeded"]
    out = scaler.transform(data)
    assert out.shape == (4000, 2) and out.min() >= 0.0 and out.max() <= 1.0
    assert np.all(scaler.feature_groups_ == [0, 1])
    assert list(scaler.get_feature_names_out()) == ["age", "hours"]
    # Clipped to the released bounds.
    far = scaler.transform(pd.DataFrame({"age": [-1e9, 1e9], "hours": [5.0, 5.0]}))
    assert far[:, 0].tolist() == [0.0, 1.0]


def test_encoder_levels_are_the_describe_recipes_release_and_a_rare_level_is_not():
    data = colours()
    candidates = [["red", "blue", "green", "mauve", "teal"], ["S", "M", "L"]]
    encoder = OneHotEncoder(2.0, categories=candidates, random_state=SEED).fit(data)
    schema = dpml.Schema.from_data(
        with_public_label(data), label="y", positive="pos", classes=["neg", "pos"],
        categorical=["colour", "size"], levels=dict(zip(data.columns, candidates)),
        epsilon=2.0, random_state=SEED,
    )
    assert encoder.privacy_["columns"] == schema.privacy_["facts"]
    assert [list(c) for c in encoder.categories_] == [["red", "blue", "green"], ["S", "L"]]
    assert "candidate" in encoder.privacy_["columns"][0]["mechanism"]
    assert np.all(encoder.feature_groups_ == [0, 0, 0, 1, 1])
    out = encoder.transform(data)
    assert out.shape == (4000, 5)
    # One 1 per column block, except the unreleased "mauve": all zeros in its block.
    assert out[7, :3].tolist() == [0.0, 0.0, 0.0]
    assert np.all(np.delete(out[:, :3], 7, axis=0).sum(axis=1) == 1.0)
    assert list(encoder.get_feature_names_out()) == [
        "colour_red", "colour_blue", "colour_green", "size_S", "size_L",
    ]


def test_stability_levels_need_delta_and_are_refused_without_it_before_any_charge():
    ledger = dpml.Ledger(5.0, delta=1e-5)
    with pytest.raises(dpml.DPMLValueError, match=r"delta = 0.*colour, size"):
        OneHotEncoder(1.0).fit(colours(), ledger=ledger)
    assert len(ledger) == 0
    encoder = OneHotEncoder(1.0, delta=1e-6, random_state=SEED).fit(colours(), ledger=ledger)
    assert [r["epsilon"] for r in ledger.records] == [1.0]
    assert [r["delta"] for r in ledger.records] == [1e-6]
    assert "stability" in encoder.privacy_["columns"][0]["mechanism"]
    assert "mauve" not in encoder.categories_[0] and "red" in encoder.categories_[0]


def test_the_active_ledger_is_charged_exactly_and_nothing_on_a_refusal():
    ledger = dpml.Ledger(1.0)
    with ledger:
        MinMaxScaler(0.3).fit(numbers())
        bad = numbers()
        bad.loc[3, "age"] = np.nan
        with pytest.raises(dpml.DPMLValueError, match="column 'age' has a missing"):
            MinMaxScaler(0.3).fit(bad)
        with pytest.raises(dpml.DPMLTypeError, match="random_state"):
            MinMaxScaler(0.3, random_state=3).fit(numbers())
        with pytest.raises(dpml.DPMLValueError, match="epsilon"):
            MinMaxScaler(0.0).fit(numbers())
        with pytest.raises(dpml.BudgetExceededError):
            MinMaxScaler(0.8).fit(numbers())
    assert [r["epsilon"] for r in ledger.records] == [0.3]
    assert ledger.records[0]["estimator"] == "MinMaxScaler"


def test_errors_and_reprs_show_no_data():
    data = colours()
    data.loc[0, "colour"] = "SECRET-LEVEL"
    encoder = OneHotEncoder(1.0, categories=[["red"], ["S"]], random_state=SEED).fit(data)
    assert "SECRET" not in repr(encoder) and "SECRET" not in str(encoder.privacy_)
    with pytest.raises(dpml.DPMLValueError) as refused:
        OneHotEncoder(1.0, categories=[["red"]]).fit(data)
    assert "SECRET" not in str(refused.value)
    text = pd.DataFrame({"age": ["SECRET"] * 3})
    with pytest.raises(dpml.DPMLTypeError) as refused:
        MinMaxScaler(1.0).fit(text)
    assert "SECRET" not in str(refused.value) and "'age' is not numeric" in str(refused.value)


def test_numpy_input_and_clone():
    X = numbers().to_numpy()
    scaler = MinMaxScaler(1.0, random_state=SEED).fit(X)
    assert list(scaler.get_feature_names_out()) == ["x0", "x1"]
    assert scaler.transform(X).shape == (4000, 2)
    with pytest.raises(dpml.DPMLValueError, match="3 features"):
        scaler.transform(np.ones((2, 3)))
    copy = clone(scaler)
    assert copy.get_params() == scaler.get_params() and not hasattr(copy, "privacy_")
    with pytest.raises(dpml.NotFittedError):
        copy.transform(X)
    encoder = OneHotEncoder(1.0, categories=[[0, 1, 2]], random_state=SEED)
    codes = (np.arange(3000) % 3).reshape(-1, 1)
    encoder.fit(codes)
    # Public integer candidates come back as they were given.
    assert list(encoder.categories_[0]) == [0, 1, 2]
    assert encoder.transform(codes)[:3].tolist() == np.eye(3).tolist()


def adult_like(n, seed):
    """Four categorical columns (3 to 8 levels) and two numeric ones; the label depends on
    both through a logistic model."""
    rng = np.random.default_rng(seed)
    sizes = [8, 6, 4, 3]
    cats = {f"c{k}": rng.integers(0, s, n) for k, s in enumerate(sizes)}
    age = rng.uniform(17, 90, n)
    hours = rng.uniform(1, 99, n)
    weights = [rng.normal(0, 1.5, s) for s in sizes]
    score = sum(w[cats[f"c{k}"]] for k, w in enumerate(weights))
    score = score + 0.04 * (age - 50) + 0.02 * (hours - 40)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(int)
    frame = pd.DataFrame({k: [f"L{v}" for v in c] for k, c in cats.items()})
    frame["age"], frame["hours"] = age, hours
    candidates = [[f"L{v}" for v in range(s)] for s in sizes]
    return frame, y, candidates


def preprocessor(candidates, epsilon=0.05):
    cats = [f"c{k}" for k in range(4)]
    return ColumnTransformer([
        ("cat", OneHotEncoder(epsilon, categories=candidates, random_state=SEED), cats),
        ("num", MinMaxScaler(epsilon, random_state=SEED), ["age", "hours"]),
    ])


def test_pipeline_hands_groups_to_the_estimator_and_charges_both():
    X, y, candidates = adult_like(20_000, 0)
    estimator = dpml.LogisticRegression(0.4, classes=[0, 1], random_state=SEED)
    model = make_pipeline(preprocessor(candidates), estimator)
    ledger = dpml.Ledger(1.0)
    model.fit(X, y, ledger=ledger)
    assert [(r["estimator"], r["epsilon"]) for r in ledger.records] == [
        ("OneHotEncoder", 0.05), ("MinMaxScaler", 0.05), ("LogisticRegression", 0.4),
    ]
    groups = model.feature_groups_
    # Four one-hot groups, then one per numeric column.
    assert np.all(groups[:21] == np.repeat([0, 1, 2, 3], [8, 6, 4, 3]))
    assert np.all(groups[21:] == [4, 5])
    assert np.all(feature_groups(model.steps[0][1]) == groups)
    assert model.handed_["data_norm"] == pytest.approx(np.sqrt(6))
    fitted = model.steps[1][1]
    # Group-shaped noise: six groups and the intercept's own.
    assert fitted._models.info()["noise_groups"] == 7
    # With the groups, the intercept feature c = 0.5 (the user left it None).
    assert model.handed_["intercept_scaling"] == 0.5
    assert fitted.privacy_["intercept_scaling"] == 0.5
    # The user's parameters are untouched.
    assert fitted.feature_groups is None and fitted.data_norm is None
    assert fitted.intercept_scaling is None
    accuracy = model.score(X, y)
    assert accuracy > 0.6, accuracy
    assert model.predict(X.iloc[:5]).shape == (5,)


def test_pipeline_never_overrides_what_the_user_gave():
    X, y, candidates = adult_like(5_000, 1)
    estimator = dpml.LogisticRegression(
        1.0, classes=[0, 1], data_norm=10.0, random_state=SEED, delta=1e-6
    )
    model = make_pipeline(preprocessor(candidates), estimator).fit(X, y)
    # δ > 0: spherical Gaussian noise, so no groups are handed; data_norm was given.
    assert model.handed_ == {}
    assert model.steps[1][1]._models.info()["noise_groups"] is None


@pytest.mark.parametrize(
    "step, name",
    [
        (SkOneHotEncoder(), "cat"),
        (SkMinMaxScaler(), "cat"),
        (StandardScaler(), "cat"),
        ("passthrough", "cat"),
    ],
)
def test_non_private_steps_are_refused_by_name_before_any_charge(step, name):
    X, y, _ = adult_like(500, 2)
    pre = ColumnTransformer([(name, step, ["age"]), ("num", MinMaxScaler(0.1), ["hours"])])
    with pytest.raises(dpml.DPMLValueError, match=f"step '{name}'"):
        make_pipeline(pre, dpml.LogisticRegression(0.1, classes=[0, 1]))
    ledger = dpml.Ledger(1.0)
    from dpml.preprocessing import PrivatePipeline

    pipe = PrivatePipeline([("p", pre), ("e", dpml.LogisticRegression(0.1, classes=[0, 1]))])
    with pytest.raises(dpml.DPMLValueError, match="without privacy"):
        pipe.fit(X, y, ledger=ledger)
    assert len(ledger) == 0


def test_passthrough_remainder_and_sklearn_column_transformer_groups_are_refused():
    X, _, candidates = adult_like(2_000, 3)
    pre = ColumnTransformer(
        [("num", MinMaxScaler(0.5, random_state=SEED), ["age"])], remainder="passthrough"
    )
    with pytest.raises(dpml.DPMLValueError, match="step 'remainder'"):
        feature_groups(pre)
    fitted_sk = ColumnTransformer([("num", SkMinMaxScaler(), ["age"])]).fit(X)
    with pytest.raises(dpml.DPMLValueError, match="step 'num'"):
        feature_groups(fitted_sk)
    with pytest.raises(dpml.NotFittedError):
        feature_groups(preprocessor(candidates))


def test_pipeline_clone_keeps_params():
    _, _, candidates = adult_like(10, 4)
    model = make_pipeline(preprocessor(candidates), dpml.LogisticRegression(0.1, classes=[0, 1]))
    copy = clone(model)
    assert type(copy) is type(model)
    assert copy.get_params()["estimator__epsilon"] == 0.1
    assert copy.get_params()["preprocessor__cat__epsilon"] == 0.05
