//! The rules validated by protocol on data the fit never saw: per (dataset, noise shape, ε)
//! the rule's Λ on the training size, its regret on the grid's error curve against the best
//! Λ in hindsight, the end-to-end error, majority-class prediction and the a-priori outlook.

use dp_erm::{Loss, ObjectiveCalibration, RegularizationRule};
use dp_noise::FeatureGroups;
use serde::Serialize;

use super::end_to_end::{Choice, EndToEndCell};
use super::grid::GridCell;
use super::rule_fit::{Regret, interpolate};
use super::variant::{Lever, Variant};

/// A validation dataset: the name its grid and end-to-end cells carry, the training rows a
/// rule sees (a fold's, or the official training file's), the features and the test error
/// of predicting the training majority.
#[derive(Debug, Clone, Serialize)]
pub struct Protocol {
    pub dataset: String,
    pub training_rows: usize,
    pub features: usize,
    /// The one-hot groups (attributes and numeric columns), which the grouped rule reads.
    #[serde(skip)]
    pub groups: FeatureGroups,
    pub majority_error: f64,
}

/// One validation cell.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationCell {
    pub dataset: String,
    pub grouped: bool,
    pub epsilon: f64,
    pub noise_ratio: f64,
    pub warning: Option<&'static str>,
    pub rule_lambda: f64,
    /// The grid's error curve (mean over folds × draws) at the rule's Λ, interpolated.
    pub rule_error: f64,
    pub best_lambda: f64,
    pub best_error: f64,
    /// `rule_error − best_error`.
    pub regret: f64,
    pub end_to_end_error: Option<f64>,
    pub majority_error: f64,
}

impl ValidationCell {
    /// The rule did worse than majority-class prediction (end to end, or on the curve).
    pub fn worse_than_majority(&self) -> bool {
        self.end_to_end_error
            .unwrap_or(self.rule_error)
            .max(self.rule_error)
            >= self.majority_error
    }
}

/// The grid variant a rule with this loss trains.
pub fn rule_variant(loss: Loss, grouped: bool) -> Variant {
    let width = match loss {
        Loss::Logistic => None,
        Loss::Huber { width } => Some(width),
        Loss::HuberRegression { .. } => unreachable!("the utility study's rules train classifiers"),
    };
    let lever = if grouped {
        Lever::GroupNoise
    } else {
        Lever::Paper
    };
    Variant::new(width, ObjectiveCalibration::CliffFree, lever)
}

/// Every (protocol, noise shape, ε) with grid cells for the rule's variant.
pub fn cells(
    protocols: &[Protocol],
    grid: &[GridCell],
    end_to_end: &[EndToEndCell],
    epsilons: &[f64],
) -> Vec<ValidationCell> {
    let mut out = Vec::new();
    for protocol in protocols {
        for grouped in [false, true] {
            let (loss, choice) = if grouped {
                (RegularizationRule::GROUPED.loss, Choice::GroupedRule)
            } else {
                (RegularizationRule::DEFAULT.loss, Choice::Rule)
            };
            let variant = rule_variant(loss, grouped);
            for &epsilon in epsilons {
                let mut curve: Vec<(f64, f64)> = grid
                    .iter()
                    .filter(|c| {
                        c.dataset == protocol.dataset
                            && c.variant == variant
                            && c.epsilon == epsilon
                            && c.fits > 0
                    })
                    .map(|c| (c.lambda, c.mean_error))
                    .collect();
                curve.sort_by(|a, b| a.0.total_cmp(&b.0));
                let Some(&(best_lambda, best_error)) =
                    curve.iter().min_by(|a, b| a.1.total_cmp(&b.1))
                else {
                    continue;
                };
                let (n, d) = (protocol.training_rows, protocol.features);
                let params = if grouped {
                    RegularizationRule::GROUPED.params(n, d, epsilon, protocol.groups.clone())
                } else {
                    RegularizationRule::DEFAULT.params(n, d, epsilon)
                };
                let (Ok(params), Ok(outlook)) =
                    (params, RegularizationRule::outlook(n, d, epsilon))
                else {
                    continue;
                };
                let rule_lambda = params.regularization();
                let rule_error = interpolate(&curve, rule_lambda);
                out.push(ValidationCell {
                    dataset: protocol.dataset.clone(),
                    grouped,
                    epsilon,
                    noise_ratio: outlook.noise_ratio,
                    warning: outlook.warning(),
                    rule_lambda,
                    rule_error,
                    best_lambda,
                    best_error,
                    regret: rule_error - best_error,
                    end_to_end_error: end_to_end
                        .iter()
                        .find(|c| {
                            c.dataset == protocol.dataset
                                && c.choice == choice
                                && c.epsilon == epsilon
                        })
                        .map(|c| c.mean_error),
                    majority_error: protocol.majority_error,
                });
            }
        }
    }
    out
}

/// The regret's distribution over the cells with `d/(nε) ≤ 0.1`.
pub fn regret_in_range(cells: &[ValidationCell]) -> Regret {
    Regret::of(
        cells
            .iter()
            .filter(|c| c.noise_ratio <= super::VALIDATED_RATIO)
            .map(|c| c.regret)
            .collect(),
    )
}

/// The cells where the rule did worse than majority-class prediction and the outlook gave
/// no warning.
pub fn unwarned_failures(cells: &[ValidationCell]) -> Vec<&ValidationCell> {
    cells
        .iter()
        .filter(|c| c.worse_than_majority() && c.warning.is_none())
        .collect()
}
