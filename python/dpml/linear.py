"""Private linear classifiers: logistic regression and the Huber SVM (dp-erm)."""

import numpy as np

from . import _dpml
from ._base import (
    PrivateClassifier,
    _delta,
    _number,
    feature_groups_kwarg,
    private_norm_kwargs,
    private_norm_report,
    require_data_norm,
)
from ._errors import DPMLTypeError, DPMLValueError

# The intercept feature c when intercept_scaling is None (the classifiers' c).
_CLASSIFIER_INTERCEPT_SCALING = 1.0


def logistic_proba(scores):
    """P(class | x) from a logistic model's scores (n × 1 binary, n × K one-vs-rest): the
    logistic function of the score, or the K one-vs-rest probabilities σ(s_k) normalized to
    sum to 1. The latter are formed from log σ(s_k), so that a row whose scores all lie far
    below 0 (each σ below double's range, as large DP-SGD weights give) keeps their order
    instead of becoming uniform: the most probable class is the predicted one."""
    if scores.shape[1] == 1:
        p = 0.5 * (1.0 + np.tanh(0.5 * scores))  # the logistic function, without overflow
        return np.hstack([1.0 - p, p])
    log_p = -np.logaddexp(0.0, -scores)  # log σ(s), exact where σ(s) underflows
    p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    # Two scores far above 0 have σ within an ulp of 1: equal in double, though the larger
    # score's probability is larger. That one is raised by an ulp, so that the most
    # probable class is the predicted one (the largest score), as in exact arithmetic.
    rows, best = np.arange(len(p)), np.argmax(scores, axis=1)
    tied = np.argmax(p, axis=1) != best
    p[rows[tied], best[tied]] = np.nextafter(p[rows[tied], best[tied]], np.inf)
    return p


class _LinearClassifier(PrivateClassifier):
    _kind = "linear"

    def _delta(self):
        return _delta(self.delta, required=False)

    def _fit_kwargs(self, shape, call, epsilon, mechanism):
        kwargs = super()._fit_kwargs(shape, call, epsilon, mechanism)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise DPMLTypeError(f"fit_intercept={self.fit_intercept!r} must be True or False")
        if not isinstance(self.clip_rows, (bool, np.bool_)):
            raise DPMLTypeError(f"clip_rows={self.clip_rows!r} must be True or False")
        groups = feature_groups_kwarg(self.feature_groups, self._delta(), mechanism)
        if isinstance(self.data_norm, str):
            kwargs.update(private_norm_kwargs(self.data_norm, epsilon, mechanism))
        else:
            kwargs["data_norm"] = require_data_norm(self.data_norm, call)
        kwargs.update(
            feature_groups=groups,
            clip_rows=bool(self.clip_rows),
            intercept=_number(
                "intercept_scaling",
                _CLASSIFIER_INTERCEPT_SCALING
                if self.intercept_scaling is None
                else self.intercept_scaling,
            )
            if self.fit_intercept
            else None,
        )
        return kwargs

    def _privacy_report(self, report, epsilon, mechanism, seed, kwargs):
        privacy = super()._privacy_report(report, epsilon, mechanism, seed, kwargs)
        privacy.update(private_norm_report(report, kwargs))
        return privacy

    def _fit_rust(self, call, indices, n_classes, kwargs, seed):
        return _dpml.fit_linear_model(y=indices, n_classes=n_classes, seed=seed, **call, **kwargs)

    @property
    def coef_(self):
        """Weights in the input's units, shape (1, n_features) for two classes, else
        (n_classes, n_features): ``decision_function(X) = X @ coef_.T + intercept_``."""
        self._check_fitted()
        return self._models.coefficients()[0]

    @property
    def intercept_(self):
        """Intercepts, shape (1,) or (n_classes,); zeros without ``fit_intercept``."""
        self._check_fitted()
        return self._models.coefficients()[1]


