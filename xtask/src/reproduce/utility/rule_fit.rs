//! Fitting the data-independent Λ rules on synthetic data only: a family of tabular problems
//! drawn to cover what real tabular data vary in (one-hot group sizes, skewed level
//! frequencies, sparse numeric columns, class balance, label noise), and for each problem,
//! size and ε the error curve over a fine Λ grid; then per (loss, noise shape) the
//! `Λ = κ·d^a/(n^b·ε^c)` that loses least against each problem's best Λ (mean regret), and
//! where private models fall to chance (the outlook's threshold on `d/(nε)`).

use dp_datasets::{Dataset, TabularShape, tabular_mixed};
use dp_erm::{
    ErmParams, GroupedRule, Loss, ObjectiveCalibration, RegularizationRule, UtilityOutlook,
};
use dp_noise::InsecureSeededRng;
use rand::RngExt;
use rayon::prelude::*;
use serde::Serialize;

use super::grid::{self, GridCell, Protocol};
use super::variant::{Lever, Variant, feature_groups};

/// Test rows drawn beside each synthetic training set (one split, no folds: the data are
/// fresh draws).
const TEST_ROWS: usize = 10_000;

/// The ε of the sweep (wider than the study's: the slope in ε is fitted).
const EPSILONS: [f64; 6] = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0];

/// The problems of the family, drawn from `seed`: 3–12 attributes of 2–42 levels
/// (log-uniform), 0–8 numeric columns, level skew 0–1.5, label sharpness 0.5–8
/// (log-uniform: from labels barely predictable to nearly separable), positive share
/// 0.1–0.5. Adult (8 attributes of 2–41 levels, 6 numeric, 24% positive) and KDD lie
/// inside; neither is read.
pub fn family(count: usize, seed: u64) -> Vec<TabularShape> {
    let mut rng = InsecureSeededRng::new(seed ^ 0xfa11);
    let log_uniform = |rng: &mut InsecureSeededRng, lo: f64, hi: f64| {
        (lo.ln() + rng.random_range(0.0..1.0) * (hi / lo).ln()).exp()
    };
    (0..count)
        .map(|_| {
            let attributes = rng.random_range(3..=12usize);
            TabularShape {
                levels: (0..attributes)
                    .map(|_| log_uniform(&mut rng, 2.0, 42.99).floor() as usize)
                    .collect(),
                numeric: rng.random_range(0..=8usize),
                skew: rng.random_range(0.0..1.5),
                sharpness: log_uniform(&mut rng, 0.5, 8.0),
                positive_share: rng.random_range(0.1..0.5),
            }
        })
        .collect()
}

/// Numeric-heavy problems, from their own stream of `seed`: 12–60 numeric columns (each a
/// group of its own) beside 1–3 one-hot attributes of 2–42 levels, every third problem all
/// numeric; skew, sharpness and class balance drawn as in [`family`]. Most of their groups
/// are single columns, so the group-shaped noise is nearly Euclidean there, unlike on the
/// one-hot-heavy problems of [`family`].
pub fn numeric_heavy(count: usize, seed: u64) -> Vec<TabularShape> {
    let mut rng = InsecureSeededRng::new(seed ^ 0x00a1_1c01);
    let log_uniform = |rng: &mut InsecureSeededRng, lo: f64, hi: f64| {
        (lo.ln() + rng.random_range(0.0..1.0) * (hi / lo).ln()).exp()
    };
    (0..count)
        .map(|k| {
            let attributes = if k % 3 == 2 {
                0
            } else {
                rng.random_range(1..=3usize)
            };
            TabularShape {
                levels: (0..attributes)
                    .map(|_| log_uniform(&mut rng, 2.0, 42.99).floor() as usize)
                    .collect(),
                numeric: rng.random_range(12..=60usize),
                skew: rng.random_range(0.0..1.5),
                sharpness: log_uniform(&mut rng, 0.5, 8.0),
                positive_share: rng.random_range(0.1..0.5),
            }
        })
        .collect()
}

