//! Fits over rows held by Spark executors (`dpml.spark`): the executor kernels — one that
//! encodes a partition's Arrow batches once into a contract-checked block, one that turns
//! that block into [`PartialSums`] on every pass — and the driver's
//! [`SumsOracle`] that merges one partial per partition, in partition order, and refuses
//! data that changed between passes.
//!
//! # Privacy
//! Only the driver draws noise (dp-erm's [`dp_erm::ErmParams::fit_sums`], from the driver's
//! generator, once per fit, before the solver's first pass). Executors compute
//! deterministic functions of their partition and `w`, so a failed task's retry or a
//! speculative copy recomputes the same bits and can change nothing drawn. Every partition
//! is encoded by the public schema once per fit (`dpml.spark` keeps the encoded blocks in
//! Spark's cache; an evicted block is encoded again from the source) and checked against
//! the data contract (rows in the unit ball, labels ±1) when encoded and again on every
//! pass before it is summed. Each pass returns, per partition, the row count and a checksum
//! of the rows it decoded: every pass must see, per partition, exactly the rows of the
//! first (validation) pass, which also checks the total against the public n before any
//! noise is drawn. The checksum detects accidental change (a block recomputed from a
//! source that changed), not an adversary who controls the executors, whom the driver must
//! trust to run these kernels.

use std::cell::{Cell, RefCell};

use arrow_array::RecordBatch;
use dp_erm::{BlockEncoder, ErmError, LinearModel, Loss, contract_sums, visit_encoded_block};
use dp_optim::{PartialSums, SumsOracle};
use dp_schema::{Encoder, Schema};

use crate::error::CoreError;
use crate::fit::{FitReport, LinearSpec, Randomness, erm_params, generator, training_set_from};
use crate::frame::{Encoded, encode_batch};
use crate::rows::{RowTransform, Rows};

/// One partition's answer to a pass: its sums (with their row count) and a checksum of the
/// rows it encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionSums {
    /// The partition's sums at the pass's `w`.
    pub sums: PartialSums,
    /// [`RowChecksum`] of the partition's encoded rows, in their order.
    pub checksum: u64,
}

/// A 64-bit running hash of encoded rows (column indices, value bits, label bits), in row
/// order and independent of how the rows are cut into batches. It detects rows that
/// changed, not rows crafted to collide.
#[derive(Debug, Clone, Copy)]
pub struct RowChecksum(u64);

impl Default for RowChecksum {
    fn default() -> Self {
        RowChecksum(0x9e37_79b9_7f4a_7c15)
    }
}

impl RowChecksum {
    fn mix(&mut self, word: u64) {
        // FxHash's step, then a final avalanche per row (below).
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn end_row(&mut self, label: f64) {
        self.mix(label.to_bits());
        self.mix(u64::MAX);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }

    /// Adds one encoded row: its `(column, value)` entries and label.
    pub fn add_row(&mut self, entries: &[(usize, f64)], label: f64) {
        for &(j, v) in entries {
            self.mix(j as u64);
            self.mix(v.to_bits());
        }
        self.end_row(label);
    }

    /// The hash so far.
    pub fn value(&self) -> u64 {
        self.0
    }
}

/// One partition encoded on an executor, once per fit: Arrow batches in, encoded by the
/// schema exactly as `dpml.Schema.encode` and the estimators' row transform encode them in
/// memory, checked against the data contract, and kept as one dp-erm encoded block
/// ([`BlockEncoder`]) that later passes only decode and sum ([`block_sums`]).
pub struct PartitionEncoder<'a> {
    schema: &'a Schema,
    encoder: &'a Encoder,
    transform: RowTransform,
    block: BlockEncoder,
    checksum: RowChecksum,
    rows: usize,
}

/// What encoding a partition gives: its rows as one encoded block, their count and
/// [`RowChecksum`].
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPartition {
    /// Rows in the partition.
    pub rows: usize,
    /// [`RowChecksum`] of the encoded rows, in their order.
    pub checksum: u64,
    /// dp-erm's encoded block ([`BlockEncoder::finish`]).
    pub block: Vec<u8>,
}

impl<'a> PartitionEncoder<'a> {
    /// An encoder of rows to `transform`'s output features.
    pub fn new(
        schema: &'a Schema,
        encoder: &'a Encoder,
        transform: RowTransform,
    ) -> Result<Self, CoreError> {
        let transform = transform.checked()?;
        let cols = transform.output_features(encoder.features());
        Ok(Self {
            schema,
            encoder,
            transform,
            block: BlockEncoder::new(cols)?,
            checksum: RowChecksum::default(),
            rows: 0,
        })
    }

