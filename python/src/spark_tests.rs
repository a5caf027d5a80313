//! The executor kernel and the driver's oracle without Spark: batches built in Rust.

use std::cell::Cell;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use dp_erm::Loss;
use dp_optim::SumsOracle;
use dp_schema::{Encoder, Schema};

use crate::rows::RowTransform;
use crate::spark::{
    ClassLabels, EncodedPartition, Labelling, PartitionEncoder, PartitionOracle, PartitionSums,
    block_sums,
};

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

fn encode(schema: &Schema, batches: &[RecordBatch]) -> EncodedPartition {
    let encoder = Encoder::new(schema);
    let mut encoding =
        PartitionEncoder::new(schema, &encoder, TRANSFORM, Labelling::Signs).unwrap();
    for b in batches {
        encoding.add_batch(b).unwrap();
    }
    encoding.finish()
}

/// A partition encoded once, then one pass over its block; the pass's checksum is the
/// encoding's (recomputed from the decoded rows).
fn partition(
    schema: &Schema,
    batches: &[RecordBatch],
    w: &[f64],
    with_hessian: bool,
) -> PartitionSums {
    let encoded = encode(schema, batches);
    let pass = block_sums(
        &encoded.block,
        None,
        w.len(),
        Loss::Logistic,
        w,
        with_hessian,
        None,
    )
    .unwrap();
    assert_eq!(pass.checksum, encoded.checksum);
    assert_eq!(pass.sums.rows(), encoded.rows);
    pass
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
    let mut encoding =
        PartitionEncoder::new(&schema, &encoder, TRANSFORM, Labelling::Signs).unwrap();
    encoding
        .add_batch(&batch(&ages[..17], &labels[..17]))
        .unwrap();
    let mut bad = labels[17..].to_vec();
    bad[3] = "secret-level";
    let error = encoding
        .add_batch(&batch(&ages[17..], &bad))
        .unwrap_err()
        .to_string();
    assert!(error.contains("row 20, column \"label\""), "{error}");
    assert!(!error.contains("secret-level"), "{error}");
}

/// The pass over an encoded block sums exactly what a fit in memory sums (dp-erm's
/// contract sums over the same rows), refuses a damaged block or a `w` of the wrong width,
/// and an empty partition is zero sums over zero rows.
#[test]
fn a_pass_over_an_encoded_block_sums_the_encoded_rows_and_refuses_damage() {
    let schema = Schema::from_toml(SCHEMA, "test").unwrap();
    let (ages, labels) = rows(2, 30);
    let encoded = encode(&schema, &[batch(&ages, &labels)]);
    let w = [0.4, 0.1];
    let pass = block_sums(&encoded.block, None, 2, Loss::Logistic, &w, true, None).unwrap();
    let mut direct = None;
    dp_erm::visit_encoded_block(&encoded.block, 2, &mut |block| {
        direct = Some(dp_erm::contract_sums(&block, &w, Loss::Logistic, true).unwrap());
    })
    .unwrap();
    assert_eq!(pass.sums, direct.unwrap());
    let mut damaged = encoded.block.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    let error = block_sums(&damaged, None, 2, Loss::Logistic, &w, true, None).unwrap_err();
    assert!(error.to_string().contains("checksum"), "{error}");
    assert!(
        block_sums(
            &encoded.block,
            None,
            3,
            Loss::Logistic,
            &[0.0; 3],
            true,
            None
        )
        .is_err()
    );
    assert!(block_sums(&encoded.block, None, 2, Loss::Logistic, &[0.0], true, None).is_err());
    let empty = encode(&schema, &[]);
    let zero = block_sums(&empty.block, None, 2, Loss::Logistic, &w, false, None).unwrap();
    assert_eq!((zero.sums.rows(), empty.rows), (0, 0));
}

