//! `cargo xtask audit-noise`: goodness of fit of every dp-noise sampler, at a chosen power.
//!
//! The unit tests run the same kinds of checks at fixed, modest sample sizes (with mutation
//! checks beside them); this audit lets a researcher re-run them with many more draws and
//! keeps a record: one row per check with the statistic, its critical value at a false-alarm
//! rate of 1e-6, the verdict and the wall time.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use dp_noise::stats::{self, FALSE_ALARM_RATE, KsTest};
use dp_noise::{
    DiscreteLaplace, ExponentialMechanism, GammaNormVector, InsecureSeededRng, Laplace, NoiseError,
};
use statrs::distribution::{ContinuousCDF, Gamma, StudentsT};

use crate::keep::{self, Holdings};

/// The report files, in the output folder.
const AUDIT_FILES: [&str; 2] = ["noise_audit.md", "noise_audit.csv"];

/// One line of the report.
struct Check {
    sampler: &'static str,
    parameters: String,
    test: &'static str,
    draws: usize,
    statistic: f64,
    critical_value: f64,
    /// The test's own verdict (a chi-square test also checks its pooled rare cells).
    passes: bool,
    seconds: f64,
}

impl Check {
    /// A KS check; the time is filled in by [`timed`].
    fn from_ks(sampler: &'static str, parameters: String, test: &'static str, ks: &KsTest) -> Self {
        Self {
            sampler,
            parameters,
            test,
            draws: ks.samples,
            statistic: ks.statistic,
            critical_value: ks.critical_value,
            passes: ks.passes(),
            seconds: 0.0,
        }
    }
}

/// Runs the audit; `Ok(false)` when a check failed.
/// `out` is created and probed before the first draw, so a bad `--out` fails at once.
pub fn run(quick: bool, seed: u64, out: &Path) -> Result<bool, Box<dyn std::error::Error>> {
    // The report's header records the mode (see `markdown`): a quick audit does not replace
    // a full one.
    let earlier = |out: &Path| {
        let report = std::fs::read_to_string(out.join(AUDIT_FILES[0])).ok()?;
        ["quick", "full"]
            .into_iter()
            .find(|mode| report.contains(&format!(", mode {mode}, seed")))
            .map(Holdings::from_mode)
    };
    let out = keep::destination(out, &AUDIT_FILES, &Holdings::new(quick), earlier)?;
    let scale = if quick { 1 } else { 40 };
    let mut rng = InsecureSeededRng::new(seed);
    let mut checks = Vec::new();
    let beta = 2.5;

    for dim in [1usize, 2, 3, 5, 1000, 100_000] {
        let draws = scale * if dim >= 100_000 { 500 } else { 5000 };
        checks.push(timed(|| vector_norm(dim, beta, draws, &mut rng))?);
    }
    for dim in [3usize, 1000] {
        checks.push(timed(|| {
            vector_direction(dim, beta, scale * 5000, &mut rng)
        })?);
    }
    checks.push(timed(|| {
        vector_marginal_d3(beta, scale * 20_000, &mut rng)
    })?);
    for scale_param in [0.75, 3.0, 1e4] {
        checks.push(timed(|| {
            discrete_laplace(scale_param, scale * 20_000, &mut rng)
        })?);
    }
    checks.push(timed(|| {
        laplace_release(0.5, 1.0, 0.37, scale * 20_000, &mut rng)
    })?);
    checks.push(timed(|| {
        exponential(
            &[0.0, -2.0, -4.0, -6.0, -8.0, -10.0],
            scale * 200_000,
            &mut rng,
        )
    })?);

    let all_pass = checks.iter().all(|c| c.passes);
    let report = markdown(&checks, quick, seed);
    print!("{report}");
    out.write(AUDIT_FILES[0], &report)?;
    out.write(AUDIT_FILES[1], csv(&checks))?;
    println!(
        "\nwrote {} and {} in {}",
        AUDIT_FILES[0],
        AUDIT_FILES[1],
        out.path().display()
    );
    Ok(all_pass)
}

