//! The regression kernels and the driver's fit without Spark: two partitions of dense
//! rows, encoded, summed and fitted, against the in-memory regressor.

use dp_erm::{Loss, TargetScale};
use dp_fit::recipe::{Mechanism, Regularization};

use crate::fit::Randomness;
use crate::regress::{RegressionSpec, fit_regression};
use crate::rows::{RowTransform, Rows};
use crate::spark_regress::{
    EncodedRegression, encode_regression_partition, fit_regression_partitions,
    regression_block_sums,
};

const D: usize = 2;

fn data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..n * D)
        .map(|i| ((i * 37) % 100) as f64 / 100.0 - 0.5)
        .collect();
    let y = (0..n)
        .map(|i| 4.0 * x[i * D] - x[i * D + 1] + 1.0)
        .collect();
    (x, y)
}

fn spec() -> RegressionSpec {
    RegressionSpec {
        threshold: 1.0,
        mechanism: Mechanism::Objective {
            epsilon: 1.0,
            calibration: Default::default(),
        },
        regularization: Regularization::Fixed(0.02),
        tolerance: None,
        transform: RowTransform {
            norm_bound: 1.0,
            clip: false,
            intercept: Some(1.0),
        },
        target: TargetScale::new(-3.0, 5.0).unwrap(),
        clip_targets: false,
        feature_groups: None,
    }
}

fn encode(x: &[f64], y: &[f64], spec: &RegressionSpec) -> EncodedRegression {
    let rows = Rows::Dense {
        values: x,
        features: D,
    };
    encode_regression_partition(rows, y, &spec.transform, spec.target, spec.clip_targets).unwrap()
}

#[test]
fn the_fit_over_partitions_is_the_in_memory_fit_to_the_certificate() {
    let n = 500;
    let (x, y) = data(n);
    let spec = spec();
    let half = n / 2;
    let parts = [
        encode(&x[..half * D], &y[..half], &spec),
        encode(&x[half * D..], &y[half..], &spec),
    ];
    let loss = Loss::huber_regression(spec.threshold).unwrap();
    let cols = D + 1;
    let ask = |w: &[f64], with_hessian: bool, _model: usize| {
        parts
            .iter()
            .map(|p| {
                let s = regression_block_sums(&p.block, &p.targets, cols, loss, w, with_hessian)
                    .map_err(|e| e.to_string())?;
                assert_eq!(s.checksum, p.checksum);
                Ok((s.checksum, s.sums.to_bytes()))
            })
            .collect()
    };
    let (fit, passes) =
        fit_regression_partitions(&spec, n, D, &ask, Randomness::InsecureSeed(4)).unwrap();
    assert!(passes >= 2);
    let rows = Rows::Dense {
        values: &x,
        features: D,
    };
    let (memory, _, _) =
        fit_regression(rows, &y, &spec, None, Randomness::InsecureSeed(4)).unwrap();
    assert_eq!(fit.calibration, memory.calibration);
    let calibration = fit.calibration.unwrap();
    let mu = fit.regularization + calibration.extra_regularization;
    let (a, b) = (fit.models[0].weights(), memory.models[0].weights());
    let gap = a
        .iter()
        .zip(b)
        .map(|(p, q)| (p - q).powi(2))
        .sum::<f64>()
        .sqrt();
    let grid = calibration.release_grid * (cols as f64).sqrt();
    assert!(gap <= 2.0 * calibration.tolerance / mu + grid, "{gap}");
    assert_eq!(
        fit.models[0].metadata().feature_map,
        memory.models[0].metadata().feature_map
    );
    // Another n is refused by the validation pass, before the generator is drawn from.
    let refused = fit_regression_partitions(&spec, n + 1, D, &ask, Randomness::InsecureSeed(4));
    let Err(refused) = refused else {
        panic!("another n was accepted")
    };
    assert!(refused.to_string().contains("n_rows"), "{refused}");
}

#[test]
fn a_target_outside_the_bounds_is_refused_by_row_never_by_value() {
    let (x, mut y) = data(10);
    y[6] = 1234.5678;
    let mut spec = spec();
    let rows = Rows::Dense {
        values: &x,
        features: D,
    };
    let error = encode_regression_partition(rows, &y, &spec.transform, spec.target, false)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("row 6") && !error.contains("1234"),
        "{error}"
    );
    y[6] = f64::NAN;
    let error = encode_regression_partition(rows, &y, &spec.transform, spec.target, true)
        .unwrap_err()
        .to_string();
    assert!(error.contains("row 6"), "{error}");
    // Clipped, the row trains at the bound, and its scaled target is 1.
    y[6] = 1234.5678;
    spec.clip_targets = true;
    let encoded = encode(&x, &y, &spec);
    let scaled = f64::from_le_bytes(encoded.targets[48..56].try_into().unwrap());
    assert_eq!(scaled, 1.0);
    // A block's targets damaged after encoding are refused by the pass's contract.
    let mut damaged = encoded.targets.clone();
    damaged[48..56].copy_from_slice(&1.5f64.to_le_bytes());
    let loss = Loss::huber_regression(1.0).unwrap();
    let w = vec![0.0; D + 1];
    let error = regression_block_sums(&encoded.block, &damaged, D + 1, loss, &w, false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("row 6"), "{error}");
    // And the checksum covers the targets: another target, another checksum.
    damaged[48..56].copy_from_slice(&0.5f64.to_le_bytes());
    let other = regression_block_sums(&encoded.block, &damaged, D + 1, loss, &w, false).unwrap();
    assert_ne!(other.checksum, encoded.checksum);
}