#[test]
fn the_oracle_checks_n_before_noise_and_refuses_data_that_changed_between_passes() {
    let schema = Schema::from_toml(SCHEMA, "test").unwrap();
    let parts: Vec<(Vec<f64>, Vec<&str>)> = (0..3).map(|p| rows(p, 40 + p)).collect();
    let asked = Cell::new(0usize);
    let change_from_pass = Cell::new(usize::MAX);
    let ask =
        |w: &[f64], with_hessian: bool, _model: usize| -> Result<Vec<(u64, Vec<u8>)>, String> {
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
    assert!(error.contains("changed between passes"), "{error}");
    // After the noise, the refusal names no pass, partition, row count or checksum (the
    // pass at which a fit stops depends on the data): no number at all.
    assert!(!error.chars().any(|c| c.is_ascii_digit()), "{error}");
}

const THREE: &str = r#"
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
classes = ["no", "yes", "maybe"]
positive = "yes"
aliases = { "perhaps" = "maybe" }
"#;

/// With classes, each row keeps its class index (by the label cell as the encoding reads
/// it, aliases included, mapped through `class_of`); a pass for model k sums exactly the
/// rows labelled k against the rest (class 1 against 0 with two classes), and the
/// checksum covers the classes.
#[test]
fn a_block_with_classes_is_relabelled_for_each_one_vs_rest_model() {
    let schema = Schema::from_toml(THREE, "test").unwrap();
    let encoder = Encoder::new(&schema);
    let labels = ["no", "yes", "maybe", "perhaps", "yes", "no", "maybe"];
    let ages: Vec<f64> = (0..labels.len()).map(|i| (i * 13) as f64).collect();
    // Declared ["no", "yes", "maybe"]; sorted classes_ ["maybe", "no", "yes"].
    let class_of = vec![1, 2, 0];
    let encode = |labels: &[&str]| {
        let mut encoding = PartitionEncoder::new(
            &schema,
            &encoder,
            TRANSFORM,
            Labelling::Classes {
                class_of: class_of.clone(),
            },
        )
        .unwrap();
        encoding
            .add_batch(&batch(&ages[..3], &labels[..3]))
            .unwrap();
        encoding
            .add_batch(&batch(&ages[3..], &labels[3..]))
            .unwrap();
        encoding.finish()
    };
    let encoded = encode(&labels);
    let classes: Vec<u32> = encoded
        .classes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(classes, [1, 2, 0, 0, 2, 1, 0]);
    let w = [0.3, -0.4];
    for k in 0..3 {
        let pass = block_sums(
            &encoded.block,
            Some(ClassLabels {
                classes: &encoded.classes,
                class_count: 3,
                model: k,
            }),
            2,
            Loss::Logistic,
            &w,
            true,
            None,
        )
        .unwrap();
        assert_eq!(pass.checksum, encoded.checksum);
        let mut direct = None;
        dp_erm::visit_encoded_block(&encoded.block, 2, &mut |block| {
            let mut offsets = vec![0u32];
            let (mut indices, mut values) = (Vec::new(), Vec::new());
            for i in 0..block.rows() {
                let (ix, vs) = block.row(i);
                indices.extend_from_slice(ix);
                values.extend_from_slice(vs);
                offsets.push(indices.len() as u32);
            }
            let signs: Vec<f64> = classes
                .iter()
                .map(|&c| if c as usize == k { 1.0 } else { -1.0 })
                .collect();
            let relabelled =
                dp_optim::RowBlock::new(2, &offsets, &indices, &values, &signs).unwrap();
            direct = Some(dp_erm::contract_sums(&relabelled, &w, Loss::Logistic, true).unwrap());
        })
        .unwrap();
        assert_eq!(pass.sums, direct.unwrap());
    }
    // Another class for one row: another checksum, the same ±1 block.
    let mut other = labels;
    other[2] = "no";
    let changed = encode(&other);
    assert_ne!(changed.checksum, encoded.checksum);
    // A class index at or above K is refused.
    assert!(
        block_sums(
            &encoded.block,
            Some(ClassLabels {
                classes: &encoded.classes,
                class_count: 2,
                model: 0,
            }),
            2,
            Loss::Logistic,
            &w,
            false,
            None,
        )
        .is_err()
    );
    // Too few class indices for the rows.
    assert!(
        block_sums(
            &encoded.block,
            Some(ClassLabels {
                classes: &encoded.classes[..8],
                class_count: 3,
                model: 0,
            }),
            2,
            Loss::Logistic,
            &w,
            false,
            None,
        )
        .is_err()
    );
    // class_of must order the declared classes.
    assert!(
        PartitionEncoder::new(
            &schema,
            &encoder,
            TRANSFORM,
            Labelling::Classes {
                class_of: vec![0, 0, 1]
            }
        )
        .is_err()
    );
}
