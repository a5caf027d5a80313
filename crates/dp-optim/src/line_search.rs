//! Backtracking (Armijo) line search, with a fallback for the last digits.

use crate::MarginLoss;
use crate::design::Design;
use crate::iteration::Point;
use crate::objective::GlmObjective;
use crate::solution::{dot, norm};

/// Sufficient-decrease constant of the Armijo condition.
const ARMIJO: f64 = 1e-4;
/// Halvings before giving up.
const MAX_HALVINGS: usize = 40;

/// Searches along the descent direction `p` from `current` for a step `t ∈ {1, ½, ¼, …}`
/// with `F(w + t p) ≤ F(w) + 1e-4 · t · ∇Fᵀp`. Trial points reuse the margins:
/// `X(w + t p) = Xw + t·Xp`, one product with X per search, and one with `Xᵀ` for the
/// point taken (for every trial near the optimum, where the gradient decides).
///
/// Near the optimum the decrease the Armijo test looks for drops below the rounding error
/// of `F` itself, and the test becomes a coin toss. There steps are judged by what the
/// solvers certify instead: the first `t` that shrinks `‖∇F‖` is taken. There the full
/// step's margins are computed from scratch, `X(w + p)` (one pass, as `X p` would be), so
/// that the point it reaches, usually the solve's last, is fresh (see `Point::fresh`) and
/// its gradient is already the certificate: no second evaluation at the returned weights.
/// A search that rejects that full step makes `X p` as well, for the shorter trials.
///
/// Returns the new point, or `None` if no step makes progress.
pub(crate) fn backtrack<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    current: &Point,
    p: &[f64],
) -> Option<Point> {
    let slope = dot(current.gradient(), p);
    // Not a descent direction (or NaN): nothing to search.
    if slope.is_nan() || slope >= 0.0 {
        return None;
    }
    let rounding_level = 64.0 * f64::EPSILON * current.evaluation.magnitude.max(f64::MIN_POSITIVE);
    let below_rounding = -ARMIJO * slope <= rounding_level;
    let current_norm = norm(current.gradient());
    // X p, made only when a trial needs it.
    let mut xp: Option<Vec<f64>> = None;
    let mut t = 1.0;
    for _ in 0..MAX_HALVINGS {
        let w: Vec<f64> = current.w.iter().zip(p).map(|(a, b)| a + t * b).collect();
        // Below the rounding level the full step is the last one almost always: its margins
        // X(w + p) are computed from scratch, one pass like X p, and the point is then fresh,
        // so the certificate needs no second evaluation at the returned weights.
        let fresh = below_rounding && t == 1.0;
        let xw: Vec<f64> = if fresh {
            objective.margins(&w)
        } else {
            let xp = xp.get_or_insert_with(|| objective.margins(p));
            current
                .xw
                .iter()
                .zip(xp.iter())
                .map(|(a, b)| a + t * b)
                .collect()
        };
        // The value alone decides the Armijo test: the gradient's product with Xᵀ (the
        // costliest pass) is made only for the step taken, except below the rounding level,
        // where the gradient is the test. Piecewise quadratic losses such as the Huber hinge
        // reject a trial or two on most steps.
        let pass = objective.loss_pass(&w, &xw);
        let evaluation = if below_rounding {
            let evaluation = objective.complete(&w, pass);
            (evaluation.value.is_finite() && norm(&evaluation.gradient) < current_norm)
                .then_some(evaluation)
        } else {
            (pass.value <= current.value() + ARMIJO * t * slope)
                .then(|| objective.complete(&w, pass))
        };
        if let Some(evaluation) = evaluation {
            return Some(Point {
                w,
                xw,
                evaluation,
                fresh,
            });
        }
        t *= 0.5;
    }
    None
}