    /// Adds a batch. A record the schema refuses, or a row outside the unit ball after the
    /// transform, is an error naming its row within the partition (and the column).
    pub fn add_batch(&mut self, batch: &RecordBatch) -> Result<(), CoreError> {
        let d = self.encoder.features();
        let mut encoded = Encoded {
            rows: self.rows,
            ..Encoded::default()
        };
        encode_batch(self.schema, self.encoder, batch, true, &mut encoded)?;
        let count = encoded.rows - self.rows;
        if count == 0 {
            return Ok(());
        }
        let rows = Rows::Dense {
            values: &encoded.values,
            features: d,
        };
        let set = training_set_from(&rows, encoded.labels, &self.transform, self.rows)?;
        let mut entries = Vec::new();
        for (i, &label) in set.labels().iter().enumerate() {
            entries.clear();
            set.for_each_entry(i, |j, v| entries.push((j, v)));
            self.checksum.add_row(&entries, label);
            self.block
                .push_row(&entries, label)
                .map_err(|e| in_partition(e, 0))?;
        }
        self.rows += count;
        Ok(())
    }

    /// The partition's encoded block, row count and checksum.
    pub fn finish(self) -> EncodedPartition {
        EncodedPartition {
            rows: self.rows,
            checksum: self.checksum.value(),
            block: self.block.finish(),
        }
    }
}

/// One pass over a partition's encoded block (on an executor): decoded, checked against the
/// data contract again (rows in the unit ball, labels ±1: a fit never trusts a block it
/// did not check), summed at `w` with `loss`, and the rows' [`RowChecksum`] recomputed from
/// the decoded rows, so that a block recomputed from a source that changed is caught by
/// the driver. `cols` is the transformed feature count.
pub fn block_sums(
    block: &[u8],
    cols: usize,
    loss: Loss,
    w: &[f64],
    with_hessian: bool,
) -> Result<PartitionSums, CoreError> {
    if w.len() != cols {
        return Err(CoreError::value(
            "w",
            format!("has {} entries for {cols} features", w.len()),
        ));
    }
    if let Some(j) = w.iter().position(|v| !v.is_finite()) {
        return Err(CoreError::value("w", format!("entry {j} is not finite")));
    }
    let mut checksum = RowChecksum::default();
    let mut sums = Ok(PartialSums::zero(cols, with_hessian));
    let mut entries = Vec::new();
    visit_encoded_block(block, cols, &mut |rows| {
        for i in 0..rows.rows() {
            let (indices, values) = rows.row(i);
            entries.clear();
            entries.extend(
                indices
                    .iter()
                    .map(|&j| j as usize)
                    .zip(values.iter().copied()),
            );
            checksum.add_row(&entries, rows.labels()[i]);
        }
        sums = contract_sums(&rows, w, loss, with_hessian).map_err(|e| in_partition(e, 0));
    })?;
    Ok(PartitionSums {
        sums: sums?,
        checksum: checksum.value(),
    })
}

/// A contract refusal of a batch's row, renamed by its row within the partition.
fn in_partition(e: ErmError, first_row: usize) -> CoreError {
    match e {
        ErmError::RowNormAboveOne { row, norm } => CoreError::value(
            "partition",
            format!(
                "row {} has norm {norm} above 1 after the row transform",
                first_row + row
            ),
        ),
        ErmError::InvalidLabel { row, label } => CoreError::value(
            "partition",
            format!("row {} has label {label}, not ±1", first_row + row),
        ),
        other => other.into(),
    }
}

/// What the driver asks the cluster for one pass: every partition's
/// `(checksum, serialized sums)`, in partition order, or why the pass failed.
pub type AskPartitions<'a> = dyn Fn(&[f64], bool) -> Result<Vec<(u64, Vec<u8>)>, String> + 'a;

/// The driver's [`SumsOracle`]: each pass asks the cluster (`ask`), decodes one partial per
/// partition, checks it against the validation pass (same partition count, and per
/// partition the same row count and checksum), and merges in partition order, so a pass has
/// the same bits however the cluster scheduled, retried or duplicated its tasks.
pub struct PartitionOracle<'a> {
    cols: usize,
    ask: &'a AskPartitions<'a>,
    expected: RefCell<Option<Vec<(usize, u64)>>>,
    passes: Cell<usize>,
}

impl<'a> PartitionOracle<'a> {
    /// An oracle over `cols` columns.
    pub fn new(cols: usize, ask: &'a AskPartitions<'a>) -> Self {
        Self {
            cols,
            ask,
            expected: RefCell::new(None),
            passes: Cell::new(0),
        }
    }

    /// The validation pass, before any noise: asks for the sums at `w = 0`, records every
    /// partition's row count and checksum for the later passes, and refuses a total other
    /// than the public `examples`. Errors here are the data's (refused before anything is
    /// drawn).
    pub fn validate(&self, examples: usize) -> Result<(), CoreError> {
        let zero = vec![0.0; self.cols];
        let partials = self.decode(&zero, false).map_err(CoreError::Erm)?;
        let total: usize = partials.iter().map(|p| p.sums.rows()).sum();
        if total != examples {
            return Err(CoreError::value(
                "n_rows",
                format!(
                    "= {examples}, but the DataFrame's partitions hold {total} rows: pass the \
                     public row count of this data (n is public under replace-one \
                     neighbours; it is checked, never read from the data)"
                ),
            ));
        }
        *self.expected.borrow_mut() = Some(
            partials
                .iter()
                .map(|p| (p.sums.rows(), p.checksum))
                .collect(),
        );
        Ok(())
    }

