//! Randomness: a cryptographically secure default, and an explicitly insecure seeded
//! generator for reproducible experiments.

use std::convert::Infallible;
use std::fmt;

use rand::rngs::SysRng;
use rand::{Rng, SeedableRng, TryCryptoRng, TryRng};
use rand_chacha::ChaCha20Rng;

use crate::NoiseError;

/// A generator that release paths accept: every sampler and mechanism of the workspace
/// takes `R: ReleaseRng`, so noise for a release comes from a cryptographically secure
/// generator by type, not by convention.
///
/// The trait is sealed. [`DpRng`] implements it always; [`InsecureSeededRng`] implements it
/// only when the cargo feature `insecure-seeded-rng` is enabled (and in this crate's own
/// tests): the explicit, opt-in route by which tests and experiments make runs repeatable.
/// A library that depends on this crate without that feature cannot pass a seeded or
/// user-chosen generator (`StdRng::seed_from_u64(0)` is `CryptoRng` too, and just as
/// predictable) to a mechanism.
///
/// ```
/// use dp_noise::{DpRng, Laplace};
/// let mut rng = DpRng::from_os_entropy().unwrap();
/// let released = Laplace::new(1.0, 1.0).unwrap().release(3.0, &mut rng).unwrap();
/// # assert!(released.is_finite());
/// ```
#[cfg_attr(
    not(feature = "insecure-seeded-rng"),
    doc = r#"
Without the feature, a seeded generator does not compile on a release path (checked by
`cargo test -p dp-noise --doc`, which builds this crate without the feature):

```compile_fail,E0277
use dp_noise::{InsecureSeededRng, Laplace};
let mut rng = InsecureSeededRng::new(7);
let released = Laplace::new(1.0, 1.0).unwrap().release(3.0, &mut rng).unwrap();
```

nor does any other generator, however secure its algorithm, that a caller could seed:

```compile_fail,E0277
use rand::SeedableRng;
let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
let noise = dp_noise::GammaNormVector::new(3, 1.0).unwrap().sample(&mut rng);
```
"#
)]
pub trait ReleaseRng: Rng + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for DpRng {}
impl ReleaseRng for DpRng {}

#[cfg(any(test, feature = "insecure-seeded-rng"))]
impl sealed::Sealed for InsecureSeededRng {}
/// Only with the cargo feature `insecure-seeded-rng`: releases made with it are not private.
#[cfg(any(test, feature = "insecure-seeded-rng"))]
impl ReleaseRng for InsecureSeededRng {}

/// The production generator: ChaCha20 keyed with 256 bits from the operating system.
///
/// The one [`ReleaseRng`] available without opting into anything: pass it when releasing
/// anything about real people. For repeatable experiments see [`InsecureSeededRng`].
///
/// # Privacy
/// Differential privacy assumes noise the adversary cannot predict. ChaCha20 keyed from
/// the operating system's entropy gives computationally unpredictable output, so the
/// guarantees of the mechanisms hold against computationally bounded adversaries.
/// `Debug` does not print the state, and the type is deliberately not `Clone`: a copy
/// would replay the same noise.
pub struct DpRng {
    inner: ChaCha20Rng,
}

impl DpRng {
    /// ChaCha20 keyed from the operating system's entropy source.
    pub fn from_os_entropy() -> Result<Self, NoiseError> {
        let inner = ChaCha20Rng::try_from_rng(&mut SysRng)
            .map_err(|e| NoiseError::EntropyUnavailable(e.to_string()))?;
        Ok(Self { inner })
    }
}

/// ChaCha20 keyed from a fixed 64-bit seed: the same seed gives the same stream.
///
/// **Not private.** For reproducible experiments and tests only: anyone who knows or
/// guesses the seed can subtract the noise from every released value. Unlike [`DpRng`] it
/// does not implement `CryptoRng`, and it is a [`ReleaseRng`] (accepted by mechanisms) only
/// with the cargo feature `insecure-seeded-rng`. Without the feature it still serves as a
/// seeded source for things that are not releases (synthetic data, shuffles in tests).
pub struct InsecureSeededRng {
    inner: ChaCha20Rng,
}

