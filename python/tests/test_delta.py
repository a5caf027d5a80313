"""(ε, δ): the Gaussian mechanisms of LogisticRegression / HuberSVC (delta > 0) and
DPSGDClassifier — what they report, what the ledger records, files, bad input."""

import math
import pickle

import numpy as np
import pytest
from scipy.special import gammaln

import dpml


def seeded_sgd(**params):
    base = dict(
        epsilon=1.0,
        delta=1e-5,
        data_norm=2.0,
        batch_size=10,
        epochs=2.0,
        random_state=dpml.InsecureSeed(42),
    )
    base.update(params)
    return dpml.DPSGDClassifier(**base)


def seeded_gaussian(**params):
    base = dict(
        epsilon=1.0,
        delta=1e-5,
        data_norm=2.0,
        regularization=0.01,
        random_state=dpml.InsecureSeed(42),
    )
    base.update(params)
    return dpml.LogisticRegression(**base)


# -- the spec's accounting, recomputed here (the guide's reference/algorithms.md §8; MTZ19, Balle et al. 2020) --


def _add_remove_rdp(q, sigma, beta):
    """MTZ19's add/remove RDP of one subsampled-Gaussian step at integer order β."""
    k = np.arange(beta + 1, dtype=float)
    terms = (
        gammaln(beta + 1)
        - gammaln(k + 1)
        - gammaln(beta - k + 1)
        + k * math.log(q)
        + (beta - k) * (math.log1p(-q) if q < 1 else 0.0)
        + (k * k - k) / (2 * sigma * sigma)
    )
    if q == 1:
        terms = terms[-1:]
    peak = terms.max()
    return (peak + math.log(np.exp(terms - peak).sum())) / (beta - 1)


def spec_epsilon(q, sigma, steps, delta):
    """Replace-one ε of T steps: per order the weak triangle inequality over add/remove at
    2α and 2α−1, or the Gaussian of sensitivity 2C, whichever is smaller; Balle et al.'s
    conversion; minimized over the orders 2…63 and dp-noise's large ones."""
    orders = list(range(2, 64)) + [
        64, 80, 100, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024, 1500, 2048, 3000,
        4096, 6000, 8192,
    ]
    best = math.inf
    for a in orders:
        gaussian = 2 * a / (sigma * sigma)
        if q < 1:
            triangle = (a - 0.5) / (a - 1) * _add_remove_rdp(q, sigma, 2 * a) + _add_remove_rdp(
                q, sigma, 2 * a - 1
            )
            one = min(triangle, gaussian)
        else:
            one = gaussian
        eps = steps * one + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return best


# -- DP-SGD -------------------------------------------------------------------------------


def test_dpsgd_privacy_report_matches_the_spec_accounting(blobs):
    X, y = blobs
    clf = dpml.DPSGDClassifier(
        epsilon=1.0, delta=1e-5, classes=[0, 1], batch_size=40, epochs=3, accountant="rdp"
    ).fit(X, y)
    p = clf.privacy_
    assert p["accountant"] == "rdp"
    assert p["mechanism"] == "dp-sgd" and p["private"] is True
    assert (p["epsilon"], p["delta"]) == (1.0, 1e-5)
    assert p["neighbouring_relation"] == "replace-one"
    # q = 40/400, T = ⌈3·400/40⌉ = 30: public arithmetic, recomputed here.
    assert p["steps"] == 30
    assert abs(p["sampling_rate"] - 0.1) < 1e-15 and p["sampling_rate"] >= 0.1
    sigma = p["noise_multiplier"]
    # σ certifies the target by the spec's formula, and barely: 1% less noise does not.
    assert spec_epsilon(p["sampling_rate"], sigma, 30, 1e-5) <= 1.0 * (1 + 1e-9)
    assert spec_epsilon(p["sampling_rate"], sigma * 0.99, 30, 1e-5) > 1.0
    assert p["epsilon_per_model"] <= 1.0


