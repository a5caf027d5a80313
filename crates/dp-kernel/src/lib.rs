//! # dp-kernel
//!
//! Private kernel classifiers via random Fourier features: map each row through a
//! data-independent random feature map of a translation-invariant kernel (Gaussian,
//! Laplacian), scaled so every feature vector stays in the unit ball, then train with
//! objective perturbation from `dp-erm`.
//!
//! **Not yet implemented.**
#![forbid(unsafe_code)]
