//! The sampled Hessian of a pass, and BlockNewton's choice of Hessian per pass.

use std::cell::RefCell;

use super::newton::{HESSIAN_ROWS_PER_DIMENSION, MAX_HESSIAN_STRIDE, hessian_stride};
use super::tests::{Logistic, OwnedBlock, VecBlocks, data, distance};
use super::*;
use crate::{Design, GlmObjective, Newton, OptimError};

/// Rows `0, s, 2s, …` of every block of `blocks`, as blocks of their own.
fn every_nth_row(blocks: &VecBlocks, stride: usize) -> (VecBlocks, usize) {
    let mut kept = Vec::new();
    let mut rows = 0;
    for index in 0..blocks.block_count() {
        blocks
            .with_block(index, &mut |block| {
                let mut owned: OwnedBlock = (vec![0], vec![], vec![], vec![]);
                for i in (0..block.rows()).step_by(stride) {
                    let (idx, val) = block.row(i);
                    owned.1.extend_from_slice(idx);
                    owned.2.extend_from_slice(val);
                    owned.0.push(owned.1.len() as u32);
                    owned.3.push(block.labels()[i]);
                }
                rows += owned.3.len();
                kept.push(owned);
            })
            .unwrap();
    }
    (VecBlocks::new(blocks.cols(), kept), rows)
}

#[test]
fn a_sampled_hessian_sums_every_nth_row_of_each_block_scaled_to_all_rows() {
    // Blocks of 700 rows (not a multiple of the stride) and a short last block.
    let (rows, _, blocks) = data(5_000, 700, 11);
    let w: Vec<f64> = (0..rows.cols()).map(|j| (j as f64).cos()).collect();
    let stride = 3;
    let sampled = sum_blocks_with(&blocks, &w, &Logistic, HessianRows::EveryNth(stride)).unwrap();
    let exact = sum_blocks(&blocks, &w, &Logistic, true).unwrap();
    // The value and gradient are over every row, bit for bit the exact pass's.
    assert_eq!(sampled.rows(), 5_000);
    assert_eq!(sampled.loss_sum().to_bits(), exact.loss_sum().to_bits());
    assert_eq!(sampled.gradient_sum(), exact.gradient_sum());
    // The Hessian is the exact Hessian of the kept rows (the same additions in the same
    // order), times rows / kept.
    let (kept, kept_rows) = every_nth_row(&blocks, stride);
    assert_eq!(kept_rows, 7 * 234 + 100_usize.div_ceil(3));
    let of_kept = sum_blocks(&kept, &w, &Logistic, true).unwrap();
    let scale = 5_000.0 / kept_rows as f64;
    let expected: Vec<f64> = of_kept
        .hessian_sum_lower()
        .unwrap()
        .iter()
        .map(|v| v * scale)
        .collect();
    assert_eq!(sampled.hessian_sum_lower().unwrap(), expected.as_slice());
    // Stride 1 is the exact pass, and no Hessian is none.
    let one = sum_blocks_with(&blocks, &w, &Logistic, HessianRows::EveryNth(1)).unwrap();
    assert_eq!(one, exact);
    let none = sum_blocks_with(&blocks, &w, &Logistic, HessianRows::None).unwrap();
    assert!(none.hessian_sum_lower().is_none());
    assert_eq!(none.gradient_sum(), exact.gradient_sum());
}

#[test]
fn the_stride_keeps_a_thousand_rows_per_dimension_and_at_most_eight() {
    assert_eq!(HESSIAN_ROWS_PER_DIMENSION, 1000);
    assert_eq!(MAX_HESSIAN_STRIDE, 8);
    assert_eq!(hessian_stride(30_162, 105), 1);
    assert_eq!(hessian_stride(209_999, 105), 1);
    assert_eq!(hessian_stride(210_000, 105), 2);
    assert_eq!(hessian_stride(799_999, 100), 7);
    assert_eq!(hessian_stride(100_000_000, 105), 8);
    assert_eq!(hessian_stride(5, 0), 1);
}

/// Answers as `BlockPass` does and records each pass's Hessian; a sampled Hessian may be
/// answered `distorted` (multiplied by it), as a poor sample would be, or exactly.
struct Recorded<'a> {
    pass: BlockPass<'a, VecBlocks, Logistic>,
    asked: RefCell<Vec<HessianRows>>,
    distorted: f64,
    exactly: bool,
}

impl<'a> Recorded<'a> {
    fn new(blocks: &'a VecBlocks, distorted: f64) -> Self {
        Self {
            pass: BlockPass::new(blocks, Logistic),
            asked: RefCell::new(Vec::new()),
            distorted,
            exactly: false,
        }
    }

    fn answering_exactly(mut self) -> Self {
        self.exactly = true;
        self
    }
}

