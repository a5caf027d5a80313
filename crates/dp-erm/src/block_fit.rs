//! Fits over rows this process does not hold: the same mechanisms as [`ErmParams::fit`],
//! with the solver's passes summed over the blocks of a [`RowBlocks`] source.

use dp_noise::{FeatureGroups, ReleaseRng};
use dp_optim::{
    BlockNewton, BlockObjective, BlockPass, HessianRows, MAX_HESSIAN_DIMENSION, PartialSums,
    RowBlock, RowBlocks, Solution, SumsOracle,
};

use crate::data::{check_group_norms_of, within_unit_ball};
use crate::estimator::Mutation;
use crate::{ErmError, ErmParams, Fit, SolverChoice};

impl ErmParams {
    /// Trains on the rows of `source`, which must number exactly `examples` — the public n
    /// the noise is calibrated to, given by the caller, never counted from the data — with
    /// randomness from `rng`. The same mechanism as [`ErmParams::fit`]; the solver is
    /// [`BlockNewton`], one pass over the blocks per point it evaluates (so d is at most
    /// 16,384, and [`SolverChoice::Lbfgs`] is refused). Group-shaped noise is refused
    /// (its row check needs the rows before the noise is drawn: use [`ErmParams::fit`]).
    ///
    /// Refused before any noise is drawn: every parameter refusal of [`ErmParams::fit`]
    /// (from `examples` and `source.cols()`), and a source whose declared row count is not
    /// `examples`. Refused during the solve, releasing nothing: a block whose rows break
    /// the contract ([`ErmError::InBlock`], naming the row within the block as
    /// [`crate::TrainingSet`] names it), a pass that sees a row count other than
    /// `examples`, and whatever the source refuses (a [`crate::RowCache`] whose file
    /// changed, say).
    ///
    /// # Privacy
    /// The guarantee of [`ErmParams`]'s `# Privacy`, for the same replace-one relation, on
    /// the dataset the source holds, under two conditions this function enforces and one it
    /// cannot:
    /// - every row the solver uses has `‖x‖₂ ≤ 1` and label ±1: each block is checked on
    ///   every pass, before it is summed;
    /// - the data has n = `examples` rows: ε, β, Δ and the tolerance are functions of the
    ///   public n and d only, and every pass refuses another count (a count read from the
    ///   data would not be public);
    /// - every pass must see the same rows (the certificate `‖∇J(f̂)‖ ≤ γ` is about one
    ///   dataset's objective). [`crate::RowCache`] refuses a file changed between passes
    ///   (size, modification time, a checksum per block); another source must guarantee it.
    ///
    /// The certificate is the gradient norm from a full pass at the returned point. Its
    /// sums run in another order than in memory (sequentially within a block, blocks
    /// merged in block order), which the rounding floor covers: its model of a sum's
    /// rounding depends on the number of additions and a bound on every partial sum, not
    /// on their order ([`crate::tolerance_floor`]). Noise drawn for a fit refused during its solve is
    /// discarded, and nothing computed from it is returned.
    pub fn fit_blocks<S, R>(
        &self,
        source: &S,
        examples: usize,
        rng: &mut R,
    ) -> Result<Fit, ErmError>
    where
        S: RowBlocks + ?Sized,
        ErmError: From<S::Error>,
        R: ReleaseRng + ?Sized,
    {
        self.fit_blocks_with(source, examples, rng, Mutation::NoiseRate(1.0))
            .map(|(fit, _)| fit)
    }

