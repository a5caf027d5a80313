//! Partial sums as bytes, and the solver over an oracle that answers with decoded bytes.

use std::cell::Cell;

use super::tests::{Logistic, VecBlocks, data};
use super::*;
use crate::OptimError;

fn sample_sums(with_hessian: bool) -> PartialSums {
    let (_, _, blocks) = data(700, 128, 9);
    let w: Vec<f64> = (0..blocks.cols()).map(|j| 0.1 * j as f64 - 0.5).collect();
    sum_blocks(&blocks, &w, &Logistic, with_hessian).unwrap()
}

#[test]
fn partial_sums_survive_their_bytes_bit_for_bit() {
    for with_hessian in [false, true] {
        let sums = sample_sums(with_hessian);
        let bytes = sums.to_bytes();
        let back = PartialSums::from_bytes(&bytes).unwrap();
        assert_eq!(back, sums);
        assert_eq!(back.loss_sum().to_bits(), sums.loss_sum().to_bits());
        assert_eq!(back.to_bytes(), bytes);
        // The layout is the documented one: header, then d (+ packed Hessian) floats.
        let d = sums.gradient_sum().len();
        let floats = 1 + d + if with_hessian { d * (d + 1) / 2 } else { 0 };
        assert_eq!(bytes.len(), 24 + 8 * floats);
        assert_eq!(&bytes[..4], b"DPPS");
        assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), 1);
        assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 700);
    }
}

#[test]
fn corrupt_or_mismatched_bytes_are_refused() {
    let bytes = sample_sums(true).to_bytes();
    let refused = |b: &[u8], why: &str| {
        let error = PartialSums::from_bytes(b).unwrap_err();
        assert!(
            matches!(&error, OptimError::InvalidParameter { why: w, .. } if w.contains(why)),
            "{error:?} should say {why:?}"
        );
    };
    refused(&bytes[..10], "shorter than");
    refused(&bytes[..bytes.len() - 1], "do not match");
    refused(&[bytes.as_slice(), &[0]].concat(), "do not match");
    let mut magic = bytes.clone();
    magic[0] = b'X';
    refused(&magic, "DPPS");
    let mut version = bytes.clone();
    version[4] = 2;
    refused(&version, "version 2");
    let mut flags = bytes.clone();
    flags[6] = 3;
    refused(&flags, "unknown flags");
    // The Hessian flag dropped: the length no longer matches d.
    let mut hessian = bytes.clone();
    hessian[6] = 0;
    refused(&hessian, "do not match");
    let mut cols = bytes.clone();
    cols[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    refused(&cols, "do not match");
    let mut nan = bytes.clone();
    let at = 24 + 8 * 3;
    nan[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    refused(&nan, "non-finite");
    // A well-formed partial of another shape decodes, but does not merge.
    let mut total = PartialSums::zero(4, true);
    let error = total.merge(&PartialSums::from_bytes(&bytes).unwrap());
    assert!(error.is_err());
}

/// Two well-formed partials whose row counts add up past `usize::MAX` (forged, or one
/// merged too often) are refused, naming the counts: the count used to wrap to a small
/// number in release builds (and panic in debug ones), which the solver's check against n
/// could then pass.
#[test]
fn rejects_a_merge_whose_row_count_overflows() {
    let sums = sample_sums(false);
    let mut huge = sums.to_bytes();
    huge[16..24].copy_from_slice(&(usize::MAX as u64).to_le_bytes());
    let huge = PartialSums::from_bytes(&huge).unwrap();
    let mut total = sums.clone();
    let error = total.merge(&huge).unwrap_err();
    assert!(error.to_string().contains("add up past"), "{error}");
    assert!(error.to_string().contains("700"), "{error}");
    // Refused whole: nothing of `huge` was added.
    assert_eq!(total, sums);
}

/// An oracle that answers as a distributed engine does: one partial per "partition"
/// (block), each through its bytes, merged in partition order; counts its questions.
struct ThroughBytes<'a> {
    blocks: &'a VecBlocks,
    questions: Cell<usize>,
}

impl SumsOracle for ThroughBytes<'_> {
    type Error = OptimError;
    fn cols(&self) -> usize {
        self.blocks.cols()
    }
    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, OptimError> {
        self.questions.set(self.questions.get() + 1);
        let mut total = PartialSums::zero(self.cols(), with_hessian);
        for index in 0..self.blocks.block_count() {
            let mut bytes = None;
            self.blocks.with_block(index, &mut |block| {
                bytes = PartialSums::of_block(&block, w, &Logistic, with_hessian)
                    .ok()
                    .map(|s| s.to_bytes());
            })?;
            total.merge(&PartialSums::from_bytes(&bytes.unwrap())?)?;
        }
        Ok(total)
    }
}

#[test]
fn block_newton_over_an_oracle_of_decoded_partials_equals_the_block_pass_bit_for_bit() {
    let (_, _, blocks) = data(3_000, 256, 4);
    let mu = 1e-3;
    let local = BlockObjective::new(&blocks, Logistic, mu, 3_000).unwrap();
    let expected = BlockNewton::default().minimize(&local, None).unwrap();
    let oracle = ThroughBytes {
        blocks: &blocks,
        questions: Cell::new(0),
    };
    let remote = BlockObjective::over_sums(&oracle, mu, 3_000).unwrap();
    let out = BlockNewton::default().minimize(&remote, None).unwrap();
    assert!(out.is_converged());
    let bits = |s: &crate::Solution| s.weights().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&out), bits(&expected));
    assert_eq!(
        out.gradient_norm().to_bits(),
        expected.gradient_norm().to_bits()
    );
    assert!(oracle.questions.get() > out.iterations());
    // An oracle reporting another row count than n is refused on its first answer.
    let wrong = BlockObjective::over_sums(&oracle, mu, 2_999).unwrap();
    assert!(matches!(
        BlockNewton::default().minimize(&wrong, None),
        Err(OptimError::DimensionMismatch {
            expected: 2_999,
            found: 3_000,
            ..
        })
    ));
}
