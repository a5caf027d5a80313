"""Reference values for dp-noise's privacy-loss-distribution accountant (src/pld.rs).

Computed with Google's dp-accounting (pip package `dp-accounting`, version printed in the
output), never at run time: `python3 -m venv /tmp/pldvenv && /tmp/pldvenv/bin/pip install
dp-accounting==0.6.0 && /tmp/pldvenv/bin/python pld_reference.py > pld_reference.csv`.

Each row is one mechanism (or composition) and one query. For every case dp-accounting's
PLD is built twice at the same discretization interval h: the pessimistic connect-the-dots
estimate (an upper bound on the true curve) and the optimistic privacy-buckets estimate
(`pessimistic_estimate=False`, a lower bound). The true ε(δ) lies between them.

Columns: name, kind, relation, q, sigma_or_scale, steps, h, query, target,
pessimistic, h_optimistic, optimistic (h: the pessimistic estimate's interval; h_optimistic
the optimistic one's, finer where many steps make the privacy buckets' rounding-down
error, about steps·h, dominate).
  kind: gaussian (sensitivity 1, sigma = noise std), laplace (sensitivity 1, scale b),
        pure (randomized response at epsilon = sigma_or_scale, exact KOV composition
        computed here in mpmath: pessimistic = optimistic = exact),
        subsampled (Poisson-subsampled Gaussian, sensitivity 1, noise multiplier sigma),
        gaussian+laplace (one Gaussian sigma = 2 and one Laplace b = 2, composed)
  relation: add-remove or replace-one (dp-accounting's ADD_OR_REMOVE_ONE / REPLACE_ONE;
        REPLACE_ONE places the two sampled components at -1 and +1, a difference of 2)
  query: epsilon (epsilon at delta = target) or delta (delta at epsilon = target)
  kind ledger-*: the composing ledger's cases (dp-fit), see ledger_rows.
"""
import math
import sys

import dp_accounting
import mpmath
from dp_accounting.pld import privacy_loss_distribution as pld_lib

NR = dp_accounting.NeighboringRelation
RELATIONS = {"add-remove": NR.ADD_OR_REMOVE_ONE, "replace-one": NR.REPLACE_ONE}
N_ADULT = 30162


def gaussian(sigma, h, pessimistic, relation="add-remove", q=1.0):
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma,
        sensitivity=1.0,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=h,
        sampling_prob=q,
        use_connect_dots=pessimistic,
        neighboring_relation=RELATIONS[relation],
    )


def laplace(b, h, pessimistic):
    return pld_lib.from_laplace_mechanism(
        parameter=b,
        sensitivity=1.0,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=h,
        use_connect_dots=pessimistic,
    )


def compose(pld, steps):
    return pld if steps == 1 else pld.self_compose(steps)


def rows_for(name, kind, relation, q, param, steps, h, build, queries, h_opt=None):
    h_opt = h if h_opt is None else h_opt
    pess, opt = build(True, h), build(False, h_opt)
    out = []
    for query, target in queries:
        if query == "epsilon":
            p, o = pess.get_epsilon_for_delta(target), opt.get_epsilon_for_delta(target)
        else:
            p, o = pess.get_delta_for_epsilon(target), opt.get_delta_for_epsilon(target)
        out.append((name, kind, relation, q, param, steps, h, query, target, float(p), h_opt,
                    float(o)))
    return out


def kov_delta(eps, k, eps_prime):
    """Exact delta(eps') of k-fold randomized response at eps (KOV15), in mpmath."""
    mpmath.mp.dps = 50
    e = mpmath.mpf(eps)
    p = mpmath.e**e / (1 + mpmath.e**e)
    total = mpmath.mpf(0)
    for i in range(k + 1):
        loss = (k - 2 * i) * e
        if loss > eps_prime:
            total += mpmath.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (
                1 - mpmath.e ** (eps_prime - loss))
    return total


