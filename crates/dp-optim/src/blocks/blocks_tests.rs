//! The block pass against the in-memory one, its thread-count independence, and refusals.

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use super::*;
use crate::{CsrRows, Design, GlmObjective, MarginLoss, Newton, OptimError};

/// ℓ(z) = ln(1 + e^{−z}), evaluated stably.
pub(super) struct Logistic;
impl MarginLoss for Logistic {
    fn value(&self, z: f64) -> f64 {
        if z >= 0.0 {
            (-z).exp().ln_1p()
        } else {
            -z + z.exp().ln_1p()
        }
    }
    fn derivative(&self, z: f64) -> f64 {
        -1.0 / (1.0 + z.exp())
    }
    fn second_derivative(&self, z: f64) -> f64 {
        let s = 1.0 / (1.0 + (-z).exp());
        s * (1.0 - s)
    }
}

/// A block's offsets, indices, values and labels.
pub(super) type OwnedBlock = (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>);

/// Rows held in memory, cut into blocks of `block_rows`: the simplest source.
pub(super) struct VecBlocks {
    cols: usize,
    /// Per block: offsets, indices, values, labels.
    blocks: Vec<OwnedBlock>,
    /// Rows the source claims (may lie, for the refusal tests).
    declared: usize,
}

impl VecBlocks {
    /// Blocks of `cols` columns, declaring the rows they hold.
    pub(super) fn new(cols: usize, blocks: Vec<OwnedBlock>) -> Self {
        let declared = blocks.iter().map(|b| b.3.len()).sum();
        Self {
            cols,
            blocks,
            declared,
        }
    }
}

impl RowBlocks for VecBlocks {
    type Error = OptimError;
    fn cols(&self) -> usize {
        self.cols
    }
    fn rows(&self) -> usize {
        self.declared
    }
    fn block_count(&self) -> usize {
        self.blocks.len()
    }
    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), OptimError> {
        let (offsets, indices, values, labels) = &self.blocks[index];
        visit(RowBlock::new(self.cols, offsets, indices, values, labels)?);
        Ok(())
    }
}

/// One-hot-like rows in the unit ball (3 numeric columns, groups of 5, 4 and 3 levels),
/// labels from a noisy linear rule: as rows, and as blocks of `block_rows`.
pub(super) fn data(rows: usize, block_rows: usize, seed: u64) -> (CsrRows, Vec<f64>, VecBlocks) {
    let mut rng = InsecureSeededRng::new(seed);
    let cols = 3 + 5 + 4 + 3;
    let truth: Vec<f64> = (0..cols).map(|_| rng.random_range(-3.0..3.0)).collect();
    let mut list = Vec::with_capacity(rows);
    let mut labels = Vec::with_capacity(rows);
    for _ in 0..rows {
        let mut row: Vec<(usize, f64)> = (0..3).map(|j| (j, rng.random_range(0.0..1.0))).collect();
        let mut offset = 3;
        for size in [5, 4, 3] {
            row.push((offset + rng.random_range(0..size), 1.0));
            offset += size;
        }
        let length = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt() * 1.000_001;
        row.iter_mut().for_each(|(_, v)| *v /= length);
        let score: f64 = row.iter().map(|&(j, v)| truth[j] * v).sum();
        let flip = rng.random_range(0.0..1.0) < 0.1;
        labels.push(if (score > 0.0) != flip { 1.0 } else { -1.0 });
        list.push(row);
    }
    let blocks = list
        .chunks(block_rows)
        .zip(labels.chunks(block_rows))
        .map(|(rows, labels)| {
            let mut offsets = vec![0u32];
            let (mut indices, mut values) = (Vec::new(), Vec::new());
            for row in rows {
                indices.extend(row.iter().map(|&(j, _)| j as u32));
                values.extend(row.iter().map(|&(_, v)| v));
                offsets.push(indices.len() as u32);
            }
            (offsets, indices, values, labels.to_vec())
        })
        .collect();
    let source = VecBlocks {
        cols,
        blocks,
        declared: rows,
    };
    (CsrRows::from_rows(cols, &list).unwrap(), labels, source)
}

pub(super) fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn block_newton_finds_the_in_memory_minimizer_within_both_certificates() {
    let (rows, labels, blocks) = data(5_000, 700, 3);
    let mu = 1e-3;
    let linear: Vec<f64> = (0..rows.cols()).map(|j| (j as f64 - 7.0) * 1e-3).collect();
    let memory = GlmObjective::new(&rows, &labels, Logistic, mu)
        .unwrap()
        .with_linear_term(&linear)
        .unwrap();
    let in_memory = Newton::default().minimize(&memory, None).unwrap();
    let objective = BlockObjective::new(&blocks, Logistic, mu, 5_000)
        .unwrap()
        .with_linear_term(&linear)
        .unwrap();
    let out = BlockNewton::default().minimize(&objective, None).unwrap();
    assert!(out.is_converged() && in_memory.is_converged());
    assert!(out.gradient_norm() <= 1e-10);
    // Both are within ‖∇F‖/μ of the one minimizer.
    let gap = distance(out.weights(), in_memory.weights());
    assert!(
        gap <= out.distance_bound() + in_memory.distance_bound(),
        "gap {gap:e}"
    );
    // The certificate is honest: the in-memory gradient at the block solution agrees.
    let g = memory.gradient(out.weights()).unwrap();
    assert!(g.iter().map(|x| x * x).sum::<f64>().sqrt() <= 2e-10);
}

