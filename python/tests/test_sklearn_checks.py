"""scikit-learn's own estimator checks, in dpml.testing's check mode (which reads the
checks' classes and norm bounds from their data and takes their integer seeds as
InsecureSeed: those checks generate data with labels and scales no caller declared).

- Private (epsilon finite): only the checks that the noise makes fail are expected to fail,
  each with its reason.
- Non-private (epsilon = inf, reachable only in check mode): every check passes.
"""

import math

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpml


def private_estimators():
    return [
        dpml.LogisticRegression(epsilon=1.0),
        dpml.HuberSVC(epsilon=1.0),
        dpml.RandomFeaturesSVC(epsilon=1.0, n_components=50),
    ]


def non_private_estimators():
    return [
        dpml.LogisticRegression(epsilon=math.inf),
        dpml.HuberSVC(epsilon=math.inf),
        dpml.RandomFeaturesSVC(epsilon=math.inf, n_components=100, gamma=0.1),
    ]


NOISE = {
    "check_classifiers_train": "a private model on the checks' 30-150 rows is mostly noise: "
    "its accuracy is below the check's 0.83 floor",
    "check_classifiers_one_label": "with one label in the data the private model may still "
    "predict the other public class (the classes are public, the noise picks)",
    "check_classifiers_one_label_sample_weights": "as check_classifiers_one_label",
    "check_classifier_multioutput": "noise",
    "check_classifiers_classes": "the noisy model's predictions miss some of the checks' classes",
    "check_decision_proba_consistency": "noise",
    "check_supervised_y_2d": "two fits of the column and flat y draw different noise",
    "check_fit_idempotent": "each fit draws fresh noise (an int seed would make it "
    "repeatable but is refused outside check mode)",
    "check_n_features_in": "noise",
    "check_classifiers_regression_target": "noise",
}


def expected_noise_failures(estimator):
    return NOISE


@parametrize_with_checks(private_estimators(), expected_failed_checks=expected_noise_failures)
def test_sklearn_checks_private(estimator, check):
    with dpml.testing.check_mode():
        check(estimator)


@parametrize_with_checks(non_private_estimators())
def test_sklearn_checks_non_private(estimator, check):
    with dpml.testing.check_mode(non_private=True):
        check(estimator)


def test_epsilon_inf_is_refused_outside_check_mode(blobs):
    X, y = blobs
    with pytest.raises(dpml.DPMLValueError, match="epsilon=inf would train without privacy"):
        dpml.LogisticRegression(epsilon=math.inf, data_norm=1.0, classes=[0, 1]).fit(X, y)
    with dpml.testing.check_mode():  # check mode alone still refuses it
        with pytest.raises(dpml.DPMLValueError, match="epsilon=inf"):
            dpml.LogisticRegression(epsilon=math.inf, data_norm=1.0, classes=[0, 1]).fit(X, y)
    with dpml.testing.check_mode(non_private=True):
        model = dpml.LogisticRegression(epsilon=math.inf, classes=[0, 1]).fit(X, y)
    assert model.privacy_["private"] is False and model.privacy_["test_mode"] is True
    assert model.privacy_["mechanism"] == "non-private"