fn describe(shape: &TabularShape) -> String {
    format!(
        "levels {:?} + {} numeric (d = {}), skew {:.2}, sharpness {:.2}, {:.0}% positive",
        shape.levels,
        shape.numeric,
        shape.levels.iter().sum::<usize>() + shape.numeric,
        shape.skew,
        shape.sharpness,
        shape.positive_share * 100.0
    )
}

/// The (loss, noise shape) pairs a rule is fitted for, each under the cliff-free calibration.
pub fn fitted_variants() -> Vec<Variant> {
    [None, Some(1.0)]
        .into_iter()
        .flat_map(|h| {
            [Lever::Paper, Lever::GroupNoise]
                .map(|lever| Variant::new(h, ObjectiveCalibration::CliffFree, lever))
        })
        .collect()
}

/// The fitted variants with group-shaped noise (the only ones run on [`numeric_heavy`]
/// problems: the Euclidean rule is fitted on [`family`] alone).
fn grouped_variants() -> Vec<Variant> {
    fitted_variants()
        .into_iter()
        .filter(|v| v.lever == Lever::GroupNoise)
        .collect()
}

/// Best Λ of one (problem, n, loss, ε).
#[derive(Debug, Clone, Serialize)]
pub struct BestLambda {
    pub problem: usize,
    pub rows: usize,
    pub features: usize,
    /// The number of groups (one-hot attributes and numeric columns).
    pub groups: usize,
    pub loss: String,
    pub grouped: bool,
    pub epsilon: f64,
    pub lambda: f64,
    pub error: f64,
}

/// A rule `Λ = κ·d^a·G^g/(n^b·ε^c)` (G the number of groups; g = 0 for the Euclidean
/// rule's form).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Form {
    pub scale: f64,
    pub features_exponent: f64,
    pub groups_exponent: f64,
    pub rows_exponent: f64,
    pub epsilon_exponent: f64,
}

impl Form {
    fn lambda(&self, rows: usize, features: usize, groups: usize, epsilon: f64) -> f64 {
        (self.scale.ln()
            + self.features_exponent * (features as f64).ln()
            + self.groups_exponent * (groups as f64).ln()
            - self.rows_exponent * (rows as f64).ln()
            - self.epsilon_exponent * epsilon.ln())
        .exp()
    }

    fn of(rule: &RegularizationRule) -> Self {
        Self {
            scale: rule.scale,
            features_exponent: rule.features_exponent,
            groups_exponent: 0.0,
            rows_exponent: rule.rows_exponent,
            epsilon_exponent: rule.epsilon_exponent,
        }
    }

    fn of_grouped(rule: &GroupedRule) -> Self {
        Self {
            scale: rule.scale,
            features_exponent: rule.features_exponent,
            groups_exponent: rule.groups_exponent,
            rows_exponent: rule.rows_exponent,
            epsilon_exponent: rule.epsilon_exponent,
        }
    }
}

/// Regret over cells: mean, 90th percentile, max.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Regret {
    pub mean: f64,
    pub p90: f64,
    pub max: f64,
    pub cells: usize,
}

impl Regret {
    pub fn of(mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let k = values.len();
        if k == 0 {
            return Self {
                mean: f64::NAN,
                p90: f64::NAN,
                max: f64::NAN,
                cells: 0,
            };
        }
        Self {
            mean: values.iter().sum::<f64>() / k as f64,
            // The nearest-rank 90th percentile.
            p90: values[((0.9 * k as f64).ceil() as usize).clamp(1, k) - 1],
            max: values[k - 1],
            cells: k,
        }
    }
}

