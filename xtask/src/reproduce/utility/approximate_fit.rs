//! Fitting the (ε, δ) rules on synthetic data only: Gaussian objective and output
//! perturbation's `Λ = κ·d^a·(z/n)^p` (z the noise multiplier the mechanism reports), and
//! DP-SGD's setting per ε. The problems are the pure-ε rules' family ([`family`]); neither
//! Adult nor KDD is read.

use dp_datasets::{TabularShape, tabular_mixed};
use dp_erm::{
    Classifier, DpSgd, DpSgdRule, Examples, GaussianErm, GaussianMechanism, GaussianRule, Loss,
    SgdSchedule, TrainingSet,
};
use dp_noise::{InsecureSeededRng, Neighbouring};
use rayon::prelude::*;
use serde::Serialize;

use super::grid;
use super::rule_fit::{Regret, family};

/// The δ of every (ε, δ) result of the study.
pub const DELTA: f64 = 1e-5;

/// Test rows drawn beside each synthetic training set.
const TEST_ROWS: usize = 10_000;

/// The Gaussian mechanisms a Λ rule is fitted for.
pub const MECHANISMS: [GaussianMechanism; 2] = [
    GaussianMechanism::ObjectivePerturbation,
    GaussianMechanism::OutputPerturbation,
];

pub fn mechanism_label(mechanism: GaussianMechanism) -> &'static str {
    match mechanism {
        GaussianMechanism::ObjectivePerturbation => "Gaussian objective perturbation",
        GaussianMechanism::OutputPerturbation => "Gaussian output perturbation",
    }
}

/// The library's rule for a mechanism.
pub fn library_rule(mechanism: GaussianMechanism) -> GaussianRule {
    match mechanism {
        GaussianMechanism::ObjectivePerturbation => GaussianRule::OBJECTIVE,
        GaussianMechanism::OutputPerturbation => GaussianRule::OUTPUT,
    }
}

/// The trainer of `mechanism` at Λ, (ε, δ = [`DELTA`]), logistic loss.
pub fn gaussian(mechanism: GaussianMechanism, lambda: f64, epsilon: f64) -> GaussianErm {
    match mechanism {
        GaussianMechanism::ObjectivePerturbation => {
            GaussianErm::objective_perturbation(Loss::Logistic, lambda, epsilon, DELTA)
        }
        GaussianMechanism::OutputPerturbation => {
            GaussianErm::output_perturbation(Loss::Logistic, lambda, epsilon, DELTA)
        }
    }
}

/// The fitted Λ rule of one mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct GaussianFit {
    pub mechanism: String,
    pub scale: f64,
    pub features_exponent: f64,
    pub noise_exponent: f64,
    pub regret: Regret,
    /// The regret of the library's constants on the same curves.
    pub library_regret: Regret,
}

