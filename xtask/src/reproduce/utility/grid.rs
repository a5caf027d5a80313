//! Error over a (variant, Λ, ε) grid by cross-validation, keeping every fold's and noise
//! draw's error so that two variants can be compared pair by pair.

use std::borrow::Cow;
use std::collections::BTreeMap;

use dp_datasets::Dataset;
use dp_erm::{ErmError, TrainingSet};
use dp_noise::InsecureSeededRng;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use super::super::linear::{shuffled, split};
use super::variant::{Lever, Variant, feature_groups};

/// Λ values `10^(−k/per_decade)` from `10^−from` to `10^−to` (both included).
pub fn log_grid(from: u32, to: u32, per_decade: u32) -> Vec<f64> {
    (from * per_decade..=to * per_decade)
        .map(|k| 10f64.powf(-(k as f64) / per_decade as f64))
        .collect()
}

/// Whether Λ is a power of ten (the papers' one-value-per-decade grid).
pub fn on_decade_grid(lambda: f64) -> bool {
    let exponent = lambda.log10();
    (exponent - exponent.round()).abs() < 1e-9
}

/// The protocol of one grid run.
pub struct Protocol<'a> {
    pub variants: &'a [Variant],
    /// Run in this order as a chain per (variant, ε, draw): common random numbers, each fit
    /// warm-started from the previous Λ's solver point. From large Λ to small, the path of
    /// minimizers is smooth: 3 Newton steps a fit instead of 5 chained over ε, or 6–10 cold
    /// (Adult and KDD, logistic and Huber).
    pub lambdas: &'a [f64],
    pub epsilons: &'a [f64],
    pub folds: usize,
    pub draws: usize,
    pub seed: u64,
}

/// One cell: a variant at (Λ, ε), with one error per (fold, draw) in that order (`None`:
/// the library refused to release an uncertified fit).
#[derive(Debug, Clone, Serialize)]
pub struct GridCell {
    pub dataset: String,
    pub variant: Variant,
    pub label: String,
    pub lambda: f64,
    pub epsilon: f64,
    pub mean_error: f64,
    /// Standard error of the mean over the (fold, draw) pairs.
    pub std_error: f64,
    pub fits: usize,
    pub refusals: usize,
    #[serde(skip)]
    pub errors: Vec<Option<f64>>,
}

/// (variant index, Λ bits, ε bits).
type Key = (usize, u64, u64);

/// Runs every variant at every (Λ, ε) with `folds`-fold cross-validation and `draws` noise
/// draws, in parallel and deterministically for the seed. `encoded` holds the encodings that
/// the loader made (the same rows in the same order; [`Lever::apply`] gives `None` for them).
/// Variants whose lever does not apply to `data` are skipped.
pub fn run(
    data: &Dataset,
    encoded: &[(Lever, &Dataset)],
    protocol: &Protocol<'_>,
) -> Result<Vec<GridCell>, Box<dyn std::error::Error>> {
    let order = shuffled(data.len(), protocol.seed);
    let splits: Vec<_> = (0..protocol.folds)
        .map(|fold| split(&order, fold, protocol.folds))
        .collect();
    run_on_splits(data, encoded, &splits, protocol)
}

/// As [`run`] with one split: the first `rows` rows train, the others test (for synthetic
/// data, where both are fresh draws). `protocol.folds` is ignored.
pub fn run_split(
    data: &Dataset,
    rows: usize,
    protocol: &Protocol<'_>,
) -> Result<Vec<GridCell>, Box<dyn std::error::Error>> {
    let split = ((0..rows).collect(), (rows..data.len()).collect());
    run_on_splits(data, &[], &[split], protocol)
}