impl SumsOracle for Recorded<'_> {
    type Error = OptimError;

    fn cols(&self) -> usize {
        self.pass.cols()
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, OptimError> {
        let rows = if with_hessian {
            HessianRows::All
        } else {
            HessianRows::None
        };
        self.sums_with(w, rows)
    }

    fn sums_with(&self, w: &[f64], hessian: HessianRows) -> Result<PartialSums, OptimError> {
        self.asked.borrow_mut().push(hessian);
        if self.exactly {
            return self.pass.sums(w, hessian != HessianRows::None);
        }
        let sums = self.pass.sums_with(w, hessian)?;
        if !matches!(hessian, HessianRows::EveryNth(_)) || self.distorted == 1.0 {
            return Ok(sums);
        }
        // Through the documented layout: the Hessian's floats are the bytes' tail.
        let mut bytes = sums.to_bytes();
        let d = sums.gradient_sum().len();
        let start = bytes.len() - 8 * d * (d + 1) / 2;
        for chunk in bytes[start..].chunks_exact_mut(8) {
            let v = f64::from_le_bytes(chunk.try_into().unwrap()) * self.distorted;
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        PartialSums::from_bytes(&bytes)
    }
}

fn in_memory_solution(rows: usize, seed: u64, mu: f64) -> (crate::Solution, VecBlocks) {
    let (csr, labels, blocks) = data(rows, 4_096, seed);
    let memory = GlmObjective::new(&csr, &labels, Logistic, mu).unwrap();
    (Newton::default().minimize(&memory, None).unwrap(), blocks)
}

/// Solves over `oracle` (n = `rows`, at most `steps` Newton steps), checks the certificate
/// against the in-memory solution, and returns the solution and the Hessians the passes
/// asked for.
fn certified(
    oracle: &Recorded<'_>,
    (rows, mu, steps): (usize, f64, usize),
    in_memory: &crate::Solution,
) -> (crate::Solution, Vec<HessianRows>) {
    let objective = BlockObjective::over_sums(oracle, mu, rows).unwrap();
    let out = BlockNewton::default()
        .max_iterations(steps)
        .minimize(&objective, None)
        .unwrap();
    assert!(out.is_converged(), "{:?}", out.termination());
    assert!(out.gradient_norm() <= 1e-10);
    let gap = distance(out.weights(), in_memory.weights());
    assert!(gap <= out.distance_bound() + in_memory.distance_bound());
    (out, oracle.asked.take())
}

#[test]
fn block_newton_steps_with_a_sampled_hessian_first_and_certifies_as_before() {
    // 15 columns: 30,000 rows and more are sampled (stride 2 at 30,000–44,999 rows).
    let rows = 40_000;
    let mu = 1e-3;
    let (in_memory, blocks) = in_memory_solution(rows, 13, mu);
    let (_, asked) = certified(&Recorded::new(&blocks, 1.0), (rows, mu, 100), &in_memory);
    // Sampled far from the optimum, exact (or none) once ‖∇F‖ is below 1% of its start.
    let sampled = asked
        .iter()
        .take_while(|h| **h == HessianRows::EveryNth(2))
        .count();
    assert!(sampled >= 3, "{asked:?}");
    assert!(
        asked[sampled..]
            .iter()
            .all(|h| matches!(h, HessianRows::All | HessianRows::None)),
        "{asked:?}"
    );
    // At most one pass more than when every pass answers with the exact Hessian.
    let exact = Recorded::new(&blocks, 1.0).answering_exactly();
    let exact_passes = certified(&exact, (rows, mu, 100), &in_memory).1.len();
    assert!(
        asked.len() <= exact_passes + 1,
        "{} passes against {exact_passes}",
        asked.len()
    );
}

#[test]
fn the_pass_predicted_to_certify_forms_no_hessian() {
    // Too few rows to sample: every step is exact, and the last pass forms no Hessian.
    let rows = 5_000;
    let mu = 1e-3;
    let (in_memory, blocks) = in_memory_solution(rows, 19, mu);
    let (out, asked) = certified(&Recorded::new(&blocks, 1.0), (rows, mu, 100), &in_memory);
    let (last, before) = asked.split_last().unwrap();
    assert_eq!(*last, HessianRows::None, "{asked:?}");
    assert!(before.iter().all(|h| *h == HessianRows::All), "{asked:?}");
    // One pass per Newton step and one to certify, as before.
    assert_eq!(asked.len(), out.iterations() + 1);
}

#[test]
fn a_sampled_hessian_that_serves_badly_hands_over_to_the_exact_one() {
    let rows = 40_000;
    let mu = 1e-3;
    let (in_memory, blocks) = in_memory_solution(rows, 17, mu);
    // A sampled Hessian 50 times too large: steps 50 times too short, contraction ≈ 0.98.
    let (_, asked) = certified(&Recorded::new(&blocks, 50.0), (rows, mu, 20), &in_memory);
    let first_exact = asked.iter().position(|h| *h == HessianRows::All);
    assert_eq!(first_exact, Some(2), "{asked:?}");
    assert!(
        asked[2..]
            .iter()
            .all(|h| matches!(h, HessianRows::All | HessianRows::None)),
        "{asked:?}"
    );
}

#[test]
fn a_sampled_hessian_too_small_costs_halvings_then_hands_over() {
    let rows = 40_000;
    let mu = 1e-3;
    let (in_memory, blocks) = in_memory_solution(rows, 23, mu);
    // A sampled Hessian 50 times too small (curvature a sample missed): steps 50 times too
    // long, which the line search halves.
    let (_, asked) = certified(&Recorded::new(&blocks, 0.02), (rows, mu, 30), &in_memory);
    // The first step's halvings are sampled passes; once it has moved (weakly), the exact
    // Hessian is formed where it landed, not stepped with the sample again (which took 3
    // passes more here).
    let first_exact = asked.iter().position(|h| *h == HessianRows::All).unwrap();
    assert!(
        asked[..first_exact]
            .iter()
            .all(|h| *h == HessianRows::EveryNth(2))
            && asked[first_exact..]
                .iter()
                .all(|h| matches!(h, HessianRows::All | HessianRows::None)),
        "{asked:?}"
    );
    assert!(asked.len() <= 12, "{} passes: {asked:?}", asked.len());
}