impl InsecureSeededRng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: ChaCha20Rng::seed_from_u64(seed),
        }
    }
}

impl fmt::Debug for DpRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpRng")
            .field("algorithm", &"ChaCha20, keyed from OS entropy")
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for InsecureSeededRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InsecureSeededRng")
            .field(
                "algorithm",
                &"ChaCha20, keyed from a fixed seed (not private)",
            )
            .finish_non_exhaustive()
    }
}

/// Both generators forward to their ChaCha20 core.
macro_rules! forward_try_rng {
    ($generator:ty) => {
        impl TryRng for $generator {
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
    };
}

forward_try_rng!(DpRng);
forward_try_rng!(InsecureSeededRng);

impl TryCryptoRng for DpRng {}

/// A [`ReleaseRng`] that remembers whether anything was drawn from it — the one test, for
/// every front door, of whether a fit "may have drawn noise": a fit refused before its first
/// draw spent nothing; once anything was drawn, the spend stands whatever happens next (a
/// failure after the noise is a function of the noisy computation).
///
/// It forwards every draw to the generator it borrows, so it is exactly as secure (or, for
/// [`InsecureSeededRng`], as insecure) as that generator.
pub struct Witnessed<'a, R: ?Sized> {
    inner: &'a mut R,
    drew: bool,
}

impl<'a, R: ReleaseRng + ?Sized> Witnessed<'a, R> {
    /// Watches `inner`; nothing drawn yet.
    pub fn new(inner: &'a mut R) -> Self {
        Self { inner, drew: false }
    }

    /// Whether anything was drawn through this witness.
    pub fn drew(&self) -> bool {
        self.drew
    }
}

impl<R: ?Sized> fmt::Debug for Witnessed<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Witnessed")
            .field("drew", &self.drew)
            .finish_non_exhaustive()
    }
}

impl<R: ReleaseRng + ?Sized> TryRng for Witnessed<'_, R> {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.drew = true;
        Ok(self.inner.next_u32())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.drew = true;
        Ok(self.inner.next_u64())
    }

    #[inline]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.drew = true;
        self.inner.fill_bytes(dst);
        Ok(())
    }
}

impl<R: ReleaseRng + TryCryptoRng + ?Sized> TryCryptoRng for Witnessed<'_, R> {}
impl<R: ReleaseRng + ?Sized> sealed::Sealed for Witnessed<'_, R> {}
impl<R: ReleaseRng + ?Sized> ReleaseRng for Witnessed<'_, R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{CryptoRng, Rng};

    fn assert_crypto<R: CryptoRng>(_: &R) {}

    #[test]
    fn a_witness_sees_every_kind_of_draw_and_changes_none() {
        let mut plain = InsecureSeededRng::new(3);
        let expected = (plain.next_u64(), plain.next_u32());
        let mut rng = InsecureSeededRng::new(3);
        let mut witness = Witnessed::new(&mut rng);
        assert!(!witness.drew());
        assert_eq!((witness.next_u64(), witness.next_u32()), expected);
        assert!(witness.drew());
        let mut os = DpRng::from_os_entropy().unwrap();
        let mut bytes = Witnessed::new(&mut os);
        bytes.fill_bytes(&mut [0u8; 4]);
        assert!(bytes.drew());
        assert_crypto(&bytes);
    }

    #[test]
    fn os_seeded_generators_are_crypto_and_differ() {
        let mut a = DpRng::from_os_entropy().unwrap();
        let mut b = DpRng::from_os_entropy().unwrap();
        assert_crypto(&a);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_ne!(xs, ys);
    }

    #[test]
    fn insecure_seed_is_reproducible() {
        let mut a = InsecureSeededRng::new(7);
        let mut b = InsecureSeededRng::new(7);
        let mut c = InsecureSeededRng::new(8);
        let (x, y, z) = (a.next_u64(), b.next_u64(), c.next_u64());
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn debug_does_not_print_state() {
        let shown = format!(
            "{:?} {:?}",
            InsecureSeededRng::new(1),
            DpRng::from_os_entropy().unwrap()
        );
        assert!(shown.contains("ChaCha20") && shown.contains("not private"));
        assert!(!shown.contains("seed:") && !shown.contains("state"));
    }
}
