//! The pass as a question the solver asks: "the merged sums at `w`", answered by whoever
//! holds the rows (a block source in this process, executors elsewhere).

use crate::blocks::sums::{HessianRows, PartialSums, RowBlocks, sum_blocks, sum_blocks_with};
use crate::{MarginLoss, OptimError};

/// Answers one solver pass: the [`PartialSums`] of **all** rows at `w`, merged in an order
/// that the answerer fixes (so the same question gets the same bits every time).
///
/// [`crate::BlockNewton`] asks only this, so the rows may live anywhere: [`BlockPass`]
/// answers from a [`RowBlocks`] source in this process; a distributed engine answers with
/// partial sums computed on its workers and merged in a fixed (partition) order.
pub trait SumsOracle {
    /// What a pass can fail with; solver errors convert into it.
    type Error: From<OptimError>;
    /// Columns d of the rows.
    fn cols(&self) -> usize;
    /// The merged sums over every row at `w` (length d), with the Hessian if asked for.
    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, Self::Error>;

    /// The merged sums at `w` with the Hessian over the rows `hessian` names. A sampled
    /// Hessian ([`HessianRows::EveryNth`]) is for an answerer whose passes cost more with the
    /// exact one (arithmetic on the rows it reads, not the reading): the default answers
    /// with the exact Hessian instead, which is always a valid answer.
    fn sums_with(&self, w: &[f64], hessian: HessianRows) -> Result<PartialSums, Self::Error> {
        self.sums(w, hessian != HessianRows::None)
    }
}

/// A [`RowBlocks`] source and a loss as a [`SumsOracle`]: every question is one
/// [`sum_blocks`] pass (blocks merged in block order), with a sampled Hessian when asked
/// ([`sum_blocks_with`]).
pub struct BlockPass<'a, S: ?Sized, L> {
    source: &'a S,
    loss: L,
}

impl<'a, S: RowBlocks + ?Sized, L: MarginLoss> BlockPass<'a, S, L> {
    /// Passes over `source` with `loss`.
    pub fn new(source: &'a S, loss: L) -> Self {
        Self { source, loss }
    }

    /// The source.
    pub fn source(&self) -> &'a S {
        self.source
    }
}

impl<S: RowBlocks + ?Sized, L: MarginLoss> SumsOracle for BlockPass<'_, S, L> {
    type Error = S::Error;

    fn cols(&self) -> usize {
        self.source.cols()
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, S::Error> {
        sum_blocks(self.source, w, &self.loss, with_hessian)
    }

    fn sums_with(&self, w: &[f64], hessian: HessianRows) -> Result<PartialSums, S::Error> {
        sum_blocks_with(self.source, w, &self.loss, hessian)
    }
}

impl<O: SumsOracle + ?Sized> SumsOracle for &O {
    type Error = O::Error;

    fn cols(&self) -> usize {
        (**self).cols()
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, O::Error> {
        (**self).sums(w, with_hessian)
    }

    fn sums_with(&self, w: &[f64], hessian: HessianRows) -> Result<PartialSums, O::Error> {
        (**self).sums_with(w, hessian)
    }
}
