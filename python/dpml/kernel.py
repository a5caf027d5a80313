"""A private kernel classifier on random features (dp-kernel)."""

from . import _dpml
from ._base import PrivateClassifier, _choice, _count, _number


class RandomFeaturesSVC(PrivateClassifier):
    """ε-differentially private kernel SVM on random Fourier features (dp-kernel).

    Each row is mapped through a data-independent random feature map of the kernel,
    ``v(x) = (1/√D)[cos(ωⱼᵀx + ψⱼ)]``, whose outputs always lie in the unit ball (so no
    norm bound is needed), then a private linear classifier is trained on the mapped rows.
    The map is drawn from the fit's generator and released with the model.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of the guarantee (replace-one neighbours); one-vs-rest models get ε/K each.
    classes : array-like, required
        The possible labels, public.
    kernel : {"gaussian", "laplacian"}, default="gaussian"
        ``exp(−γ‖x−x'‖²)`` or ``exp(−γ‖x−x'‖₁)``.
    gamma : float, default=1.0
        γ of the kernel.
    n_components : int, default=200
        D, the number of random features.
    sampling : {"standard", "orthogonal"}, default="standard"
        i.i.d. frequencies, or orthogonal random features (Gaussian kernel only).
    loss : {"huber", "logistic"}, default="huber"
    huber_width : float, default=1.0
    mechanism, calibration, regularization, C, tol, random_state
        As for ``dpml.HuberSVC``.
    """

    _kind = "kernel"

    def __init__(
        self,
        epsilon=1.0,
        *,
        classes=None,
        kernel="gaussian",
        gamma=1.0,
        n_components=200,
        sampling="standard",
        loss="huber",
        huber_width=1.0,
        mechanism="objective",
        calibration="cliff-free",
        regularization="auto",
        C=None,
        tol=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.classes = classes
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.sampling = sampling
        self.loss = loss
        self.huber_width = huber_width
        self.mechanism = mechanism
        self.calibration = calibration
        self.regularization = regularization
        self.C = C
        self.tol = tol
        self.random_state = random_state

    def _loss(self):
        loss = _choice("loss", self.loss, ("huber", "logistic"))
        return loss, _number("huber_width", self.huber_width)

    def _fit_kwargs(self, shape, call, epsilon, mechanism):
        kwargs = super()._fit_kwargs(shape, call, epsilon, mechanism)
        kwargs.update(
            kernel=_choice("kernel", self.kernel, ("gaussian", "laplacian")),
            gamma=_number("gamma", self.gamma),
            n_components=_count("n_components", self.n_components),
            sampling=_choice("sampling", self.sampling, ("standard", "orthogonal")),
        )
        return kwargs

    def _fit_rust(self, call, indices, n_classes, kwargs, seed):
        return _dpml.fit_kernel_model(y=indices, n_classes=n_classes, seed=seed, **call, **kwargs)

    def _privacy_report(self, report, epsilon, mechanism, seed, kwargs):
        privacy = super()._privacy_report(report, epsilon, mechanism, seed, kwargs)
        privacy["data_norm"] = "not needed: random features lie in the unit ball"
        privacy["feature_map"] = {
            k: kwargs[k] for k in ("kernel", "gamma", "n_components", "sampling")
        }
        return privacy
