//! # dp-optim
//!
//! Fast, certified solvers for smooth, strongly convex objectives of the form
//!
//! `F(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + (μ/2)‖w‖² + gᵀw`,
//!
//! the regularized generalized linear models every private mechanism of this workspace
//! minimizes (objective perturbation adds the linear term `gᵀw = bᵀw/n`). The privacy
//! proofs assume the **exact** minimizer, so every solve returns a [`Solution`] that says
//! how close it got — the gradient norm `‖∇F(ŵ)‖`, computed from scratch at the returned
//! point, and the bound `‖ŵ − w*‖ ≤ ‖∇F(ŵ)‖/μ` — and why it stopped ([`Termination`]).
//! Nothing is ever returned "as if" it had converged.
//!
//! - Data: [`DenseRows`] (faer) or [`CsrRows`] (sparse rows, the shape of one-hot data),
//!   both behind [`Design`], parallel over fixed row chunks so results do not depend on the
//!   thread count.
//! - Rows not held in memory: a [`RowBlocks`] source hands out blocks of rows
//!   ([`RowBlock`]); a pass reduces each to [`PartialSums`] (loss, gradient, Hessian) and
//!   merges them in block order ([`sum_blocks`]); [`BlockNewton`] minimizes a
//!   [`BlockObjective`] over them with the same certificate. A second implementation of
//!   the pass: the in-memory [`Design`] path is unchanged.
//! - Losses: anything implementing [`MarginLoss`] (value, ℓ', ℓ'' of the margin); the
//!   logistic and Huber losses live in `dp-erm`. This crate knows nothing about privacy.
//! - Solvers: [`Newton`] (Cholesky, for d up to a few thousand) and [`Lbfgs`] (large d),
//!   both with warm starts; [`Solver::for_design`] picks the cheaper one for the data.
//!
//! ```
//! use dp_optim::{CsrRows, GlmObjective, MarginLoss, Newton};
//!
//! /// ℓ(z) = ln(1 + e^{−z}), written stably.
//! struct Logistic;
//! impl MarginLoss for Logistic {
//!     fn value(&self, z: f64) -> f64 { if z >= 0.0 { (-z).exp().ln_1p() } else { -z + z.exp().ln_1p() } }
//!     fn derivative(&self, z: f64) -> f64 { -1.0 / (1.0 + z.exp()) }
//!     fn second_derivative(&self, z: f64) -> f64 { let s = 1.0 / (1.0 + (-z).exp()); s * (1.0 - s) }
//! }
//!
//! # fn main() -> Result<(), dp_optim::OptimError> {
//! let x = CsrRows::from_rows(3, &[vec![(0, 0.6), (2, 0.8)], vec![(1, 1.0)], vec![(0, -0.5)]])?;
//! let y = [1.0, -1.0, -1.0];
//! let objective = GlmObjective::new(&x, &y, Logistic, 1e-3)?;
//! let solution = Newton::default().minimize(&objective, None)?;
//! assert!(solution.is_converged() && solution.gradient_norm() <= 1e-10);
//! let w = solution.into_converged()?;
//! # assert_eq!(w.len(), 3);
//! # Ok(())
//! # }
//! ```
//!
//! # Performance
//! One logistic-loss solve to `‖∇F‖ ≤ 1e-10` on Adult-shaped sparse data (45,000 × 104,
//! 14 entries per row) takes 12 ms (μ = 1e-3) and 18 ms (μ = 1e-5) with Newton on 2 cores;
//! dense random features (50,000 × 2,000) take 1.4 s with L-BFGS. Results are bit-for-bit
//! the same for any number of threads (fixed row blocks, sequential kernels inside them).
//!
//! A solve runs in the current rayon pool (the global one unless called inside
//! `ThreadPool::install`). On data of at least 65,536 stored entries, while it runs, up to
//! one of the pool's other workers per 65,536 entries polls for its passes instead of
//! sleeping between them, as OpenMP runtimes do between parallel regions: they run any
//! pending rayon job meanwhile, but they do keep their cores busy until the solve returns
//! (or, in a serial phase, for up to 1 ms). To leave cores to other work, solve in a
//! smaller pool (or set `RAYON_NUM_THREADS`).
//!
//! Build with `-C target-cpu=native` (or at least AVX enabled): faer's vector kernels
//! leave the upper vector registers dirty, and baseline-x86-64 code on the same threads
//! then runs about three times slower.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod blocks;
mod design;
mod error;
mod iteration;
mod lbfgs;
mod line_search;
mod loss;
mod newton;
mod objective;
mod pool;
mod solution;
mod solver;
mod stop;

pub use blocks::{
    BLOCK_WAVE, BlockNewton, BlockObjective, BlockPass, HessianRows, PARTIAL_SUMS_VERSION,
    PartialSums, RowBlock, RowBlocks, SumsOracle, sum_blocks, sum_blocks_with,
};
pub use design::{CsrRows, DenseRows, Design, MAX_SPARSE_COLUMNS, RowBuffers, WeighChunk};
pub use error::OptimError;
pub use lbfgs::Lbfgs;
pub use loss::MarginLoss;
pub use newton::Newton;
pub use objective::{GlmObjective, MAX_HESSIAN_DIMENSION};
pub use solution::{DEFAULT_TOLERANCE, Solution, Termination};
pub use solver::{NEWTON_COST_RATIO, NEWTON_MAX_DIMENSION, Solver};
pub use stop::{StopHook, stop_when};

#[cfg(test)]
#[path = "optim_tests.rs"]
mod tests;
