//! Which accountant certifies a DP-SGD fit ([`Accountant`]), and the privacy-loss
//! distribution accounting DP-SGD uses by default: the discretization rule, the fallback
//! to a coarser grid, and a per-process memo so that a configuration is calibrated once.

use std::collections::VecDeque;
use std::sync::Mutex;

use dp_noise::{
    MAX_DISCRETIZATION, MIN_DISCRETIZATION, Neighbouring, NoiseError,
    pld_smallest_noise_multiplier_within, pld_subsampled_gaussian_epsilon,
};

/// Which accountant certifies a DP-SGD fit's (ε, δ): calibrates σ for a target ε, and
/// accounts the ε of a given σ. The model records it ([`crate::SgdRecord::accountant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Accountant {
    /// Privacy-loss distributions (dp-noise's [`dp_noise::PrivacyLossDistribution`]:
    /// connect-the-dots, pessimistic; Doroshenko et al. 2022): the tight accountant, the
    /// default. About 8–10% less noise than RDP at DP-SGD's usual settings.
    #[default]
    Pld,
    /// Rényi DP of the subsampled Gaussian (Mironov, Talwar & Zhang 2019) converted to
    /// (ε, δ) by Balle et al. 2020 over dp-noise's default orders: the accountant of models
    /// trained before PLDs (and of model files that name none).
    Rdp,
}

impl Accountant {
    /// The name faces use: `"pld"` or `"rdp"`.
    pub fn name(&self) -> &'static str {
        match self {
            Accountant::Pld => "pld",
            Accountant::Rdp => "rdp",
        }
    }

    /// The accountant named `text` (`"pld"` or `"rdp"`, any case), or `None`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "pld" => Some(Accountant::Pld),
            "rdp" => Some(Accountant::Rdp),
            _ => None,
        }
    }

    /// What a report says certified the model.
    pub fn description(&self) -> &'static str {
        match self {
            Accountant::Pld => "privacy-loss distribution (connect-the-dots, pessimistic)",
            Accountant::Rdp => {
                "Rényi DP (Mironov, Talwar & Zhang 2019; Balle et al. 2020 conversion)"
            }
        }
    }
}

impl std::fmt::Display for Accountant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The discretization interval h the PLD accountant uses for a DP-SGD guarantee near ε:
/// `h = 10⁻⁴·min(ε, 1)`, at least dp-noise's `MIN_DISCRETIZATION` (10⁻⁷). Below ε = 1 the
/// grid is 0.01% of the ε it certifies, so the composed law, which spans a few ε, holds
/// about the same number of atoms (and takes about the same time) whatever ε; from ε = 1 on
/// it stays at 10⁻⁴ (the dp-accounting references use 10⁻⁵ at ε = 0.1 and 10⁻⁴ at ε = 1
/// and 2: the same grids). For a calibration ε is the target; for a given σ it is the RDP
/// accountant's ε (an upper bound on the PLD's, computed first in microseconds). A law too
/// wide for dp-noise's `MAX_ATOMS` on that grid is accounted on a 10× coarser one.
pub fn pld_discretization(epsilon: f64) -> f64 {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return 1e-4;
    }
    (epsilon.min(1.0) * 1e-4).max(MIN_DISCRETIZATION)
}

/// Significant bits kept (rounding up) in an accounted ε and a calibrated σ.
///
/// The platform's `exp` and `ln` may take different code paths on different processors
/// (glibc, for one, selects FMA code paths at run time), so a PLD evaluation can differ between two
/// machines in its last bits, and a calibration's search with it. Rounding up to a grid far
/// coarser than that (2⁻³² relative for ε, 2⁻²⁴ for σ, against differences near
/// 10⁻¹²) gives the same numbers, and so the same model file, from a seeded fit on any
/// x86-64 processor, unless a value falls within 10⁻¹² of a grid point. Rounding ε and σ up
/// only loosens a guarantee that held (ε falls as σ grows). A grid h derived from a computed
/// ε is derived from the rounded ε.
pub(crate) const EPSILON_BITS: u32 = 32;
const SIGMA_BITS: u32 = 24;

