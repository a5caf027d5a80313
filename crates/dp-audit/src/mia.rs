//! Membership inference (docs/src/reference/privacy-testing.md §3): ROC curves of an attack's scores, the
//! numbers to report, and the ceiling ε-DP puts on them.

use serde::Serialize;

use crate::AuditError;

/// `Err(InvalidParameter)` unless `value` satisfies `ok`.
fn require(
    what: &'static str,
    value: f64,
    ok: bool,
    requirement: &'static str,
) -> Result<(), AuditError> {
    if ok {
        Ok(())
    } else {
        Err(AuditError::InvalidParameter {
            what,
            value,
            requirement,
        })
    }
}

/// An attack's ROC curve from scores of members (higher = "member") and non-members.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roc {
    /// `(false positive rate, true positive rate)` at every distinct threshold, from (0, 0)
    /// to (1, 1).
    pub points: Vec<(f64, f64)>,
    /// Area under the curve (ties count half).
    pub auc: f64,
    /// Member scores.
    pub members: usize,
    /// Non-member scores.
    pub non_members: usize,
}

/// The ROC curve of `member` against `non_member` scores; `None` if either is empty or a
/// score is NaN.
pub fn roc(member: &[f64], non_member: &[f64]) -> Option<Roc> {
    if member.is_empty()
        || non_member.is_empty()
        || member.iter().chain(non_member).any(|s| s.is_nan())
    {
        return None;
    }
    let mut all: Vec<(f64, bool)> = member
        .iter()
        .map(|&s| (s, true))
        .chain(non_member.iter().map(|&s| (s, false)))
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (p, n) = (member.len() as f64, non_member.len() as f64);
    let (mut tp, mut fp, mut auc) = (0.0, 0.0, 0.0);
    let mut points = vec![(0.0, 0.0)];
    let mut i = 0;
    while i < all.len() {
        let (mut dtp, mut dfp) = (0.0, 0.0);
        let score = all[i].0;
        while i < all.len() && all[i].0 == score {
            if all[i].1 {
                dtp += 1.0
            } else {
                dfp += 1.0
            }
            i += 1;
        }
        // Trapezoid: a block of ties counts half.
        auc += dfp / n * (tp + dtp / 2.0) / p;
        tp += dtp;
        fp += dfp;
        points.push((fp / n, tp / p));
    }
    Some(Roc {
        points,
        auc,
        members: member.len(),
        non_members: non_member.len(),
    })
}

/// The true positive rate at a false positive rate, and whether enough non-members lie
/// above the threshold to measure it (at least [`MIN_FALSE_POSITIVES`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TprAtFpr {
    /// The false positive rate asked for.
    pub fpr: f64,
    /// The largest true positive rate among thresholds with false positive rate ≤ `fpr`.
    pub tpr: f64,
    /// False: fewer than `MIN_FALSE_POSITIVES` non-members at that rate, so the value is
    /// mostly noise.
    pub enough_samples: bool,
}

/// Non-members a false positive rate must rest on to be reported as measured.
pub const MIN_FALSE_POSITIVES: f64 = 10.0;

/// [`TprAtFpr`] at each of `fprs`; refuses a rate outside [0, 1] (or NaN).
pub fn tpr_at_fpr(roc: &Roc, fprs: &[f64]) -> Result<Vec<TprAtFpr>, AuditError> {
    for &fpr in fprs {
        require(
            "false positive rate",
            fpr,
            (0.0..=1.0).contains(&fpr),
            "must be in [0, 1]",
        )?;
    }
    Ok(fprs
        .iter()
        .map(|&fpr| TprAtFpr {
            fpr,
            tpr: roc
                .points
                .iter()
                .filter(|&&(f, _)| f <= fpr)
                .map(|&(_, t)| t)
                .fold(0.0, f64::max),
            enough_samples: fpr * roc.non_members as f64 >= MIN_FALSE_POSITIVES,
        })
        .collect())
}

/// The attack's advantage `max (TPR − FPR)` over thresholds.
pub fn advantage(roc: &Roc) -> f64 {
    roc.points.iter().map(|&(f, t)| t - f).fold(0.0, f64::max)
}

/// An upper confidence bound on the attack's true advantage: the empirical advantage plus
/// the DKW bound `√(ln(4/α)/(2m))` on the deviation of each of the two empirical score
/// distributions (members, non-members; m their sizes), which holds for every threshold at
/// once with probability at least `1 − α`. It assumes independent trials; trials that share
/// a model or a target are positively dependent, which this does not account for.
/// Refuses `alpha` outside (0, 1).
pub fn advantage_upper_bound(roc: &Roc, alpha: f64) -> Result<f64, AuditError> {
    require(
        "alpha",
        alpha,
        alpha > 0.0 && alpha < 1.0,
        "must be in (0, 1)",
    )?;
    let dkw = |m: usize| ((4.0 / alpha).ln() / (2.0 * m as f64)).sqrt();
    Ok((advantage(roc) + dkw(roc.members) + dkw(roc.non_members)).min(1.0))
}

/// The largest advantage any membership test can have against an ε-DP mechanism, when
/// membership is decided between a target and a partner (replace one record):
/// `TPR ≤ e^ε·FPR` and `1 − FPR ≤ e^ε·(1 − TPR)` give `TPR − FPR ≤ (e^ε − 1)/(e^ε + 1) =
/// tanh(ε/2)`, reached at `FPR = 1/(1 + e^ε)`. It holds for every target and threshold, so
/// for their average too. Refuses a negative or NaN ε (ε = ∞ gives 1: no ceiling).
pub fn advantage_ceiling(epsilon: f64) -> Result<f64, AuditError> {
    require("epsilon", epsilon, epsilon >= 0.0, "must be >= 0")?;
    Ok((epsilon / 2.0).tanh())
}

