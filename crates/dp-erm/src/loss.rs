//! The admissible losses: convex, 1-Lipschitz, with bounded curvature (docs/src/reference/algorithms.md §1).

use dp_optim::MarginLoss;

use crate::ErmError;
use crate::error::check_positive;
use crate::logistic_math;

/// A loss of the margin `z = y·fᵀx` that the privacy proofs admit: convex, differentiable,
/// `|ℓ'| ≤ 1`, and `ℓ'' ≤ c`. (Squared loss is not Lipschitz; the plain hinge is not
/// differentiable — objective perturbation with it is not private.) Model files store it
/// by a fixed code (`Logistic` 0, `Huber` 1, `HuberRegression` 2), not by declaration order.
///
/// [`Loss::HuberRegression`] is a loss of the residual, not the margin: it trains
/// regressors ([`crate::RegressionSet`], [`crate::RegressionModel`]), and the classifier
/// paths refuse it as the regression paths refuse the classification losses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// `ln(1 + e^{−z})`: c = 1/4.
    Logistic,
    /// The Huber hinge of width h: 0 for `z > 1+h`, `(1+h−z)²/(4h)` for `|1−z| ≤ h`,
    /// `1 − z` for `z < 1−h`: c = 1/(2h). The papers use h = 0.5.
    Huber {
        /// The width h > 0.
        width: f64,
    },
    /// Huber regression with threshold h, in the residual `r = fᵀx − y` of targets scaled
    /// into [−1, 1], divided by h so that it is 1-Lipschitz: `r²/(2h)` for `|r| ≤ h`, else
    /// `|r| − h/2`: c = 1/h. Minimizing it with regularization Λ is Huber regression
    /// (`Σ huber_h(r)/n + (hΛ/2)‖f‖²`) with ridge hΛ (docs/src/reference/algorithms.md §10).
    HuberRegression {
        /// The threshold h > 0, in the scaled target's units (the targets' public range
        /// is 2 wide).
        threshold: f64,
    },
}

impl Loss {
    /// Narrowest Huber width accepted: the curvature bound 1/(2h) enters the privacy
    /// calibration, and below this it would swamp any ε at realistic n.
    pub const MIN_HUBER_WIDTH: f64 = 1e-3;
    /// Widest Huber width accepted: beyond it the loss is a scaled square on every margin a
    /// model reaches and its values overflow for wider ones (1e155 squared is infinite).
    pub const MAX_HUBER_WIDTH: f64 = 1e3;

    /// The Huber hinge with width `width`, finite and in
    /// `[MIN_HUBER_WIDTH, MAX_HUBER_WIDTH]`.
    pub fn huber(width: f64) -> Result<Self, ErmError> {
        check_huber_width(width)?;
        Ok(Self::Huber { width })
    }

    /// Huber regression with threshold `threshold` (in the scaled target's units), finite
    /// and in `[MIN_HUBER_WIDTH, MAX_HUBER_WIDTH]`.
    pub fn huber_regression(threshold: f64) -> Result<Self, ErmError> {
        check_width("Huber threshold", threshold)?;
        Ok(Self::HuberRegression { threshold })
    }

    /// Whether it is a loss of the residual (regression) rather than of the margin.
    pub fn is_regression(&self) -> bool {
        matches!(self, Self::HuberRegression { .. })
    }

    /// The Lipschitz constant of ℓ in the margin (or residual): 1 for all.
    pub fn lipschitz(&self) -> f64 {
        1.0
    }

    /// `c = sup ℓ''`: 1/4 (logistic), 1/(2h) (Huber), 1/h (Huber regression).
    pub fn curvature_bound(&self) -> f64 {
        match *self {
            Self::Logistic => 0.25,
            Self::Huber { width } => 1.0 / (2.0 * width),
            Self::HuberRegression { threshold } => 1.0 / threshold,
        }
    }

    /// The largest mean loss at `f = 0` on any accepted data: `ℓ(0)` for the margin losses;
    /// for regression `ℓ(∓y)` with `|y| ≤ 1`, at most `ℓ(1)`. It bounds the minimizer's
    /// norm by `√(2·this/Λ)`.
    pub fn start_loss_bound(&self) -> f64 {
        use dp_optim::MarginLoss;
        match self {
            Self::Logistic | Self::Huber { .. } => self.value(0.0),
            Self::HuberRegression { .. } => self.value(1.0),
        }
    }

    pub(crate) fn check(&self) -> Result<(), ErmError> {
        match *self {
            Self::Logistic => Ok(()),
            Self::Huber { width } => check_huber_width(width),
            Self::HuberRegression { threshold } => check_width("Huber threshold", threshold),
        }
    }

    /// A short name for metadata and reports.
    pub fn name(&self) -> String {
        match self {
            Self::Logistic => "logistic".into(),
            Self::Huber { width } => format!("huber(h={width:?})"),
            Self::HuberRegression { threshold } => format!("huber-regression(h={threshold:?})"),
        }
    }
}

fn check_huber_width(width: f64) -> Result<(), ErmError> {
    check_width("Huber width", width)
}

