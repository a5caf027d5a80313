"""Reference values for dp-noise's repeat-and-select accounting (src/repeat_select.rs,
Papernot & Steinke 2022).

Computed with Google's dp-accounting, never at run time: `python3 -m venv /tmp/dpacc &&
/tmp/dpacc/bin/pip install dp-accounting==0.6.0 && /tmp/dpacc/bin/python
repeat_select_reference.py > repeat_select_reference.csv`.

Each case is one run's RDP curve (dp-accounting's own: the Poisson-subsampled Gaussian for
add/remove neighbours over `steps` steps, or the Gaussian mechanism α/(2σ²)) on dp-noise's
default orders (2…63, then 64 … 8192), repeated a random number of times: Poisson
(shape = inf), geometric (1), logarithmic (0) or truncated negative binomial. Columns:
name, base, q, sigma, steps, shape, mean, order, base_rdp, out_rdp, epsilon_at_1e-5.
One row per (case, listed order); epsilon_at_1e-5 (dp-accounting's compute_epsilon of the
whole output curve) is repeated on each row of a case.

dp-accounting applies the monotonicity of Rényi divergences in the order (ε'(λ) ≤ ε'(λ')
for λ ≤ λ') only to the truncated negative binomial; it holds for any mechanism, and the
Poisson rows here apply it too, as dp-noise does.
"""
import math

import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as rdp

ORDERS = [float(a) for a in range(2, 64)] + [
    64, 80, 100, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024, 1500, 2048, 3000, 4096,
    6000, 8192,
]
LISTED = [2.0, 3.0, 8.0, 16.0, 32.0, 63.0, 128.0, 1024.0, 8192.0]
DELTA = 1e-5


def base_curve(base, q, sigma, steps):
    if base == "subsampled":
        return np.asarray(rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS)) * steps
    return np.asarray([a / (2 * sigma * sigma) for a in ORDERS])


def monotone(values):
    out = list(values)
    for i in range(len(out)):
        out[i] = min(out[j] for j in range(len(out)) if ORDERS[i] <= ORDERS[j])
    return np.asarray(out)


CASES = [
    ("sgd", "subsampled", 0.01, 1.0, 1000),
    ("sgd-noisy", "subsampled", 0.004, 2.0, 2500),
    ("gaussian", "gaussian", 1.0, 3.0, 1),
]
RUNS = [("poisson", math.inf, 10.0), ("geometric", 1.0, 10.0), ("logarithmic", 0.0, 10.0),
        ("tnb", 0.5, 5.0), ("poisson-small", math.inf, 2.0)]

print("name,base,q,sigma,steps,shape,mean,order,base_rdp,out_rdp,epsilon_at_1e-5")
for name, base, q, sigma, steps in CASES:
    curve = base_curve(base, q, sigma, steps)
    for run_name, shape, mean in RUNS:
        out = monotone(rdp._compute_rdp_repeat_and_select(ORDERS, curve, mean, shape))
        epsilon, _ = rdp.compute_epsilon(ORDERS, out, DELTA)
        for order in LISTED:
            i = ORDERS.index(order)
            print(f"{name}-{run_name},{base},{q!r},{sigma!r},{steps},{shape!r},{mean!r},"
                  f"{order!r},{float(curve[i])!r},{float(out[i])!r},{float(epsilon)!r}")