def spec_epsilon_add_remove(q, sigma, steps, delta):
    """MTZ19's add/remove ε of T steps: the RDP at each integer order, Balle et al.'s
    conversion, minimized over the same orders."""
    orders = list(range(2, 64)) + [
        64, 80, 100, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024, 1500, 2048, 3000,
        4096, 6000, 8192,
    ]
    return min(
        steps * _add_remove_rdp(q, sigma, a)
        + math.log((a - 1) / a)
        - (math.log(delta) + math.log(a)) / (a - 1)
        for a in orders
    )


def test_dpsgd_add_remove_is_scheduled_on_the_public_rows_and_accounted_by_mtz19(blobs):
    X, y = blobs
    clf = dpml.DPSGDClassifier(
        epsilon=1.0,
        delta=1e-5,
        classes=[0, 1],
        batch_size=100,
        epochs=3,
        neighbouring="add-remove",
        public_rows=1000,
        accountant="rdp",
    ).fit(X, y)
    p = clf.privacy_
    assert p["neighbouring_relation"] == "add-remove" and p["public_rows"] == 1000
    assert p["neighbouring"].startswith("add-remove")
    # On n̂ = 1000, not the 400 rows: q = 100/1000, T = ⌈3·1000/100⌉ = 30.
    assert p["steps"] == 30
    assert abs(p["sampling_rate"] - 0.1) < 1e-15
    sigma = p["noise_multiplier"]
    assert spec_epsilon_add_remove(p["sampling_rate"], sigma, 30, 1e-5) <= 1.0 * (1 + 1e-9)
    assert spec_epsilon_add_remove(p["sampling_rate"], sigma * 0.99, 30, 1e-5) > 1.0
    # The same fit's replace-one ε, by the replace-one spec: larger.
    replace_one = p["replace_one_epsilon_per_model"]
    assert abs(replace_one - spec_epsilon(p["sampling_rate"], sigma, 30, 1e-5)) < 1e-6
    assert replace_one > 1.5
    # The model file records the relation and the divisor.
    info = clf._models.info()
    assert info["neighbouring"] == "add-remove" and info["expected_batch"] == 100.0
    # The outlook reads n̂, not the data's count: DP-SGD's own (dp-fit), which warns below
    # the 10,000 rows its rule was not fitted for.
    assert p["outlook"]["noise_ratio"] is None
    assert p["outlook"]["warning"].startswith("DP-SGD on 1000 rows")


def test_dpsgd_add_remove_is_refused_with_a_ledger_before_any_charge(blobs):
    X, y = blobs
    ledger = dpml.Ledger(10.0, delta=1e-4)
    params = dict(delta=1e-5, classes=[0, 1], neighbouring="add-remove", public_rows=400)
    with pytest.raises(dpml.DPMLValueError, match="Ledger"):
        dpml.DPSGDClassifier(**params).fit(X, y, ledger=ledger)
    with ledger, pytest.raises(dpml.DPMLValueError, match="Ledger"):
        dpml.DPSGDClassifier(**params).fit(X, y)
    assert ledger.spent_epsilon == 0 and len(ledger) == 0


def test_dpsgd_multiclass_splits_epsilon_and_delta(reference_data):
    X, y = reference_data(3)
    clf = seeded_sgd(classes=[0, 1, 2], batch_size=8, epochs=1.0).fit(X, y)
    p = clf.privacy_
    assert len(clf._models) == 3
    assert p["epsilon_per_model"] <= 1.0 / 3
    assert 3 * p["delta_per_model"] <= 1e-5


# dp-erm's DpSgdRule::FITTED as documented: (from ε, batch, epochs, η, C).
RULE = [
    (0.1, 16384, 200, 32.0, 0.25),
    (0.2, 16384, 200, 128.0, 0.25),
    (0.5, 4096, 200, 64.0, 0.25),
    (1.0, 4096, 200, 128.0, 0.25),
    (2.0, 1024, 200, 128.0, 0.25),
]


