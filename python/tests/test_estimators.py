"""The estimators' behaviour: privacy reports, seeds, classes, zero-copy input."""

import threading
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dpml


def logistic(**params):
    return dpml.LogisticRegression(**{"epsilon": 1.0, "data_norm": 1.0, "classes": [0, 1], **params})


def test_privacy_report_states_the_guarantee(blobs):
    X, y = blobs
    model = logistic(epsilon=0.5).fit(X, y)
    p = model.privacy_
    assert p["epsilon"] == 0.5 and p["delta"] == 0.0
    assert p["private"] is True and p["seeded"] is False and p["test_mode"] is False
    assert p["mechanism"] == "objective" and p["calibration"] == "cliff-free"
    assert p["data_norm"] == 1.0 and p["clip_rows"] is False and p["intercept_scaling"] == 1.0
    assert p["neighbouring"].startswith("replace-one")
    assert p["library_version"] == dpml.__version__
    assert p["regularization"] > 0 and p["noise"]["epsilon_per_model"] == 0.5
    assert "warning" not in p


def test_auto_regularization_is_dp_erms_rule(blobs):
    X, y = blobs
    # ErmParams::recommended(400, 5, 1.0): Λ = 6.31 (5 / 400)^1.75 unless another helper
    # refits the rule's constants; it must at least fall as n·ε grows.
    small = logistic(epsilon=0.5).fit(X, y).privacy_["regularization"]
    large = logistic(epsilon=2.0).fit(X, y).privacy_["regularization"]
    assert large < small
    assert logistic(C=2.0).fit(X, y).privacy_["regularization"] == 1 / (2.0 * 400)


def test_insecure_seed_is_reproducible_and_reported(blobs):
    X, y = blobs
    a = logistic(random_state=dpml.InsecureSeed(5)).fit(X, y)
    b = logistic(random_state=dpml.InsecureSeed(5)).fit(X, y)
    c = logistic(random_state=dpml.InsecureSeed(6)).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)
    assert a.privacy_["seeded"] is True and a.privacy_["private"] is False
    assert "NOT private" in a.privacy_["warning"]
    # The secure default draws fresh noise every time.
    assert not np.array_equal(logistic().fit(X, y).coef_, logistic().fit(X, y).coef_)


def test_int_random_state_is_refused_with_what_to_pass(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLTypeError, match="dpml.InsecureSeed"):
        logistic(random_state=42).fit(X, y)
    with pytest.raises(dpml.DPMLTypeError, match="InsecureSeed takes an integer"):
        dpml.InsecureSeed("42")


def test_multiclass_with_string_labels_and_probabilities():
    rng = np.random.default_rng(1)
    centers = np.array([[0.6, 0.0], [-0.3, 0.5], [-0.3, -0.5]])
    labels = np.array(["cat", "dog", "emu"])
    k = rng.integers(0, 3, size=3000)
    X = centers[k] + rng.normal(scale=0.05, size=(3000, 2))
    model = logistic(epsilon=5.0, classes=["emu", "dog", "cat"]).fit(X, labels[k])
    assert list(model.classes_) == ["cat", "dog", "emu"]
    assert model.coef_.shape == (3, 2) and model.intercept_.shape == (3,)
    assert model.score(X, labels[k]) > 0.9
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.privacy_["models"] == 3
    assert model.privacy_["epsilon_per_model"] <= 5.0 / 3


def test_huber_and_kernel_classifiers_learn(blobs):
    X, y = blobs
    assert dpml.HuberSVC(epsilon=5.0, data_norm=1.0, classes=[0, 1]).fit(X, y).score(X, y) > 0.9
    rf = dpml.RandomFeaturesSVC(epsilon=5.0, classes=[0, 1], n_components=100, gamma=1.0)
    assert rf.fit(X, y).score(X, y) > 0.8
    assert rf.privacy_["feature_map"]["n_components"] == 100
    assert not hasattr(rf, "coef_")  # weights over random features are not coefficients
    with pytest.raises(AttributeError):
        dpml.HuberSVC().predict_proba


def test_pandas_frames_give_feature_names(blobs):
    pd = pytest.importorskip("pandas")
    X, y = blobs
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = logistic().fit(frame, pd.Series(y))
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    with pytest.raises(dpml.DPMLValueError, match="feature names should match"):
        model.predict(frame[["b", "a", "c", "d"]].set_axis(["b", "a", "c", "d"], axis=1))


