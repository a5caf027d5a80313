"""dpml: differentially private classifiers with scikit-learn's interface, over the Rust
crates of dp-ml (dp-erm, dp-kernel).

>>> import dpml
>>> clf = dpml.LogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1])

Every model is ε-differentially private for training sets that differ in one row, given
the public facts it asks for (``data_norm``, ``classes``); with ``delta > 0`` (and always
for ``DPSGDClassifier``) it is (ε, δ)-DP instead. See each class's docstring and
``privacy_``. ``dpml.Ledger`` keeps a total (ε, δ) budget across fits.
"""

from . import model_selection, predict, preprocessing, testing
from ._dpml import MAX_DELTA, MAX_EPSILON, __version__
from ._errors import (
    BudgetExceededError,
    DPMLError,
    DPMLIOError,
    DPMLMemoryError,
    DPMLTypeError,
    DPMLUtilityWarning,
    DPMLValueError,
    LedgerUnreachableError,
    NotFittedError,
)
from ._ledger import Ledger
from ._randomness import InsecureSeed
from .schema import Schema
from .kernel import RandomFeaturesSVC
from .linear import HuberSVC, LogisticRegression
from .regression import HuberRegressor, LinearRegression, Ridge
from .sgd import DPSGDClassifier, DPSGDRegressor

__all__ = [
    "HuberRegressor",
    "LinearRegression",
    "Ridge",
    "BudgetExceededError",
    "DPMLError",
    "DPSGDClassifier",
    "DPSGDRegressor",
    "DPMLIOError",
    "DPMLMemoryError",
    "DPMLTypeError",
    "DPMLUtilityWarning",
    "DPMLValueError",
    "HuberSVC",
    "InsecureSeed",
    "Ledger",
    "LedgerUnreachableError",
    "LogisticRegression",
    "MAX_DELTA",
    "MAX_EPSILON",
    "NotFittedError",
    "RandomFeaturesSVC",
    "Schema",
    "__version__",
    "model_selection",
    "predict",
    "preprocessing",
    "testing",
]