def rule_setting(epsilon):
    chosen = RULE[0]
    for setting in RULE:
        if setting[0] <= epsilon:
            chosen = setting
    return chosen


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.5, 1.0, 3.0])
def test_dpsgd_rule_schedule_trains_with_the_rules_setting_and_reports_it(blobs, epsilon):
    X, y = blobs
    clf = dpml.DPSGDClassifier(
        epsilon=epsilon, delta=1e-5, classes=[0, 1], schedule="rule"
    ).fit(X, y)
    p = clf.privacy_
    _, batch, epochs, rate, clip = rule_setting(epsilon)
    n = len(y)
    assert p["schedule"] == "rule"
    assert (p["batch_size"], p["epochs"], p["learning_rate"], p["clip_norm"]) == (
        min(batch, n),
        epochs,
        rate,
        clip,
    )
    assert p["average_iterates"] is True
    assert p["steps"] == math.ceil(epochs * n / min(batch, n))
    assert p["epsilon_per_model"] <= epsilon


def test_dpsgd_rule_schedule_reads_each_models_epsilon(reference_data):
    X, y = reference_data(3)
    clf = seeded_sgd(classes=[0, 1, 2], epsilon=0.45, schedule="rule", batch_size=256, epochs=10.0)
    p = clf.fit(X, y).privacy_
    # ε/3 = 0.15 per model: the setting for 0.1 ≤ ε < 0.2 (η = 32), not the one for the
    # whole 0.45 (η = 128).
    assert (p["epochs"], p["learning_rate"], p["batch_size"]) == (200, 32.0, 40)


@pytest.mark.parametrize(
    "params",
    [
        dict(batch_size=512),
        dict(epochs=5),
        dict(learning_rate=0.5),
        dict(clip_norm=0.25),
        dict(regularization=1e-3),
    ],
)
def test_dpsgd_rule_schedule_refuses_settings_it_would_ignore(blobs, params):
    X, y = blobs
    name = next(iter(params))
    with pytest.raises(dpml.DPMLValueError, match=f"schedule='rule'.*{name}="):
        dpml.DPSGDClassifier(delta=1e-5, classes=[0, 1], schedule="rule", **params).fit(X, y)


def test_dpsgd_schedule_given_reports_the_given_settings(blobs):
    X, y = blobs
    p = dpml.DPSGDClassifier(
        delta=1e-5, classes=[0, 1], batch_size=40, epochs=3, clip_norm=0.5
    ).fit(X, y).privacy_
    assert p["schedule"] == "given"
    assert (p["batch_size"], p["epochs"], p["clip_norm"], p["average_iterates"]) == (
        40,
        3.0,
        0.5,
        False,
    )


def test_dpsgd_charges_the_ledger_epsilon_and_delta(blobs):
    X, y = blobs
    ledger = dpml.Ledger(2.0, delta=2e-5)
    for _ in range(2):
        dpml.DPSGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1], batch_size=50).fit(
            X, y, ledger=ledger
        )
    # Each fit records its curve after the fit: the two compose by privacy-loss
    # distributions below basic composition's (2, 2e-5), stated at the whole δ.
    assert ledger.composition == "privacy-loss distribution"
    assert ledger.spent_epsilon < 1.6 and ledger.spent_delta == 2e-5
    assert [r["mechanism"] for r in ledger.records] == ["dp-sgd", "dp-sgd"]
    with pytest.raises(dpml.BudgetExceededError):
        dpml.DPSGDClassifier(epsilon=1.9, delta=1e-6, classes=[0, 1]).fit(X, y, ledger=ledger)
    assert len(ledger) == 2


def test_dpsgd_model_is_the_rust_fit_and_loads_both_ways(tmp_path, fixtures, reference_data):
    X, y = reference_data(2)
    clf = seeded_sgd(classes=[0, 1]).fit(X, y)
    expected = (fixtures / "seeded_sgd_0.dpm").read_bytes()
    assert [bytes(f) for f in clf._models.to_bytes()] == [expected]
    clf.save(tmp_path / "sgd.dpm")
    assert (tmp_path / "sgd.dpm").read_bytes() == expected
    loaded = dpml.DPSGDClassifier.load(fixtures / "seeded_sgd_0.dpm", classes=[0, 1])
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    p = loaded.privacy_
    assert p["mechanism"] == "dp-sgd" and p["delta"] == 1e-5
    assert p["steps"] == 8 and p["sampling_rate"] == 0.25
    assert p["noise_multiplier"] == clf.privacy_["noise_multiplier"]
    copy = pickle.loads(pickle.dumps(clf))
    assert copy._models.to_bytes() == clf._models.to_bytes()
    assert copy.privacy_ == clf.privacy_


