//! Fitting the data-independent Λ rule on synthetic data only: for each synthetic problem,
//! size and ε, the error curve over a fine Λ grid; then per loss the κ and p of
//! `Λ = κ·(d/(nε))^p` that lose least against each problem's best Λ (mean regret), and the
//! loss whose rule loses least.

use dp_datasets::{Dataset, noisy_linear, tabular};
use dp_erm::{ObjectiveCalibration, RegularizationRule};
use serde::Serialize;

use super::grid::{self, GridCell, Protocol};
use super::variant::{Lever, Variant};

/// Test rows drawn beside each synthetic training set (one split, no folds: the data are
/// fresh draws).
const TEST_ROWS: usize = 10_000;

/// A synthetic problem.
#[derive(Clone, Copy)]
enum Problem {
    /// [`tabular`]: attributes × categories one-hot, numeric columns, label sharpness.
    Tabular(usize, usize, usize, f64),
    /// [`noisy_linear`]: dimension, share of flipped labels.
    NoisyLinear(usize, f64),
}

impl Problem {
    fn name(self) -> String {
        match self {
            Self::Tabular(a, c, k, s) => {
                format!(
                    "tabular {a}×{c} + {k} numeric (d = {}), sharpness {s}",
                    a * c + k
                )
            }
            Self::NoisyLinear(d, flip) => format!("noisy linear d = {d}, {}% flips", flip * 100.0),
        }
    }

    fn generate(self, rows: usize, seed: u64) -> Result<Dataset, dp_datasets::DatasetError> {
        match self {
            Self::Tabular(a, c, k, s) => tabular(rows, a, c, k, s, seed),
            Self::NoisyLinear(d, flip) => noisy_linear(rows, d, flip, seed),
        }
    }
}

/// Problems from hard (labels barely predictable, small comparator norm) to nearly
/// separable (large norm): the best Λ depends on the comparator's norm, which a rule that
/// reads no data cannot know, so the sweep spans the range. Quick mode runs the first three.
const PROBLEMS: [Problem; 8] = [
    Problem::Tabular(8, 8, 4, 1.5),
    Problem::Tabular(8, 8, 4, 5.0),
    Problem::NoisyLinear(10, 0.1),
    Problem::Tabular(4, 5, 2, 1.5),
    Problem::Tabular(4, 5, 2, 5.0),
    Problem::Tabular(12, 16, 4, 1.5),
    Problem::NoisyLinear(50, 0.1),
    Problem::NoisyLinear(10, 0.02),
];

/// The losses the rule may use, each under the cliff-free calibration.
pub const WIDTHS: [Option<f64>; 4] = [None, Some(0.5), Some(1.0), Some(2.0)];
/// The losses fitted again with the noise shaped to the one-hot groups.
pub const GROUPED_WIDTHS: [Option<f64>; 2] = [None, Some(1.0)];

/// The (loss, lever) pairs the sweep fits a rule for.
fn fitted_variants() -> Vec<Variant> {
    let euclidean = WIDTHS
        .iter()
        .map(|&h| Variant::new(h, ObjectiveCalibration::CliffFree, Lever::Paper));
    let grouped = GROUPED_WIDTHS
        .iter()
        .map(|&h| Variant::new(h, ObjectiveCalibration::CliffFree, Lever::GroupNoise));
    euclidean.chain(grouped).collect()
}

/// Best Λ of one (problem, n, loss, ε).
#[derive(Debug, Clone, Serialize)]
pub struct BestLambda {
    pub problem: String,
    pub rows: usize,
    pub features: usize,
    pub loss: String,
    pub huber_width: Option<f64>,
    pub epsilon: f64,
    pub lambda: f64,
    pub error: f64,
}