/// `ln N(x; μ_in, σ_in) − ln N(x; μ_out, σ_out)` with means and variances fitted to the
/// `inside` and `outside` samples (variances floored at `1e-12` so that a constant sample
/// stays finite): the likelihood-ratio attack's score with shadow models. Refuses an empty
/// sample, or a non-finite `x` or sample value.
pub fn gaussian_log_likelihood_ratio(
    x: f64,
    inside: &[f64],
    outside: &[f64],
) -> Result<f64, AuditError> {
    for (what, sample) in [("inside sample", inside), ("outside sample", outside)] {
        if sample.is_empty() {
            return Err(AuditError::InvalidCount {
                what,
                value: 0,
                requirement: "must hold at least one score",
            });
        }
        if let Some(&v) = sample.iter().find(|v| !v.is_finite()) {
            require(what, v, false, "every score must be finite")?;
        }
    }
    require("score", x, x.is_finite(), "must be finite")?;
    let fit = |s: &[f64]| {
        let n = s.len() as f64;
        let mean = s.iter().sum::<f64>() / n;
        let var = s.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        (mean, var.max(1e-12))
    };
    let log_density = |(mean, var): (f64, f64)| -0.5 * ((x - mean) * (x - mean) / var + var.ln());
    Ok(log_density(fit(inside)) - log_density(fit(outside)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_random_and_tied_attacks() {
        let perfect = roc(&[2.0, 3.0], &[0.0, 1.0]).unwrap();
        assert_eq!(perfect.auc, 1.0);
        assert_eq!(advantage(&perfect), 1.0);
        let tied = roc(&[1.0; 5], &[1.0; 5]).unwrap();
        assert_eq!(tied.auc, 0.5);
        assert_eq!(advantage(&tied), 0.0);
        let reversed = roc(&[0.0], &[1.0]).unwrap();
        assert_eq!(reversed.auc, 0.0);
        assert!(roc(&[], &[1.0]).is_none() && roc(&[f64::NAN], &[1.0]).is_none());
    }

    #[test]
    fn tpr_at_fpr_flags_too_few_samples() {
        let members: Vec<f64> = (0..100).map(|i| i as f64 + 0.5).collect();
        let non_members: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let curve = roc(&members, &non_members).unwrap();
        let at = tpr_at_fpr(&curve, &[0.1, 0.01]).unwrap();
        assert!(at[0].enough_samples && !at[1].enough_samples);
        assert!((at[0].tpr - 0.11).abs() < 1e-12, "{at:?}");
    }

    #[test]
    fn the_upper_bound_adds_both_dkw_deviations() {
        let curve = roc(&[1.0; 800], &[0.0; 200]).unwrap();
        let dkw = |m: f64| ((4.0f64 / 1e-3).ln() / (2.0 * m)).sqrt();
        assert_eq!(advantage_upper_bound(&curve, 1e-3).unwrap(), 1.0);
        let tied = roc(&[0.0; 800], &[0.0; 200]).unwrap();
        let expected = dkw(800.0) + dkw(200.0);
        assert!((advantage_upper_bound(&tied, 1e-3).unwrap() - expected).abs() < 1e-12);
    }

    #[test]
    fn the_ceiling_is_tanh_of_half_epsilon() {
        let epsilon: f64 = 1.0;
        let (fpr, tpr) = (
            1.0 / (1.0 + epsilon.exp()),
            epsilon.exp() / (1.0 + epsilon.exp()),
        );
        assert!((advantage_ceiling(epsilon).unwrap() - (tpr - fpr)).abs() < 1e-15);
    }

    /// Out-of-range parameters are refused with the parameter's name, never turned into a
    /// number (α = 0 gave an infinite bound clamped to 1, α > 4 a NaN bound, a negative
    /// ε a negative ceiling, an empty shadow sample a mean of 0).
    #[test]
    fn out_of_range_parameters_are_refused() {
        let curve = roc(&[1.0, 2.0], &[0.0, 1.5]).unwrap();
        for alpha in [0.0, 1.0, 5.0, -0.1, f64::NAN] {
            let err = advantage_upper_bound(&curve, alpha).unwrap_err();
            assert!(err.to_string().contains("alpha"), "{err}");
        }
        for fpr in [-0.01, 1.01, f64::NAN] {
            let err = tpr_at_fpr(&curve, &[0.1, fpr]).unwrap_err();
            assert!(err.to_string().contains("false positive rate"), "{err}");
        }
        for epsilon in [-1.0, f64::NAN] {
            assert!(advantage_ceiling(epsilon).is_err());
        }
        assert_eq!(advantage_ceiling(f64::INFINITY).unwrap(), 1.0);
        assert!(gaussian_log_likelihood_ratio(0.0, &[], &[1.0]).is_err());
        assert!(gaussian_log_likelihood_ratio(0.0, &[1.0], &[f64::NAN]).is_err());
        assert!(gaussian_log_likelihood_ratio(f64::INFINITY, &[1.0], &[2.0]).is_err());
        assert!(gaussian_log_likelihood_ratio(1.0, &[1.0], &[2.0]).unwrap() > 0.0);
    }
}
