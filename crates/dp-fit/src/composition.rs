//! How a ledger composes its spends: basic composition (ε and δ add up), or the tight
//! composition of each spend's privacy curve by privacy-loss distributions (PLDs), whichever
//! certifies less.
//!
//! Each [`crate::Spend`] records its (ε, δ) and, where its mechanism has one, a [`Curve`] —
//! enough to rebuild the mechanism's privacy-loss distribution:
//! - a pure-ε spend (δ = 0, no curve): randomized response at ε, the worst case of every
//!   ε-DP mechanism ([`dp_noise::PrivacyLossDistribution::pure`]);
//! - an (ε, δ) spend without a curve (objective perturbation with Gaussian noise, whose
//!   privacy profile is not a Gaussian's, and every spend recorded before curves): the worst
//!   case of every (ε, δ)-DP mechanism, randomized response with δ at +∞
//!   ([`dp_noise::PrivacyLossDistribution::approximate`]);
//! - [`Curve::Gaussian`]: the (continuous) Gaussian mechanism, by its noise-to-sensitivity
//!   ratio;
//! - [`Curve::Zcdp`]: a ρ-zCDP mechanism (dp-erm's Gaussian output perturbation, whose
//!   discrete Gaussian noise is proved ρ-zCDP, not to have the continuous Gaussian's curve);
//! - [`Curve::SubsampledGaussian`]: DP-SGD (rate q, noise multiplier σ, T steps),
//!   replace-one, the relation every ledger spend is stated for.
//!
//! # Privacy
//! The spends are mechanisms run on the same dataset, so their composition is
//! (ε, δ)-DP for any statement that bounds it; the ledger takes the least ε among these
//! (each a valid bound, none chosen by looking at data):
//! 1. **basic**: `(Σ εᵢ, Σ δᵢ)` (exact sums, rounded up), when `Σ δᵢ` is within the
//!    ledger's δ;
//! 2. **PLD, curves**: the convolution of every spend's PLD — its curve's where it has one,
//!    its pair's otherwise — with the ρ of the zCDP spends added up (zCDP composes by
//!    addition, BS16 Lemma 2.3), converted to a pair `(ε_z(δ_z), δ_z)` by CKS20 for each
//!    `δ_z ∈ {δ/10, 2δ/10, …, 9δ/10}` and convolved as that pair's law (all of them when
//!    the zCDP spends are the only ones: then ε is `ε_z(δ)` itself), ε read off at the
//!    ledger's δ ([`dp_noise::PrivacyLossDistribution::epsilon_for_delta`]: an upper bound,
//!    discretization error included, rounded up);
//! 3. **PLD, pairs**: the same with every spend taken as its (ε, δ) pair (so that a spend
//!    checked as a pair before its curve was known is never refused once it is: its curve
//!    is dominated by its pair's, and a discretized curve need not be).
//!
//! A pure-ε ledger (δ = 0) and a ledger whose spends are all pure ε compose by basic
//! composition only, exactly as before curves.
//!
//! # Numerics
//! Every PLD is discretized on one grid `h = 10⁻⁴·min(ε_total, 1)` (dp-erm's
//! [`dp_erm::pld_discretization`] of the ledger's total ε; a law too wide for it is tried on
//! a 10× coarser grid, and where no grid holds it the PLD candidates are skipped, leaving
//! basic composition).

use dp_erm::{DpSgd, pld_discretization};
use dp_noise::{MAX_DISCRETIZATION, Neighbouring, NoiseError, PrivacyLossDistribution, Zcdp};
use serde::{Deserialize, Serialize};

use crate::ledger::Spend;

/// A spend's privacy curve, or enough to rebuild it (see the module docs); every spend is
/// replace-one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Curve {
    /// The Gaussian mechanism: noise `N(0, σ²)` (per coordinate) on a function of L2
    /// sensitivity Δ; the ratio Δ/σ.
    Gaussian {
        /// Δ/σ (finite, > 0).
        sensitivity_over_sigma: f64,
    },
    /// A ρ-zCDP mechanism.
    Zcdp {
        /// ρ (finite, > 0).
        rho: f64,
    },
    /// DP-SGD: T steps of the Poisson-subsampled Gaussian, replace-one.
    SubsampledGaussian {
        /// The realized sampling rate q in (0, 1].
        sampling_rate: f64,
        /// σ (finite, > 0).
        noise_multiplier: f64,
        /// T (1 ≤ T ≤ dp-erm's `MAX_SGD_STEPS`).
        steps: u64,
    },
}

impl Curve {
    /// DP-SGD's curve for a ledger: its replace-one law (the same noise, sampling rate and
    /// steps whatever relation the fit was stated for, its divisor being public).
    pub fn dp_sgd(sgd: &DpSgd) -> Self {
        Curve::SubsampledGaussian {
            sampling_rate: sgd.sampling_rate(),
            noise_multiplier: sgd.noise_multiplier(),
            steps: sgd.config().steps,
        }
    }

