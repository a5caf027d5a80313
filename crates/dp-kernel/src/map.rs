//! Random Fourier feature maps (Rahimi & Recht 2007; orthogonal features: Yu et al. 2016),
//! scaled so that every mapped row lies in the unit ball (docs/src/reference/algorithms.md §5).

use std::f64::consts::PI;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use dp_erm::ErmError;

use crate::KernelError;

/// Most random features D a map may have.
pub const MAX_OUTPUT_FEATURES: usize = 1 << 20;

/// Most frequencies (D × d numbers) a map may hold: 2²⁴, 128 MiB, which keeps a kernel model
/// inside dp-erm's model container.
pub const MAX_MAP_ENTRIES: usize = 1 << 24;

/// Largest kernel width γ accepted: 10²⁰⁰. Every frequency a map draws is then finite
/// (Gaussian: `√(2γ)` times a normal and a chi(d) draw, below 10¹⁰⁸; Laplacian: γ times a
/// tangent of magnitude below 2·10¹⁶), so every map [`FeatureMap::draw`] returns is one a
/// model file may hold. At γ = 10²⁰⁰ the kernel already vanishes between inputs 10⁻⁹⁹ apart.
pub const MAX_GAMMA: f64 = 1e200;

/// Most work an orthogonal draw may take: `D · d · min(D, d)` ≤ 2³⁰ (Gram–Schmidt projects
/// each of a block's min(D, d) rows of d values onto the rows before it, twice, for ⌈D/d⌉
/// blocks), about a second of one core. Standard sampling costs D · d, bounded by
/// [`MAX_MAP_ENTRIES`].
pub const MAX_ORTHOGONAL_WORK: usize = 1 << 30;

/// Every mapped row is scaled by `(1 − 1e-12)/√D` rather than `1/√D`: the exact norm is
/// then at most `1 − 1e-12`, so the norm computed in floating point (a few ulps off) cannot
/// exceed 1. The change to the kernel approximation is 2e-12, far below its sampling error.
const SHRINK: f64 = 1.0 - 1e-12;

/// A translation-invariant kernel with a sampler for its spectral measure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Kernel {
    /// `k(x, x') = exp(−γ‖x − x'‖²)`; frequencies `ω ~ N(0, 2γ I)`.
    Gaussian {
        /// γ > 0.
        gamma: f64,
    },
    /// `k(x, x') = exp(−γ‖x − x'‖₁)`; frequencies with i.i.d. Cauchy(0, γ) coordinates.
    Laplacian {
        /// γ > 0.
        gamma: f64,
    },
}

impl Kernel {
    /// The Gaussian kernel `exp(−γ‖x − x'‖²)`; γ must be finite and > 0.
    pub fn gaussian(gamma: f64) -> Result<Self, KernelError> {
        check_gamma(gamma)?;
        Ok(Kernel::Gaussian { gamma })
    }

    /// The Laplacian kernel `exp(−γ‖x − x'‖₁)`; γ must be finite and > 0.
    pub fn laplacian(gamma: f64) -> Result<Self, KernelError> {
        check_gamma(gamma)?;
        Ok(Kernel::Laplacian { gamma })
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        match *self {
            Kernel::Gaussian { gamma } | Kernel::Laplacian { gamma } => gamma,
        }
    }

    /// The exact kernel value `k(x, y)` (for tests and references). Refuses inputs of
    /// unequal lengths (naming both) or with a non-finite value, and a kernel whose γ
    /// [`Kernel::gaussian`] would refuse (a value built directly as the enum).
    pub fn evaluate(&self, x: &[f64], y: &[f64]) -> Result<f64, KernelError> {
        self.check()?;
        dp_erm::check_row(x, x.len())?;
        if y.len() != x.len() {
            return Err(KernelError::Erm(ErmError::DimensionMismatch {
                what: "second input of the kernel (the first input's length)",
                expected: x.len(),
                found: y.len(),
            }));
        }
        dp_erm::check_row(y, x.len())?;
        let pairs = x.iter().zip(y);
        // Differences of finite values may overflow to ∞: the kernel is then exp(−∞) = 0.
        Ok(match *self {
            Kernel::Gaussian { gamma } => {
                (-gamma * pairs.map(|(a, b)| (a - b) * (a - b)).sum::<f64>()).exp()
            }
            Kernel::Laplacian { gamma } => {
                (-gamma * pairs.map(|(a, b)| (a - b).abs()).sum::<f64>()).exp()
            }
        })
    }

