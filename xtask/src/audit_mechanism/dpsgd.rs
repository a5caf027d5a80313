//! DP-SGD in `cargo xtask audit mechanism`: dp-erm's `DpSgd` calibrated to (ε, δ) =
//! (2, 10⁻⁵), replace one record, on a pair built for it (the label-flip pair of the other
//! audits would not reach the clipping norm, so it would say little about σ).
//!
//! The pair: 50 rows in one dimension, 49 at x = 0 (zero gradient, labels alternating) and
//! the canary x* = 1 labelled +1 in one dataset and −1 in the other. Huber loss (h = 1/2),
//! one step from w = 0 with sampling rate q = 1/4, clipping norm 1, learning rate 1: the
//! canary's gradient is ℓ'(0)·y·x* = −y, of norm exactly C, so the released weight is
//! `(B·y − Z)/(qn)` with B ~ Bernoulli(q) and Z ~ N(0, σ²) — the subsampled Gaussian pair
//! at full sensitivity, which is what the accountant's curve bounds. Score: the canary
//! margin; the bound is δ-aware as for the Gaussian mechanisms. No closed form for this
//! pair's exact ε is computed here: only the claim is checked (dp-erm's own audit test
//! also catches σ/4 on the same pair).
//!
//! `dp-sgd-huber-clipped` is the same audit at the clipping norm of the library's DP-SGD
//! rule, C = 1/4, below the canary's gradient of norm 1: the fit must clip it to C, or the
//! canary moves the weight four times further than the noise σC was calibrated for. The
//! audit at C = 1 cannot see clipping (the gradient is exactly C); dp-erm's test
//! `dpsgd_audit_at_a_clip_below_the_gradient_catches_clipping_against_one` runs this pair
//! against the mutant that clips to 1 instead of C, and catches it.

use dp_audit::{canary_margin, epsilon_lower_bound, judge, run_scores};
use dp_erm::{DpSgd, DpSgdConfig, Examples, Features, Loss};

use super::gaussian::{DELTA, epsilon_at_delta};
use super::{ALPHA, Branch, EPSILON, ROWS};

/// The audited DP-SGD configuration's name (C = 1, the canary's gradient of norm C).
pub const NAME: &str = "dp-sgd-huber";

/// The clipping audit's name (C = 1/4, the canary's gradient of norm 1 = 4C).
pub const CLIPPED_NAME: &str = "dp-sgd-huber-clipped";

/// The clipping norm C of a DP-SGD audit by name; `None` for another mechanism.
pub fn clip_norm(name: &str) -> Option<f64> {
    match name {
        NAME => Some(1.0),
        CLIPPED_NAME => Some(0.25),
        _ => None,
    }
}

/// The sampling rate of the audited step.
const SAMPLING_RATE: f64 = 0.25;

/// The pair described in the module's documentation.
fn pair() -> Result<(Examples, Examples), dp_erm::ErmError> {
    let mut values = vec![0.0; ROWS];
    values[ROWS - 1] = 1.0;
    let build = |canary: f64| {
        let mut labels: Vec<f64> = (0..ROWS)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        labels[ROWS - 1] = canary;
        Examples::new(Features::dense(1, values.clone())?, labels)
    };
    Ok((build(1.0)?, build(-1.0)?))
}

/// DP-SGD calibrated to the audit's (ε, δ): one step at rate q, Huber loss, clipping norm
/// `clip_norm`.
pub fn mechanism(clip_norm: f64) -> Result<DpSgd, dp_erm::ErmError> {
    let mut config = DpSgdConfig::new(Loss::huber(0.5)?, SAMPLING_RATE, 1, 1.0, DELTA);
    config.clip_norm = clip_norm;
    DpSgd::for_target(config, EPSILON)
}

/// The one branch of the DP-SGD audit at clipping norm `clip_norm`.
pub fn audit_branch(
    runs: usize,
    base_seed: u64,
    clip_norm: f64,
) -> Result<Branch, Box<dyn std::error::Error>> {
    let sgd = mechanism(clip_norm)?;
    let (first, second) = pair()?;
    let score = |data: &Examples, run_seed: u64| {
        run_scores(runs, run_seed, |rng| match sgd.fit(data, rng) {
            Ok(model) => canary_margin(model.weights(), &[(0, 1.0)], 1.0),
            Err(_) => f64::NAN,
        })
    };
    let (a, b) = (
        score(&first, base_seed + 1)?,
        score(&second, base_seed + 2)?,
    );
    let mut bound = epsilon_lower_bound(&a, &b, ALPHA)?;
    bound.epsilon = epsilon_at_delta(&bound, DELTA);
    // The claim is what the accountant certified (at most the target, rounded up).
    let verdict = judge(&bound, sgd.epsilon(), None)?;
    Ok(Branch {
        bound,
        verdict,
        pair_epsilon: None,
        how_pair_epsilon: if clip_norm < 1.0 {
            "no closed form (one subsampled Gaussian step, the canary's gradient clipped to C)"
        } else {
            "no closed form (one subsampled Gaussian step at full sensitivity)"
        },
        score: "canary margin",
        claimed_delta: DELTA,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audited mechanism claims the audit's (ε, δ) in one step, and the pair differs
    /// only in the canary's label.
    #[test]
    fn the_audited_step_claims_the_audit_guarantee_on_a_full_sensitivity_pair() {
        for name in [NAME, CLIPPED_NAME] {
            let clip = clip_norm(name).unwrap();
            let sgd = mechanism(clip).unwrap();
            assert!(sgd.epsilon() <= EPSILON && sgd.epsilon() > 0.99 * EPSILON);
            assert_eq!(sgd.delta(), DELTA);
            assert_eq!(sgd.config().steps, 1);
            assert_eq!(sgd.config().clip_norm, clip);
        }
        // The clipped audit's canary gradient (|ℓ'(0)|·x* = 1) is beyond its C.
        assert!(clip_norm(CLIPPED_NAME).unwrap() < 1.0);
        assert_eq!(clip_norm("objective-huber"), None);
        let (first, second) = pair().unwrap();
        assert_eq!(first.len(), ROWS);
        assert_eq!(first.labels()[ROWS - 1], 1.0);
        assert_eq!(second.labels()[ROWS - 1], -1.0);
        assert_eq!(first.labels()[..ROWS - 1], second.labels()[..ROWS - 1]);
    }
}