    /// The curve of a Gaussian output-perturbation fit at (`epsilon`, `delta`) of a
    /// `class_count`-class classifier (dp-erm's `GaussianErm`, through the recipe: one model,
    /// or one-vs-rest models each at the recipe's share (ε/K, δ/K) rounded down): each model's
    /// discrete Gaussian noise is ρ-zCDP with ρ at most the largest ρ whose CKS20 conversion
    /// certifies its share, so the fit is ρ-zCDP with ρ = K × that largest ρ (zCDP adds up).
    /// Known before any data are read. `None` where a share is refused.
    pub fn gaussian_output_perturbation(
        epsilon: f64,
        delta: f64,
        class_count: usize,
    ) -> Option<Self> {
        let models = crate::recipe::model_count(class_count);
        let share = crate::split::per_model_epsilon(epsilon, models)?;
        let one = Zcdp::largest_for(share, crate::split::per_model_delta(delta, models))
            .ok()?
            .rho();
        Some(Curve::Zcdp {
            rho: (one * models as f64).next_up(),
        })
    }

    /// What is wrong with the curve's numbers, if anything.
    pub(crate) fn problem(&self) -> Option<String> {
        let positive = |what: &str, x: f64| {
            (!(x.is_finite() && x > 0.0)).then(|| format!("{what} = {x:?} is not finite and > 0"))
        };
        match *self {
            Curve::Gaussian {
                sensitivity_over_sigma,
            } => positive("sensitivity_over_sigma", sensitivity_over_sigma),
            Curve::Zcdp { rho } => positive("rho", rho),
            Curve::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
            } => positive("noise_multiplier", noise_multiplier)
                .or_else(|| positive("sampling_rate", sampling_rate))
                .or_else(|| {
                    (sampling_rate > 1.0)
                        .then(|| format!("sampling_rate = {sampling_rate:?} is above 1"))
                })
                .or_else(|| {
                    (!(1..=dp_erm::MAX_SGD_STEPS).contains(&steps))
                        .then(|| format!("steps = {steps} is not between 1 and 1000000"))
                }),
        }
    }
}

/// Which composition certified a ledger's total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// ε and δ added up.
    Basic,
    /// The privacy-loss distributions of the spends, convolved.
    Pld,
}

impl Method {
    /// What faces print: `"basic"` or `"privacy-loss distribution"`.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Basic => "basic",
            Method::Pld => "privacy-loss distribution",
        }
    }
}

/// The (ε, δ) a set of spends is certified at, and by which composition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composition {
    /// How.
    pub method: Method,
    /// ε, rounded up.
    pub epsilon: f64,
    /// δ: the spends' δs added up (basic), or the ledger's δ (PLD).
    pub delta: f64,
}

/// The PLD ε at `delta` of `spends`, each by its curve (`curves`) or by its pair; `None`
/// where no grid holds a law (or a law is refused).
pub(crate) fn pld_epsilon(
    spends: &[&Spend],
    delta: f64,
    total_epsilon: f64,
    curves: bool,
) -> Option<f64> {
    let mut h = pld_discretization(total_epsilon);
    loop {
        match pld_epsilon_at(spends, delta, h, curves) {
            Ok(epsilon) => return Some(epsilon),
            Err(_) if h * 10.0 <= MAX_DISCRETIZATION => h *= 10.0,
            Err(_) => return None,
        }
    }
}

fn pld_epsilon_at(spends: &[&Spend], delta: f64, h: f64, curves: bool) -> Result<f64, NoiseError> {
    let mut law: Option<PrivacyLossDistribution> = None;
    let mut rho = 0.0f64;
    for spend in spends {
        let one = match (curves, spend.curve) {
            (true, Some(Curve::Zcdp { rho: r })) => {
                rho = (rho + r).next_up();
                continue;
            }
            (
                true,
                Some(Curve::Gaussian {
                    sensitivity_over_sigma,
                }),
            ) => PrivacyLossDistribution::gaussian(sensitivity_over_sigma, h)?,
            (
                true,
                Some(Curve::SubsampledGaussian {
                    sampling_rate,
                    noise_multiplier,
                    steps,
                }),
            ) => PrivacyLossDistribution::subsampled_gaussian(
                Neighbouring::ReplaceOne,
                sampling_rate,
                noise_multiplier,
                h,
            )?
            .self_compose(steps)?,
            _ => PrivacyLossDistribution::approximate(spend.epsilon, spend.delta, h)?,
        };
        law = Some(match law {
            None => one,
            Some(l) => l.compose(&one)?,
        });
    }
    if rho == 0.0 {
        return match law {
            Some(l) => l.epsilon_for_delta(delta),
            None => Ok(0.0),
        };
    }
    let zcdp = Zcdp::new(rho)?;
    let Some(law) = law else {
        return zcdp.epsilon(delta);
    };
    let mut best = f64::INFINITY;
    for k in 1..10 {
        let share = delta * f64::from(k) / 10.0;
        let pair = PrivacyLossDistribution::approximate(zcdp.epsilon(share)?, share, h)?;
        best = best.min(law.compose(&pair)?.epsilon_for_delta(delta)?);
    }
    Ok(best)
}
