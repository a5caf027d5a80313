//! Limited-memory BFGS: for dimensions where a d×d Hessian is too expensive.

use std::collections::VecDeque;

use crate::design::Design;
use crate::iteration::{Point, check_stop, check_tolerance, finish, starting_point};
use crate::line_search::backtrack;
use crate::objective::GlmObjective;
use crate::pool::on_worker;
use crate::solution::{DEFAULT_TOLERANCE, Solution, Termination, dot, norm};
use crate::{MarginLoss, OptimError};

/// L-BFGS with a backtracking line search: each iteration costs one gradient (two passes
/// over the data) and `O(m d)` vector work, never a d×d matrix. Needs more iterations than
/// [`crate::Newton`], especially when μ is small, so prefer Newton when d allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lbfgs {
    tolerance: f64,
    max_iterations: usize,
    memory: usize,
}

impl Default for Lbfgs {
    /// Tolerance [`DEFAULT_TOLERANCE`] (1e-10), at most 20,000 iterations, memory 10.
    fn default() -> Self {
        Self {
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: 20_000,
            memory: 10,
        }
    }
}

impl Lbfgs {
    /// Stop once `‖∇F‖ ≤ tolerance` (default 1e-10).
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Give up after this many iterations (default 20,000).
    pub fn max_iterations(mut self, max_iterations: usize) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// Number of correction pairs kept (default 10, at least 1).
    pub fn memory(mut self, memory: usize) -> Self {
        self.memory = memory;
        self
    }

    /// Minimizes `objective` from `start` (a warm start) or from 0.
    pub fn minimize<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        start: Option<&[f64]>,
    ) -> Result<Solution, OptimError> {
        on_worker(objective.pass_entries(), || {
            self.minimize_on_worker(objective, start)
        })
    }

    fn minimize_on_worker<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        start: Option<&[f64]>,
    ) -> Result<Solution, OptimError> {
        check_tolerance(self.tolerance)?;
        if self.memory == 0 {
            return Err(OptimError::InvalidParameter {
                what: "L-BFGS memory",
                why: "must be at least 1".into(),
            });
        }
        let mut current = Point::fresh(objective, starting_point(objective, start)?);
        let mut pairs: VecDeque<CorrectionPair> = VecDeque::new();
        let mut iterations = 0;
        loop {
            if crate::stop::requested() {
                return Err(OptimError::Interrupted);
            }
            let stop = check_stop(
                objective,
                &mut current,
                self.tolerance,
                iterations,
                self.max_iterations,
            );
            if let Some(termination) = stop {
                return Ok(finish(
                    objective,
                    current,
                    iterations,
                    termination,
                    self.tolerance,
                ));
            }
            iterations += 1;
            let gradient_norm = norm(current.gradient());
            let mut direction = two_loop_direction(current.gradient(), &pairs);
            if pairs.is_empty() {
                // No curvature information yet: a steepest-descent step of length ≤ 1.
                let scale = 1.0 / gradient_norm.max(1.0);
                direction.iter_mut().for_each(|p| *p *= scale);
            }
            let next = match backtrack(objective, &current, &direction) {
                Some(next) => next,
                None if !pairs.is_empty() => {
                    // Stale curvature can spoil the direction: restart from steepest descent.
                    pairs.clear();
                    continue;
                }
                None => {
                    return Ok(finish(
                        objective,
                        current,
                        iterations,
                        Termination::LineSearchFailed,
                        self.tolerance,
                    ));
                }
            };
            let s: Vec<f64> = next.w.iter().zip(&current.w).map(|(a, b)| a - b).collect();
            let y: Vec<f64> = next
                .gradient()
                .iter()
                .zip(current.gradient())
                .map(|(a, b)| a - b)
                .collect();
            let sy = dot(&s, &y);
            // Strong convexity gives sᵀy ≥ μ‖s‖² > 0; skip pairs that rounding has spoilt.
            if sy > f64::EPSILON * norm(&s) * norm(&y) {
                if pairs.len() == self.memory {
                    pairs.pop_front();
                }
                pairs.push_back(CorrectionPair {
                    rho: 1.0 / sy,
                    s,
                    y,
                });
            }
            current = next;
        }
    }
}

struct CorrectionPair {
    s: Vec<f64>,
    y: Vec<f64>,
    rho: f64,
}

/// `−H·g` by the two-loop recursion, with the initial scaling `sᵀy / yᵀy` of the newest pair.
fn two_loop_direction(gradient: &[f64], pairs: &VecDeque<CorrectionPair>) -> Vec<f64> {
    let mut q: Vec<f64> = gradient.to_vec();
    let mut alphas = Vec::with_capacity(pairs.len());
    for pair in pairs.iter().rev() {
        let alpha = pair.rho * dot(&pair.s, &q);
        q.iter_mut()
            .zip(&pair.y)
            .for_each(|(qi, yi)| *qi -= alpha * yi);
        alphas.push(alpha);
    }
    if let Some(newest) = pairs.back() {
        let gamma = 1.0 / (newest.rho * dot(&newest.y, &newest.y));
        q.iter_mut().for_each(|qi| *qi *= gamma);
    }
    for (pair, alpha) in pairs.iter().zip(alphas.iter().rev()) {
        let beta = pair.rho * dot(&pair.y, &q);
        q.iter_mut()
            .zip(&pair.s)
            .for_each(|(qi, si)| *qi += (alpha - beta) * si);
    }
    q.iter_mut().for_each(|qi| *qi = -*qi);
    q
}