/// The fitted rule for one (loss, noise shape).
#[derive(Debug, Clone, Serialize)]
pub struct LossFit {
    pub loss: String,
    pub huber_width: Option<f64>,
    /// Fitted with the noise shaped to the one-hot groups.
    pub grouped: bool,
    /// The four constants with the least mean regret.
    pub form: Form,
    /// Its regret over all cells, and over the cells with `d/(nε) ≤ 0.1`.
    pub regret: Regret,
    pub regret_in_range: Regret,
    /// The best rule of the old shape `κ·(d/(nε))^p` (one exponent) and its regret.
    pub one_slope: Form,
    pub one_slope_regret: Regret,
    /// Group-shaped noise only: the best rule that reads d but not the groups (g = 0), and
    /// its regret; the chosen form's and that one's regret on the numeric-heavy problems.
    pub without_groups: Option<(Form, Regret)>,
    pub regret_numeric_heavy: Regret,
    pub library_regret_numeric_heavy: Regret,
    /// The regret of the library's rule for this noise shape at this loss's curves (its Λ
    /// evaluated on this loss: informative only where the losses match).
    pub library_regret: Regret,
}

/// One synthetic cell of the chosen rules: where private models fall to chance.
#[derive(Debug, Clone, Serialize)]
pub struct OutlookCell {
    pub problem: usize,
    pub rows: usize,
    pub features: usize,
    pub epsilon: f64,
    pub grouped: bool,
    pub noise_ratio: f64,
    /// Test error of majority-class prediction (the training set's majority).
    pub majority_error: f64,
    /// A non-private fit's test error (the chosen loss, Λ = 1e-4).
    pub non_private_error: f64,
    /// The chosen rule's error (on the curve) and the best on the grid.
    pub rule_error: f64,
    pub best_error: f64,
}

