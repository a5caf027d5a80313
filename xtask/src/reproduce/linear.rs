//! The linear experiments of the SVM paper (Figures 2a, 3a, 3b) on Adult and KDDCup99.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use dp_datasets::Dataset;
use dp_erm::{ErmError, ErmParams, Fit, Loss, ObjectiveCalibration, TrainingSet};
use dp_noise::{GammaNormVector, InsecureSeededRng};
use dp_optim::{GlmObjective, Newton};
use indicatif::{ProgressBar, ProgressStyle};
use rand::RngExt;
use rayon::prelude::*;
use serde::Serialize;

/// The methods compared. `Scm09SvmNotPrivate` is a diagnostic only (see its label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Method {
    NonPrivateSvm,
    OutputSvm,
    ObjectiveLogistic,
    ObjectiveLogisticCliffFree,
    ObjectiveSvm,
    ObjectiveSvmCliffFree,
    Scm09SvmNotPrivate,
}

impl Method {
    /// Every method, in table order.
    pub const ALL: [Method; 7] = [
        Self::NonPrivateSvm,
        Self::OutputSvm,
        Self::ObjectiveLogistic,
        Self::ObjectiveLogisticCliffFree,
        Self::ObjectiveSvm,
        Self::ObjectiveSvmCliffFree,
        Self::Scm09SvmNotPrivate,
    ];

    /// The loss the method trains with.
    pub fn loss(self) -> Loss {
        match self {
            Self::ObjectiveLogistic | Self::ObjectiveLogisticCliffFree => Loss::Logistic,
            _ => huber(),
        }
    }

    /// The library's parameters for this method at (Λ, ε); `None` for the diagnostic, which
    /// the library does not offer.
    fn params(self, lambda: f64, epsilon: f64) -> Option<ErmParams> {
        let loss = self.loss();
        let cliff_free = ObjectiveCalibration::CliffFree;
        match self {
            Self::NonPrivateSvm => Some(ErmParams::non_private(loss, lambda)),
            Self::OutputSvm => Some(ErmParams::output_perturbation(loss, lambda, epsilon)),
            Self::ObjectiveLogistic | Self::ObjectiveSvm => Some(
                ErmParams::objective_perturbation(loss, lambda, epsilon)
                    .objective_calibration(ObjectiveCalibration::Cms11),
            ),
            Self::ObjectiveLogisticCliffFree | Self::ObjectiveSvmCliffFree => Some(
                ErmParams::objective_perturbation(loss, lambda, epsilon)
                    .objective_calibration(cliff_free),
            ),
            Self::Scm09SvmNotPrivate => None,
        }
    }

    /// The paper-rule method a cliff-free method differs from only in its calibration.
    fn paper_rule_twin(self) -> Option<Method> {
        match self {
            Self::ObjectiveLogisticCliffFree => Some(Self::ObjectiveLogistic),
            Self::ObjectiveSvmCliffFree => Some(Self::ObjectiveSvm),
            _ => None,
        }
    }

    /// Whether fits start from the non-private minimizer. The Huber loss has no curvature
    /// at margin 0 (its quadratic band is 0.5 ≤ z ≤ 1.5), so from 0 Newton's first steps are
    /// gradient steps: warm starts halve its iterations. The logistic loss is curved at 0
    /// and its noisy minimizers lie far from the non-private one; a warm start measured
    /// slower there (7.3 against 6.6 iterations on KDD).
    fn warm_starts(self) -> bool {
        self.loss() != Loss::Logistic
    }

    /// Whether each fit of a chain starts from the previous ε's model (objective
    /// perturbation); output perturbation always starts from the non-private minimizer,
    /// where it needs no step.
    fn chains_warm_starts(self) -> bool {
        self != Self::OutputSvm
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::NonPrivateSvm => "non-private Huber SVM",
            Self::OutputSvm => "output perturbation Huber SVM",
            Self::ObjectiveLogistic => "objective perturbation logistic",
            Self::ObjectiveLogisticCliffFree => "objective perturbation logistic (cliff-free)",
            Self::ObjectiveSvm => "objective perturbation Huber SVM",
            Self::ObjectiveSvmCliffFree => "objective perturbation Huber SVM (cliff-free)",
            Self::Scm09SvmNotPrivate => "SCM09 calibration Huber SVM — NOT ε-DP at the stated ε",
        }
    }
}