_SHARED_DOC = """
    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of the guarantee, in (0, 1000]: the model is ε-differentially private for
        training sets that differ in one row (replaced). With more than two classes each
        one-vs-rest model gets ε/K, and the K together are ε-DP.
    delta : float, default=0.0
        0: pure ε-DP (the mechanisms below, CMS11). In (0, 0.01] (``dpml.MAX_DELTA``): the
        model is (ε, δ)-DP for the same relation, trained by dp-erm's ``GaussianErm`` with
        Gaussian noise ("output": snapped discrete Gaussian, zCDP accounting; "objective":
        Gaussian linear term, KST12, with its own cliff-free rule, so ``calibration`` must
        stay "cliff-free" and ``feature_groups`` None). δ is the probability mass on which the
        ε bound may fail: pick it well below 1/n. With K > 2 classes each model gets
        (ε/K, δ/K). The ledger is charged (ε, δ).
    data_norm : float or "private", required
        A public bound B on the Euclidean norm of every row, known without looking at the
        data. Rows are divided by B. A row above B is refused (naming it) unless
        ``clip_rows=True``. There is no default: a bound read from the data would leak it.
        "private": where no bound is known, B is released privately from 10% of ε (dp-fit's
        ``private_norm``: the 0.9-quantile of the rows' norms by the exponential mechanism
        over a fixed log grid; rows above it are clipped to it) and the fit gets the other
        90%; the whole ε is charged once, and ``privacy_`` reports the released B
        (``data_norm``), its ε (``data_norm_epsilon``) and its mechanism.
    clip_rows : bool, default=False
        Clip rows of norm above ``data_norm`` to norm ``data_norm`` instead of refusing
        them (per row, so it costs no privacy; it changes those rows).
    classes : array-like, required
        The possible labels (a public fact about the task), any type; binary or
        one-vs-rest multiclass. A label in ``y`` outside them is an error.
    mechanism : {"objective", "output"}, default="objective"
        Objective perturbation (CMS11 Algorithm 2) or output perturbation (Algorithm 1).
    calibration : {"cliff-free", "cms11"}, default="cliff-free"
        How objective perturbation splits ε (the papers' rule "cms11" has a cliff where a
        larger ε gives more noise).
    regularization : "auto" or float, default="auto"
        Λ in ``(1/n) Σ loss + (Λ/2)‖w‖²``. "auto": dp-erm's data-independent rule
        (``ErmParams::recommended``, or ``recommended_grouped`` with ``feature_groups``;
        with ``delta > 0``, ``GaussianRule::OBJECTIVE`` / ``GaussianRule::OUTPUT``, from the
        noise multiplier the Gaussian calibration reports), from n, the number of features
        (with ``feature_groups``, also the number of groups) and each model's ε (and δ): the same rule as ``dpml train``'s (dp-fit's recipe).
    C : float or None, default=None
        scikit-learn's inverse regularization: Λ = 1/(C·n). Exclusive with a numeric
        ``regularization``.
    feature_groups : array-like of int or None, default=None
        A group index per feature (one-hot blocks): objective perturbation's noise is
        shaped to the groups (same ε, less noise on one-hot data). Every row must have at
        most one non-zero per group (group norm ≤ 1 after scaling).
    fit_intercept : bool, default=True
        Learn an intercept as a constant feature inside the unit ball: each row becomes
        ``(x/B, c) / √(1 + c²)`` with ``c = intercept_scaling``, so it still has norm ≤ 1;
        the intercept is regularized like every weight (the proofs cover nothing else).
        ``intercept_ = w_last · c / √(1 + c²)``.
    intercept_scaling : float or None, default=None
        The constant c above; None: c = 1 (``dpml.preprocessing.make_pipeline`` hands 0.5
        instead, measured better behind its transformers).
    tol : float or None, default=None
        The gradient norm the solver must certify (default: 1e-10 or the rounding floor);
        a looser tol costs accuracy, never privacy.
    random_state : None or dpml.InsecureSeed, default=None
        None: noise from the operating system's entropy (private). ``InsecureSeed(s)``:
        reproducible and NOT private. A plain int is refused.

    Attributes
    ----------
    classes_, n_features_in_, feature_names_in_ (pandas input with string columns),
    coef_, intercept_, privacy_ (ε, δ, mechanism — "gaussian-objective" or
    "gaussian-output" when delta > 0 —, calibration, Λ, norm bound,
    neighbouring relation, versions, whether the randomness was seeded).
"""


class LogisticRegression(_LinearClassifier):
    __doc__ = (
        """ε-differentially private (or, with ``delta > 0``, (ε, δ)-DP) L2-regularized
    logistic regression (dp-erm).
"""
        + _SHARED_DOC
        + """
    ``predict_proba`` gives P(class | x) (one-vs-rest scores normalized with more classes).
    """
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=0.0,
        data_norm=None,
        clip_rows=False,
        classes=None,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        C=None,
        feature_groups=None,
        fit_intercept=True,
        intercept_scaling=None,
        tol=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.clip_rows = clip_rows
        self.classes = classes
        self.mechanism = mechanism
        self.calibration = calibration
        self.regularization = regularization
        self.C = C
        self.feature_groups = feature_groups
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.random_state = random_state

    def _loss(self):
        return "logistic", 1.0

    def predict_proba(self, X):
        """P(class | x): the logistic function of the score (two classes), or the K
        one-vs-rest probabilities normalized to sum to 1."""
        return logistic_proba(self._scores(X))

    def predict_log_proba(self, X):
        """The logarithm of ``predict_proba``."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class HuberSVC(_LinearClassifier):
    __doc__ = (
        """ε-differentially private (or, with ``delta > 0``, (ε, δ)-DP) linear SVM with the
    Huber hinge loss (dp-erm).

    The loss of width h is 0 for margins above 1+h, (1+h−z)²/(4h) within h of 1 and 1−z
    below 1−h: smooth, as objective perturbation needs.

    huber_width : float, default=1.0
        h, in [1e-3, 1e3] (the data-independent rule was fitted with h = 1).
"""
        + _SHARED_DOC
    )

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=0.0,
        data_norm=None,
        clip_rows=False,
        classes=None,
        huber_width=1.0,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        C=None,
        feature_groups=None,
        fit_intercept=True,
        intercept_scaling=None,
        tol=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.clip_rows = clip_rows
        self.classes = classes
        self.huber_width = huber_width
        self.mechanism = mechanism
        self.calibration = calibration
        self.regularization = regularization
        self.C = C
        self.feature_groups = feature_groups
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.random_state = random_state

    def _loss(self):
        return "huber", _number("huber_width", self.huber_width)
