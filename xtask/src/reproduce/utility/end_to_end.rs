//! The three ways to choose Λ with nothing chosen on test data, at the same total ε: the
//! data-independent rule (no privacy spent on the choice), dp-tune's split-and-select and
//! random stopping over the fine grid.

use dp_datasets::Dataset;
use dp_erm::{Classifier, ErmError, ErmParams, Examples, RegularizationRule};
use dp_noise::{FeatureGroups, InsecureSeededRng};
use dp_tune::{RandomStopping, SplitAndSelect, TuneError};
use rayon::prelude::*;
use serde::Serialize;

use super::super::linear::{shuffled, split};
use super::grid::{mean_and_std_error, progress_bar};
use super::variant::feature_groups;

/// How Λ is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Choice {
    /// `ErmParams::recommended(n, d, ε)`: the whole ε on one fit with every training row.
    Rule,
    /// Split-and-select over the fine grid: candidates at ε on disjoint parts, selection at
    /// ε on a held-out part (ε end to end, parallel composition).
    SplitAndSelect,
    /// Random stopping over the fine grid, each run and score at ε/3 (3·ε/3 = ε end to end,
    /// plus δ = (1 + e^ε)·(1 − γ)^T ≤ (1 + e^ε)·10⁻⁹ from the default cap on runs: not pure ε).
    RandomStopping,
    /// `ErmParams::recommended_grouped`: objective perturbation with the noise shaped to
    /// the one-hot groups and its own rule (`RegularizationRule::GROUPED`, which reads the
    /// number of groups; fitted on the synthetic sweep like the default one).
    GroupedRule,
}

impl Choice {
    pub const ALL: [Choice; 4] = [
        Self::Rule,
        Self::SplitAndSelect,
        Self::RandomStopping,
        Self::GroupedRule,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Rule => "rule Λ = κ·(d/(nε))^p (no tuning)",
            Self::SplitAndSelect => "split-and-select over the fine grid",
            Self::RandomStopping => "random stopping over the fine grid (ε/3 each)",
            Self::GroupedRule => "group-shaped noise and its rule (recommended_grouped)",
        }
    }
}

/// One (choice, ε) cell of a dataset, over folds × runs.
#[derive(Debug, Clone, Serialize)]
pub struct EndToEndCell {
    pub dataset: String,
    pub choice: Choice,
    pub label: &'static str,
    pub epsilon: f64,
    pub mean_error: f64,
    pub std_error: f64,
    pub runs: usize,
    pub refusals: usize,
    /// The Λ the rule gave (on the first fold's training size), for the rule's rows.
    pub rule_lambda: Option<f64>,
    /// Mean Λ chosen (geometric), for the tuned rows.
    pub mean_chosen_lambda: Option<f64>,
}

/// Random stopping's γ: expected runs twice the number of candidates, as in `reproduce tuning`.
fn stop_probability(candidates: usize) -> f64 {
    1.0 / (2.0 * candidates as f64)
}

/// Each of `choices` at each ε, over `folds` folds × `runs` runs.
pub fn run(
    data: &Dataset,
    choices: &[Choice],
    lambdas: &[f64],
    epsilons: &[f64],
    folds: usize,
    runs: usize,
    seed: u64,
) -> Result<Vec<EndToEndCell>, Box<dyn std::error::Error>> {
    let order = shuffled(data.len(), seed ^ 0xe2e);
    let splits: Vec<_> = (0..folds).map(|fold| split(&order, fold, folds)).collect();
    run_on_splits(data, &splits, choices, lambdas, epsilons, runs, seed)
}

/// As [`run`] with one split: the first `rows` rows train, the others test (a dataset's
/// official split).
pub fn run_split(
    data: &Dataset,
    rows: usize,
    choices: &[Choice],
    lambdas: &[f64],
    epsilons: &[f64],
    runs: usize,
    seed: u64,
) -> Result<Vec<EndToEndCell>, Box<dyn std::error::Error>> {
    let split = ((0..rows).collect(), (rows..data.len()).collect());
    run_on_splits(data, &[split], choices, lambdas, epsilons, runs, seed)
}