/// One experiment: a dataset, its Λ grid and which (method, ε) pairs to run.
pub struct Experiment {
    pub name: &'static str,
    pub lambdas: Vec<f64>,
    /// Λ values of the grid that only Figure 3's methods (Huber SVM: non-private, output
    /// and objective perturbation) run; Figure 2's grid is 1e-2 … 1e-7.
    pub figure3_only_lambdas: Vec<f64>,
    pub plan: Vec<(Method, Vec<f64>)>,
}

/// The ε grid of Figures 1(a) and 1(b) (error versus ε, the paper's range 0.01 to 1), in
/// the order a chain runs them. The tables need only a few of these values.
pub const FIGURE1_EPSILONS: [f64; 7] = [1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01];

/// The methods Figure 1 draws over [`FIGURE1_EPSILONS`].
const FIGURE1_METHODS: [Method; 3] = [
    Method::OutputSvm,
    Method::ObjectiveLogistic,
    Method::ObjectiveSvm,
];

/// Noise draws per fold of the ε values only Figure 1 needs, at most: a point of a curve,
/// not a table cell. A fifth of the draws (10 of the paper protocol's 50, 1 of quick
/// mode's 2): each of those ε values then costs a fifth of a table ε's fits.
pub const FIGURE1_DRAWS: usize = 10;

fn figure1_draws(draws: usize) -> usize {
    (draws / 5).clamp(1, FIGURE1_DRAWS)
}

/// A chain's ε values: the table's, and for the first [`figure1_draws`] draws of Figure 1's
/// methods also the rest of [`FIGURE1_EPSILONS`]; largest first.
fn chain_epsilons(method: Method, table: &[f64], draw: usize, draws: usize) -> Vec<f64> {
    let mut epsilons = table.to_vec();
    if draw < figure1_draws(draws) && FIGURE1_METHODS.contains(&method) {
        epsilons.extend(FIGURE1_EPSILONS.iter().filter(|e| !table.contains(e)));
    }
    epsilons.sort_by(|a, b| b.total_cmp(a));
    epsilons
}