def test_c_contiguous_float64_input_is_not_copied():
    """Peak Python-side allocation during fit and predict stays far below the input's
    size; a Fortran-ordered input, which must be converted, shows the copy (so the
    measurement can fail)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40_000, 25)) / 5.0  # 8 MB, rows of norm < 1
    y = (X[:, 0] > 0).astype(np.int64)
    model = logistic()

    def peak(run):
        tracemalloc.start()
        tracemalloc.reset_peak()
        run()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    in_place = peak(lambda: model.fit(X, y).decision_function(X))
    converted = peak(lambda: model.fit(np.asfortranarray(X), y))
    assert in_place < X.nbytes / 10, in_place
    assert converted >= X.nbytes, converted
    csr = sp.csr_matrix(X)
    assert peak(lambda: model.fit(csr, y)) < X.nbytes / 10


def test_the_gil_is_released_while_fitting():
    """A Python thread keeps running during the Rust fit itself (the raw core call, so
    that no Python-side work of fit is timed)."""
    from dpml import _dpml

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.1, 0.1, size=(100_000, 20))
    y = (X[:, 0] > 0).astype(np.int64)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    time.sleep(0.01)
    started = time.perf_counter()
    _dpml.fit_linear_model(
        X, y, 2, loss_name="logistic", huber_width=1.0, mechanism_name="objective",
        epsilon=1.0, calibration="cliff-free", regularization=1e-3, feature_groups=None,
        tol=None, data_norm=1.0, clip_rows=False, intercept=1.0, seed=None,
    )
    finished = time.perf_counter()
    done.set()
    thread.join()
    during = [t for t in ticks if started < t < finished]
    # Holding the GIL, the Rust call would leave the counter no tick inside its window.
    assert finished - started > 0.02 and len(during) > 5, (finished - started, len(during))


def test_privacy_report_carries_the_outlook_from_public_sizes():
    import numpy as np

    import dpml

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(400, 4))
    y = np.where(X[:, 0] > 0, 1, 0)
    small = dpml.LogisticRegression(epsilon=1.0, data_norm=2.0, classes=[0, 1]).fit(X, y)
    # d/(nε) = 5/(400·1), d the trained features (4 and the intercept): no warning.
    assert abs(small.privacy_["outlook"]["noise_ratio"] - 0.0125) < 1e-12
    assert small.privacy_["outlook"]["basis"].startswith("d/(nε)")
    assert small.privacy_["outlook"]["warning"] is None
    with pytest.warns(dpml.DPMLUtilityWarning, match="LogisticRegression: .*near chance"):
        tiny = dpml.LogisticRegression(epsilon=0.01, data_norm=2.0, classes=[0, 1]).fit(X, y)
    # 5/(400·0.01) = 1.25 > 0.3: expected near chance, said before looking at any result,
    # as a warning of its own category and in the report.
    assert tiny.privacy_["outlook"]["near_chance"]
    assert "near chance" in tiny.privacy_["outlook"]["warning"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpml.DPMLUtilityWarning)
        dpml.LogisticRegression(epsilon=1.0, data_norm=2.0, classes=[0, 1]).fit(X, y)


def test_a_kernel_too_narrow_for_its_features_is_warned_of():
    import numpy as np

    import dpml

    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(3_000, 60))
    y = np.where(X[:, 0] > 0.5, 1, 0)
    # γ·d/6 = 1·60/6 = 10 > 5: typical pairs of rows have kernel values near e^-10.
    with pytest.warns(dpml.DPMLUtilityWarning, match="gamma = 1 is narrow for 60 features"):
        narrow = dpml.RandomFeaturesSVC(epsilon=1.0, n_components=50, classes=[0, 1]).fit(X, y)
    assert narrow.privacy_["outlook"]["at_risk"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpml.DPMLUtilityWarning)
        dpml.RandomFeaturesSVC(
            epsilon=1.0, gamma=1 / 60, n_components=50, classes=[0, 1]
        ).fit(X, y)


def test_every_mechanism_reports_its_own_outlook():
    import numpy as np

    import dpml

    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(300, 4))
    y = np.where(X[:, 0] > 0, 1, 0)
    gaussian = dpml.HuberSVC(epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1]).fit(X, y)
    # The Gaussian mechanism's noise multiplier z in d/(nε)'s units: z·√d/n.
    noise = gaussian.privacy_["noise"]
    z = noise["sigma"] / noise["l2_sensitivity"]
    outlook = gaussian.privacy_["outlook"]
    assert outlook["basis"].startswith("z·√d/n")
    assert abs(outlook["noise_ratio"] - z * np.sqrt(5) / 300) < 1e-12 * outlook["noise_ratio"]
    kernel = dpml.RandomFeaturesSVC(epsilon=1.0, n_components=50, classes=[0, 1]).fit(X, y)
    # A kernel model's d is its D random features: 50/(300·1).
    assert abs(kernel.privacy_["outlook"]["noise_ratio"] - 50 / 300) < 1e-12
    sgd = dpml.DPSGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1]).fit(X, y)
    assert sgd.privacy_["outlook"]["warning"].startswith("DP-SGD on 300 rows")


def test_the_outlook_warns_wherever_a_small_public_table_ends_near_the_majority_class():
    """The outlook's thresholds at small n, on a small public table (scikit-learn's breast
    cancer copy: 569 rows, 30 numeric columns, min-max scaled, rows to unit norm): every fit
    that is no better than the majority class on held-out rows was warned of."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = (data.data - data.data.min(axis=0)) / np.ptp(data.data, axis=0)
    X /= np.linalg.norm(X, axis=1, keepdims=True) * (1 + 1e-12)
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[:400], order[400:]
    y = np.where(data.target == 1, "benign", "malignant")
    majority = 1 - max(np.mean(y[test] == c) for c in ("benign", "malignant"))
    unwarned_failures, warned = [], 0
    for epsilon in (0.1, 0.3, 1.0, 3.0, 10.0):
        for seed in range(4):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dpml.DPMLUtilityWarning)
                clf = dpml.LogisticRegression(
                    epsilon=epsilon, data_norm=1.0, classes=["benign", "malignant"],
                    random_state=dpml.InsecureSeed(seed),
                ).fit(X[train], y[train])
            error = 1 - clf.score(X[test], y[test])
            warning = clf.privacy_["outlook"]["warning"]
            warned += warning is not None
            if error >= majority - 0.01 and warning is None:
                unwarned_failures.append((epsilon, seed, error))
    assert not unwarned_failures, (majority, unwarned_failures)
    assert warned > 0  # the small ε's are warned of: the check can see both sides
