//! Regression over sums: the same release as in memory (same seed: weights within the
//! certificate's radius), and the worker's contract refusing what the calibration assumes.

use dp_noise::InsecureSeededRng;
use dp_optim::{OptimError, PartialSums, RowBlock, SumsOracle};

use super::*;
use crate::{RegressionSet, TargetClipping, TrainingSet};

/// Dense rows and scaled targets cut into two blocks, summed as a worker would and merged
/// in block order.
struct TwoBlocks {
    d: usize,
    rows: Vec<f64>,
    targets: Vec<f64>,
    loss: Loss,
}

impl TwoBlocks {
    fn block_sums(&self, range: std::ops::Range<usize>, w: &[f64], hessian: bool) -> PartialSums {
        let offsets: Vec<u32> = (0..=range.len()).map(|i| (i * self.d) as u32).collect();
        let indices: Vec<u32> = (0..range.len()).flat_map(|_| 0..self.d as u32).collect();
        let values = &self.rows[range.start * self.d..range.end * self.d];
        let labels = vec![1.0; range.len()];
        let block = RowBlock::new(self.d, &offsets, &indices, values, &labels)
            .unwrap()
            .with_targets(&self.targets[range])
            .unwrap();
        contract_regression_sums(&block, w, self.loss, hessian).unwrap()
    }
}

impl SumsOracle for TwoBlocks {
    type Error = OptimError;

    fn cols(&self) -> usize {
        self.d
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, OptimError> {
        let half = self.targets.len() / 2;
        let mut total = self.block_sums(0..half, w, with_hessian);
        total.merge(&self.block_sums(half..self.targets.len(), w, with_hessian))?;
        Ok(total)
    }
}

fn data(n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rows = Vec::with_capacity(n * d);
    let mut targets = Vec::with_capacity(n);
    for i in 0..n {
        let row: Vec<f64> = (0..d)
            .map(|j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4)
            .collect();
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
        rows.extend(row.iter().map(|v| v / norm));
        targets.push(2.0 * row[0] - row[d - 1] + 0.5);
    }
    (rows, targets)
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn a_fit_over_sums_releases_what_the_in_memory_fit_releases() {
    let (n, d) = (400, 3);
    let (rows, targets) = data(n, d);
    let scale = TargetScale::new(-3.0, 3.0).unwrap();
    let set = RegressionSet::new(
        TrainingSet::builder(d).dense_rows(rows.clone()),
        &targets,
        scale,
        TargetClipping::Refuse,
    )
    .unwrap();
    let loss = Loss::huber_regression(1.0).unwrap();
    let oracle = TwoBlocks {
        d,
        rows,
        targets: set.scaled_targets().to_vec(),
        loss,
    };
    let lambda = 1e-2;
    for params in [
        ErmParams::objective_perturbation(loss, lambda, 1.0),
        ErmParams::output_perturbation(loss, lambda, 1.0),
    ] {
        let memory = params
            .fit_regression(&set, &mut InsecureSeededRng::new(5))
            .unwrap();
        let sums = params
            .fit_regression_sums(&oracle, n, scale, &mut InsecureSeededRng::new(5))
            .unwrap();
        let calibration = sums.calibration().unwrap();
        assert_eq!(Some(calibration), memory.calibration());
        assert_eq!(sums.model().target_scale(), scale);
        let mu = lambda + calibration.extra_regularization;
        let gap = distance(sums.model().weights(), memory.model().weights());
        // Both certify ‖∇J‖ ≤ γ on the same μ-strongly convex objective and draw the same
        // noise; the release grid's rounding adds at most one grid step per weight.
        let grid = calibration.release_grid * (d as f64).sqrt();
        assert!(
            gap <= 2.0 * calibration.tolerance / mu + grid,
            "{params:?}: {gap}"
        );
    }
    let gaussian = GaussianErm::objective_perturbation(loss, lambda, 1.0, 1e-6);
    let (memory, calibration) = gaussian
        .fit_regression(&set, &mut InsecureSeededRng::new(9))
        .unwrap();
    let (sums, over_sums) = gaussian
        .fit_regression_sums(&oracle, n, scale, &mut InsecureSeededRng::new(9))
        .unwrap();
    assert_eq!(calibration, over_sums);
    assert!(distance(sums.weights(), memory.weights()) < 0.05);
    // n is public and given: another count is refused by the passes.
    assert!(
        ErmParams::output_perturbation(loss, lambda, 1.0)
            .fit_regression_sums(&oracle, n + 1, scale, &mut InsecureSeededRng::new(5))
            .is_err()
    );
    // A classifier's loss never trains a regressor over sums.
    assert!(matches!(
        ErmParams::output_perturbation(Loss::Logistic, lambda, 1.0).fit_regression_sums(
            &oracle,
            n,
            scale,
            &mut InsecureSeededRng::new(5)
        ),
        Err(ErmError::MisplacedOption { .. })
    ));
}

#[test]
fn the_workers_contract_refuses_what_the_calibration_assumes_away() {
    let loss = Loss::huber_regression(1.0).unwrap();
    let offsets = [0u32, 1, 2];
    let indices = [0u32, 0];
    let sums = |values: &[f64], labels: &[f64], targets: Option<&[f64]>| {
        let block = RowBlock::new(1, &offsets, &indices, values, labels).unwrap();
        let block = match targets {
            Some(t) => block.with_targets(t).unwrap(),
            None => block,
        };
        contract_regression_sums(&block, &[0.5], loss, true)
    };
    let fine = sums(&[0.5, -0.5], &[1.0, 1.0], Some(&[0.25, -1.0])).unwrap();
    // Residuals 0.25 − 0.25 = 0 and −0.25 + 1 = 0.75: the gradient is Σ r·x.
    assert!((fine.gradient_sum()[0] - 0.75 * -0.5).abs() < 1e-15);
    let refused = [
        sums(&[0.5, -0.5], &[1.0, 1.0], Some(&[0.25, 1.5])),
        sums(&[0.5, -1.5], &[1.0, 1.0], Some(&[0.25, 0.5])),
        sums(&[0.5, -0.5], &[1.0, -1.0], Some(&[0.25, 0.5])),
        sums(&[0.5, -0.5], &[1.0, 1.0], None),
    ];
    assert!(matches!(
        refused[0],
        Err(ErmError::TargetOutsideBounds { row: 1, .. })
    ));
    assert!(matches!(
        refused[1],
        Err(ErmError::RowNormAboveOne { row: 1, .. })
    ));
    assert!(matches!(
        refused[2],
        Err(ErmError::InvalidLabel { row: 1, .. })
    ));
    assert!(matches!(refused[3], Err(ErmError::MisplacedOption { .. })));
    // A classifier's loss is refused on regression blocks.
    let block = RowBlock::new(1, &offsets, &indices, &[0.5, -0.5], &[1.0, 1.0]).unwrap();
    assert!(contract_regression_sums(&block, &[0.0], Loss::Logistic, false).is_err());
}
