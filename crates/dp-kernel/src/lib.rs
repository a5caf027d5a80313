//! # dp-kernel
//!
//! Differentially private kernel classifiers (Chaudhuri, Monteleoni & Sarwate 2011, §5;
//! the SVM paper's Algorithm 2): map each raw row through a **data-independent** random
//! Fourier feature map of a translation-invariant kernel, `v(x) = (1/√D)[cos(ω_jᵀx + ψ_j)]`,
//! whose outputs always lie in the unit ball, then train a linear classifier on the mapped
//! rows with a dp-erm mechanism (objective perturbation by default). The released model is
//! the map and the weights.
//!
//! | piece | what |
//! |---|---|
//! | [`Kernel`] | Gaussian `exp(−γ‖x−x'‖²)`, Laplacian `exp(−γ‖x−x'‖₁)` |
//! | [`Sampling`] | standard (i.i.d. frequencies) or orthogonal random features (Yu et al. 2016; Gaussian kernel) |
//! | [`FeatureMap`] | a drawn map: frequencies and phases held explicitly, saved with the model |
//! | [`KernelParams`] | map + dp-erm parameters; `fit` on raw [`dp_erm::Examples`]; implements [`dp_erm::Trainer`] |
//! | [`KernelModel`] | the release: scores, labels, batches, files (dp-erm's container); implements [`dp_erm::Classifier`] |
//!
//! See [`KernelParams`]'s `# Privacy` for the guarantee and its argument.
//!
//! ```
//! use dp_erm::{Examples, Features, Loss};
//! use dp_kernel::{FeatureMap, Kernel, KernelParams, Sampling};
//! use dp_noise::DpRng;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Raw rows need no norm bound: the map bounds them.
//! let rows = Features::dense(2, vec![0.0, 0.1, 3.0, 2.5, -0.2, 0.0, 2.8, 3.1])?;
//! let data = Examples::new(rows, vec![1.0, -1.0, 1.0, -1.0])?;
//! let map = FeatureMap::draw_seeded(Kernel::gaussian(0.5)?, Sampling::Orthogonal, 2, 64, 7)?;
//! let params = KernelParams::objective_perturbation(map, Loss::huber(0.5)?, 0.01, 1.0);
//! let fit = params.fit(&data, &mut DpRng::from_os_entropy()?)?;
//! assert_eq!(fit.epsilon(), Some(1.0));
//! let label = fit.model().predict(&[0.1, 0.0])?;
//! # assert!(label == 1.0 || label == -1.0);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cosine;
mod error;
mod estimator;
mod map;
mod mapping;
mod model;

pub use error::KernelError;
pub use estimator::{KernelFit, KernelParams};
pub use map::{
    FeatureMap, Kernel, MAX_GAMMA, MAX_MAP_ENTRIES, MAX_ORTHOGONAL_WORK, MAX_OUTPUT_FEATURES,
    Sampling,
};
pub use mapping::MAX_DESIGN_ENTRIES;
pub use model::KernelModel;

#[cfg(test)]
#[path = "audit_tests.rs"]
mod audit;
#[cfg(test)]
mod hardening_tests;
#[cfg(test)]
#[path = "kernel_tests.rs"]
mod tests;
