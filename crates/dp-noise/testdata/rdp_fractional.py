"""Reference values for the add/remove RDP of one step of the Poisson-subsampled Gaussian
at fractional orders (crates/dp-noise/src/rdp_tests.rs, `FRACTIONAL_REFERENCE` and
`OPACUS_ORDERS_REFERENCE`).

Computed with mpmath at 40 significant digits by a method independent of the library's:
direct numerical integration of MTZ19's definition

    A_alpha = E_{z ~ N(0, sigma^2)} [ ((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha ],

split at MTZ19's z0 (and at the integrand's peak), rather than the two binomial series
the library sums (and Opacus' `_compute_log_a_frac` sums, stopping at an absolute 1e-30
per term). The RDP of one step is ln(A_alpha) / (alpha - 1). As a cross-check, the
script also sums Opacus' series (to 3000 terms) in high precision: the two methods agree to
far better than the printed digits wherever the series has converged.

Run: python3 crates/dp-noise/testdata/rdp_fractional.py   (mpmath only; about a minute)
"""

import mpmath as mp

mp.mp.dps = 40


def log_a_integral(q, sigma, alpha):
    q, sigma, alpha = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    z0 = sigma**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2

    def integrand(z):
        mu0 = mp.npdf(z, 0, sigma)
        ratio = mp.exp((2 * z - 1) / (2 * sigma**2))
        return mu0 * ((1 - q) + q * ratio) ** alpha

    # The integrand's mass lies within a few σ of 0 and of ασ²-ish (the tilted mean);
    # split there and at z0 so that quad sees smooth pieces.
    points = sorted({-60 * sigma, -8 * sigma, 0, z0, alpha * 1, 8 * sigma + alpha, 60 * sigma + 2 * alpha})
    points = [mp.mpf(p) for p in points]
    total = mp.quad(integrand, [-mp.inf] + points + [mp.inf], maxdegree=10)
    return mp.log(total)


def log_a_series(q, sigma, alpha, terms=3000):
    """Opacus' `_compute_log_a_frac` (MTZ19 §3.3) in high precision, `terms` terms."""
    q, sigma, alpha = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    z0 = sigma**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2
    total = mp.mpf(0)
    for i in range(terms):
        coef = mp.binomial(alpha, i)
        j = alpha - i
        t0 = coef * q**i * (1 - q) ** j
        t1 = coef * q**j * (1 - q) ** i
        e0 = mp.erfc((i - z0) / (mp.sqrt(2) * sigma)) / 2
        e1 = mp.erfc((z0 - j) / (mp.sqrt(2) * sigma)) / 2
        total += t0 * mp.exp((i * i - i) / (2 * sigma**2)) * e0
        total += t1 * mp.exp((j * j - j) / (2 * sigma**2)) * e1
    return mp.log(total)


def rdp(q, sigma, alpha):
    return log_a_integral(q, sigma, alpha) / (mp.mpf(alpha) - 1)


CASES = [(0.01, 1.0), (0.25, 1.5), (0.1, 0.8), (0.5, 3.0), (256 / 30162, 2.77)]
ORDERS = [1.25, 1.5, 1.75, 2.5, 3.5]


def main():
    print("// (q, sigma, alpha, rdp of one step) from rdp_fractional.py")
    for q, sigma in CASES:
        for alpha in ORDERS:
            value = rdp(q, sigma, alpha)
            series = log_a_series(q, sigma, alpha) / (mp.mpf(alpha) - 1)
            gap = abs(series - value) / value
            assert gap < 1e-6, (q, sigma, alpha, value, series)
            # The nearest double (Rust's shortest round-trip form), as the test holds it.
            print(f"    ({q!r}, {sigma!r}, {alpha!r}, {float(value)!r}), // series gap {mp.nstr(gap, 2)}")
    # The ε at δ = 1e-5 of one step at q = 1/4, σ = 1.5 over Opacus' orders up to 63
    # (1.1, 1.2, …, 10.9, 12, …, 63), by the Balle et al. 2020 conversion Opacus uses.
    q, sigma, delta = 0.25, 1.5, mp.mpf("1e-5")
    orders = [1 + x / 10 for x in range(1, 100)] + list(range(12, 64))
    best = None
    for alpha in orders:
        a = mp.mpf(alpha)
        r = rdp(q, sigma, alpha)
        eps = r + mp.log((a - 1) / a) - (mp.log(delta) + mp.log(a)) / (a - 1)
        if best is None or eps < best[0]:
            best = (eps, alpha)
    assert best[1] not in (orders[0], orders[-1]), best
    print(f"// Opacus orders, q = {q}, sigma = {sigma}, delta = 1e-5: epsilon {float(best[0])!r} at order {best[1]}")


if __name__ == "__main__":
    main()