    fn check(&self) -> Result<(), KernelError> {
        check_gamma(self.gamma())
    }

    fn name(&self) -> &'static str {
        match self {
            Kernel::Gaussian { .. } => "gaussian",
            Kernel::Laplacian { .. } => "laplacian",
        }
    }
}

/// γ in `(0, MAX_GAMMA]`: checked by the constructors, by [`FeatureMap::draw`] and by a
/// model file's map, the same function for all three.
fn check_gamma(gamma: f64) -> Result<(), KernelError> {
    if gamma > 0.0 && gamma <= MAX_GAMMA {
        Ok(())
    } else {
        Err(KernelError::InvalidParameter {
            what: "kernel width gamma",
            value: gamma,
            requirement: "finite, > 0 and at most 1e200",
        })
    }
}

/// How the frequencies are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Sampling {
    /// Independent frequencies (Rahimi & Recht).
    #[default]
    Standard,
    /// Orthogonal random features (Yu et al., NeurIPS 2016): blocks of d frequencies that
    /// are the rows of a uniformly random orthogonal matrix, each rescaled by an independent
    /// chi-distributed norm (d degrees of freedom). Each frequency still has the Gaussian
    /// law, so the approximation is unbiased, and frequencies within a block are exactly
    /// orthogonal, which lowers its variance at the same D. Gaussian kernel only.
    Orthogonal,
}

/// A drawn random feature map `v(x) = (1/√D) [cos(ω_jᵀx + ψ_j)]_{j=1..D}`, with
/// `2·v(x)ᵀv(x') ≈ k(x, x')`.
///
/// **Every output lies in the unit ball, whatever the input**: each coordinate is a cosine
/// (or 0, see below) divided by √D. Where `ω_jᵀx + ψ_j` overflows (inputs near 1e307) the
/// cosine is undefined and the coordinate is 0 — still a fixed function of x.
///
/// The map is drawn independently of any data, and holds its frequencies and phases
/// explicitly (not a seed): a model keeps predicting identically whatever later versions
/// of the drawing code or of `rand` do. At D = 1000 and d = 105 that is 0.85 MB.
///
/// `Debug` shows the kernel and the sizes, not the numbers.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawFeatureMap")]
pub struct FeatureMap {
    kernel: Kernel,
    sampling: Sampling,
    input_features: usize,
    /// ω, D rows of d values (row-major).
    frequencies: Vec<f64>,
    /// ψ, D values in [−π, π].
    phases: Vec<f64>,
}

impl std::fmt::Debug for FeatureMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeatureMap")
            .field("kernel", &self.kernel)
            .field("sampling", &self.sampling)
            .field("input_features", &self.input_features)
            .field("output_features", &self.output_features())
            .finish_non_exhaustive()
    }
}