impl OutlookCell {
    /// The rule's model is no better than predicting the majority class, where a
    /// non-private model would be (by at least 0.01).
    pub fn near_chance(&self) -> bool {
        self.majority_error - self.non_private_error >= 0.01
            && self.rule_error
                >= self.majority_error - 0.1 * (self.majority_error - self.non_private_error)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleFit {
    pub problems: Vec<String>,
    pub best: Vec<BestLambda>,
    pub losses: Vec<LossFit>,
    /// The fits with the smallest mean regret: Euclidean noise, group-shaped noise.
    pub chosen: usize,
    pub chosen_grouped: usize,
    pub outlook: Vec<OutlookCell>,
    /// The smallest `d/(nε)` of a near-chance cell (the outlook's threshold must stay below).
    pub smallest_near_chance_ratio: f64,
    /// Of the cells above `UtilityOutlook::NEAR_CHANCE_RATIO`, the share near chance.
    pub near_chance_share_above: f64,
    /// The error curves of each fit (in the order of `losses`), for analysis by hand (the
    /// sweep test writes them).
    #[serde(skip)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub curves: Vec<Vec<Curve>>,
}

/// One (problem, n) of the sweep.
struct Run {
    problem: usize,
    numeric_heavy: bool,
    rows: usize,
    features: usize,
    groups: usize,
    cells: Vec<GridCell>,
    majority_error: f64,
    non_private: NonPrivate,
}

/// Runs the synthetic sweep and fits the rules.
pub fn run(quick: bool, seed: u64) -> Result<RuleFit, Box<dyn std::error::Error>> {
    let sizes: &[usize] = if quick {
        &[2_000, 8_000]
    } else {
        &[2_000, 6_000, 20_000]
    };
    let shapes = family(if quick { 3 } else { 12 }, seed);
    let heavy = numeric_heavy(if quick { 1 } else { 6 }, seed);
    let lambdas = grid::log_grid(0, 6, 3);
    let (all_variants, grouped_only) = (fitted_variants(), grouped_variants());
    let mut runs = Vec::new();
    let problems = shapes.iter().map(|s| (s, false));
    for (p, (shape, numeric_heavy)) in problems.chain(heavy.iter().map(|s| (s, true))).enumerate() {
        let variants = if numeric_heavy {
            &grouped_only
        } else {
            &all_variants
        };
        for (s, &rows) in sizes.iter().enumerate() {
            let data_seed = seed ^ ((p * 16 + s) as u64 + 1) << 20;
            let data = tabular_mixed(rows + TEST_ROWS, shape, data_seed)?;
            let groups = feature_groups(&data)?.count();
            let protocol = Protocol {
                variants,
                lambdas: &lambdas,
                epsilons: &EPSILONS,
                folds: 1,
                draws: 2,
                seed: data_seed,
            };
            let cells = grid::run_split(&data, rows, &protocol)?;
            let (majority_error, non_private) = baselines(&data, rows)?;
            runs.push(Run {
                problem: p,
                numeric_heavy,
                rows,
                features: data.features(),
                groups,
                cells,
                majority_error,
                non_private,
            });
        }
    }
    let described = shapes.iter().chain(&heavy).map(describe).collect();
    Ok(fit(described, &runs))
}

/// Per loss (`None`: logistic), a non-private fit's test error.
type NonPrivate = Vec<(Option<f64>, f64)>;

/// Majority-class test error (majority of the training rows) and a non-private fit's test
/// error per loss.
fn baselines(data: &Dataset, rows: usize) -> Result<(f64, NonPrivate), Box<dyn std::error::Error>> {
    let positive = data.labels[..rows].iter().filter(|&&y| y > 0.0).count();
    let majority = if 2 * positive >= rows { 1.0 } else { -1.0 };
    let test = &data.labels[rows..];
    let majority_error = test.iter().filter(|&&y| y != majority).count() as f64 / test.len() as f64;
    let train = data.training_set(&(0..rows).collect::<Vec<_>>())?;
    let held_out = data.training_set(&(rows..data.len()).collect::<Vec<_>>())?;
    let mut non_private = Vec::new();
    for h in [None, Some(1.0)] {
        let loss = h.map_or(Ok(Loss::Logistic), Loss::huber)?;
        let fit = ErmParams::non_private(loss, 1e-4).fit(&train, &mut InsecureSeededRng::new(1))?;
        non_private.push((h, fit.model().error_rate(&held_out)?));
    }
    Ok((majority_error, non_private))
}

/// One (problem, n, ε) of one variant.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    problem: usize,
    numeric_heavy: bool,
    rows: usize,
    features: usize,
    groups: usize,
    epsilon: f64,
    points: Vec<(f64, f64)>,
    best: f64,
    majority_error: f64,
}

impl Curve {
    fn ratio(&self) -> f64 {
        self.features as f64 / (self.rows as f64 * self.epsilon)
    }

    fn regret(&self, form: &Form) -> f64 {
        interpolate(
            &self.points,
            form.lambda(self.rows, self.features, self.groups, self.epsilon),
        ) - self.best
    }
}

fn regrets<'a>(curves: impl Iterator<Item = &'a Curve>, form: &Form) -> Regret {
    Regret::of(curves.map(|c| c.regret(form)).collect())
}