def test_dpsgd_on_csr_rows_is_the_dense_fit(reference_data):
    # CSR input is trained on as sparse rows: with sorted rows, the same model bit for bit.
    sparse = pytest.importorskip("scipy.sparse")
    X, y = reference_data(2)
    dense = seeded_sgd(classes=[0, 1]).fit(X, y)
    csr = seeded_sgd(classes=[0, 1]).fit(sparse.csr_matrix(X), y)
    assert csr._models.to_bytes() == dense._models.to_bytes()


# -- the Gaussian mechanisms of the linear estimators -------------------------------------


def test_gaussian_objective_is_the_rust_fit(fixtures, reference_data):
    X, y = reference_data(2)
    clf = seeded_gaussian(classes=[0, 1]).fit(X, y)
    expected = (fixtures / "seeded_gaussian_0.dpm").read_bytes()
    assert [bytes(f) for f in clf._models.to_bytes()] == [expected]
    loaded = dpml.LogisticRegression.load(fixtures / "seeded_gaussian_0.dpm", classes=[0, 1])
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    assert loaded.privacy_["mechanism"] == "gaussian-objective"
    assert loaded.privacy_["delta"] == 1e-5


@pytest.mark.parametrize("mechanism", ["objective", "output"])
@pytest.mark.parametrize("make", [dpml.LogisticRegression, dpml.HuberSVC])
def test_delta_selects_the_gaussian_mechanism_and_is_charged(blobs, make, mechanism):
    X, y = blobs
    ledger = dpml.Ledger(1.0, delta=1e-6)
    clf = make(
        epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1], mechanism=mechanism
    ).fit(X, y, ledger=ledger)
    p = clf.privacy_
    assert p["mechanism"] == f"gaussian-{mechanism}"
    assert (p["epsilon"], p["delta"]) == (1.0, 1e-6)
    assert p["noise"]["sigma"] > 0 and p["noise"]["delta_per_model"] == 1e-6
    assert clf._models.info()["mechanism"] == f"gaussian-{mechanism}"
    assert (ledger.spent_epsilon, ledger.spent_delta) == (1.0, 1e-6)
    assert ledger.records[0]["mechanism"] == f"gaussian-{mechanism}"
    assert set(clf.predict(X)) <= {0, 1}


def test_delta_zero_is_the_pure_mechanism_unchanged(reference_data, fixtures):
    X, y = reference_data(2)
    clf = seeded_gaussian(classes=[0, 1], delta=0.0).fit(X, y)
    assert clf._models.to_bytes()[0] == (fixtures / "seeded_binary_0.dpm").read_bytes()
    assert clf.privacy_["delta"] == 0.0 and clf.privacy_["mechanism"] == "objective"


def test_gaussian_multiclass_splits_delta(reference_data):
    X, y = reference_data(3)
    clf = seeded_gaussian(classes=[0, 1, 2], delta=3e-6).fit(X, y)
    per_model = clf.privacy_["noise"]["delta_per_model"]
    assert 3 * per_model <= 3e-6 and per_model > 0.99e-6
    assert clf.privacy_["delta"] == 3e-6


# -- bad input: a dpml exception naming the parameter, never a panic ----------------------


@pytest.mark.parametrize("delta", [-1e-6, 1.0, 2.0, math.nan, math.inf])
def test_delta_outside_zero_one_is_refused(blobs, delta):
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError, match="delta"):
        dpml.LogisticRegression(delta=delta, data_norm=2.0, classes=[0, 1]).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="delta"):
        dpml.DPSGDClassifier(delta=delta, classes=[0, 1]).fit(X, y)


def test_delta_of_the_wrong_type_is_refused(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLTypeError, match="delta"):
        dpml.LogisticRegression(delta="1e-5", data_norm=2.0, classes=[0, 1]).fit(X, y)


def test_a_pure_ledger_refuses_a_delta(blobs):
    X, y = blobs
    ledger = dpml.Ledger(10.0)
    for clf in (
        dpml.HuberSVC(delta=1e-6, data_norm=2.0, classes=[0, 1]),
        dpml.DPSGDClassifier(delta=1e-6, classes=[0, 1]),
    ):
        with pytest.raises(dpml.BudgetExceededError, match="pure epsilon"):
            clf.fit(X, y, ledger=ledger)
    assert len(ledger) == 0 and ledger.spent_delta == 0


