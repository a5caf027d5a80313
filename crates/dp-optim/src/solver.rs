//! Choosing a solver.

use crate::design::Design;
use crate::objective::GlmObjective;
use crate::{Lbfgs, MarginLoss, Newton, OptimError, Solution};

/// Dimension up to which [`Solver::for_dimension`] picks Newton.
pub const NEWTON_MAX_DIMENSION: usize = 2_000;

/// How many gradient evaluations one Newton iteration may cost for [`Solver::for_design`]
/// to prefer Newton: L-BFGS typically needs 5–20 times more iterations.
pub const NEWTON_COST_RATIO: f64 = 20.0;

/// One of the solvers, for code that lets its user choose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Solver {
    /// [`Newton`].
    Newton(Newton),
    /// [`Lbfgs`].
    Lbfgs(Lbfgs),
}

impl Solver {
    /// Newton (default settings) for `d ≤ 2000`, where the d×d Hessian is affordable;
    /// L-BFGS beyond.
    pub fn for_dimension(d: usize) -> Self {
        if d <= NEWTON_MAX_DIMENSION {
            Self::Newton(Newton::default())
        } else {
            Self::Lbfgs(Lbfgs::default())
        }
    }

    /// The solver with the cheaper expected solve for this data: Newton when forming the
    /// Hessian (about `n·k²/2` operations for rows with `k` stored entries, plus `d³/3` for
    /// its Cholesky factor) costs at most [`NEWTON_COST_RATIO`] gradients (`2·n·k`), L-BFGS
    /// otherwise. Measured on this project's benchmarks: Adult-shaped sparse data (n = 45,000,
    /// d = 104, k = 14) solves in 12–18 ms with Newton against 29–153 ms with L-BFGS;
    /// dense random features (n = 50,000, d = 2,000) in 7.9 s with Newton against 1.35 s
    /// with L-BFGS.
    pub fn for_design<D: Design + ?Sized>(design: &D) -> Self {
        let n = design.rows().max(1) as f64;
        let d = design.cols() as f64;
        let entries = design.stored_entries() as f64;
        let row_entries = entries / n;
        let newton = n * row_entries * row_entries / 2.0 + d * d * d / 3.0;
        let gradient = 2.0 * entries;
        if newton <= NEWTON_COST_RATIO * gradient {
            Self::Newton(Newton::default())
        } else {
            Self::Lbfgs(Lbfgs::default())
        }
    }

    /// Minimizes `objective` from `start` or from 0.
    pub fn minimize<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        start: Option<&[f64]>,
    ) -> Result<Solution, OptimError> {
        match self {
            Self::Newton(newton) => newton.minimize(objective, start),
            Self::Lbfgs(lbfgs) => lbfgs.minimize(objective, start),
        }
    }
}