#[test]
fn a_pass_sums_what_the_in_memory_objective_computes() {
    let (rows, labels, blocks) = data(3_000, 256, 5);
    let w: Vec<f64> = (0..rows.cols())
        .map(|j| ((j * 7) % 5) as f64 - 2.0)
        .collect();
    let mu = 0.01;
    let memory = GlmObjective::new(&rows, &labels, Logistic, mu).unwrap();
    let objective = BlockObjective::new(&blocks, Logistic, mu, 3_000).unwrap();
    let (value, gradient) = objective.value_and_gradient(&w).unwrap();
    assert!((value - memory.value(&w).unwrap()).abs() <= 1e-12);
    assert!(distance(&gradient, &memory.gradient(&w).unwrap()) <= 1e-12);
    let h = objective
        .evaluate(&w, HessianRows::All)
        .unwrap()
        .hessian
        .unwrap();
    let expected = memory.hessian(&w).unwrap();
    for i in 0..rows.cols() {
        for j in 0..=i {
            assert!((h[(i, j)] - expected[(i, j)]).abs() <= 1e-12, "({i}, {j})");
        }
    }
}

#[test]
fn a_pass_has_the_same_bits_on_any_thread_count_and_merges_in_block_order() {
    let (rows, _, blocks) = data(20_000, 300, 7);
    let w: Vec<f64> = (0..rows.cols()).map(|j| (j as f64).sin()).collect();
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| sum_blocks(&blocks, &w, &Logistic, true).unwrap())
    };
    let one = on(1);
    assert_eq!(one.rows(), 20_000);
    assert_eq!(one, on(3));
    // The same as merging block by block by hand, in order.
    let mut by_hand = PartialSums::zero(rows.cols(), true);
    for index in 0..blocks.block_count() {
        blocks
            .with_block(index, &mut |block| {
                by_hand
                    .merge(&PartialSums::of_block(&block, &w, &Logistic, true).unwrap())
                    .unwrap()
            })
            .unwrap();
    }
    assert_eq!(one, by_hand);
}

#[test]
fn a_row_count_other_than_the_given_n_is_refused() {
    let (_, _, mut blocks) = data(1_000, 100, 9);
    let mismatch = BlockObjective::new(&blocks, Logistic, 0.1, 999).err();
    assert!(matches!(
        mismatch,
        Some(OptimError::DimensionMismatch {
            expected: 999,
            found: 1_000,
            ..
        })
    ));
    // A source that declares n but yields another count is caught by the pass.
    blocks.blocks.pop();
    let objective = BlockObjective::new(&blocks, Logistic, 0.1, 1_000).unwrap();
    let refused = BlockNewton::default().minimize(&objective, None).err();
    assert!(
        matches!(
            refused,
            Some(OptimError::DimensionMismatch {
                expected: 1_000,
                found: 900,
                ..
            })
        ),
        "{refused:?}"
    );
}

#[test]
fn malformed_blocks_are_refused_with_the_row() {
    let cols = 4;
    let ok = RowBlock::new(cols, &[0, 2, 3], &[0, 3, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0]);
    assert!(ok.is_ok());
    type Parts<'a> = (&'a [u32], &'a [u32], &'a [f64], &'a [f64]);
    let cases: [Parts<'_>; 6] = [
        (&[0, 2], &[0, 3, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0]),
        (&[0, 2, 3], &[0, 4, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0]),
        (&[0, 2, 3], &[3, 0, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0]),
        (&[0, 2, 3], &[0, 3, 1], &[0.5, f64::NAN, 1.0], &[1.0, -1.0]),
        (
            &[0, 2, 3],
            &[0, 3, 1],
            &[0.5, 0.5, 1.0],
            &[1.0, f64::INFINITY],
        ),
        (&[0, 3, 2], &[0, 3, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0]),
    ];
    for (offsets, indices, values, labels) in cases {
        let refused = RowBlock::new(cols, offsets, indices, values, labels);
        assert!(
            refused.is_err(),
            "{offsets:?} {indices:?} {values:?} {labels:?}"
        );
    }
    let message = RowBlock::new(cols, &[0, 2, 3], &[0, 4, 1], &[0.5, 0.5, 1.0], &[1.0, -1.0])
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("row 0") && message.contains("4 >= 4"),
        "{message}"
    );
}