def kov_epsilon(eps, k, delta):
    lo, hi = mpmath.mpf(0), mpmath.mpf(k * eps)
    for _ in range(200):
        mid = (lo + hi) / 2
        if kov_delta(eps, k, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


# (q, steps, epsilon, h, RDP sigma for replace-one) of dp-ml's DpSgdRule on Adult.
SIGMA_CASES = [
    (16384 / N_ADULT, 369, 0.1, 1e-5, 709.3944308136231),
    (4096 / N_ADULT, 1473, 1.0, 1e-4, 42.238447317825084),
    (1024 / N_ADULT, 5892, 2.0, 1e-4, 11.267436198122063),
]


def analytic_gaussian_sigma(eps, delta):
    """Balle & Wang's smallest sigma (sensitivity 1) for (eps, delta), in mpmath."""
    mpmath.mp.dps = 50
    e = mpmath.mpf(eps)

    def d(sigma):
        s = mpmath.mpf(sigma)
        return mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.e**e * mpmath.ncdf(-1 / (2 * s) - e * s)

    lo, hi = mpmath.mpf("0.01"), mpmath.mpf(1000)
    for _ in range(300):
        mid = (lo + hi) / 2
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


def cks_epsilon(rho, delta):
    """CKS20's conversion of rho-zCDP to (eps, delta): the least over alpha > 1 of
    alpha*rho + ln(1/delta)/(alpha-1) + ln(1-1/alpha) - ln(alpha)/(alpha-1), in mpmath
    (golden-section search on ln(alpha-1), the objective being unimodal there)."""
    mpmath.mp.dps = 50
    r, dl = mpmath.mpf(rho), mpmath.mpf(delta)

    def f(t):
        a = 1 + mpmath.e**t
        return a * r + mpmath.log(1 / dl) / (a - 1) + mpmath.log(1 - 1 / a) - mpmath.log(a) / (a - 1)

    lo, hi = mpmath.mpf(-20), mpmath.mpf(40)
    g = (mpmath.sqrt(5) - 1) / 2
    for _ in range(400):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if f(a) < f(b):
            hi = b
        else:
            lo = a
    return float(f((lo + hi) / 2))


def cks_largest_rho(eps, delta):
    lo, hi = 0.0, max(eps, 1.0)
    for _ in range(200):
        mid = (lo + hi) / 2
        if cks_epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def ledger_rows():
    """The composing ledger's cases (dp-fit's ledger tests), all at delta = 1e-5 and h = 1e-4:
    - ledger-gaussian-x10 / -x11: ten (eleven) continuous Gaussian releases, each calibrated
      by Balle & Wang to (0.1, 1e-6) at sensitivity 1 (sigma_or_scale: that sigma);
    - ledger-zcdp-x10: ten releases of the largest rho that CKS20 certifies at (0.1, 1e-6),
      composed by adding rho and converted back by CKS20 (exact, mpmath: both columns);
      sigma_or_scale holds the one release's rho;
    - ledger-mix: DP-SGD (replace-one, q = 0.01, sigma = 1.0, 100 steps), one Gaussian
      release (sigma as above) and one pure 0.1-DP release (randomized response), composed."""
    D, h = 1e-5, 1e-4
    out = []
    sigma = analytic_gaussian_sigma(0.1, 1e-6)
    for k in (10, 11):
        out += rows_for(f"ledger-gaussian-x{k}", "ledger-gaussian", "replace-one", 1.0, sigma, k,
                        h, lambda p, h, k=k: compose(pld_lib.from_gaussian_mechanism(
                            standard_deviation=sigma, sensitivity=1.0, pessimistic_estimate=p,
                            value_discretization_interval=h, use_connect_dots=p), k),
                        [("epsilon", D)])
    rho = cks_largest_rho(0.1, 1e-6)
    e = cks_epsilon(10 * rho, D)
    out.append(("ledger-zcdp-x10", "ledger-zcdp", "replace-one", 1.0, rho, 10, 0.0, "epsilon", D,
                e, 0.0, e))

    def mix(p, h):
        sgd = compose(gaussian(1.0, h, p, "replace-one", 0.01), 100)
        release = pld_lib.from_gaussian_mechanism(
            standard_deviation=sigma, sensitivity=1.0, pessimistic_estimate=p,
            value_discretization_interval=h, use_connect_dots=p)
        # Randomized response on 2 buckets at noise p = 2/(1 + e^0.1): pure 0.1-DP.
        pure = pld_lib.from_randomized_response(
            noise_parameter=2 / (1 + math.exp(0.1)), num_buckets=2,
            pessimistic_estimate=p, value_discretization_interval=h)
        return sgd.compose(release).compose(pure)

    out += rows_for("ledger-mix", "ledger-mix", "replace-one", 0.01, 1.0, 100, h, mix,
                    [("epsilon", D)])
    return out


def main():
    D = 1e-5
    rows = []
    print(f"# dp-accounting {dp_accounting.__version__ if hasattr(dp_accounting, '__version__') else '0.6.0'}",
          file=sys.stderr)
    # Gaussian mechanism (sensitivity 1): one release and ten releases.
    for sigma, steps in [(1.0, 1), (3.0, 1), (0.5, 1), (5.0, 10)]:
        h = 1e-4
        rows += rows_for(f"gaussian-{sigma}-x{steps}", "gaussian", "add-remove", 1.0, sigma,
                         steps, h, lambda p, h, s=sigma, t=steps: compose(gaussian(s, h, p), t),
                         [("epsilon", D), ("epsilon", 1e-3), ("delta", 1.0)])
    # Laplace mechanism (sensitivity 1, scale b).
    for b, steps in [(1.0, 1), (2.0, 1), (4.0, 10)]:
        h = 1e-4
        rows += rows_for(f"laplace-{b}-x{steps}", "laplace", "add-remove", 1.0, b, steps, h,
                         lambda p, h, b=b, t=steps: compose(laplace(b, h, p), t),
                         [("epsilon", D), ("delta", 0.25)])
    # A Gaussian (sigma 2) and a Laplace (b 2) composed.
    h = 1e-4
    rows += rows_for("gaussian-2+laplace-2", "gaussian+laplace", "add-remove", 1.0, 2.0, 1, h,
                     lambda p, h: gaussian(2.0, h, p).compose(laplace(2.0, h, p)),
                     [("epsilon", D), ("delta", 1.0)])
    # Pure epsilon (randomized response), k-fold: exact (KOV) in mpmath.
    for eps, k in [(1.0, 1), (0.5, 10), (0.1, 50)]:
        for delta in [D, 1e-3]:
            e = float(kov_epsilon(eps, k, delta))
            rows.append((f"pure-{eps}-x{k}", "pure", "add-remove", 1.0, eps, k, 0.0,
                         "epsilon", delta, e, 0.0, e))
        d = float(kov_delta(eps, k, eps * k / 2))
        rows.append((f"pure-{eps}-x{k}", "pure", "add-remove", 1.0, eps, k, 0.0,
                     "delta", eps * k / 2, d, 0.0, d))
    # Poisson-subsampled Gaussian, both relations: few steps / small sigma (RDP loose),
    # and Adult-sized DP-SGD.
    # (q, sigma, steps, h, h_optimistic): the last three are dp-ml's DpSgdRule on Adult
    # (n = 30,162; batch 16,384 / 4,096 / 1,024, 200 epochs, T = ceil(200 n / batch)) at
    # the sigma its RDP accountant calibrates for replace-one at epsilon 0.1 / 1 / 2.
    cases = [
        (0.01, 1.0, 1, 1e-4, 1e-4),
        (0.1, 0.8, 10, 1e-4, 1e-5),
        (0.2, 2.0, 100, 1e-4, 1e-5),
        (0.05, 0.6, 3, 1e-4, 1e-5),
        (256 / N_ADULT, 15.0, 2356, 1e-4, 1e-6),
        (256 / N_ADULT, 2.77, 5891, 1e-4, 1e-6),
        (16384 / N_ADULT, 709.3944308136231, 369, 1e-5, 1e-6),
        (4096 / N_ADULT, 42.238447317825084, 1473, 1e-4, 1e-6),
        (1024 / N_ADULT, 11.267436198122063, 5892, 1e-4, 1e-6),
    ]
    for q, sigma, steps, h, h_opt in cases:
        for relation in ["add-remove", "replace-one"]:
            rows += rows_for(f"subsampled-{relation}-q{q:.6g}-s{sigma:.6g}-T{steps}",
                             "subsampled", relation, q, sigma, steps, h,
                             lambda p, h, q=q, s=sigma, t=steps, r=relation:
                             compose(gaussian(s, h, p, r, q), t),
                             [("epsilon", D)], h_opt)
    # The smallest noise multiplier meeting (epsilon, 1e-5) by dp-accounting's pessimistic
    # estimate, at dp-ml's DpSgdRule settings on Adult (query "sigma", target epsilon; the
    # sigma_or_scale column holds the RDP accountant's sigma; no optimistic value: nan).
    # Bisection in log scale to a relative 1e-6, returning the upper end (which meets it).
    for q, steps, eps, h, rdp_sigma in SIGMA_CASES:
        for relation in ["add-remove", "replace-one"]:
            def meets(sigma):
                pld = compose(gaussian(sigma, h, True, relation, q), steps)
                return pld.get_epsilon_for_delta(D) <= eps
            lo, hi = rdp_sigma / 4, rdp_sigma * 1.2
            assert meets(hi) and not meets(lo)
            while hi / lo > 1 + 1e-6:
                mid = math.sqrt(lo * hi)
                if meets(mid):
                    hi = mid
                else:
                    lo = mid
            rows.append((f"sigma-{relation}-q{q:.6g}-T{steps}-eps{eps}", "subsampled", relation,
                         q, rdp_sigma,
                         steps, h, "sigma", eps, hi, 0.0, float("nan")))
    rows += ledger_rows()
    print("name,kind,relation,q,sigma_or_scale,steps,h,query,target,pessimistic,h_optimistic,"
          "optimistic")
    for r in rows:
        print(",".join(repr(x) if isinstance(x, float) else str(x) for x in r))


if __name__ == "__main__":
    main()