/// The fitted rule for one loss.
#[derive(Debug, Clone, Serialize)]
pub struct LossFit {
    pub loss: String,
    pub huber_width: Option<f64>,
    /// Fitted with the noise shaped to the one-hot groups.
    pub grouped: bool,
    /// κ and p of `Λ = κ·(d/(nε))^p` with the least mean regret.
    pub scale: f64,
    pub exponent: f64,
    /// Least-squares slope of `ln Λ*` on `ln(d/(nε))`, for reference (grid-edge optima,
    /// where the curve is flat or the model trivial, pull it).
    pub slope: f64,
    /// Mean over (problem, n, ε) of the error at the rule's Λ (interpolated on the grid)
    /// minus the best error on the grid, with the fitted κ and p.
    pub mean_regret: f64,
    /// The best κ with p = 1 (the theory's shape) and its regret.
    pub linear_scale: f64,
    pub linear_regret: f64,
    /// The regret of the library's rule with this loss (`RegularizationRule::GROUPED` for
    /// the group-shaped noise, `DEFAULT` otherwise).
    pub library_regret: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleFit {
    pub best: Vec<BestLambda>,
    pub losses: Vec<LossFit>,
    /// The library's κ, p and Huber width.
    pub library: (f64, f64, f64),
    /// The loss with the smallest mean regret, its κ and p.
    pub chosen: (Option<f64>, f64, f64),
    /// The same among the fits with group-shaped noise.
    pub chosen_grouped: (Option<f64>, f64, f64),
}

/// Runs the synthetic sweep and fits the rule.
pub fn run(quick: bool, seed: u64) -> Result<RuleFit, Box<dyn std::error::Error>> {
    let sizes: &[usize] = if quick {
        &[4_000, 16_000]
    } else {
        &[4_000, 16_000, 64_000]
    };
    let epsilons = [0.05, 0.1, 0.2, 0.5, 1.0];
    let lambdas = grid::log_grid(0, 6, 2);
    let variants = fitted_variants();
    let mut all: Vec<(usize, usize, Vec<GridCell>, String)> = Vec::new();
    let problems = if quick { &PROBLEMS[..3] } else { &PROBLEMS[..] };
    for (p, problem) in problems.iter().enumerate() {
        for (s, &rows) in sizes.iter().enumerate() {
            let data_seed = seed ^ ((p * 16 + s) as u64 + 1) << 20;
            let data = problem.generate(rows + TEST_ROWS, data_seed)?;
            let d = data.features();
            // One split: the first `rows` rows train, the rest test (fresh i.i.d. draws).
            let protocol = Protocol {
                variants: &variants,
                lambdas: &lambdas,
                epsilons: &epsilons,
                folds: 1,
                draws: 2,
                seed: data_seed,
            };
            let cells = grid::run_split(&data, rows, &protocol)?;
            all.push((rows, d, cells, problem.name()));
        }
    }
    Ok(fit(&all, &epsilons))
}

/// One (problem, n, ε): `d/(nε)`, the error at each Λ of the grid, the best error.
type Curve = (f64, Vec<(f64, f64)>, f64);

/// Best Λ per (problem, n, loss, ε) and the fitted rule per loss.
fn fit(all: &[(usize, usize, Vec<GridCell>, String)], epsilons: &[f64]) -> RuleFit {
    let mut best = Vec::new();
    let mut losses = Vec::new();
    let library = RegularizationRule::DEFAULT;
    for fitted in fitted_variants() {
        let (width, lever) = (fitted.huber_width, fitted.lever);
        let mut points: Vec<(f64, f64)> = Vec::new(); // (ln(d/(nε)), ln Λ*)
        let mut curves: Vec<Curve> = Vec::new();
        for (rows, d, cells, problem) in all {
            for &epsilon in epsilons {
                let mut curve: Vec<(f64, f64)> = cells
                    .iter()
                    .filter(|c| {
                        c.variant.huber_width == width
                            && c.variant.lever == lever
                            && c.epsilon == epsilon
                    })
                    .map(|c| (c.lambda, c.mean_error))
                    .collect();
                curve.sort_by(|a, b| a.0.total_cmp(&b.0));
                let Some(&(lambda, error)) = curve.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
                    continue;
                };
                let ratio = *d as f64 / (*rows as f64 * epsilon);
                points.push((ratio.ln(), lambda.ln()));
                curves.push((ratio, curve, error));
                best.push(BestLambda {
                    problem: problem.clone(),
                    rows: *rows,
                    features: *d,
                    loss: fitted.label(),
                    huber_width: width,
                    epsilon,
                    lambda,
                    error,
                });
            }
        }
        let regret = |scale: f64, exponent: f64| {
            let total: f64 = curves
                .iter()
                .map(|(ratio, curve, best)| interpolate(curve, scale * ratio.powf(exponent)) - best)
                .sum();
            total / curves.len().max(1) as f64
        };
        // κ on a grid of 20 steps per decade from 1e-4 to 1e2, p in quarter steps.
        let fit_scale = |exponent: f64| {
            (-80..=40)
                .map(|k| 10f64.powf(k as f64 / 20.0))
                .map(|scale| (scale, regret(scale, exponent)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("a non-empty grid")
        };
        let (scale, exponent, mean_regret) = [1.0, 1.25, 1.5, 1.75, 2.0]
            .into_iter()
            .map(|p| {
                let (scale, regret) = fit_scale(p);
                (scale, p, regret)
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .expect("five exponents");
        let (linear_scale, linear_regret) = fit_scale(1.0);
        losses.push(LossFit {
            loss: fitted.label(),
            huber_width: width,
            grouped: lever == Lever::GroupNoise,
            scale,
            exponent,
            slope: slope(&points),
            mean_regret,
            linear_scale,
            linear_regret,
            library_regret: {
                let rule = if lever == Lever::GroupNoise {
                    RegularizationRule::GROUPED
                } else {
                    library
                };
                regret(rule.scale, rule.exponent)
            },
        });
    }
    let choose = |grouped: bool| {
        losses
            .iter()
            .filter(|l| l.grouped == grouped)
            .min_by(|a, b| a.mean_regret.total_cmp(&b.mean_regret))
            .map_or((None, f64::NAN, f64::NAN), |l| {
                (l.huber_width, l.scale, l.exponent)
            })
    };
    RuleFit {
        best,
        chosen: choose(false),
        chosen_grouped: choose(true),
        losses,
        library: (library.scale, library.exponent, library.huber_width),
    }
}

/// The error curve at Λ, linear in ln Λ between grid points, flat beyond its ends.
pub fn interpolate(curve: &[(f64, f64)], lambda: f64) -> f64 {
    let (first, last) = (curve[0], curve[curve.len() - 1]);
    if lambda <= first.0 {
        return first.1;
    }
    if lambda >= last.0 {
        return last.1;
    }
    let k = curve.partition_point(|p| p.0 < lambda);
    let (a, b) = (curve[k - 1], curve[k]);
    let t = (lambda.ln() - a.0.ln()) / (b.0.ln() - a.0.ln());
    a.1 + t * (b.1 - a.1)
}

/// Least-squares slope of y on x.
fn slope(points: &[(f64, f64)]) -> f64 {
    let k = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x / k, sy + y / k));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), (x, y)| {
        (sxy + (x - mx) * (y - my), sxx + (x - mx).powi(2))
    });
    sxy / sxx
}