/// `x` rounded up to `bits` significant binary digits (`x` itself when it has no more, or
/// is not a positive finite number).
pub(crate) fn round_up_to_bits(x: f64, bits: u32) -> f64 {
    if !(x.is_finite() && x > 0.0 && (1..53).contains(&bits)) {
        return x;
    }
    let dropped = (1u64 << (53 - bits)) - 1;
    let raw = x.to_bits();
    if raw & dropped == 0 {
        return x;
    }
    // Carrying out of the mantissa moves into the exponent: the next binade's start.
    f64::from_bits((raw | dropped) + 1)
}

/// The relative tolerance of a PLD calibration: σ within about 0.1% of the smallest σ
/// meeting the target at the rule's h (what dp-noise's bisection to 10⁻⁹ would give), in 4–8
/// PLD evaluations instead of about 32.
pub const CALIBRATION_TOLERANCE: f64 = 1e-3;

/// Entries each memo keeps (the oldest forgotten first).
const MEMO_ENTRIES: usize = 256;

type EpsilonKey = (u8, u64, u64, u64, u64, u64);
type SigmaKey = (u8, u64, u64, u64, u64, u64);

static EPSILONS: Mutex<VecDeque<(EpsilonKey, f64)>> = Mutex::new(VecDeque::new());
static SIGMAS: Mutex<VecDeque<(SigmaKey, (f64, f64))>> = Mutex::new(VecDeque::new());

fn relation_code(relation: Neighbouring) -> u8 {
    match relation {
        Neighbouring::ReplaceOne => 0,
        Neighbouring::AddRemove => 1,
    }
}

fn remembered<K: PartialEq + Copy, V: Copy>(memo: &Mutex<VecDeque<(K, V)>>, key: K) -> Option<V> {
    let memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    memo.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
}

fn remember<K: PartialEq + Copy, V: Copy>(memo: &Mutex<VecDeque<(K, V)>>, key: K, value: V) {
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if memo.iter().any(|(k, _)| *k == key) {
        return;
    }
    if memo.len() >= MEMO_ENTRIES {
        memo.pop_front();
    }
    memo.push_back((key, value));
}

/// The grids tried for a computation asked at `h`: h, then 10h, 100h, … up to
/// `MAX_DISCRETIZATION` (a law too wide for dp-noise's `MAX_ATOMS` at h is refused; a
/// coarser grid is still pessimistic, only less tight).
fn grids(h: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(h), |&h| {
        let next = h * 10.0;
        (next <= MAX_DISCRETIZATION * (1.0 + 1e-12)).then_some(next.min(MAX_DISCRETIZATION))
    })
}