fn run_on_splits(
    data: &Dataset,
    splits: &[(Vec<usize>, Vec<usize>)],
    choices: &[Choice],
    lambdas: &[f64],
    epsilons: &[f64],
    runs: usize,
    seed: u64,
) -> Result<Vec<EndToEndCell>, Box<dyn std::error::Error>> {
    let folds = splits.len();
    let rule = RegularizationRule::DEFAULT;
    let groups = feature_groups(data)?;
    let jobs: Vec<(Choice, usize, usize)> = choices
        .iter()
        .flat_map(|&c| (0..epsilons.len()).flat_map(move |e| (0..runs).map(move |r| (c, e, r))))
        .collect();
    let progress = progress_bar(&data.name, jobs.len() * folds);
    // Per (choice, ε): errors and chosen Λ over folds × runs.
    let mut results: Vec<Vec<(Option<f64>, Option<f64>)>> = vec![Vec::new(); jobs.len()];
    // Per ε: the Λ of the Euclidean and of the grouped rule (first fold's training size).
    let mut rule_lambda = vec![(None, None); epsilons.len()];
    for (fold, (train_rows, test_rows)) in splits.iter().enumerate() {
        let train = data.training_set(train_rows)?.to_examples();
        let test = data.training_set(test_rows)?.to_examples();
        for (e, &epsilon) in epsilons.iter().enumerate() {
            // The Λ the fit uses (the rule's, raised only where double precision needs it).
            let lambda = rule
                .params(train.len(), train.features(), epsilon)?
                .regularization();
            rule_lambda[e].0.get_or_insert(lambda);
            let lambda = RegularizationRule::GROUPED
                .params(train.len(), train.features(), epsilon, groups.clone())?
                .regularization();
            rule_lambda[e].1.get_or_insert(lambda);
        }
        let outcomes: Vec<(Option<f64>, Option<f64>)> = jobs
            .par_iter()
            .map(|&(choice, e, r)| {
                let run_seed = seed ^ (fold as u64) << 40 ^ (r as u64) << 20 ^ e as u64;
                let mut rng = InsecureSeededRng::new(run_seed);
                let outcome = choose_and_test(
                    choice,
                    &groups,
                    lambdas,
                    epsilons[e],
                    &train,
                    &test,
                    &mut rng,
                );
                progress.inc(1);
                outcome
            })
            .collect::<Result<_, Box<dyn std::error::Error + Send + Sync>>>()
            .map_err(|e| e as Box<dyn std::error::Error>)?;
        for (slot, outcome) in results.iter_mut().zip(outcomes) {
            slot.push(outcome);
        }
    }
    progress.finish_and_clear();
    let mut cells = Vec::new();
    for &choice in choices {
        for (e, &epsilon) in epsilons.iter().enumerate() {
            let outcomes: Vec<(Option<f64>, Option<f64>)> = jobs
                .iter()
                .zip(&results)
                .filter(|((c, k, _), _)| *c == choice && *k == e)
                .flat_map(|(_, o)| o.iter().copied())
                .collect();
            let errors = outcomes.iter().filter_map(|o| o.0);
            let (mean_error, std_error) = mean_and_std_error(errors);
            let chosen: Vec<f64> = outcomes.iter().filter_map(|o| o.1).collect();
            let geometric = (!chosen.is_empty())
                .then(|| (chosen.iter().map(|l| l.ln()).sum::<f64>() / chosen.len() as f64).exp());
            cells.push(EndToEndCell {
                dataset: data.name.clone(),
                choice,
                label: choice.label(),
                epsilon,
                mean_error,
                std_error,
                runs: outcomes.len(),
                refusals: outcomes.iter().filter(|o| o.0.is_none()).count(),
                rule_lambda: match choice {
                    Choice::Rule => rule_lambda[e].0,
                    Choice::GroupedRule => rule_lambda[e].1,
                    _ => None,
                },
                mean_chosen_lambda: matches!(
                    choice,
                    Choice::SplitAndSelect | Choice::RandomStopping
                )
                .then_some(geometric)
                .flatten(),
            });
        }
    }
    Ok(cells)
}

/// (test error, chosen Λ); an error of `None` when the library refused an uncertified fit.
fn choose_and_test(
    choice: Choice,
    groups: &FeatureGroups,
    lambdas: &[f64],
    epsilon: f64,
    train: &Examples,
    test: &Examples,
    rng: &mut InsecureSeededRng,
) -> Result<(Option<f64>, Option<f64>), Box<dyn std::error::Error + Send + Sync>> {
    let error = |model: &dp_erm::LinearModel| -> Result<f64, ErmError> {
        Ok(Classifier::mistakes(model, test)? as f64 / test.len() as f64)
    };
    let rule = RegularizationRule::DEFAULT;
    let candidates = |epsilon: f64| -> Result<Vec<ErmParams>, ErmError> {
        let loss = rule.loss;
        Ok(lambdas
            .iter()
            .map(|&l| ErmParams::objective_perturbation(loss, l, epsilon))
            .collect())
    };
    let refused = |e: &TuneError| {
        matches!(e, TuneError::Training { source, .. }
            if matches!(source.downcast_ref::<ErmError>(), Some(ErmError::NotConverged)))
    };
    match choice {
        Choice::Rule | Choice::GroupedRule => {
            let params = if choice == Choice::GroupedRule {
                let groups = groups.clone();
                ErmParams::recommended_grouped(train.len(), train.features(), epsilon, groups)?
            } else {
                rule.params(train.len(), train.features(), epsilon)?
            };
            let lambda = params.regularization();
            match dp_erm::Trainer::train(&params, train, rng) {
                Ok(model) => Ok((Some(error(&model)?), Some(lambda))),
                Err(ErmError::NotConverged) => Ok((None, Some(lambda))),
                Err(e) => Err(e.into()),
            }
        }
        Choice::SplitAndSelect => {
            match SplitAndSelect::new(candidates(epsilon)?, epsilon)?.select(train, rng) {
                Ok(s) => Ok((Some(error(s.model())?), Some(lambdas[s.index()]))),
                Err(e) if refused(&e) => Ok((None, None)),
                Err(e) => Err(e.into()),
            }
        }
        Choice::RandomStopping => {
            let third = epsilon / 3.0;
            let tuning =
                RandomStopping::new(candidates(third)?, third, stop_probability(lambdas.len()))?;
            match tuning.select(train, rng) {
                Ok(s) => Ok((Some(error(s.model())?), Some(lambdas[s.index()]))),
                Err(e) if refused(&e) => Ok((None, None)),
                Err(e) => Err(e.into()),
            }
        }
    }
}