impl FeatureMap {
    /// Draws a map of `output_features` (D) random features for rows of `input_features`
    /// (d) values. Every parameter is checked before anything is allocated: the kernel
    /// (γ up to [`MAX_GAMMA`]), D ≤ [`MAX_OUTPUT_FEATURES`], D·d ≤ [`MAX_MAP_ENTRIES`], and
    /// for orthogonal features the drawing work D·d·min(D, d) ≤ [`MAX_ORTHOGONAL_WORK`].
    /// The drawn map then passes the very check a model file's map passes, so every map
    /// drawn (and every model trained on it) can be saved and loaded.
    ///
    /// The generator only needs to be independent of the data: the map is released with
    /// the model, and the privacy argument holds for every map whose outputs lie in the
    /// unit ball. Its quality affects accuracy only.
    pub fn draw<R: Rng + ?Sized>(
        kernel: Kernel,
        sampling: Sampling,
        input_features: usize,
        output_features: usize,
        rng: &mut R,
    ) -> Result<Self, KernelError> {
        check_shape(kernel, sampling, input_features, output_features)?;
        check_drawing_work(sampling, input_features, output_features)?;
        let d = input_features;
        let frequencies = match (kernel, sampling) {
            (Kernel::Gaussian { gamma }, Sampling::Standard) => {
                let scale = (2.0 * gamma).sqrt();
                (0..output_features * d)
                    .map(|_| scale * Distribution::<f64>::sample(&StandardNormal, rng))
                    .collect()
            }
            (Kernel::Gaussian { gamma }, Sampling::Orthogonal) => {
                orthogonal_gaussian(d, output_features, (2.0 * gamma).sqrt(), rng)
            }
            (Kernel::Laplacian { gamma }, _) => (0..output_features * d)
                .map(|_| gamma * (PI * (rng.random::<f64>() - 0.5)).tan())
                .collect(),
        };
        let phases = (0..output_features)
            .map(|_| PI * (2.0 * rng.random::<f64>() - 1.0))
            .collect();
        // Whatever a fit accepts, a load must accept: the same validation as a file's map.
        Self::try_from(RawFeatureMap {
            kernel,
            sampling,
            input_features,
            frequencies,
            phases,
        })
    }

    /// [`FeatureMap::draw`] from a ChaCha20 generator seeded with `seed`: the same seed
    /// gives the same map on every machine. Fine for releases too (the map is public and
    /// data-independent; see [`FeatureMap::draw`]).
    pub fn draw_seeded(
        kernel: Kernel,
        sampling: Sampling,
        input_features: usize,
        output_features: usize,
        seed: u64,
    ) -> Result<Self, KernelError> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        Self::draw(kernel, sampling, input_features, output_features, &mut rng)
    }

    /// The kernel it approximates.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// How its frequencies were drawn.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// d, the length of an input row.
    pub fn input_features(&self) -> usize {
        self.input_features
    }

    /// D, the length of an output row.
    pub fn output_features(&self) -> usize {
        self.phases.len()
    }

    /// The frequencies ω: D rows of d values, row-major.
    pub fn frequencies(&self) -> &[f64] {
        &self.frequencies
    }

    /// The phases ψ, D values in [−π, π].
    pub fn phases(&self) -> &[f64] {
        &self.phases
    }

    /// The factor every cosine is multiplied by: `(1 − 1e-12)/√D`.
    pub fn scale(&self) -> f64 {
        SHRINK / (self.output_features() as f64).sqrt()
    }

    /// A short identifier recorded in the linear model's metadata.
    pub fn id(&self) -> String {
        let sampling = match self.sampling {
            Sampling::Standard => "standard",
            Sampling::Orthogonal => "orthogonal",
        };
        // `{}` writes every digit (1e300 as 301 characters, beyond the 256 bytes a model's
        // metadata allows): scientific notation where the plain form is long.
        let gamma = self.kernel.gamma();
        let mut gamma_text = gamma.to_string();
        if gamma_text.len() > 24 {
            gamma_text = format!("{gamma:e}");
        }
        format!(
            "rff-{}-{sampling}-gamma{gamma_text}-d{}-D{}",
            self.kernel.name(),
            self.input_features,
            self.output_features()
        )
    }
}

/// Checks the kernel and the sizes before anything is allocated.
fn check_shape(
    kernel: Kernel,
    sampling: Sampling,
    input_features: usize,
    output_features: usize,
) -> Result<(), KernelError> {
    kernel.check()?;
    if sampling == Sampling::Orthogonal && !matches!(kernel, Kernel::Gaussian { .. }) {
        return Err(KernelError::OrthogonalNeedsGaussian);
    }
    if input_features == 0 || input_features > MAX_MAP_ENTRIES {
        return Err(KernelError::InvalidCount {
            what: "input feature count d",
            value: input_features,
            requirement: "between 1 and 2^24 = 16777216",
        });
    }
    if output_features == 0 || output_features > MAX_OUTPUT_FEATURES {
        return Err(KernelError::InvalidCount {
            what: "random feature count D",
            value: output_features,
            requirement: "between 1 and 2^20 = 1048576",
        });
    }
    if output_features.saturating_mul(input_features) > MAX_MAP_ENTRIES {
        return Err(KernelError::InvalidCount {
            what: "map size D × d",
            value: output_features.saturating_mul(input_features),
            requirement: "at most 2^24 = 16777216 frequencies",
        });
    }
    Ok(())
}

