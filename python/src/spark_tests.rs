//! The executor kernel and the driver's oracle without Spark: batches built in Rust.

use std::cell::Cell;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use dp_erm::Loss;
use dp_optim::SumsOracle;
use dp_schema::{Encoder, Schema};

use crate::rows::RowTransform;
use crate::spark::{PartitionOracle, PartitionPass, PartitionSums};

const SCHEMA: &str = r#"
version = 1
row_scaling = "attributes"
intercept = true

[[columns]]
name = "age"
type = "numeric"
lower = 0
upper = 100

[[columns]]
name = "label"
type = "label"
classes = ["no", "yes"]
positive = "yes"
"#;

fn batch(ages: &[f64], labels: &[&str]) -> RecordBatch {
    let age: ArrayRef = Arc::new(Float64Array::from(ages.to_vec()));
    let label: ArrayRef = Arc::new(StringArray::from(labels.to_vec()));
    RecordBatch::try_from_iter([("age", age), ("label", label)]).unwrap()
}

fn rows(seed: usize, n: usize) -> (Vec<f64>, Vec<&'static str>) {
    let ages = (0..n)
        .map(|i| ((i * 37 + seed * 11) % 100) as f64)
        .collect();
    let labels = (0..n)
        .map(|i| {
            if (i * 37 + seed * 11) % 100 > 40 {
                "yes"
            } else {
                "no"
            }
        })
        .collect();
    (ages, labels)
}

const TRANSFORM: RowTransform = RowTransform {
    norm_bound: 1.0,
    clip: false,
    intercept: None,
};

fn partition(
    schema: &Schema,
    batches: &[RecordBatch],
    w: &[f64],
    with_hessian: bool,
) -> PartitionSums {
    let encoder = Encoder::new(schema);
    let mut pass =
        PartitionPass::new(schema, &encoder, TRANSFORM, Loss::Logistic, w, with_hessian).unwrap();
    for b in batches {
        pass.add_batch(b).unwrap();
    }
    pass.finish()
}

#[test]
fn a_partition_has_the_same_checksum_however_its_rows_are_batched() {
    let schema = Schema::from_toml(SCHEMA, "test").unwrap();
    let (ages, labels) = rows(1, 50);
    let w = [0.3, -0.2];
    let whole = partition(&schema, &[batch(&ages, &labels)], &w, true);
    let split = partition(
        &schema,
        &[
            batch(&ages[..17], &labels[..17]),
            batch(&ages[17..], &labels[17..]),
        ],
        &w,
        true,
    );
    assert_eq!(whole.checksum, split.checksum);
    assert_eq!(whole.sums.rows(), 50);
    let mut changed = ages.clone();
    changed[30] += 1.0;
    let other = partition(&schema, &[batch(&changed, &labels)], &w, true);
    assert_ne!(other.checksum, whole.checksum);
    // A refused record names its row within the partition (across batches) and column.
    let encoder = Encoder::new(&schema);
    let mut pass =
        PartitionPass::new(&schema, &encoder, TRANSFORM, Loss::Logistic, &w, false).unwrap();
    pass.add_batch(&batch(&ages[..17], &labels[..17])).unwrap();
    let mut bad = labels[17..].to_vec();
    bad[3] = "secret-level";
    let error = pass
        .add_batch(&batch(&ages[17..], &bad))
        .unwrap_err()
        .to_string();
    assert!(error.contains("row 20, column \"label\""), "{error}");
    assert!(!error.contains("secret-level"), "{error}");
}

#[test]
fn the_oracle_checks_n_before_noise_and_refuses_data_that_changed_between_passes() {
    let schema = Schema::from_toml(SCHEMA, "test").unwrap();
    let parts: Vec<(Vec<f64>, Vec<&str>)> = (0..3).map(|p| rows(p, 40 + p)).collect();
    let asked = Cell::new(0usize);
    let change_from_pass = Cell::new(usize::MAX);
    let ask = |w: &[f64], with_hessian: bool| -> Result<Vec<(u64, Vec<u8>)>, String> {
        let pass = asked.get();
        asked.set(pass + 1);
        Ok(parts
            .iter()
            .enumerate()
            .map(|(p, (ages, labels))| {
                let mut ages = ages.clone();
                if p == 1 && pass >= change_from_pass.get() {
                    ages[5] = 99.0 - ages[5];
                }
                let done = partition(&schema, &[batch(&ages, labels)], w, with_hessian);
                (done.checksum, done.sums.to_bytes())
            })
            .collect())
    };
    let n = 40 + 41 + 42;
    let oracle = PartitionOracle::new(2, &ask);
    let wrong = oracle.validate(n + 1).unwrap_err().to_string();
    assert!(wrong.contains("hold 123 rows"), "{wrong}");
    let oracle = PartitionOracle::new(2, &ask);
    oracle.validate(n).unwrap();
    let first = oracle.sums(&[0.1, 0.2], true).unwrap();
    assert_eq!(oracle.sums(&[0.1, 0.2], true).unwrap(), first);
    change_from_pass.set(asked.get());
    let error = oracle.sums(&[0.1, 0.2], true).unwrap_err().to_string();
    assert!(
        error.contains("partition 1") && error.contains("changed between passes"),
        "{error}"
    );
}