def test_dpsgd_without_delta_is_refused(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError, match="delta is required"):
        dpml.DPSGDClassifier(classes=[0, 1]).fit(X, y)
    with pytest.raises(dpml.DPMLValueError, match="delta"):
        dpml.DPSGDClassifier(delta=0.0, classes=[0, 1]).fit(X, y)


@pytest.mark.parametrize(
    "params,name",
    [
        (dict(batch_size=0), "batch_size"),
        (dict(batch_size=-3), "batch_size"),
        (dict(batch_size=401), "batch_size"),
        (dict(batch_size=2.5), "batch_size"),
        (dict(epochs=0), "epochs"),
        (dict(epochs=-1.0), "epochs"),
        (dict(epochs=math.nan), "epochs"),
        (dict(epochs=1e9), "epochs"),
        (dict(learning_rate=0), "learning_rate"),
        (dict(learning_rate=math.inf), "learning_rate"),
        (dict(clip_norm=-1.0), "clip_norm"),
        (dict(regularization=-1.0), "regularization"),
        (dict(loss="hinge"), "loss"),
        (dict(neighbouring="add-remove"), "needs public_rows"),
        (dict(neighbouring="add-remove", public_rows=0), "public_rows"),
        (dict(neighbouring="add-remove", public_rows=2.5), "public_rows"),
        (dict(neighbouring="add-remove", public_rows=10**30), "public_rows"),
        (dict(batch_size=10**30), "batch_size"),
        (dict(neighbouring="add-remove", public_rows=100, batch_size=101), "batch_size"),
        (dict(public_rows=400), "public_rows=400 with neighbouring='replace-one'"),
        (dict(neighbouring="neighbours"), "neighbouring"),
        (dict(epsilon=math.inf), "epsilon"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(average_iterates="yes"), "average_iterates"),
        (dict(schedule="auto"), "schedule"),
    ],
)
def test_nonsense_dpsgd_parameters_are_named(blobs, params, name):
    X, y = blobs
    base = dict(delta=1e-6, classes=[0, 1])
    base.update(params)
    with pytest.raises(dpml.DPMLError, match=name):
        dpml.DPSGDClassifier(**base).fit(X, y)


def test_a_diverging_learning_rate_is_an_error_whose_spend_stands(blobs):
    X, y = blobs
    ledger = dpml.Ledger(1.0, delta=1e-6)
    with pytest.raises(dpml.DPMLError, match="learning_rate") as refused:
        dpml.DPSGDClassifier(
            delta=1e-6, classes=[0, 1], learning_rate=1e3, regularization=1.0, batch_size=10
        ).fit(X, y, ledger=ledger)
    # The iterates diverged after the noise was drawn: not a refusal, so not refunded.
    assert not isinstance(refused.value, dpml.DPMLValueError)
    assert (ledger.spent_epsilon, ledger.spent_delta) == (1.0, 1e-6)


@pytest.mark.parametrize(
    "params,name",
    [
        (dict(calibration="cms11"), "calibration"),
        (dict(feature_groups=[0, 0, 1, 1]), "feature_groups"),
    ],
)
def test_options_that_do_not_apply_to_the_gaussian_mechanisms_are_named(blobs, params, name):
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError, match=name):
        dpml.LogisticRegression(delta=1e-6, data_norm=2.0, classes=[0, 1], **params).fit(X, y)


def test_a_refused_fit_refunds_the_ledger(blobs):
    X, y = blobs
    ledger = dpml.Ledger(1.0, delta=1e-5)
    with pytest.raises(dpml.DPMLValueError, match="batch_size"):
        dpml.DPSGDClassifier(delta=1e-6, classes=[0, 1], batch_size=10_000).fit(
            X, y, ledger=ledger
        )
    assert len(ledger) == 0 and ledger.spent_delta == 0