/// Refuses an orthogonal draw whose Gram–Schmidt work `D · d · min(D, d)` exceeds
/// [`MAX_ORTHOGONAL_WORK`] (the size checks bound D·d only), before anything is drawn.
fn check_drawing_work(
    sampling: Sampling,
    input_features: usize,
    output_features: usize,
) -> Result<(), KernelError> {
    let work = output_features
        .saturating_mul(input_features)
        .saturating_mul(output_features.min(input_features));
    if sampling == Sampling::Orthogonal && work > MAX_ORTHOGONAL_WORK {
        return Err(KernelError::InvalidCount {
            what: "orthogonal drawing work D · d · min(D, d)",
            value: work,
            requirement: "at most 2^30 = 1073741824 (about a second); use fewer random \
                          features, or standard sampling",
        });
    }
    Ok(())
}

/// `count` frequencies in blocks of d: the rows of a Haar-random orthogonal matrix (Gram–
/// Schmidt on Gaussian rows), each scaled by an independent chi(d) norm and by `scale`.
fn orthogonal_gaussian<R: Rng + ?Sized>(
    d: usize,
    count: usize,
    scale: f64,
    rng: &mut R,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(count * d);
    let mut block: Vec<Vec<f64>> = Vec::with_capacity(d);
    while out.len() < count * d {
        block.clear();
        while block.len() < d && out.len() + block.len() * d < count * d {
            let mut row: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
            // Twice, so that rounding leaves the rows orthogonal to working precision.
            for _ in 0..2 {
                for q in &block {
                    let projection: f64 = row.iter().zip(q).map(|(a, b)| a * b).sum();
                    row.iter_mut()
                        .zip(q)
                        .for_each(|(a, b)| *a -= projection * b);
                }
            }
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            // A Gaussian row in the span of the others has probability 0; redraw if
            // rounding makes it look so.
            if norm > 1e-8 {
                row.iter_mut().for_each(|v| *v /= norm);
                block.push(row);
            }
        }
        for q in &block {
            let chi = (0..d)
                .map(|_| {
                    let g: f64 = StandardNormal.sample(rng);
                    g * g
                })
                .sum::<f64>()
                .sqrt();
            out.extend(q.iter().map(|v| v * chi * scale));
        }
    }
    out
}

/// [`FeatureMap`] as it arrives from a deserializer, before any check.
#[derive(Deserialize)]
pub(crate) struct RawFeatureMap {
    kernel: Kernel,
    sampling: Sampling,
    input_features: usize,
    frequencies: Vec<f64>,
    phases: Vec<f64>,
}

impl TryFrom<RawFeatureMap> for FeatureMap {
    type Error = KernelError;

    fn try_from(raw: RawFeatureMap) -> Result<Self, KernelError> {
        check_shape(
            raw.kernel,
            raw.sampling,
            raw.input_features,
            raw.phases.len(),
        )?;
        let expected = raw.phases.len() * raw.input_features;
        if raw.frequencies.len() != expected {
            return Err(KernelError::InvalidCount {
                what: "frequency count (must be D × d)",
                value: raw.frequencies.len(),
                requirement: "equal to the number of phases times the input features",
            });
        }
        if let Some(&bad) = raw.frequencies.iter().find(|v| !v.is_finite()) {
            return Err(KernelError::InvalidParameter {
                what: "frequency",
                value: bad,
                requirement: "finite",
            });
        }
        if let Some(&bad) = raw.phases.iter().find(|v| v.is_nan() || v.abs() > PI) {
            return Err(KernelError::InvalidParameter {
                what: "phase",
                value: bad,
                requirement: "in [-pi, pi]",
            });
        }
        Ok(Self {
            kernel: raw.kernel,
            sampling: raw.sampling,
            input_features: raw.input_features,
            frequencies: raw.frequencies,
            phases: raw.phases,
        })
    }
}