/// Best Λ per (problem, n, loss, ε), the fitted rule per loss and the outlook's cells.
fn fit(problems: Vec<String>, runs: &[Run]) -> RuleFit {
    let mut best = Vec::new();
    let mut losses = Vec::new();
    let mut curves_of = Vec::new();
    for fitted in fitted_variants() {
        let mut curves: Vec<Curve> = Vec::new();
        for run in runs {
            for &epsilon in &EPSILONS {
                let mut points: Vec<(f64, f64)> = run
                    .cells
                    .iter()
                    .filter(|c| c.variant == fitted && c.epsilon == epsilon && c.fits > 0)
                    .map(|c| (c.lambda, c.mean_error))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let Some(&(lambda, error)) = points.iter().min_by(|a, b| a.1.total_cmp(&b.1))
                else {
                    continue;
                };
                best.push(BestLambda {
                    problem: run.problem,
                    rows: run.rows,
                    features: run.features,
                    groups: run.groups,
                    loss: fitted.loss_label(),
                    grouped: fitted.lever == Lever::GroupNoise,
                    epsilon,
                    lambda,
                    error,
                });
                curves.push(Curve {
                    problem: run.problem,
                    numeric_heavy: run.numeric_heavy,
                    rows: run.rows,
                    features: run.features,
                    groups: run.groups,
                    epsilon,
                    points,
                    best: error,
                    majority_error: run.majority_error,
                });
            }
        }
        let grouped = fitted.lever == Lever::GroupNoise;
        let library = if grouped {
            Form::of_grouped(&RegularizationRule::GROUPED)
        } else {
            Form::of(&RegularizationRule::DEFAULT)
        };
        let shape = if grouped { Shape::Groups } else { Shape::Free };
        let form = best_form(&curves, shape);
        let one_slope = best_form(&curves, Shape::OneSlope);
        let without_groups = grouped.then(|| {
            let f = best_form(&curves, Shape::Free);
            (f, regrets(curves.iter(), &f))
        });
        let in_range = |c: &&Curve| c.ratio() <= super::VALIDATED_RATIO;
        let heavy = |c: &&Curve| c.numeric_heavy;
        losses.push(LossFit {
            loss: fitted.loss_label(),
            huber_width: fitted.huber_width,
            grouped,
            form,
            regret: regrets(curves.iter(), &form),
            regret_in_range: regrets(curves.iter().filter(in_range), &form),
            one_slope,
            one_slope_regret: regrets(curves.iter(), &one_slope),
            without_groups,
            regret_numeric_heavy: regrets(curves.iter().filter(heavy), &form),
            library_regret_numeric_heavy: regrets(curves.iter().filter(heavy), &library),
            library_regret: regrets(curves.iter(), &library),
        });
        curves_of.push(curves);
    }
    let choose = |grouped: bool| {
        (0..losses.len())
            .filter(|&k| losses[k].grouped == grouped)
            .min_by(|&a, &b| losses[a].regret.mean.total_cmp(&losses[b].regret.mean))
            .expect("a fit per noise shape")
    };
    let (chosen, chosen_grouped) = (choose(false), choose(true));
    let mut outlook = Vec::new();
    for k in [chosen, chosen_grouped] {
        let fit = &losses[k];
        for curve in &curves_of[k] {
            let run = runs
                .iter()
                .find(|r| r.problem == curve.problem && r.rows == curve.rows)
                .expect("the curve's run");
            let non_private_error = run
                .non_private
                .iter()
                .find(|(h, _)| *h == fit.huber_width)
                .map_or(f64::NAN, |p| p.1);
            outlook.push(OutlookCell {
                problem: curve.problem,
                rows: curve.rows,
                features: curve.features,
                epsilon: curve.epsilon,
                grouped: fit.grouped,
                noise_ratio: curve.ratio(),
                majority_error: run.majority_error,
                non_private_error,
                rule_error: curve.best + curve.regret(&fit.form),
                best_error: curve.best,
            });
        }
    }
    let smallest_near_chance_ratio = outlook
        .iter()
        .filter(|c| c.near_chance())
        .map(|c| c.noise_ratio)
        .fold(f64::INFINITY, f64::min);
    let above: Vec<&OutlookCell> = outlook
        .iter()
        .filter(|c| c.noise_ratio > UtilityOutlook::NEAR_CHANCE_RATIO)
        .collect();
    let near_chance_share_above =
        above.iter().filter(|c| c.near_chance()).count() as f64 / above.len().max(1) as f64;
    RuleFit {
        problems,
        best,
        losses,
        chosen,
        chosen_grouped,
        outlook,
        smallest_near_chance_ratio,
        near_chance_share_above,
        curves: curves_of,
    }
}

/// Which exponents [`best_form`] frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// a, b and c free, g = 0.
    Free,
    /// a = b = c, g = 0.
    OneSlope,
    /// a, g, b and c free.
    Groups,
}