pub fn adult_experiment() -> Experiment {
    let both = vec![0.2, 0.1];
    let all = vec![0.2, 0.15, 0.1, 0.05];
    Experiment {
        name: "adult",
        lambdas: vec![1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
        figure3_only_lambdas: vec![],
        plan: vec![
            (Method::NonPrivateSvm, vec![]),
            (Method::OutputSvm, both.clone()),
            (Method::ObjectiveLogistic, both.clone()),
            (Method::ObjectiveLogisticCliffFree, both.clone()),
            (Method::ObjectiveSvm, all.clone()),
            (Method::ObjectiveSvmCliffFree, all),
            (Method::Scm09SvmNotPrivate, both),
        ],
    }
}

pub fn kdd_experiment() -> Experiment {
    let three = vec![0.1, 0.05, 0.01];
    let two = vec![0.1, 0.05];
    Experiment {
        name: "kddcup99",
        lambdas: vec![1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
        figure3_only_lambdas: vec![1e-1],
        plan: vec![
            (Method::NonPrivateSvm, vec![]),
            (Method::OutputSvm, three.clone()),
            (Method::ObjectiveSvm, three.clone()),
            (Method::ObjectiveSvmCliffFree, three),
            (Method::ObjectiveLogistic, two.clone()),
            (Method::ObjectiveLogisticCliffFree, two.clone()),
            (Method::Scm09SvmNotPrivate, two),
        ],
    }
}

/// One cell of the results: a method at one (Λ, ε), averaged over folds and noise draws.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub dataset: &'static str,
    pub method: Method,
    pub method_label: &'static str,
    pub lambda: f64,
    pub epsilon: Option<f64>,
    pub mean_error: f64,
    pub std_error: f64,
    /// Models released and tested.
    pub fits: usize,
    /// Fits the library refused to release (solver could not certify its tolerance).
    pub refusals: usize,
    /// Of `fits`, those shared with the paper-rule row because both calibration rules gave
    /// the same (ε', Δ, β) there: the same mechanism, so the same fits.
    pub fits_shared_with_paper_rule: usize,
    /// Mean solver iterations per released model.
    pub mean_iterations: f64,
    /// Time spent fitting and testing this cell's own models, summed over threads.
    pub cpu_seconds: f64,
}

/// A cell: method, Λ and ε (as bits, so they order and compare exactly).
type CellKey = (Method, u64, Option<u64>);

fn cell_key(method: Method, lambda: f64, epsilon: Option<f64>) -> CellKey {
    (method, lambda.to_bits(), epsilon.map(f64::to_bits))
}

/// Noise draws of the not-private SCM09 diagnostic per cell (at most): it only has to show
/// where the paper's numbers come from.
pub const DIAGNOSTIC_DRAWS: usize = 10;

/// Smallest Λ at which the SCM09 diagnostic runs. Below it (Δ = 0 and the Huber loss has
/// curvature on few rows) Newton measured 35–100 iterations per fit and hit its limit on
/// some, so those cells would be slow and biased toward the fits that converged; the
/// paper's best errors all lie at Λ ≥ 1e-5.
pub const DIAGNOSTIC_MIN_LAMBDA: f64 = 1e-5;

/// The private fits of one (Λ, method, noise draw) in a fold, one per ε, run in order.
///
/// They share their random numbers (common random numbers: the same seed, so the same
/// direction and the same standard Gamma variate, scaled to each ε's β), and each
/// objective-perturbation fit starts its solver from the previous ε's model, which is
/// close: on KDD the Huber fits then take 4 Newton iterations instead of 7–9. Every cell
/// still has exactly its mechanism's distribution; only cells of one chain are correlated.
#[derive(Clone)]
struct Chain {
    lambda: f64,
    method: Method,
    draw: usize,
    epsilons: Vec<f64>,
}

/// What one fit produced: its test error (None if the library refused to release it),
/// solver iterations and the seconds it took.
#[derive(Clone, Copy)]
struct Outcome {
    key: CellKey,
    error: Option<f64>,
    iterations: usize,
    seconds: f64,
    shared: bool,
}

/// Per cell, summed over folds: test errors, refusals, shared fits, iterations, seconds.
#[derive(Default)]
struct Tally {
    errors: Vec<f64>,
    refusals: usize,
    shared: usize,
    iterations: usize,
    seconds: f64,
}

/// Runs `experiment` on `data` with k-fold cross-validation and `draws` noise draws per
/// private cell, in parallel, deterministically for `seed`.
///
/// In each fold the non-private Huber minimizer is computed once per Λ: it is the
/// non-private cell's model and the warm start of the Huber fits at that Λ (a warm start
/// changes only the solver's path: see `ErmParams::warm_start`). Output perturbation
/// starting there needs no solver step. The fits of one noise draw run as a [`Chain`] over
/// ε. A cliff-free cell whose calibration equals the paper rule's at this n is the same
/// mechanism, so it reuses the paper-rule fits.
pub fn run(
    experiment: &Experiment,
    data: &Dataset,
    folds: usize,
    draws: usize,
    seed: u64,
) -> Result<Vec<Cell>, Box<dyn std::error::Error>> {
    let all_chains = private_chains(experiment, draws);
    let order = shuffled(data.len(), seed);
    let private_fits: usize = all_chains.iter().map(|c| c.epsilons.len()).sum();
    let total = (private_fits + experiment.lambdas.len()) * folds;
    let progress = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template(
            "{prefix:>9} [{bar:40}] {pos}/{len} fits, {elapsed} elapsed, ETA {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    progress.set_prefix(experiment.name);
    let mut tallies: BTreeMap<CellKey, Tally> = BTreeMap::new();
    for fold in 0..folds {
        let (train, test) = split(&order, fold, folds);
        let train = data.training_set(&train)?;
        let test = data.training_set(&test)?;
        let non_private: Vec<(Fit, f64)> = experiment
            .lambdas
            .par_iter()
            .map(|&lambda| {
                let started = Instant::now();
                // The non-private solver uses no randomness; the generator is a formality.
                let fit = ErmParams::non_private(huber(), lambda)
                    .fit(&train, &mut InsecureSeededRng::new(seed))?;
                progress.inc(1);
                Ok((fit, started.elapsed().as_secs_f64()))
            })
            .collect::<Result<_, ErmError>>()?;
        let mut outcomes: Vec<Outcome> = Vec::new();
        for (&lambda, (fit, seconds)) in experiment.lambdas.iter().zip(&non_private) {
            outcomes.push(Outcome {
                key: cell_key(Method::NonPrivateSvm, lambda, None),
                error: Some(fit.model().error_rate(&test)?),
                iterations: fit.solver_iterations(),
                seconds: *seconds,
                shared: false,
            });
        }
        let warm_start = |lambda: f64| -> &[f64] {
            let index = experiment
                .lambdas
                .iter()
                .position(|&l| l == lambda)
                .expect("every Λ has a non-private fit");
            non_private[index].0.model().weights()
        };
        // Cliff-free cells that are the paper rule's mechanism at this n, by their twin.
        let mut shared: BTreeMap<CellKey, CellKey> = BTreeMap::new();
        for &lambda in &experiment.lambdas {
            for (method, epsilons) in &experiment.plan {
                let Some(twin) = method.paper_rule_twin() else {
                    continue;
                };
                for &epsilon in epsilons {
                    if same_calibration(
                        *method,
                        twin,
                        lambda,
                        epsilon,
                        train.len(),
                        train.features(),
                    )? {
                        shared.insert(
                            cell_key(twin, lambda, Some(epsilon)),
                            cell_key(*method, lambda, Some(epsilon)),
                        );
                    }
                }
            }
        }
        let shared_cliff_free: BTreeSet<CellKey> = shared.values().copied().collect();
        let chains: Vec<Chain> = all_chains
            .iter()
            .map(|chain| Chain {
                epsilons: chain
                    .epsilons
                    .iter()
                    .copied()
                    .filter(|&e| {
                        !shared_cliff_free.contains(&cell_key(chain.method, chain.lambda, Some(e)))
                    })
                    .collect(),
                ..chain.clone()
            })
            .filter(|chain| !chain.epsilons.is_empty())
            .collect();
        let fits = |chains: &[Chain]| chains.iter().map(|c| c.epsilons.len()).sum::<usize>();
        progress.inc((fits(&all_chains) - fits(&chains)) as u64);
        let private: Vec<Outcome> = chains
            .par_iter()
            .map(|chain| {
                let chain_seed = seed
                    ^ (fold as u64) << 48
                    ^ (chain.draw as u64) << 32
                    ^ chain.lambda.to_bits().rotate_left(7)
                    ^ (chain.method as u64) << 56;
                let mut start: Option<Vec<f64>> = chain
                    .method
                    .warm_starts()
                    .then(|| warm_start(chain.lambda).to_vec());
                let mut outcomes = Vec::with_capacity(chain.epsilons.len());
                for &epsilon in &chain.epsilons {
                    let started = Instant::now();
                    let outcome = fit_and_test(
                        chain.method,
                        chain.lambda,
                        epsilon,
                        start.as_deref(),
                        &train,
                        &test,
                        &mut InsecureSeededRng::new(chain_seed),
                    );
                    progress.inc(1);
                    let (error, iterations) = match outcome {
                        Ok(tested) => {
                            if chain.method.chains_warm_starts() {
                                start = Some(tested.weights);
                            }
                            (Some(tested.error), tested.iterations)
                        }
                        // The library refused to release an uncertified model: counted, not
                        // fatal.
                        Err(ErmError::NotConverged) => (None, 0),
                        Err(e) => return Err(e),
                    };
                    outcomes.push(Outcome {
                        key: cell_key(chain.method, chain.lambda, Some(epsilon)),
                        error,
                        iterations,
                        seconds: started.elapsed().as_secs_f64(),
                        shared: false,
                    });
                }
                Ok(outcomes)
            })
            .collect::<Result<Vec<Vec<Outcome>>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        for outcome in &private {
            if let Some(&cliff_free) = shared.get(&outcome.key) {
                outcomes.push(Outcome {
                    key: cliff_free,
                    seconds: 0.0,
                    shared: true,
                    ..*outcome
                });
            }
        }
        outcomes.extend(private);
        for outcome in outcomes {
            let tally = tallies.entry(outcome.key).or_default();
            match outcome.error {
                Some(e) => tally.errors.push(e),
                None => tally.refusals += 1,
            }
            tally.shared += usize::from(outcome.shared && outcome.error.is_some());
            tally.iterations += outcome.iterations;
            tally.seconds += outcome.seconds;
        }
    }
    progress.finish_and_clear();
    Ok(tallies
        .into_iter()
        .map(|((method, lambda, epsilon), tally)| {
            let errors = &tally.errors;
            let mean = errors.iter().sum::<f64>() / errors.len() as f64;
            let variance = errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>()
                / errors.len().max(2).saturating_sub(1) as f64;
            Cell {
                dataset: experiment.name,
                method,
                method_label: method.label(),
                lambda: f64::from_bits(lambda),
                epsilon: epsilon.map(f64::from_bits),
                mean_error: mean,
                std_error: variance.sqrt(),
                fits: errors.len(),
                refusals: tally.refusals,
                fits_shared_with_paper_rule: tally.shared,
                mean_iterations: tally.iterations as f64 / errors.len().max(1) as f64,
                cpu_seconds: tally.seconds,
            }
        })
        .collect())
}

/// Whether `method` and `twin` calibrate their noise identically at (Λ, ε) on n rows.
fn same_calibration(
    method: Method,
    twin: Method,
    lambda: f64,
    epsilon: f64,
    n: usize,
    d: usize,
) -> Result<bool, ErmError> {
    let calibration = |m: Method| match m.params(lambda, epsilon) {
        Some(params) => params.noise_calibration(n, d),
        None => Ok(None),
    };
    Ok(calibration(method)? == calibration(twin)?)
}

/// Every private fit of one fold, as chains over ε of each (Λ, method, noise draw).
fn private_chains(experiment: &Experiment, draws: usize) -> Vec<Chain> {
    let mut chains = Vec::new();
    for &lambda in &experiment.lambdas {
        for (method, epsilons) in &experiment.plan {
            let figure3_only = experiment.figure3_only_lambdas.contains(&lambda);
            let runs = match method {
                Method::NonPrivateSvm => 0,
                Method::OutputSvm | Method::ObjectiveSvm | Method::ObjectiveSvmCliffFree => draws,
                _ if figure3_only => 0,
                Method::Scm09SvmNotPrivate if lambda < DIAGNOSTIC_MIN_LAMBDA => 0,
                Method::Scm09SvmNotPrivate => draws.min(DIAGNOSTIC_DRAWS),
                _ => draws,
            };
            chains.extend((0..runs).map(|draw| Chain {
                lambda,
                method: *method,
                draw,
                epsilons: chain_epsilons(*method, epsilons, draw, draws),
            }));
        }
    }
    chains
}

/// The Huber loss of the SVM paper (h = 0.5).
fn huber() -> Loss {
    Loss::huber(0.5).expect("0.5 is a valid Huber width")
}

/// A released model's test error, the solver's iterations and the weights.
struct Tested {
    error: f64,
    iterations: usize,
    weights: Vec<f64>,
}

/// Fits `method` at (Λ, ε) and tests the model.
fn fit_and_test(
    method: Method,
    lambda: f64,
    epsilon: f64,
    warm_start: Option<&[f64]>,
    train: &TrainingSet,
    test: &TrainingSet,
    rng: &mut InsecureSeededRng,
) -> Result<Tested, ErmError> {
    let Some(mut params) = method.params(lambda, epsilon) else {
        return scm09_fit_and_test(lambda, epsilon, warm_start, train, test, rng);
    };
    if let Some(start) = warm_start {
        params = params.warm_start(start);
    }
    let fit = params.fit(train, rng)?;
    Ok(Tested {
        error: fit.model().error_rate(test)?,
        iterations: fit.solver_iterations(),
        // The next ε's fit starts from the solver's point (closer than the noisy release).
        weights: fit.secret_solver_weights().to_vec(),
    })
}

/// The SVM paper's printed calibration, for the diagnostic row only: noise norm
/// Gamma(d, 1/ε) (density ∝ exp(−ε‖b‖)) and no extra regularization. Under the corrected
/// analysis (CMS11) this is **not ε-DP at the stated ε**; it lives here, never in the library.
fn scm09_fit_and_test(
    lambda: f64,
    epsilon: f64,
    warm_start: Option<&[f64]>,
    train: &TrainingSet,
    test: &TrainingSet,
    rng: &mut InsecureSeededRng,
) -> Result<Tested, ErmError> {
    let n = train.len() as f64;
    let noise = GammaNormVector::new(train.features(), epsilon)?.sample(rng);
    let linear: Vec<f64> = noise.iter().map(|b| b / n).collect();
    let objective = GlmObjective::new(train.design(), train.labels(), huber(), lambda)?
        .with_linear_term(&linear)?;
    let solution = Newton::default().minimize(&objective, warm_start)?;
    let iterations = solution.iterations();
    let weights = solution.into_converged()?;
    let mut margins = vec![0.0; test.len()];
    test.design().multiply(&weights, &mut margins);
    let wrong = margins
        .iter()
        .zip(test.labels())
        .filter(|&(&m, &y)| (if m >= 0.0 { 1.0 } else { -1.0 }) != y)
        .count();
    Ok(Tested {
        error: wrong as f64 / test.len() as f64,
        iterations,
        weights,
    })
}

/// A random permutation of `0..n` (Fisher–Yates), fixed by `seed`.
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = InsecureSeededRng::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    order
}

/// (training indices, test indices) of fold `fold` of `folds` contiguous parts of `order`.
pub(super) fn split(order: &[usize], fold: usize, folds: usize) -> (Vec<usize>, Vec<usize>) {
    let (start, end) = (fold * order.len() / folds, (fold + 1) * order.len() / folds);
    let test = order[start..end].to_vec();
    let train = order[..start]
        .iter()
        .chain(&order[end..])
        .copied()
        .collect();
    (train, test)
}