fn timed(f: impl FnOnce() -> Result<Check, NoiseError>) -> Result<Check, NoiseError> {
    let start = Instant::now();
    let mut check = f()?;
    check.seconds = start.elapsed().as_secs_f64();
    Ok(check)
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// ‖b‖ against Gamma(d, scale 1/β) (statrs takes the rate β).
fn vector_norm(
    dim: usize,
    beta: f64,
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let noise = GammaNormVector::new(dim, beta)?;
    let law = Gamma::new(dim as f64, beta).expect("valid Gamma");
    let norms: Vec<f64> = (0..draws).map(|_| norm(&noise.sample(rng))).collect();
    let ks = stats::ks_test(&norms, |r| law.cdf(r), FALSE_ALARM_RATE);
    Ok(Check::from_ks(
        "GammaNormVector",
        format!("d={dim}, beta={beta}"),
        "KS: norm ~ Gamma(d, 1/beta)",
        &ks,
    ))
}

/// sqrt(d−1)·u₁/sqrt(1−u₁²) against Student-t(d−1).
fn vector_direction(
    dim: usize,
    beta: f64,
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let noise = GammaNormVector::new(dim, beta)?;
    let law = StudentsT::new(0.0, 1.0, (dim - 1) as f64).expect("valid Student-t");
    let ts: Vec<f64> = (0..draws)
        .map(|_| {
            let b = noise.sample(rng);
            let u1 = b[0] / norm(&b);
            ((dim - 1) as f64).sqrt() * u1 / (1.0 - u1 * u1).sqrt()
        })
        .collect();
    let ks = stats::ks_test(&ts, |t| law.cdf(t), FALSE_ALARM_RATE);
    Ok(Check::from_ks(
        "GammaNormVector",
        format!("d={dim}, beta={beta}"),
        "KS: direction, Student-t(d-1)",
        &ks,
    ))
}

/// At d = 3, bᵀe has CDF 1 − ¼(2+βt)e^{−βt} for t ≥ 0 (symmetric).
fn vector_marginal_d3(
    beta: f64,
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let noise = GammaNormVector::new(3, beta)?;
    let e = 1.0 / 3f64.sqrt();
    let projections: Vec<f64> = (0..draws)
        .map(|_| noise.sample(rng).iter().sum::<f64>() * e)
        .collect();
    let cdf = |t: f64| {
        let upper = 0.25 * (2.0 + beta * t.abs()) * (-beta * t.abs()).exp();
        if t >= 0.0 { 1.0 - upper } else { upper }
    };
    let ks = stats::ks_test(&projections, cdf, FALSE_ALARM_RATE);
    Ok(Check::from_ks(
        "GammaNormVector",
        format!("d=3, beta={beta}"),
        "KS: marginal along (1,1,1)/sqrt(3)",
        &ks,
    ))
}

fn discrete_laplace(
    scale: f64,
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let dist = DiscreteLaplace::with_scale_at_least(scale)?;
    let xs: Vec<i64> = (0..draws).map(|_| dist.sample(rng) as i64).collect();
    let ks = stats::ks_test_integer(&xs, |k| dist.cdf(k), FALSE_ALARM_RATE);
    Ok(Check::from_ks(
        "DiscreteLaplace",
        format!("scale={scale}"),
        "KS: exact discrete CDF",
        &ks,
    ))
}

/// Releases in grid units against m + DLap(t), the exact law of the snapping mechanism.
fn laplace_release(
    epsilon: f64,
    sensitivity: f64,
    value: f64,
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let mechanism = Laplace::new(epsilon, sensitivity)?;
    let centre = mechanism.grid_index(value)?;
    let units = (0..draws)
        .map(|_| Ok((mechanism.release(value, rng)? / mechanism.grid()) as i128 - centre))
        .collect::<Result<Vec<i128>, NoiseError>>()?;
    let units: Vec<i64> = units.into_iter().map(|u| u as i64).collect();
    let ks = stats::ks_test_integer(&units, |k| mechanism.noise().cdf(k), FALSE_ALARM_RATE);
    Ok(Check::from_ks(
        "Laplace",
        format!("eps={epsilon}, sensitivity={sensitivity}, value={value}"),
        "KS: exact law on the output grid",
        &ks,
    ))
}

fn exponential(
    utilities: &[f64],
    draws: usize,
    rng: &mut InsecureSeededRng,
) -> Result<Check, NoiseError> {
    let mechanism = ExponentialMechanism::new(2.0, 1.0)?;
    let probabilities = mechanism.selection_probabilities(utilities)?;
    let mut counts = vec![0u64; utilities.len()];
    for _ in 0..draws {
        counts[mechanism.select(utilities, rng)?] += 1;
    }
    let expected: Vec<f64> = probabilities.iter().map(|p| p * draws as f64).collect();
    let test = stats::chi_square_test(&counts, &expected, FALSE_ALARM_RATE);
    Ok(Check {
        sampler: "ExponentialMechanism",
        parameters: format!("eps=2, sensitivity=1, utilities={utilities:?}"),
        test: "chi-square: selection frequencies",
        draws,
        statistic: test.statistic,
        critical_value: test.critical_value,
        passes: test.passes(),
        seconds: 0.0,
    })
}

fn markdown(checks: &[Check], quick: bool, seed: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# dp-noise sampler audit\n");
    let _ = writeln!(
        s,
        "dp-noise {}, mode {}, seed {seed} (insecure seeded generator, for reproducibility), \
         false-alarm rate {FALSE_ALARM_RATE} per check.\n",
        env!("CARGO_PKG_VERSION"),
        if quick { "quick" } else { "full" },
    );
    let _ = writeln!(
        s,
        "| sampler | parameters | test | draws | statistic | critical | verdict | seconds |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for c in checks {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.5} | {:.5} | {} | {:.2} |",
            c.sampler,
            c.parameters,
            c.test,
            c.draws,
            c.statistic,
            c.critical_value,
            if c.passes { "pass" } else { "FAIL" },
            c.seconds
        );
    }
    s
}

fn csv(checks: &[Check]) -> String {
    let mut s =
        String::from("sampler,parameters,test,draws,statistic,critical_value,passes,seconds\n");
    for c in checks {
        let _ = writeln!(
            s,
            "{},\"{}\",\"{}\",{},{},{},{},{}",
            c.sampler,
            c.parameters,
            c.test,
            c.draws,
            c.statistic,
            c.critical_value,
            c.passes,
            c.seconds
        );
    }
    s
}