    /// As `fit_blocks`, or (tests only) one of the mechanism's classic bugs; also returns
    /// the secret noise vector.
    pub(crate) fn fit_blocks_with<S, R>(
        &self,
        source: &S,
        examples: usize,
        rng: &mut R,
        mutation: Mutation,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError>
    where
        S: RowBlocks + ?Sized,
        ErmError: From<S::Error>,
        R: ReleaseRng + ?Sized,
    {
        self.check_sums_fit(examples, source.cols())?;
        // The passes check each block as they read it, after the noise is drawn: group
        // norms, which must all be checked before, need the rows in memory.
        if self.noise_groups().is_some() {
            return Err(misplaced_group_noise());
        }
        over_checked_blocks(source, examples, self.loss(), &mut |oracle| {
            self.fit_sums_with(oracle, examples, &mut *rng, mutation, &|_| {
                Err(misplaced_group_noise())
            })
        })
    }

    /// Trains on rows this process never sees: `oracle` answers each solver pass with the
    /// merged [`PartialSums`] of all rows (say, partial sums that executors computed with
    /// [`contract_sums`] and the driver merged in partition order). The rows must number
    /// exactly `examples`, the public n (every answer's row count is checked), and the
    /// oracle must sum with this fit's loss ([`ErmParams::loss`]). Refusals as
    /// [`ErmParams::fit_blocks`]'s, except that group-shaped noise
    /// ([`ErmParams::group_noise`]) is accepted: its contract is the oracle's to keep.
    ///
    /// # Privacy
    /// The guarantee of [`ErmParams::fit_blocks`] (with group-shaped noise, of
    /// [`ErmParams::fit`] with it), under its conditions, which here the oracle must keep and
    /// this function cannot check: every row summed passed [`contract_sums`]'s check
    /// (`‖x‖₂ ≤ 1`, label ±1) — with group-shaped noise, [`contract_sums_grouped`]'s with
    /// the same groups (`‖x‖_G ≤ 1`), on every row before the noise is drawn (a validation
    /// pass) — and every pass sums the same rows.
    /// The noise is drawn here, from `rng`, once per call, before the first pass: an oracle
    /// that recomputes a lost partial (a retried task) changes nothing drawn. The
    /// certificate is the gradient norm of the oracle's merged sums at the returned point;
    /// the tolerance's rounding floor ([`crate::tolerance_floor`]) is a model of the
    /// rounding of a sum of n terms that does not depend on the order or grouping of the
    /// additions (a partial per partition, merged in any fixed order, is one such
    /// grouping).
    pub fn fit_sums<O, R>(&self, oracle: &O, examples: usize, rng: &mut R) -> Result<Fit, ErmError>
    where
        O: SumsOracle + ?Sized,
        ErmError: From<O::Error>,
        R: ReleaseRng + ?Sized,
    {
        self.check_sums_fit(examples, oracle.cols())?;
        // Group-shaped noise: the oracle's contract (see `# Privacy`) covers the group
        // norms; the groups' dimension is checked by the calibration.
        self.fit_sums_with(
            &Answers(oracle),
            examples,
            rng,
            Mutation::NoiseRate(1.0),
            &|_| Ok(()),
        )
        .map(|(fit, _)| fit)
    }

    /// The refusals of a fit over sums that need only n and d (also [`crate::GaussianErm`]'s
    /// solver driver's: the Newton-only bound on d).
    pub(crate) fn check_sums_fit(&self, examples: usize, features: usize) -> Result<(), ErmError> {
        self.calibrate(examples, features)?;
        self.check_sums_solver(features)
    }

    /// The refusals of the solver of a fit over sums: L-BFGS, and more features than the
    /// Newton solver factors.
    pub(crate) fn check_sums_solver(&self, features: usize) -> Result<(), ErmError> {
        if self.solver_choice() == SolverChoice::Lbfgs {
            return Err(ErmError::MisplacedOption {
                option: "the L-BFGS solver",
                applies_to: "in-memory fits (ErmParams::fit); fits over row blocks use Newton",
            });
        }
        if features > MAX_HESSIAN_DIMENSION {
            return Err(ErmError::InvalidCount {
                what: "feature count of a fit over row blocks",
                value: features,
                requirement: "at most 16384 (its Newton solver factors a d×d Hessian)",
            });
        }
        Ok(())
    }

    pub(crate) fn fit_sums_with<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        rng: &mut R,
        mutation: Mutation,
        check_groups: &dyn Fn(&FeatureGroups) -> Result<(), ErmError>,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError>
    where
        O: SumsOracle<Error = ErmError> + ?Sized,
        R: ReleaseRng + ?Sized,
    {
        let features = oracle.cols();
        let plan = self.calibrate(examples, features)?;
        self.release(
            (examples, features),
            &plan,
            rng,
            mutation,
            &mut |mu, linear, tolerance| self.solve_sums(oracle, examples, mu, linear, tolerance),
            check_groups,
        )
    }

    /// [`ErmParams::solve`] over sums: Newton only, a certified solution or a refusal
    /// that carries nothing but the fact.
    pub(crate) fn solve_sums<O: SumsOracle<Error = ErmError> + ?Sized>(
        &self,
        oracle: &O,
        examples: usize,
        total_regularization: f64,
        linear: Option<&[f64]>,
        tolerance: f64,
    ) -> Result<Solution, ErmError> {
        let mut objective = BlockObjective::over_sums(oracle, total_regularization, examples)?;
        if let Some(linear) = linear {
            objective = objective.with_linear_term(linear)?;
        }
        let solution = BlockNewton::default()
            .tolerance(tolerance)
            .max_iterations(500)
            .minimize(&objective, self.warm_start_weights())?;
        if solution.is_converged() {
            Ok(solution)
        } else {
            Err(ErmError::NotConverged)
        }
    }
}

/// `source`, whose declared row count must be the public `examples`, with every block
/// checked against the data contract before a pass sums it, as the oracle `fit` runs over
/// (the passes of [`ErmParams::fit_blocks`] and [`crate::GaussianErm::fit_blocks`]).
pub(crate) fn over_checked_blocks<S, T>(
    source: &S,
    examples: usize,
    loss: crate::Loss,
    fit: &mut dyn FnMut(&dyn SumsOracle<Error = ErmError>) -> Result<T, ErmError>,
) -> Result<T, ErmError>
where
    S: RowBlocks + ?Sized,
    ErmError: From<S::Error>,
{
    if source.rows() != examples {
        return Err(ErmError::DimensionMismatch {
            what: "rows the block source declares (n is given, not counted)",
            expected: examples,
            found: source.rows(),
        });
    }
    let checked = Contract { inner: source };
    fit(&BlockPass::new(&checked, loss))
}

/// An oracle whose errors are [`ErmError`]s.
pub(crate) struct Answers<'a, O: ?Sized>(pub(crate) &'a O);