def test_private_search_selects_among_gaussian_candidates_with_split(blobs):
    """Split-and-select among (ε, δ) candidates is (ε, max δ)-DP (each row reaches one
    candidate's part: dp-tune's SplitAndSelect, # Privacy) — computed here from that rule,
    with candidates of different δ; the ledger is charged exactly that once."""
    X, y = blobs
    estimator = dpml.LogisticRegression(delta=1e-6, data_norm=2.0, classes=[0, 1])
    grid = {"C": [0.1, 1.0], "delta": [1e-6, 4e-6]}
    ledger = dpml.Ledger(2.0, delta=1e-5)
    search = dpml.model_selection.PrivateSearch(estimator, grid, epsilon=1.0)
    search.fit(X, y, ledger=ledger)
    expected = (1.0, max(grid["delta"]))
    assert (search.privacy_["epsilon"], search.privacy_["delta"]) == expected
    assert (ledger.spent_epsilon, ledger.spent_delta) == expected and len(ledger) == 1
    assert "largest candidate delta" in search.privacy_["guarantee"]
    best = search.best_estimator_
    assert best.delta == search.best_params_["delta"] and best.epsilon == 1.0
    assert best.privacy_["mechanism"] == "gaussian-objective"
    # Output perturbation's Gaussian candidates too.
    output = dpml.LogisticRegression(
        delta=1e-6, mechanism="output", data_norm=2.0, classes=[0, 1]
    )
    search = dpml.model_selection.PrivateSearch(output, {"C": [0.1, 1.0]}, epsilon=1.0)
    assert search.fit(X, y).best_estimator_.privacy_["mechanism"] == "gaussian-output"


def test_private_search_with_a_delta_refuses_a_pure_ledger_and_objective_random_stopping(blobs):
    X, y = blobs
    estimator = dpml.LogisticRegression(delta=1e-6, data_norm=2.0, classes=[0, 1])
    pure = dpml.Ledger(10.0)
    search = dpml.model_selection.PrivateSearch(estimator, {"C": [0.1, 1.0]}, epsilon=1.0)
    with pytest.raises(dpml.BudgetExceededError, match="candidates have a delta"):
        search.fit(X, y, ledger=pure)
    assert len(pure) == 0 and pure.spent_epsilon == 0
    stopping = dpml.model_selection.PrivateSearch(
        estimator, {"C": [0.1, 1.0]}, epsilon=1.0, method="random-stopping"
    )
    ledger = dpml.Ledger(10.0, delta=1e-3)
    with pytest.raises(dpml.DPMLValueError, match="no Rényi bound; use mechanism='output'"):
        stopping.fit(X, y, ledger=ledger)
    assert len(ledger) == 0
    sgd = dpml.model_selection.PrivateSearch(
        dpml.DPSGDClassifier(delta=1e-6, classes=[0, 1]), {"learning_rate": [0.5, 1.0]}
    )
    with pytest.raises(dpml.DPMLValueError, match="DP-SGD"):
        sgd.fit(X, y)


def test_random_stopping_among_gaussian_output_candidates_is_accounted_by_renyi_dp(blobs):
    """Random stopping with (ε, δ) candidates (Gaussian output perturbation): the search is
    (≤ ε, ≤ max candidate δ)-DP by Papernot-Steinke's accounting, its candidates train at the
    largest step that allows (far above the 3-way split of the pure accounting, since ten
    Gaussian runs compose far better than 3ε), and the ledger is charged the plan once."""
    X, y = blobs
    output = dpml.LogisticRegression(
        delta=1e-6, mechanism="output", data_norm=2.0, classes=[0, 1]
    )
    grid = {"C": [0.1, 1.0, 10.0], "delta": [1e-6, 5e-6]}
    ledger = dpml.Ledger(2.0, delta=1e-5)
    search = dpml.model_selection.PrivateSearch(
        output, grid, epsilon=1.0, method="random-stopping", stop_probability=0.1
    )
    search.fit(X, y, ledger=ledger)
    privacy = search.privacy_
    assert 0.999 < privacy["epsilon"] <= 1.0 and privacy["delta"] <= 5e-6
    assert privacy["delta"] >= 0.99 * 5e-6 * (1 - 1e-12)
    assert (ledger.spent_epsilon, ledger.spent_delta) == (privacy["epsilon"], privacy["delta"])
    assert len(ledger) == 1
    assert "Renyi DP (Papernot-Steinke 2022" in privacy["guarantee"]
    # The pure accounting would give each run 1/3; Rényi accounting gives the Gaussian
    # candidates more, and each score an ε whose cost stays under theirs.
    assert privacy["step_epsilon"] > 1.0 / 3.0
    assert 0 < privacy["score_epsilon"] < privacy["step_epsilon"]
    best = search.best_estimator_
    assert best.epsilon == privacy["step_epsilon"]
    assert best.privacy_["mechanism"] == "gaussian-output"
    # A pure ledger refuses it (it is not ε-DP), charging nothing.
    pure = dpml.Ledger(10.0)
    with pytest.raises(dpml.BudgetExceededError, match="not pure epsilon-DP"):
        search.fit(X, y, ledger=pure)
    assert len(pure) == 0