/// DP-SGD's fitted setting at one ε.
#[derive(Debug, Clone, Serialize)]
pub struct SgdSettingFit {
    pub epsilon: f64,
    pub config: SgdSchedule,
    pub mean_regret: f64,
    /// The mean regret of the library's rule's setting at this ε (`NaN` where it is not on
    /// the grid).
    pub library_regret: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApproximateRuleFit {
    pub problems: usize,
    pub gaussian_rows: Vec<usize>,
    pub gaussian_epsilons: Vec<f64>,
    pub gaussian: Vec<GaussianFit>,
    pub sgd_rows: usize,
    pub sgd: Vec<SgdSettingFit>,
    pub seconds: f64,
}

/// DP-SGD's grid: batch × epochs × (η, C). The step's size goes with C (the clipped
/// gradients are C times smaller), so each C has its own rates: ηC = 8 and 32, and for
/// C = 0.25 also ηC = 16, whose configurations come last (added after the others were run,
/// so that theirs keep their places and seeds).
pub fn sgd_grid(quick: bool) -> Vec<SgdSchedule> {
    type Steps = &'static [(f64, f64)];
    let (batches, epochs, steps, added): (&[usize], &[usize], Steps, Steps) = if quick {
        (&[4096, 32768], &[10], &[(8.0, 1.0), (32.0, 0.25)], &[])
    } else {
        (
            &[1024, 4096, 16384, 32768],
            &[20, 50, 200],
            &[(8.0, 1.0), (32.0, 1.0), (32.0, 0.25), (128.0, 0.25)],
            &[(64.0, 0.25)],
        )
    };
    let mut grid = Vec::new();
    for steps in [steps, added] {
        for &batch in batches {
            for &epochs in epochs {
                for &(learning_rate, clip_norm) in steps {
                    grid.push(SgdSchedule {
                        batch,
                        epochs,
                        learning_rate,
                        clip_norm,
                    });
                }
            }
        }
    }
    grid
}

/// DP-SGD (logistic, averaged iterates) with `config` on `rows` rows, σ calibrated to
/// (ε, [`DELTA`]) replace-one.
pub fn sgd(rows: usize, config: SgdSchedule, epsilon: f64) -> DpSgd {
    sgd_with(rows, config, epsilon, Neighbouring::ReplaceOne).expect("a valid grid configuration")
}

/// As [`sgd`], σ calibrated to (ε, [`DELTA`]) for `relation`: under add/remove the library's
/// add/remove DP-SGD on the public n̂ = `rows` (each step divided by the expected batch),
/// for comparison with outside numbers (Opacus' relation).
pub fn sgd_with(
    rows: usize,
    c: SgdSchedule,
    epsilon: f64,
    relation: Neighbouring,
) -> Result<DpSgd, dp_erm::ErmError> {
    DpSgd::for_target(c.config_for(rows, DELTA, relation)?, epsilon)
}

/// Test error of one DP-SGD fit (1 where it diverged).
pub fn sgd_error(sgd: &DpSgd, train: &Examples, test: &Examples, seed: u64) -> f64 {
    match sgd.fit(train, &mut InsecureSeededRng::new(seed)) {
        Ok(model) => model
            .mistakes(test)
            .map_or(1.0, |m| m as f64 / test.len() as f64),
        Err(_) => 1.0,
    }
}

/// Test error of one Gaussian fit (`None`: refused).
pub fn gaussian_error(
    trainer: &GaussianErm,
    train: &TrainingSet,
    test: &TrainingSet,
    seed: u64,
) -> Option<f64> {
    let (model, _) = trainer.fit(train, &mut InsecureSeededRng::new(seed)).ok()?;
    model.error_rate(test).ok()
}

/// One (problem, n, ε) error curve of a Gaussian mechanism: per Λ (ascending), ln Λ, the
/// mean error and ln z at Λ.
struct Curve {
    rows: usize,
    features: usize,
    points: Vec<(f64, f64, f64)>,
    best: f64,
}

impl Curve {
    /// The error at the rule's fixed point `ln Λ − p·ln z(Λ) = ln κ + a ln d − p ln n`, with
    /// ln z and the error linear in ln Λ between grid points (clamped at the ends).
    fn error_at(&self, log_scale: f64, a: f64, p: f64) -> f64 {
        let target = log_scale + a * (self.features as f64).ln() - p * (self.rows as f64).ln();
        let h = |k: usize| self.points[k].0 - p * self.points[k].2;
        let last = self.points.len() - 1;
        if target <= h(0) {
            return self.points[0].1;
        }
        for k in 0..last {
            let (lo, hi) = (h(k), h(k + 1));
            if target <= hi && hi > lo {
                let t = (target - lo) / (hi - lo);
                return self.points[k].1 + t * (self.points[k + 1].1 - self.points[k].1);
            }
        }
        self.points[last].1
    }
}

/// Runs both synthetic sweeps and fits the rules.
pub fn run(quick: bool, seed: u64) -> Result<ApproximateRuleFit, Box<dyn std::error::Error>> {
    let started = std::time::Instant::now();
    let shapes = family(if quick { 3 } else { 8 }, seed);
    let sizes: &[usize] = if quick {
        &[2_000, 8_000]
    } else {
        &[2_000, 6_000, 20_000]
    };
    let epsilons: &[f64] = if quick {
        &[0.1, 0.5, 2.0]
    } else {
        &[0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
    };
    let lambdas: Vec<f64> = grid::log_grid(0, 6, if quick { 2 } else { 3 })
        .into_iter()
        .rev()
        .collect();
    let draws = if quick { 1 } else { 2 };
    let mut curves: Vec<Vec<Curve>> = MECHANISMS.iter().map(|_| Vec::new()).collect();
    for (p, shape) in shapes.iter().enumerate() {
        for (s, &rows) in sizes.iter().enumerate() {
            let data_seed = seed ^ (((p * 16 + s) as u64 + 1) << 24);
            let (train, test) = synthetic(shape, rows, data_seed)?;
            let d = train.features();
            for (m, &mechanism) in MECHANISMS.iter().enumerate() {
                let tasks: Vec<(f64, f64)> = epsilons
                    .iter()
                    .flat_map(|&e| lambdas.iter().map(move |&l| (e, l)))
                    .collect();
                let results: Vec<Option<(f64, f64)>> = tasks
                    .par_iter()
                    .enumerate()
                    .map(|(k, &(epsilon, lambda))| {
                        let trainer = gaussian(mechanism, lambda, epsilon);
                        let c = trainer.calibration(rows, d).ok()?;
                        let mut total = 0.0;
                        for draw in 0..draws {
                            total += gaussian_error(
                                &trainer,
                                &train,
                                &test,
                                data_seed + (k * 8 + draw) as u64,
                            )?;
                        }
                        Some((total / draws as f64, (c.sigma / c.l2_sensitivity).ln()))
                    })
                    .collect();
                for &epsilon in epsilons {
                    let points: Vec<(f64, f64, f64)> = tasks
                        .iter()
                        .zip(&results)
                        .filter(|((e, _), _)| *e == epsilon)
                        .filter_map(|((_, l), r)| r.map(|(err, z)| (l.ln(), err, z)))
                        .collect();
                    if points.len() < 2 {
                        continue;
                    }
                    let best = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                    curves[m].push(Curve {
                        rows,
                        features: d,
                        points,
                        best,
                    });
                }
            }
        }
    }
    let gaussian = MECHANISMS
        .iter()
        .zip(&curves)
        .map(|(&mechanism, curves)| fit_gaussian(mechanism, curves))
        .collect();
    let (sgd_rows, sgd) = fit_sgd(quick, seed)?;
    Ok(ApproximateRuleFit {
        problems: shapes.len(),
        gaussian_rows: sizes.to_vec(),
        gaussian_epsilons: epsilons.to_vec(),
        gaussian,
        sgd_rows,
        sgd,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// A synthetic problem's training and test sets.
fn synthetic(
    shape: &TabularShape,
    rows: usize,
    seed: u64,
) -> Result<(TrainingSet, TrainingSet), Box<dyn std::error::Error>> {
    let data = tabular_mixed(rows + TEST_ROWS, shape, seed)?;
    let train = data.training_set(&(0..rows).collect::<Vec<_>>())?;
    let test = data.training_set(&(rows..data.len()).collect::<Vec<_>>())?;
    Ok((train, test))
}

/// The (κ, a, p) of least mean regret: a on quarters from 0 to 1.5, p on eighths from 0.25
/// to 2, ln κ on tenths of a decade over 8 decades around the central cell's best.
fn fit_gaussian(mechanism: GaussianMechanism, curves: &[Curve]) -> GaussianFit {
    let regrets = |log_scale: f64, a: f64, p: f64| -> Vec<f64> {
        curves
            .iter()
            .map(|c| c.error_at(log_scale, a, p) - c.best)
            .collect()
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut best = (f64::INFINITY, 0.0, 0.0, 0.0);
    for ai in 0..=6 {
        let a = ai as f64 * 0.25;
        for pi in 2..=16 {
            let p = pi as f64 * 0.125;
            // Centre: Λ = 10⁻³ at d = 100, n = 10⁴, z = 10.
            let centre = 1e-3f64.ln() - a * 100f64.ln() - p * (10f64.ln() - 1e4f64.ln());
            for k in -40..=40 {
                let log_scale = centre + k as f64 * 0.1 * 10f64.ln();
                let m = mean(&regrets(log_scale, a, p));
                if m < best.0 {
                    best = (m, log_scale, a, p);
                }
            }
        }
    }
    let (_, log_scale, a, p) = best;
    let library = library_rule(mechanism);
    GaussianFit {
        mechanism: mechanism_label(mechanism).into(),
        scale: log_scale.exp(),
        features_exponent: a,
        noise_exponent: p,
        regret: Regret::of(regrets(log_scale, a, p)),
        library_regret: Regret::of(regrets(
            library.scale.ln(),
            library.features_exponent,
            library.noise_exponent,
        )),
    }
}

/// DP-SGD's setting per ε: the grid configuration of least mean regret over the problems.
pub(crate) fn fit_sgd(
    quick: bool,
    seed: u64,
) -> Result<(usize, Vec<SgdSettingFit>), Box<dyn std::error::Error>> {
    let rows = if quick { 10_000 } else { 30_000 };
    let shapes = family(if quick { 2 } else { 4 }, seed ^ 0x59d);
    let epsilons: &[f64] = if quick {
        &[0.1, 1.0]
    } else {
        &[0.1, 0.2, 0.5, 1.0, 2.0]
    };
    let configs = sgd_grid(quick);
    // Noise draws per cell: with one, the regret of a configuration moved by up to 0.01
    // when only the seeds changed, enough to change the choice.
    let draws: u64 = if quick { 1 } else { 2 };
    // Draw j of (problem, configuration) is seeded by seed + 64·problem + configuration
    // + j·2²⁰ (the first draw's seeds are the one-draw fit's).
    assert!(configs.len() <= 64, "seeds would repeat across problems");
    let mut problems = Vec::new();
    for (p, shape) in shapes.iter().enumerate() {
        let (train, test) = synthetic(shape, rows, seed ^ ((p as u64 + 1) << 28))?;
        problems.push((train.to_examples(), test.to_examples()));
    }
    let mut fits = Vec::new();
    for &epsilon in epsilons {
        // errors[problem][config]
        let errors: Vec<Vec<f64>> = problems
            .iter()
            .enumerate()
            .map(|(p, (train, test))| {
                configs
                    .par_iter()
                    .enumerate()
                    .map(|(k, &c)| {
                        let trainer = sgd(rows, c, epsilon);
                        (0..draws)
                            .map(|j| {
                                let draw_seed = seed + (p * 64 + k) as u64 + (j << 20);
                                sgd_error(&trainer, train, test, draw_seed)
                            })
                            .sum::<f64>()
                            / draws as f64
                    })
                    .collect()
            })
            .collect();
        let regret_of = |k: usize| {
            errors
                .iter()
                .map(|e| e[k] - e.iter().cloned().fold(f64::INFINITY, f64::min))
                .sum::<f64>()
                / errors.len() as f64
        };
        let chosen = (0..configs.len())
            .min_by(|&a, &b| regret_of(a).total_cmp(&regret_of(b)))
            .expect("a non-empty grid");
        let library = DpSgdRule::FITTED.setting(epsilon)?.schedule;
        let library_regret = configs
            .iter()
            .position(|c| *c == library)
            .map_or(f64::NAN, regret_of);
        fits.push(SgdSettingFit {
            epsilon,
            config: configs[chosen],
            mean_regret: regret_of(chosen),
            library_regret,
        });
    }
    Ok((rows, fits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed point of a curve whose z does not depend on Λ is the formula's Λ, and the
    /// error is interpolated there.
    #[test]
    fn curve_reads_the_error_at_the_fixed_point() {
        let z = 4f64.ln();
        let curve = Curve {
            rows: 100,
            features: 10,
            points: vec![
                (1e-4f64.ln(), 0.3, z),
                (1e-3f64.ln(), 0.2, z),
                (1e-2f64.ln(), 0.4, z),
            ],
            best: 0.2,
        };
        // κ·d^a·(z/n)^p with κ = 10⁻³·25, a = 0, p = 1: Λ = 10⁻³.
        let at = curve.error_at((1e-3f64 * 25.0).ln(), 0.0, 1.0);
        assert!((at - 0.2).abs() < 1e-12, "{at}");
        // Half-way (in ln Λ) between 10⁻³ and 10⁻²: the mean of 0.2 and 0.4.
        let at = curve.error_at((10f64.powf(-2.5) * 25.0).ln(), 0.0, 1.0);
        assert!((at - 0.3).abs() < 1e-9, "{at}");
        // Beyond the grid: the end's error.
        assert_eq!(curve.error_at(0.0, 0.0, 1.0), 0.4);
        assert_eq!(curve.error_at(-50.0, 0.0, 1.0), 0.3);
    }

    /// A configuration's seeds follow its place in the grid: the 48 configurations run before
    /// η = 64 joined keep theirs (batch × epochs × (η, C), in that order), the added ones
    /// come after, and the rule fit's seeds stay distinct (at most 64).
    #[test]
    fn added_configurations_come_after_the_earlier_grid() {
        let grid = sgd_grid(false);
        assert!(grid.len() <= 64);
        let mut earlier = Vec::new();
        for batch in [1024, 4096, 16384, 32768] {
            for epochs in [20, 50, 200] {
                for (learning_rate, clip_norm) in
                    [(8.0, 1.0), (32.0, 1.0), (32.0, 0.25), (128.0, 0.25)]
                {
                    earlier.push(SgdSchedule {
                        batch,
                        epochs,
                        learning_rate,
                        clip_norm,
                    });
                }
            }
        }
        assert_eq!(grid[..48], earlier[..]);
        assert_eq!(grid.len(), 60);
        assert!(
            grid[48..]
                .iter()
                .all(|c| (c.learning_rate, c.clip_norm) == (64.0, 0.25))
        );
    }
}
