//! Randomness: a cryptographically secure default and an explicitly insecure seeded form.

use std::convert::Infallible;
use std::fmt;

use rand::rngs::SysRng;
use rand::{SeedableRng, TryCryptoRng, TryRng};
use rand_chacha::ChaCha20Rng;

use crate::NoiseError;

/// The generator this workspace uses: ChaCha20.
///
/// Every sampler takes any `R: Rng + ?Sized`; `DpRng` is the one to use in production,
/// created with [`DpRng::from_os_entropy`]. For experiments and tests that must be
/// repeatable, [`DpRng::insecure_from_seed`] exists, and its name says what it is: anyone
/// who knows the seed knows every noise draw, so nothing released with it is private.
///
/// # Privacy
/// Differential privacy assumes noise the adversary cannot predict. ChaCha20 keyed with
/// 256 bits from the operating system gives computationally unpredictable output; the
/// guarantees of the mechanisms then hold against computationally bounded adversaries.
/// `Debug` does not print the state, and the type is deliberately not `Clone`: a copy
/// would replay the same noise.
pub struct DpRng {
    inner: ChaCha20Rng,
    seeded_insecurely: bool,
}

impl DpRng {
    /// ChaCha20 keyed from the operating system's entropy source. The production choice.
    pub fn from_os_entropy() -> Result<Self, NoiseError> {
        let inner = ChaCha20Rng::try_from_rng(&mut SysRng)
            .map_err(|e| NoiseError::EntropyUnavailable(e.to_string()))?;
        Ok(Self {
            inner,
            seeded_insecurely: false,
        })
    }

    /// ChaCha20 keyed from a fixed 64-bit seed: the same seed gives the same stream.
    ///
    /// **Not private.** For reproducible experiments and tests only: anyone who knows or
    /// guesses the seed can subtract the noise from every released value.
    pub fn insecure_from_seed(seed: u64) -> Self {
        Self {
            inner: ChaCha20Rng::seed_from_u64(seed),
            seeded_insecurely: true,
        }
    }

    /// Whether this generator came from [`DpRng::insecure_from_seed`].
    pub fn is_insecurely_seeded(&self) -> bool {
        self.seeded_insecurely
    }
}

impl fmt::Debug for DpRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpRng")
            .field("algorithm", &"ChaCha20")
            .field("seeded_insecurely", &self.seeded_insecurely)
            .finish_non_exhaustive()
    }
}

impl TryRng for DpRng {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.inner.try_next_u32()
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.inner.try_next_u64()
    }

    #[inline]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.inner.try_fill_bytes(dst)
    }
}

impl TryCryptoRng for DpRng {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{CryptoRng, Rng};

    fn assert_crypto<R: CryptoRng>(_: &R) {}

    #[test]
    fn os_seeded_generators_differ() {
        let mut a = DpRng::from_os_entropy().unwrap();
        let mut b = DpRng::from_os_entropy().unwrap();
        assert_crypto(&a);
        assert!(!a.is_insecurely_seeded());
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_ne!(xs, ys);
    }

    #[test]
    fn insecure_seed_is_reproducible_and_labelled() {
        let mut a = DpRng::insecure_from_seed(7);
        let mut b = DpRng::insecure_from_seed(7);
        let mut c = DpRng::insecure_from_seed(8);
        assert!(a.is_insecurely_seeded());
        let (x, y, z) = (a.next_u64(), b.next_u64(), c.next_u64());
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn debug_does_not_print_state() {
        let rng = DpRng::insecure_from_seed(1);
        let shown = format!("{rng:?}");
        assert!(shown.contains("ChaCha20"));
        assert!(!shown.contains("seed:") && !shown.contains("state"));
    }
}