def test_dpsgd_is_certified_by_pld_by_default_with_less_noise_than_rdp(blobs):
    """The default accountant is the privacy-loss distribution: it certifies the same target
    with less noise than RDP (whose spec formula then gives more than the target), and the
    report and the model say which accountant certified it; a stranger is refused by name."""
    X, y = blobs
    params = dict(epsilon=1.0, delta=1e-5, classes=[0, 1], batch_size=40, epochs=3)
    pld = dpml.DPSGDClassifier(**params).fit(X, y).privacy_
    rdp = dpml.DPSGDClassifier(accountant="rdp", **params).fit(X, y).privacy_
    assert (pld["accountant"], rdp["accountant"]) == ("pld", "rdp")
    assert pld["noise_multiplier"] < 0.97 * rdp["noise_multiplier"]
    assert pld["epsilon_per_model"] <= 1.0
    assert spec_epsilon(pld["sampling_rate"], pld["noise_multiplier"], 30, 1e-5) > 1.0
    model = dpml.DPSGDClassifier(**params).fit(X, y)
    assert model._models.info()["accountant"] == "pld"
    with pytest.raises(dpml.DPMLValueError, match="accountant"):
        dpml.DPSGDClassifier(accountant="prv", **params).fit(X, y)


def test_ten_gaussian_output_fits_compose_tightly_in_one_ledger(blobs):
    """Ten Gaussian output-perturbation fits at (0.1, 1e-6) in a (1, 1e-5) ledger: basic
    composition refused the tenth; the composing ledger records each fit's zCDP curve and
    certifies all ten at about 0.295 (dp-noise's reference, CKS20 in mpmath), saying it used
    the privacy-loss distribution composition. A pure-ε ledger's spends add up as before."""
    X, y = blobs
    ledger = dpml.Ledger(1.0, delta=1e-5)
    assert ledger.composition == "basic"
    for _ in range(10):
        seeded_gaussian(epsilon=0.1, delta=1e-6, mechanism="output", classes=[0, 1]).fit(
            X, y, ledger=ledger
        )
    assert len(ledger) == 10
    assert ledger.composition == "privacy-loss distribution"
    assert 0.2954 <= ledger.spent_epsilon <= 0.2955
    assert ledger.spent_delta == 1e-5
    assert "privacy-loss distribution" in repr(ledger)
    pure = dpml.Ledger(1.0)
    for _ in range(2):
        dpml.LogisticRegression(epsilon=0.5, data_norm=2.0, classes=[0, 1]).fit(X, y, ledger=pure)
    assert (pure.spent_epsilon, pure.composition) == (1.0, "basic")


def test_dpsgd_fits_charged_to_a_ledger_record_their_curves(blobs):
    """A DP-SGD fit is charged its (ε, δ) before the fit and given its curve (q, σ, T)
    after it: two fits at (1, 1e-5) in a (3, 2e-5) ledger compose below basic's 2."""
    X, y = blobs
    ledger = dpml.Ledger(3.0, delta=2e-5)
    for _ in range(2):
        seeded_sgd(epsilon=1.0, delta=1e-5, classes=[0, 1]).fit(X, y, ledger=ledger)
    assert ledger.composition == "privacy-loss distribution"
    assert ledger.spent_epsilon < 1.9
    assert ledger.spent_delta == 2e-5