    /// Passes asked so far (the validation pass included).
    pub fn passes(&self) -> usize {
        self.passes.get()
    }

    fn decode(&self, w: &[f64], with_hessian: bool) -> Result<Vec<PartitionSums>, ErmError> {
        let pass = self.passes.get();
        self.passes.set(pass + 1);
        // Errors after the validation pass (after the noise) name no pass and no partition:
        // the pass at which a fit stops depends on the data.
        let which = pass_name(pass);
        let answers = (self.ask)(w, with_hessian)
            .map_err(|why| ErmError::RowSource(format!("{which}: {why}")))?;
        answers
            .into_iter()
            .map(|(checksum, bytes)| {
                let sums = PartialSums::from_bytes(&bytes).map_err(|e| {
                    ErmError::RowSource(format!("{which}, a partition's sums: {e}"))
                })?;
                if sums.gradient_sum().len() != self.cols
                    || sums.hessian_sum_lower().is_some() != with_hessian
                {
                    return Err(ErmError::RowSource(format!(
                        "{which}: a partition's sums of another shape"
                    )));
                }
                Ok(PartitionSums { sums, checksum })
            })
            .collect()
    }
}

/// How errors name a pass: only the validation pass (before any noise) by its number.
fn pass_name(pass: usize) -> &'static str {
    if pass == 0 {
        "pass 0 (the validation pass)"
    } else {
        "a later pass"
    }
}

impl SumsOracle for PartitionOracle<'_> {
    type Error = ErmError;

    fn cols(&self) -> usize {
        self.cols
    }

    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, ErmError> {
        let partials = self.decode(w, with_hessian)?;
        let expected = self.expected.borrow();
        let Some(expected) = expected.as_ref() else {
            return Err(ErmError::RowSource(
                "the solver asked before the validation pass".into(),
            ));
        };
        // After the noise: the refusals name no pass, partition, row count or checksum
        // (each depends on the data), only what happened.
        if partials.len() != expected.len() {
            return Err(ErmError::RowSource(
                "a later pass saw another number of partitions than the validation pass: the \
                 data changed between passes (cache or checkpoint the DataFrame)"
                    .into(),
            ));
        }
        let mut total = PartialSums::zero(self.cols, with_hessian);
        for (part, &(rows, checksum)) in partials.iter().zip(expected) {
            if part.sums.rows() != rows || part.checksum != checksum {
                return Err(ErmError::RowSource(
                    "a later pass saw a partition's rows differ (their count or checksum) from \
                     the validation pass's: the data changed between passes (cache or \
                     checkpoint the DataFrame)"
                        .into(),
                ));
            }
            total.merge(&part.sums)?;
        }
        Ok(total)
    }
}

/// Trains a binary linear classifier over rows held by executors: every refusal of the
/// parameters, then the validation pass (rows checked, per-partition counts and
/// checksums recorded, the total checked against the public `examples`), all before the
/// driver's generator draws anything; then dp-erm's [`dp_erm::ErmParams::fit_sums`] over a
/// [`PartitionOracle`]. Returns the fit and the number of passes asked (validation
/// included). `input_features` is the schema's encoded feature count.
pub fn fit_linear_partitions(
    spec: &LinearSpec,
    examples: usize,
    input_features: usize,
    ask: &AskPartitions<'_>,
    randomness: Randomness,
) -> Result<(FitReport<LinearModel>, usize), CoreError> {
    spec.transform.checked()?;
    if spec.feature_groups.is_some() {
        return Err(CoreError::value(
            "feature_groups",
            "do not apply to fits over Spark (group-shaped noise checks every row's group \
             norms before drawing; fit in memory for it)",
        ));
    }
    let params = erm_params(spec, examples, input_features, 1)?;
    let cols = spec.transform.output_features(input_features);
    let calibration = params.noise_calibration(examples, cols)?;
    if cols > dp_optim::MAX_HESSIAN_DIMENSION {
        return Err(CoreError::value(
            "schema",
            format!("encodes {cols} features; fits over Spark take at most 16384"),
        ));
    }
    let oracle = PartitionOracle::new(cols, ask);
    oracle.validate(examples)?;
    let mut rng = generator(randomness)?;
    let fit = params.fit_sums(&oracle, examples, &mut *rng)?;
    Ok((
        FitReport {
            models: vec![fit.into_model()],
            regularization: params.regularization(),
            epsilon: spec.mechanism.epsilon(),
            // `erm_params` refused the Gaussian mechanisms above: pure ε only.
            delta: 0.0,
            calibration,
            gaussian: None,
            sgd: None,
        },
        oracle.passes(),
    ))
}
