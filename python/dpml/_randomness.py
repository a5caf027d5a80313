"""Where a fit's randomness comes from."""

import numbers

from ._errors import DPMLTypeError


class InsecureSeed:
    """A fixed seed for reproducible fits. **NOT PRIVATE.**

    Anyone who knows or guesses the seed can recompute the noise and subtract it from the
    released model, which then reveals the training data as a non-private fit would.
    Use it for tests and experiments on public or synthetic data only. A model trained with
    it says so in ``privacy_["seeded"]`` (and ``privacy_["private"]`` is False).

    ``random_state=InsecureSeed(42)`` runs exactly what a Rust user of dp-erm runs with
    ``dp_noise::InsecureSeededRng::new(42)``: the same model, bit for bit.
    """

    __slots__ = ("seed",)

    def __init__(self, seed):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise DPMLTypeError(f"InsecureSeed takes an integer seed; got {type(seed).__name__}")
        if not 0 <= int(seed) < 2**64:
            raise DPMLTypeError(f"InsecureSeed's seed must be in [0, 2**64); got {seed}")
        self.seed = int(seed)

    def __repr__(self):
        return f"InsecureSeed({self.seed})"

    def __eq__(self, other):
        return isinstance(other, InsecureSeed) and other.seed == self.seed

    def __hash__(self):
        return hash(("InsecureSeed", self.seed))


def resolve_seed(random_state, allow_int):
    """The seed for the Rust core (None: the OS-seeded secure generator).

    A plain integer is refused: an ``int`` ``random_state`` is a habit from scikit-learn,
    where it costs nothing; here it would silently void the privacy guarantee.
    ``allow_int`` is set only by ``dpml.testing.check_mode``.
    """
    if random_state is None:
        return None
    if isinstance(random_state, InsecureSeed):
        return random_state.seed
    if allow_int and isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, bool
    ):
        return InsecureSeed(random_state).seed
    raise DPMLTypeError(
        f"random_state={random_state!r} is refused: a seeded generator makes the noise "
        "predictable and the model NOT private. Leave random_state=None (the default: noise "
        "from the operating system's entropy), or, for reproducible tests on public data "
        "only, pass random_state=dpml.InsecureSeed(seed)."
    )
