//! # dp-optim
//!
//! Solvers for smooth, strongly convex objectives of the form
//! `F(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + (μ/2)‖w‖² + gᵀw` — the regularized generalized linear
//! models that every private mechanism of this workspace minimizes (objective perturbation
//! adds the linear term `gᵀw`).
//!
//! **Not yet implemented.** Planned contents: a GLM objective abstraction (value, gradient,
//! Hessian, Hessian-vector products) over dense and sparse (CSR) rows; Newton with a
//! Cholesky solve and line search; L-BFGS for large dimensions; warm starts; and an explicit
//! result carrying the achieved gradient norm and a termination reason, because the
//! privacy proofs assume the exact minimizer. This crate knows nothing about privacy.
#![forbid(unsafe_code)]