fn run_on_splits(
    data: &Dataset,
    encoded: &[(Lever, &Dataset)],
    splits: &[(Vec<usize>, Vec<usize>)],
    protocol: &Protocol<'_>,
) -> Result<Vec<GridCell>, Box<dyn std::error::Error>> {
    debug_assert!(
        protocol.lambdas.windows(2).all(|w| w[0] >= w[1]),
        "the warm-start chain runs from large Λ to small"
    );
    let groups = feature_groups(data)?;
    // The loader-made encodings are borrowed; the others are made here from `data`.
    let mut encodings: BTreeMap<Lever, Cow<'_, Dataset>> = BTreeMap::new();
    for &(lever, dataset) in encoded {
        if dataset.len() != data.len() {
            return Err(format!(
                "{lever:?} encoding has {} rows, the data {}",
                dataset.len(),
                data.len()
            )
            .into());
        }
        // The same rows in the same order: the labels and columns must agree too.
        if dataset.labels != data.labels || dataset.feature_names != data.feature_names {
            return Err(format!(
                "{lever:?} encoding's labels or columns differ from the data's: not the same rows"
            )
            .into());
        }
        encodings.insert(lever, Cow::Borrowed(dataset));
    }
    for variant in protocol.variants {
        let lever = variant.lever.rows();
        if !encodings.contains_key(&lever)
            && let Some(encoded) = lever.apply(data)
        {
            encodings.insert(lever, Cow::Owned(encoded));
        }
    }
    let runnable: Vec<usize> = (0..protocol.variants.len())
        .filter(|&v| encodings.contains_key(&protocol.variants[v].lever.rows()))
        .collect();
    let chains: Vec<(usize, usize, usize)> = runnable
        .iter()
        .flat_map(|&v| {
            (0..protocol.epsilons.len())
                .flat_map(move |e| (0..protocol.draws).map(move |draw| (v, e, draw)))
        })
        .collect();
    let progress = progress_bar(
        &data.name,
        chains.len() * protocol.lambdas.len() * splits.len(),
    );
    let mut errors: BTreeMap<Key, Vec<Option<f64>>> = BTreeMap::new();
    for (fold, (train_rows, test_rows)) in splits.iter().enumerate() {
        let mut sets: BTreeMap<Lever, (TrainingSet, TrainingSet)> = BTreeMap::new();
        for (lever, encoded) in &encodings {
            let train = encoded.training_set(train_rows)?;
            let test = encoded.training_set(test_rows)?;
            sets.insert(*lever, (train, test));
        }
        let outcomes: Vec<Vec<(Key, Option<f64>)>> = chains
            .par_iter()
            .map(|&(v, e, draw)| {
                let variant = &protocol.variants[v];
                let (train, test) = &sets[&variant.lever.rows()];
                let epsilon = protocol.epsilons[e];
                // Independent of the variant: variants are compared on the same noise draws.
                let seed = protocol.seed
                    ^ (fold as u64) << 48
                    ^ (draw as u64) << 32
                    ^ epsilon.to_bits().rotate_left(7);
                let mut start: Option<Vec<f64>> = None;
                let mut out = Vec::with_capacity(protocol.lambdas.len());
                for &lambda in protocol.lambdas {
                    let mut params = variant.params(lambda, epsilon, &groups);
                    if let Some(weights) = &start {
                        params = params.warm_start(weights);
                    }
                    let error = match params.fit(train, &mut InsecureSeededRng::new(seed)) {
                        Ok(fit) => {
                            start = Some(fit.secret_solver_weights().to_vec());
                            Some(fit.model().error_rate(test)?)
                        }
                        Err(ErmError::NotConverged) => None,
                        Err(e) => return Err(e),
                    };
                    progress.inc(1);
                    out.push(((v, lambda.to_bits(), epsilon.to_bits()), error));
                }
                Ok(out)
            })
            .collect::<Result<_, ErmError>>()?;
        for (key, error) in outcomes.into_iter().flatten() {
            errors.entry(key).or_default().push(error);
        }
    }
    progress.finish_and_clear();
    Ok(errors
        .into_iter()
        .map(|((v, lambda, epsilon), errors)| {
            let variant = protocol.variants[v];
            let (mean_error, std_error) = mean_and_std_error(errors.iter().flatten().copied());
            GridCell {
                dataset: data.name.clone(),
                label: variant.label(),
                variant,
                lambda: f64::from_bits(lambda),
                epsilon: f64::from_bits(epsilon),
                mean_error,
                std_error,
                fits: errors.iter().flatten().count(),
                refusals: errors.iter().filter(|e| e.is_none()).count(),
                errors,
            }
        })
        .collect())
}

/// The mean and its standard error (sample standard deviation / √k).
pub fn mean_and_std_error(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let values: Vec<f64> = values.collect();
    let k = values.len();
    if k == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / k as f64;
    if k < 2 {
        return (mean, f64::NAN);
    }
    let variance = values.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    (mean, (variance / k as f64).sqrt())
}

pub fn progress_bar(name: &str, total: usize) -> ProgressBar {
    let progress = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template(
            "{prefix:>9} [{bar:40}] {pos}/{len} fits, {elapsed} elapsed, ETA {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    progress.set_prefix(name.to_owned());
    progress
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_erm::ObjectiveCalibration::CliffFree;

    fn protocol(variants: &[Variant]) -> Protocol<'_> {
        Protocol {
            variants,
            lambdas: &[1e-2],
            epsilons: &[10.0],
            folds: 2,
            draws: 1,
            seed: 5,
        }
    }

    #[test]
    fn a_loader_made_encoding_is_trained_on_and_must_match_the_rows() {
        let data = dp_datasets::noisy_linear(400, 3, 0.0, 1).unwrap();
        // The "encoding": the same labels with every feature erased, so a model trained on
        // it can only guess.
        let erased = Dataset {
            rows: vec![Vec::new(); data.len()],
            ..data.clone()
        };
        let variants = [
            Variant::new(None, CliffFree, Lever::Paper),
            Variant::new(None, CliffFree, Lever::LogCounts),
        ];
        let protocol = protocol(&variants);
        // Without it, the lever has no rows and no cells.
        let cells = run(&data, &[], &protocol).unwrap();
        assert!(cells.iter().all(|c| c.variant.lever == Lever::Paper));
        assert_eq!(cells.len(), 1);
        let cells = run(&data, &[(Lever::LogCounts, &erased)], &protocol).unwrap();
        let error = |lever| {
            cells
                .iter()
                .find(|c| c.variant.lever == lever)
                .expect("a cell per lever")
                .mean_error
        };
        assert!(error(Lever::Paper) < 0.2, "{}", error(Lever::Paper));
        assert!(error(Lever::LogCounts) > 0.3, "{}", error(Lever::LogCounts));
        // An encoding of other rows is refused, naming both counts.
        let shorter = dp_datasets::noisy_linear(399, 3, 0.0, 1).unwrap();
        let refused = run(&data, &[(Lever::LogCounts, &shorter)], &protocol).unwrap_err();
        assert!(
            refused.to_string().contains("399 rows, the data 400"),
            "{refused}"
        );
        // So is one of the same length in another order.
        let reversed = Dataset {
            rows: data.rows.iter().rev().cloned().collect(),
            labels: data.labels.iter().rev().copied().collect(),
            ..data.clone()
        };
        let refused = run(&data, &[(Lever::LogCounts, &reversed)], &protocol).unwrap_err();
        assert!(
            refused.to_string().contains("not the same rows"),
            "{refused}"
        );
    }
}