impl<O> SumsOracle for Answers<'_, O>
where
    O: SumsOracle + ?Sized,
    ErmError: From<O::Error>,
{
    type Error = ErmError;

    fn cols(&self) -> usize {
        self.0.cols()
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, ErmError> {
        Ok(self.0.sums(w, with_hessian)?)
    }

    fn sums_with(&self, w: &[f64], hessian: HessianRows) -> Result<PartialSums, ErmError> {
        Ok(self.0.sums_with(w, hessian)?)
    }
}

/// The partial sums of one block for a fit over sums with `loss`, after the data contract
/// of [`crate::TrainingSet`] (labels ±1, every row in the unit ball, decided in the safe
/// direction): what a worker computes for [`ErmParams::fit_sums`]. A broken row is
/// refused naming its row within the block.
pub fn contract_sums(
    block: &RowBlock<'_>,
    w: &[f64],
    loss: crate::Loss,
    with_hessian: bool,
) -> Result<PartialSums, ErmError> {
    check_block(block)?;
    Ok(PartialSums::of_block(block, w, &loss, with_hessian)?)
}

/// [`contract_sums`] for a fit whose noise is shaped to `groups`
/// ([`ErmParams::group_noise`]): every row also within group norm 1
/// (`‖x‖_G = (Σ_g ‖x_g‖₁²)^{1/2}`, decided in the safe direction as
/// [`crate::TrainingSet::check_group_norms`] decides it). What a worker computes for
/// [`ErmParams::fit_sums`] with group-shaped noise; a broken row is refused naming its row
/// within the block.
pub fn contract_sums_grouped(
    block: &RowBlock<'_>,
    w: &[f64],
    loss: crate::Loss,
    with_hessian: bool,
    groups: &FeatureGroups,
) -> Result<PartialSums, ErmError> {
    check_block(block)?;
    check_group_norms_of(block.rows(), block.cols(), groups, |row, visit| {
        let (indices, values) = block.row(row);
        for (&j, &v) in indices.iter().zip(values) {
            visit(j as usize, v);
        }
    })?;
    Ok(PartialSums::of_block(block, w, &loss, with_hessian)?)
}

fn misplaced_group_noise() -> ErmError {
    ErmError::MisplacedOption {
        option: "group-shaped noise",
        applies_to: "in-memory fits (ErmParams::fit) and fits over sums (ErmParams::fit_sums, \
                     whose workers check every row's group norm with contract_sums_grouped), \
                     which check every row's group norm before drawing the noise; not row \
                     blocks read during the passes",
    }
}

/// A source whose every block is checked against the data contract (rows in the unit ball,
/// labels ±1) before the pass sees it.
struct Contract<'a, S: ?Sized> {
    inner: &'a S,
}

impl<S> RowBlocks for Contract<'_, S>
where
    S: RowBlocks + ?Sized,
    ErmError: From<S::Error>,
{
    type Error = ErmError;

    fn cols(&self) -> usize {
        self.inner.cols()
    }

    fn rows(&self) -> usize {
        self.inner.rows()
    }

    fn block_count(&self) -> usize {
        self.inner.block_count()
    }

    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), ErmError> {
        let mut broken = None;
        self.inner
            .with_block(index, &mut |block| match check_block(&block) {
                Ok(()) => visit(block),
                Err(error) => {
                    broken = Some(ErmError::InBlock {
                        block: index,
                        error: Box::new(error),
                    })
                }
            })?;
        broken.map_or(Ok(()), Err)
    }
}

/// The contract [`crate::TrainingSet`] checks, on one block: labels ±1, rows in the unit
/// ball (decided in the safe direction, [`within_unit_ball`]).
pub(crate) fn check_block(block: &RowBlock<'_>) -> Result<(), ErmError> {
    for (row, &label) in block.labels().iter().enumerate() {
        if label != 1.0 && label != -1.0 {
            return Err(ErmError::InvalidLabel { row, label });
        }
        let (_, values) = block.row(row);
        if !within_unit_ball(values) {
            return Err(ErmError::RowNormAboveOne {
                row,
                norm: values.iter().map(|v| v * v).sum::<f64>().sqrt(),
            });
        }
    }
    Ok(())
}
