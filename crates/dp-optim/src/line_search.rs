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
/// with `F(w + t p) ≤ F(w) + 1e-4 · t · ∇Fᵀp`.
///
/// The full step `t = 1` is judged at margins computed from scratch, `X(w + p)`, in the same
/// pass as the loss and the gradient's `Xᵀ` (`GlmObjective::evaluate_fresh`): one read of
/// the data, and the point reached is fresh (see `Point::fresh`), so its gradient is a
/// certificate. Newton's and L-BFGS's full steps are taken almost always (on Adult and
/// KDDCup99, logistic and Huber h = 1: every one measured), so this is usually the whole
/// search. Shorter trials reuse the margins, `X(w + t p) = Xw + t·Xp` (one product `X p`
/// for all of them), and make the gradient's `Xᵀ` only for the step taken.
///
/// Near the optimum the decrease the Armijo test looks for drops below the rounding error
/// of `F` itself, and the test becomes a coin toss. There steps are judged by what the
/// solvers certify instead: the first `t` that shrinks `‖∇F‖` is taken.
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
    let acceptable = |t: f64, value: f64, gradient: Option<&[f64]>| match gradient {
        Some(gradient) if below_rounding => value.is_finite() && norm(gradient) < current_norm,
        _ => value <= current.value() + ARMIJO * t * slope,
    };
    let full: Vec<f64> = current.w.iter().zip(p).map(|(a, b)| a + b).collect();
    let (xw, evaluation) = objective.evaluate_fresh(&full);
    if acceptable(1.0, evaluation.value, Some(&evaluation.gradient)) {
        return Some(Point {
            w: full,
            xw,
            evaluation,
            fresh: true,
        });
    }
    let xp = objective.margins(p);
    let mut t = 0.5;
    for _ in 1..MAX_HALVINGS {
        let w: Vec<f64> = current.w.iter().zip(p).map(|(a, b)| a + t * b).collect();
        let xw: Vec<f64> = current.xw.iter().zip(&xp).map(|(a, b)| a + t * b).collect();
        // The value alone decides the Armijo test: the gradient's product with `Xᵀ` is
        // made only for the step taken, except below the rounding level, where the
        // gradient is the test.
        let pass = objective.loss_pass(&w, &xw);
        let evaluation = if below_rounding {
            let evaluation = objective.complete(&w, pass);
            acceptable(t, evaluation.value, Some(&evaluation.gradient)).then_some(evaluation)
        } else {
            acceptable(t, pass.value, None).then(|| objective.complete(&w, pass))
        };
        if let Some(evaluation) = evaluation {
            return Some(Point {
                w,
                xw,
                evaluation,
                fresh: false,
            });
        }
        t *= 0.5;
    }
    None
}
