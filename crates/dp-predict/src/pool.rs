//! Noise drawn ahead of the query: the Laplace-based answers add noise whose law does not
//! depend on the data, so it can be drawn off the request path, where the time a draw
//! takes (which grows with the noise's magnitude) is not part of any answer's time.

use std::collections::VecDeque;

use dp_noise::{DiscreteLaplace, Laplace, ReleaseRng};
use rand::RngExt;

use crate::error::PredictError;

/// Most draws one [`NoisePool`] holds (32 bytes each: 2 MiB).
pub const MAX_POOL: usize = 1 << 16;

/// The law of the noise one answer of a Laplace-based mechanism adds: a discrete Laplace
/// draw (in the mechanism's grid units) and a uniform coin in [0, 1) (the label of
/// Laplace averaging; the score mechanisms ignore it). Public and data-independent: it is
/// fixed by ε and the mechanism's sensitivity, so it can be handed to another thread that
/// draws pools ([`NoiseSource::draw`]) while the interface serves queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseSource {
    noise: DiscreteLaplace,
}

impl NoiseSource {
    pub(crate) fn of(laplace: &Laplace) -> Self {
        Self {
            noise: *laplace.noise(),
        }
    }

    /// The discrete Laplace law of the noise, in grid units.
    pub fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// Draws noise for `count` answers (at most [`MAX_POOL`]), refused before drawing
    /// anything if `count` is larger. Takes time that grows with the magnitudes drawn: run
    /// it where nobody who queries can time it (see [`crate::ServingInterface`]).
    pub fn draw<R: ReleaseRng + ?Sized>(
        &self,
        count: usize,
        rng: &mut R,
    ) -> Result<NoisePool, PredictError> {
        if count > MAX_POOL {
            return Err(PredictError::TooLarge {
                what: "noise pool size",
                size: count,
                limit: MAX_POOL,
            });
        }
        Ok(self.draw_any(count, rng))
    }

    /// As [`NoiseSource::draw`] without the cap (callers keep `count` small).
    pub(crate) fn draw_any<R: ReleaseRng + ?Sized>(&self, count: usize, rng: &mut R) -> NoisePool {
        // Laplace noise first, then the coin: the order in which the direct path draws them
        // (the crate's tests check that a pooled answer equals a direct one from the same
        // stream).
        let draws = (0..count)
            .map(|_| Drawn {
                laplace: self.noise.sample(rng),
                coin: rng.random::<f64>(),
            })
            .collect();
        NoisePool {
            source: *self,
            draws,
        }
    }
}

/// The randomness of one answer, drawn ahead of the query. Public but unnameable outside
/// the crate (and unconstructible): only a [`NoisePool`] hands them out, each once.
#[derive(Clone, Copy)]
pub struct Drawn {
    /// Discrete Laplace noise in grid units.
    pub(crate) laplace: i128,
    /// Uniform in [0, 1).
    pub(crate) coin: f64,
}

/// Noise drawn ahead for some answers of one mechanism. **Secret**, like a generator's
/// state: whoever reads it can subtract it from the answers. Deliberately neither `Clone`
/// nor printable beyond its size: every draw is used once, by one answer.
pub struct NoisePool {
    source: NoiseSource,
    draws: VecDeque<Drawn>,
}

impl NoisePool {
    /// The law the draws follow.
    pub fn source(&self) -> NoiseSource {
        self.source
    }

    /// How many answers it has noise for.
    pub fn len(&self) -> usize {
        self.draws.len()
    }

    /// Whether it has no noise left.
    pub fn is_empty(&self) -> bool {
        self.draws.is_empty()
    }

    /// An empty pool for `source`.
    pub(crate) fn empty(source: NoiseSource) -> Self {
        Self {
            source,
            draws: VecDeque::new(),
        }
    }

    /// Moves `other`'s draws to the end of this pool; `other` must follow the same law
    /// (checked by the caller).
    pub(crate) fn append(&mut self, mut other: NoisePool) {
        self.draws.append(&mut other.draws);
    }

    /// The next draw, in the order drawn.
    pub(crate) fn take(&mut self) -> Option<Drawn> {
        self.draws.pop_front()
    }
}

impl std::fmt::Debug for NoisePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoisePool")
            .field("len", &self.draws.len())
            .finish_non_exhaustive()
    }
}

/// `laplace.release(value, ·)` with its noise `k` drawn ahead: `g·(round(value/g) + k)`,
/// the same arithmetic as dp-noise's snapping release, so the released law is the same.
/// Its time does not depend on `k`'s magnitude beyond an integer addition and conversion.
pub(crate) fn release_with(laplace: &Laplace, value: f64, k: i128) -> Result<f64, PredictError> {
    let index = laplace.grid_index(value)?;
    Ok((index + k) as f64 * laplace.grid())
}