/// The PLD ε of `steps` steps of the Poisson-subsampled Gaussian (rate q, noise multiplier
/// σ) at δ for `relation`, on the grid `h` (or the first coarser grid that holds the law),
/// remembered for the process: an upper bound, as dp-noise's
/// [`pld_subsampled_gaussian_epsilon`], rounded up to 32 significant bits so that every
/// processor reports the same ε (the platform's `exp` and `ln` may differ in the last
/// bits). Deterministic: the same inputs give the same ε.
pub fn pld_epsilon(
    relation: Neighbouring,
    q: f64,
    sigma: f64,
    steps: u64,
    delta: f64,
    h: f64,
) -> Result<f64, NoiseError> {
    let key = (
        relation_code(relation),
        q.to_bits(),
        sigma.to_bits(),
        steps,
        delta.to_bits(),
        h.to_bits(),
    );
    if let Some(epsilon) = remembered(&EPSILONS, key) {
        return Ok(epsilon);
    }
    let mut last = None;
    for grid in grids(h) {
        match pld_subsampled_gaussian_epsilon(relation, q, sigma, steps, delta, grid) {
            Ok(epsilon) => {
                let epsilon = round_up_to_bits(epsilon, EPSILON_BITS);
                remember(&EPSILONS, key, epsilon);
                return Ok(epsilon);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| NoiseError::UnsupportedParameters("no grid".into())))
}

/// The smallest σ (to [`CALIBRATION_TOLERANCE`]) whose [`pld_epsilon`] at the rule's
/// grid for `epsilon` meets (ε, δ), rounded up to 24 significant bits (the same σ on every
/// processor); with that grid. Remembered for the process, so a configuration fitted many
/// times (the audits, a tuning grid) is calibrated once.
pub fn pld_calibration(
    relation: Neighbouring,
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
) -> Result<(f64, f64), NoiseError> {
    let h = pld_discretization(epsilon);
    let key = (
        relation_code(relation),
        q.to_bits(),
        steps,
        epsilon.to_bits(),
        delta.to_bits(),
        h.to_bits(),
    );
    if let Some(found) = remembered(&SIGMAS, key) {
        return Ok(found);
    }
    let mut last = None;
    for grid in grids(h) {
        match pld_smallest_noise_multiplier_within(
            relation,
            q,
            steps,
            epsilon,
            delta,
            grid,
            CALIBRATION_TOLERANCE,
        ) {
            Ok(sigma) => {
                let sigma = reproducible_sigma(relation, q, sigma, steps, epsilon, delta, grid)?;
                remember(&SIGMAS, key, (sigma, grid));
                return Ok((sigma, grid));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| NoiseError::UnsupportedParameters("no grid".into())))
}

/// The σ a calibration returns for the checked `sigma`: rounded up to [`SIGMA_BITS`]
/// significant bits, and checked again, since a pessimistic PLD's ε is not monotone in σ
/// at the scale of its grid (σ 21.624233 rounded up by 4·10⁻⁸ raised ε from at most 1 to
/// 1.00000002 at h = 10⁻⁴, q = 0.64, T = 16): where the rounded σ's ε (rounded up as
/// reported) misses `epsilon`, σ is raised by 2⁻²⁰, 2⁻¹⁹, … up to 2⁻¹⁰ relative (within the
/// calibration's 10⁻³ tolerance) until one meets it. Each check is the ε the fit then
/// reports, remembered, so the first costs nothing extra.
fn reproducible_sigma(
    relation: Neighbouring,
    q: f64,
    sigma: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    grid: f64,
) -> Result<f64, NoiseError> {
    let raises = std::iter::once(0.0).chain((10..=20).rev().map(|k| 2f64.powi(-k)));
    for raise in raises {
        let candidate = round_up_to_bits(sigma * (1.0 + raise), SIGMA_BITS);
        if pld_epsilon(relation, q, candidate, steps, delta, grid)? <= epsilon {
            return Ok(candidate);
        }
    }
    Err(NoiseError::UnsupportedParameters(format!(
        "no noise multiplier within 0.1% above {sigma} certifies ε = {epsilon} at δ = {delta} \
         on a reproducible grid; please report this setting"
    )))
}

/// The replace-one ε of an add/remove DP-SGD fit certified by PLD at ε = `add_remove_epsilon`:
/// the replace-one PLD of the same σ, q and T at δ on the grid [`pld_discretization`] of
/// the add/remove ε — what [`crate::DpSgd::replace_one_epsilon`] reports at training and
/// [`crate::Mechanism::replace_one_guarantee`] recomputes from a model's record (the same
/// inputs, the same ε).
pub(crate) fn pld_replace_one_epsilon(
    q: f64,
    sigma: f64,
    steps: u64,
    delta: f64,
    add_remove_epsilon: f64,
) -> Result<f64, NoiseError> {
    pld_epsilon(
        Neighbouring::ReplaceOne,
        q,
        sigma,
        steps,
        delta,
        pld_discretization(add_remove_epsilon),
    )
}

#[cfg(test)]
mod tests {
    use super::round_up_to_bits;

    #[test]
    fn rounding_up_keeps_the_stated_significant_bits_and_never_rounds_down() {
        // 1 + 2⁻³⁰ to 24 bits: the next multiple of 2⁻²³ above 1.
        assert_eq!(
            round_up_to_bits(1.0 + 2f64.powi(-30), 24),
            1.0 + 2f64.powi(-23)
        );
        // Already on the grid: unchanged.
        assert_eq!(round_up_to_bits(1.5, 24), 1.5);
        assert_eq!(round_up_to_bits(0.75, 1), 1.0);
        // A carry out of the mantissa moves to the next power of two.
        assert_eq!(round_up_to_bits(2.0 - 2f64.powi(-40), 24), 2.0);
        // Two values a few ulps apart, as two processors' evaluations, meet.
        let x = 5.277_671_617_761_392_f64;
        let y = 5.277_671_617_761_698_5_f64;
        assert_eq!(round_up_to_bits(x, 24), round_up_to_bits(y, 24));
        for value in [1e-7, 0.3, 0.999_983_681_856_967_3, 7.5, 1e6] {
            let rounded = round_up_to_bits(value, 32);
            assert!(rounded >= value && rounded - value <= value * 2f64.powi(-31));
        }
        assert!(round_up_to_bits(f64::INFINITY, 24).is_infinite());
    }
}
