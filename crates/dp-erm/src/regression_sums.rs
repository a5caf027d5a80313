//! Regression over rows this process does not hold: the sums a worker computes for a
//! block of rows and targets ([`contract_regression_sums`]), and the regressors' fits over
//! such sums ([`ErmParams::fit_regression_sums`], [`GaussianErm::fit_regression_sums`]).
//! The same mechanisms, calibration and release as the in-memory regressors; only the
//! solver's passes differ (sums merged by the caller, as for the classifiers' `fit_sums`).

use dp_noise::ReleaseRng;
use dp_optim::{PartialSums, RowBlock, SumsOracle};

use super::RegressionFit;
use crate::block_fit::{Answers, check_block};
use crate::estimator::{Mutation, Task};
use crate::{ErmError, ErmParams, GaussianCalibration, GaussianErm, Loss, RegressionModel};
use crate::{TargetScale, model::RegressionModel as Model};

/// The partial sums of one block of regression rows at `w` with `loss` (a regression
/// loss), after [`crate::RegressionSet`]'s contract: every row in the unit ball with label
/// +1, and a scaled target in [−1, 1] per row ([`RowBlock::with_targets`]), each decided
/// on every call. What a worker computes for [`ErmParams::fit_regression_sums`]; a broken
/// row is refused naming its row within the block, never its value.
pub fn contract_regression_sums(
    block: &RowBlock<'_>,
    w: &[f64],
    loss: Loss,
    with_hessian: bool,
) -> Result<PartialSums, ErmError> {
    Task::Regression.check_loss(loss)?;
    check_block(block)?;
    if let Some(row) = block.labels().iter().position(|&y| y != 1.0) {
        return Err(ErmError::InvalidLabel {
            row,
            label: block.labels()[row],
        });
    }
    let Some(targets) = block.targets() else {
        return Err(ErmError::MisplacedOption {
            option: "a regression loss over a block without targets",
            applies_to: "blocks carrying their scaled targets (RowBlock::with_targets)",
        });
    };
    if let Some(row) = targets.iter().position(|t| !(-1.0..=1.0).contains(t)) {
        return Err(ErmError::TargetOutsideBounds {
            row,
            lower: -1.0,
            upper: 1.0,
        });
    }
    Ok(PartialSums::of_block(block, w, &loss, with_hessian)?)
}

impl ErmParams {
    /// Trains a regressor on rows this process never sees: `oracle` answers each solver
    /// pass with the merged sums of all rows, each computed by
    /// [`contract_regression_sums`] with this loss (a regression loss), the rows numbering
    /// exactly `examples` (the public n, given, never counted). `scale`: the public
    /// target bounds the targets were scaled by (recorded in the model). Refusals as
    /// [`ErmParams::fit_regression`]'s from the parameters and sizes, then
    /// [`ErmParams::fit_sums`]'s (Newton only, d ≤ 16,384).
    ///
    /// # Privacy
    /// The guarantee of [`ErmParams::fit_regression`] (ε-DP, replace one row `(x, y)`, n
    /// public), under [`ErmParams::fit_sums`]'s conditions, which the oracle must keep:
    /// every row summed passed [`contract_regression_sums`]'s check (`‖x‖₂ ≤ 1`, label
    /// +1, scaled target in [−1, 1]: the per-row gradient norm ≤ 1 the calibration rests
    /// on) and every pass sums the same rows. The calibration is the in-memory
    /// regressor's ([`ErmParams::regression_noise_calibration`]), the noise drawn here by
    /// the same release code, once per call, before the first pass for objective
    /// perturbation and after the solve for output perturbation.
    pub fn fit_regression_sums<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        scale: TargetScale,
        rng: &mut R,
    ) -> Result<RegressionFit, ErmError>
    where
        O: SumsOracle + ?Sized,
        ErmError: From<O::Error>,
        R: ReleaseRng + ?Sized,
    {
        let features = oracle.cols();
        let plan = self.calibrate_for(Task::Regression, examples, features)?;
        self.check_sums_solver(features)?;
        let answers = Answers(oracle);
        let (fit, _) = self.release(
            (examples, features),
            &plan,
            rng,
            Mutation::NoiseRate(1.0),
            &mut |mu, linear, tolerance| self.solve_sums(&answers, examples, mu, linear, tolerance),
            // Group-shaped noise is refused for regressors by the recipe; were it set, the
            // oracle's contract would have to cover it, as for `fit_sums`.
            &|_| Ok(()),
        )?;
        let calibration = fit.calibration().copied();
        Ok(RegressionFit {
            model: Model::from_linear(fit.into_model(), scale),
            calibration,
        })
    }
}

impl GaussianErm {
    /// [`GaussianErm::fit_regression`] over sums: `oracle` answers each pass with the
    /// merged sums of all rows, each computed by [`contract_regression_sums`], the rows
    /// numbering exactly `examples` (public, given). Refusals as
    /// [`GaussianErm::fit_regression`]'s from the parameters and sizes, then the Newton
    /// solver's bound on d.
    ///
    /// # Privacy
    /// The guarantee of [`GaussianErm::fit_regression`] ((ε, δ)-DP, replace one row, n
    /// public) under [`ErmParams::fit_regression_sums`]'s conditions on the oracle; the
    /// calibration ([`GaussianErm::regression_calibration`]), noise and draw order are
    /// [`GaussianErm::fit_sums`]'s release code.
    pub fn fit_regression_sums<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        scale: TargetScale,
        rng: &mut R,
    ) -> Result<(RegressionModel, GaussianCalibration), ErmError>
    where
        O: SumsOracle + ?Sized,
        ErmError: From<O::Error>,
        R: ReleaseRng + ?Sized,
    {
        let calibration = self.regression_calibration(examples, oracle.cols())?;
        self.plain_params().check_sums_solver(oracle.cols())?;
        let (model, calibration, _) =
            self.release_over_sums(&Answers(oracle), examples, calibration, rng)?;
        Ok((Model::from_linear(model, scale), calibration))
    }
}

#[cfg(test)]
#[path = "regression_sums_tests.rs"]
mod tests;