fn check_width(what: &'static str, width: f64) -> Result<(), ErmError> {
    check_positive(what, width)?;
    if (Loss::MIN_HUBER_WIDTH..=Loss::MAX_HUBER_WIDTH).contains(&width) {
        Ok(())
    } else {
        Err(ErmError::InvalidParameter {
            what,
            value: width,
            requirement: "between 1e-3 and 1e3",
        })
    }
}

impl MarginLoss for Loss {
    #[inline]
    fn value(&self, z: f64) -> f64 {
        self.evaluate(z).0
    }

    #[inline]
    fn derivative(&self, z: f64) -> f64 {
        self.evaluate(z).1
    }

    #[inline]
    fn second_derivative(&self, z: f64) -> f64 {
        self.evaluate(z).2
    }

    #[inline]
    fn evaluate(&self, z: f64) -> (f64, f64, f64) {
        match *self {
            Self::Logistic => logistic_math::logistic(z),
            Self::Huber { width } => huber(z, width),
            Self::HuberRegression { threshold } => huber_residual(z, threshold),
        }
    }

    fn evaluate_in_place(&self, slopes: &mut [f64], curvatures: &mut [f64]) -> f64 {
        match *self {
            Self::Logistic => evaluate_in_lanes(slopes, curvatures, logistic_math::logistic),
            Self::Huber { width } => evaluate_in_lanes(slopes, curvatures, |z| huber(z, width)),
            Self::HuberRegression { threshold } => {
                evaluate_in_lanes(slopes, curvatures, |r| huber_residual(r, threshold))
            }
        }
    }
}

/// The Huber hinge of width `h` and its derivatives at `z`.
#[inline(always)]
fn huber(z: f64, h: f64) -> (f64, f64, f64) {
    if z > 1.0 + h {
        (0.0, 0.0, 0.0)
    } else if z < 1.0 - h {
        (1.0 - z, -1.0, 0.0)
    } else {
        let gap = 1.0 + h - z;
        (gap * gap / (4.0 * h), -gap / (2.0 * h), 1.0 / (2.0 * h))
    }
}

/// Huber regression's loss of the residual `r` with threshold `h`, divided by h (so
/// 1-Lipschitz), and its derivatives.
#[inline(always)]
fn huber_residual(r: f64, h: f64) -> (f64, f64, f64) {
    if r > h {
        (r - 0.5 * h, 1.0, 0.0)
    } else if r < -h {
        (-r - 0.5 * h, -1.0, 0.0)
    } else {
        (0.5 * r * r / h, r / h, 1.0 / h)
    }
}

/// `loss` at every margin, as [`MarginLoss::evaluate_in_place`] asks: on entry `slopes`
/// holds the margins, on exit `ℓ'`; `curvatures` receives `ℓ''`. Blocks of eight margins
/// with no dependency between them become SIMD code; the values are summed in eight fixed
/// lanes (the same bits on every run).
#[inline(always)]
fn evaluate_in_lanes(
    slopes: &mut [f64],
    curvatures: &mut [f64],
    loss: impl Fn(f64) -> (f64, f64, f64),
) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0.0; LANES];
    let mut margin_blocks = slopes.chunks_exact_mut(LANES);
    let mut curvature_blocks = curvatures.chunks_exact_mut(LANES);
    for (margins, curvatures) in (&mut margin_blocks).zip(&mut curvature_blocks) {
        for k in 0..LANES {
            let (value, slope, curvature) = loss(margins[k]);
            lanes[k] += value;
            margins[k] = slope;
            curvatures[k] = curvature;
        }
    }
    let mut tail = 0.0;
    for (margin, curvature) in margin_blocks
        .into_remainder()
        .iter_mut()
        .zip(curvature_blocks.into_remainder())
    {
        let (value, slope, second) = loss(*margin);
        tail += value;
        *margin = slope;
        *curvature = second;
    }
    let pairs = [
        lanes[0] + lanes[1],
        lanes[2] + lanes[3],
        lanes[4] + lanes[5],
        lanes[6] + lanes[7],
    ];
    ((pairs[0] + pairs[1]) + (pairs[2] + pairs[3])) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_gives_the_scalar_values_and_a_fixed_order_sum() {
        let margins: Vec<f64> = (-3001..3000)
            .map(|k| f64::from(k) * 0.0037)
            .chain([-800.0, 800.0, -0.0])
            .collect();
        for loss in [
            Loss::Logistic,
            Loss::Huber { width: 0.5 },
            Loss::HuberRegression { threshold: 0.25 },
        ] {
            let mut slopes = margins.clone();
            let mut curvatures = vec![f64::NAN; margins.len()];
            let total = loss.evaluate_in_place(&mut slopes, &mut curvatures);
            let mut in_order = 0.0;
            for (i, &z) in margins.iter().enumerate() {
                let (value, slope, curvature) = loss.evaluate(z);
                assert_eq!(
                    (slopes[i], curvatures[i]),
                    (slope, curvature),
                    "{loss:?} at {z}"
                );
                in_order += value;
            }
            assert!(
                (total - in_order).abs() <= 1e-12 * in_order.abs(),
                "{total} vs {in_order}"
            );
            // The default (sequential) implementation agrees too.
            let by_default = (&loss as &dyn MarginLoss)
                .evaluate_in_place(&mut margins.clone(), &mut vec![0.0; margins.len()]);
            assert!((by_default - total).abs() <= 1e-12 * total.abs());
        }
    }
}