/// The form of least mean regret: exponents on a grid of quarters (a and g from 0 to 2.5,
/// b and c from 0.25 to 2.5; g only with [`Shape::Groups`], else 0; with
/// [`Shape::OneSlope`], a = b = c on eighths), κ on 20 steps per decade for each exponent
/// tuple (its best value given the exponents), refined by coordinate search on sixteenths.
fn best_form(curves: &[Curve], shape: Shape) -> Form {
    let mean = |form: &Form| {
        curves.iter().map(|c| c.regret(form)).sum::<f64>() / curves.len().max(1) as f64
    };
    // κ is searched relative to the Λ the exponents give at a central cell (d = 100,
    // G = 20, n = 10⁴, ε = 0.3), so the grid of κ needs only 6 decades around it.
    let with_best_scale = |[a, g, b, c]: [f64; 4]| -> (Form, f64) {
        let centre = a * 100f64.ln() + g * 20f64.ln() - b * 1e4f64.ln() - c * 0.3f64.ln();
        (-60..=60)
            .map(|k| {
                let form = Form {
                    scale: (k as f64 / 20.0 * 10f64.ln() - centre - 3.0 * 10f64.ln()).exp(),
                    features_exponent: a,
                    groups_exponent: g,
                    rows_exponent: b,
                    epsilon_exponent: c,
                };
                (form, mean(&form))
            })
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .expect("a non-empty grid")
    };
    let steps = |lo: f64, hi: f64, step: f64| {
        let count = ((hi - lo) / step).round() as usize;
        (0..=count).map(move |k| lo + k as f64 * step)
    };
    let group_steps: Vec<f64> = if shape == Shape::Groups {
        steps(0.0, 2.5, 0.25).collect()
    } else {
        vec![0.0]
    };
    let tuples: Vec<[f64; 4]> = if shape == Shape::OneSlope {
        steps(0.25, 2.5, 0.125).map(|p| [p, 0.0, p, p]).collect()
    } else {
        steps(0.0, 2.5, 0.25)
            .flat_map(|a| {
                let group_steps = &group_steps;
                group_steps.iter().flat_map(move |&g| {
                    steps(0.25, 2.5, 0.25)
                        .flat_map(move |b| steps(0.25, 2.5, 0.25).map(move |c| [a, g, b, c]))
                })
            })
            .collect()
    };
    let (mut form, mut regret) = tuples
        .par_iter()
        .map(|&t| with_best_scale(t))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .expect("candidates");
    if shape != Shape::OneSlope {
        // Coordinate search on sixteenths around the best grid point (g stays 0 unless
        // it is free).
        let free = if shape == Shape::Groups { 4 } else { 3 };
        let axes = [0, 2, 3, 1];
        for _ in 0..4 {
            for &axis in &axes[..free] {
                for step in [0.0625, -0.0625] {
                    let mut t = [
                        form.features_exponent,
                        form.groups_exponent,
                        form.rows_exponent,
                        form.epsilon_exponent,
                    ];
                    t[axis] += step;
                    if t.iter().all(|x| (0.0..=4.0).contains(x)) {
                        let (f, r) = with_best_scale(t);
                        if r < regret {
                            (form, regret) = (f, r);
                        }
                    }
                }
            }
        }
    }
    form
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep alone (minutes): `RULE_FIT_FULL=1` for the full family; the fit as JSON
    /// in `RULE_FIT_OUT` (default `rule_fit.json` in the working directory).
    #[test]
    #[ignore = "an experiment, run by hand"]
    fn sweep() {
        let full = std::env::var_os("RULE_FIT_FULL").is_some();
        let started = std::time::Instant::now();
        let fit = run(!full, 2011).unwrap();
        let out = std::env::var("RULE_FIT_OUT").unwrap_or_else(|_| "rule_fit.json".into());
        std::fs::write(&out, serde_json::to_string_pretty(&fit).unwrap()).unwrap();
        if let Some(path) = std::env::var_os("RULE_FIT_CURVES") {
            std::fs::write(path, serde_json::to_string(&fit.curves).unwrap()).unwrap();
        }
        for l in &fit.losses {
            eprintln!(
                "{} grouped={} {:?} regret {:?} in range {:?} one-slope {:?} {:?} library {:?} \
                 without groups {:?}; numeric-heavy: {:?}, library {:?}",
                l.loss,
                l.grouped,
                l.form,
                l.regret,
                l.regret_in_range,
                l.one_slope,
                l.one_slope_regret,
                l.library_regret,
                l.without_groups,
                l.regret_numeric_heavy,
                l.library_regret_numeric_heavy
            );
        }
        eprintln!(
            "near chance from {:.4}; share above threshold {:.2}; {:.1} s",
            fit.smallest_near_chance_ratio,
            fit.near_chance_share_above,
            started.elapsed().as_secs_f64()
        );
    }

    #[test]
    fn regret_distribution_uses_the_nearest_rank() {
        let r = Regret::of((1..=10).map(f64::from).collect());
        assert_eq!((r.mean, r.p90, r.max, r.cells), (5.5, 9.0, 10.0, 10));
        let r = Regret::of(vec![3.0]);
        assert_eq!((r.p90, r.max), (3.0, 3.0));
        assert!(Regret::of(Vec::new()).mean.is_nan());
    }

    #[test]
    fn the_fit_recovers_a_planted_rule() {
        // Curves whose best Λ is exactly 0.5·d^0.5/(n^1·ε^0.75), V-shaped in ln Λ.
        let planted = Form {
            scale: 0.5,
            features_exponent: 0.5,
            groups_exponent: 0.0,
            rows_exponent: 1.0,
            epsilon_exponent: 0.75,
        };
        let grid = grid::log_grid(0, 7, 4);
        let mut curves = Vec::new();
        for (features, rows) in [(20, 1_000), (100, 4_000), (300, 50_000), (50, 20_000)] {
            for epsilon in [0.05, 0.2, 1.0, 2.0] {
                let optimum = planted.lambda(rows, features, features, epsilon);
                let mut points: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|&l| (l, 0.2 + 0.01 * (l / optimum).ln().abs()))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                curves.push(Curve {
                    problem: 0,
                    numeric_heavy: false,
                    rows,
                    features,
                    groups: features,
                    epsilon,
                    points,
                    best: 0.2,
                    majority_error: 0.5,
                });
            }
        }
        let form = best_form(&curves, Shape::Free);
        // Every cell's Λ within a factor 1.5 of the planted optimum (the grid of κ and the
        // exponents' eighths cannot do much better on 16 cells).
        for c in &curves {
            let ratio = form.lambda(c.rows, c.features, c.groups, c.epsilon)
                / planted.lambda(c.rows, c.features, c.groups, c.epsilon);
            assert!(
                (1.0 / 1.5..1.5).contains(&ratio),
                "{form:?}: {ratio} at n = {}, ε = {}",
                c.rows,
                c.epsilon
            );
        }
        assert!(regrets(curves.iter(), &form).mean < 0.002, "{form:?}");
        // One slope cannot fit it: a clear regret left.
        let one = best_form(&curves, Shape::OneSlope);
        let (full, one) = (
            regrets(curves.iter(), &form).mean,
            regrets(curves.iter(), &one).mean,
        );
        assert!(
            one > 2.0 * full && one > 0.001,
            "one slope {one}, four constants {full}"
        );
    }

    #[test]
    fn the_family_covers_tabular_shapes() {
        let shapes = family(16, 2011);
        assert_eq!(shapes, family(16, 2011));
        assert!(shapes.iter().all(|s| (3..=12).contains(&s.levels.len())));
        assert!(
            shapes
                .iter()
                .flat_map(|s| &s.levels)
                .all(|&l| (2..=42).contains(&l))
        );
        let sharp = shapes.iter().map(|s| s.sharpness);
        assert!(sharp.clone().any(|s| s < 1.5) && sharp.clone().any(|s| s > 4.0));
    }
}
