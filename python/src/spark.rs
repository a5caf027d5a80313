//! Fits over rows held by Spark executors (`dpml.spark`): the executor kernels — one that
//! encodes a partition's Arrow batches once into a contract-checked block, one that turns
//! that block into [`PartialSums`] on every pass — and the driver's
//! [`SumsOracle`] that merges one partial per partition, in partition order, and refuses
//! data that changed between passes.
//!
//! # Privacy
//! Only the driver draws noise (dp-erm's [`dp_erm::ErmParams::fit_sums`], from the driver's
//! generator, once per fit, before the solver's first pass). The Gaussian (ε, δ) fits draw
//! theirs the same way, through [`dp_erm::GaussianErm::fit_sums`] (its noise in
//! `GaussianErm::fit`'s order: objective perturbation's linear term before the first pass,
//! output perturbation's after the solve). Executors compute
//! deterministic functions of their partition and `w`, so a failed task's retry or a
//! speculative copy recomputes the same bits and can change nothing drawn. Every partition
//! is encoded by the public schema once per fit (`dpml.spark` keeps the encoded blocks in
//! Spark's cache; an evicted block is encoded again from the source) and checked against
//! the data contract (rows in the unit ball, labels ±1) when encoded and again on every
//! pass before it is summed. For one-vs-rest ([`Labelling::Classes`]) each row's class
//! index, a function of the row and the public schema, travels beside the block (covered
//! by the checksum) and every pass relabels the rows ±1 for its model before the check. Each pass returns, per partition, the row count and a checksum
//! of the rows it decoded: every pass must see, per partition, exactly the rows of the
//! first (validation) pass, which also checks the total against the public n before any
//! noise is drawn. The checksum detects accidental change (a block recomputed from a
//! source that changed), not an adversary who controls the executors, whom the driver must
//! trust to run these kernels.

use std::cell::{Cell, RefCell};

use arrow_array::RecordBatch;
use dp_erm::{
    BlockEncoder, ErmError, LinearModel, Loss, MAX_CLASSES, contract_sums, contract_sums_grouped,
    visit_encoded_block,
};
use dp_noise::FeatureGroups;
use dp_optim::{PartialSums, RowBlock, SumsOracle};
use dp_schema::{Encoder, Schema};

use crate::error::CoreError;
use crate::fit::{FitReport, LinearSpec, Randomness, generator, training_set_from};
use crate::frame::{Encoded, FrameColumn, encode_batch};
use crate::rows::{RowTransform, Rows};
use dp_fit::recipe::ErmTrainer;

/// How a fit labels a partition's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Labelling {
    /// The schema's ±1 label (its positive class against every other): one binary model.
    Signs,
    /// Each row's class: `class_of[c]` for the label's declared class `c` (an index into
    /// the estimator's sorted `classes_`), kept beside the block; each pass relabels the
    /// rows ±1 for the model it sums for (class 1 is +1 with two classes, class k against
    /// the rest with more: one-vs-rest, as in memory).
    Classes {
        /// The class index of each of the schema's declared classes.
        class_of: Vec<usize>,
    },
}

/// Which model a pass sums for, over a block whose rows carry class indices
/// ([`Labelling::Classes`]).
#[derive(Debug, Clone, Copy)]
pub struct ClassLabels<'a> {
    /// The class index of every row, `u32` little-endian ([`EncodedPartition::classes`]).
    pub classes: &'a [u8],
    /// K ≥ 2.
    pub class_count: usize,
    /// The model: its class is +1 (K > 2); ignored with two classes (class 1 is +1).
    pub model: usize,
}

impl ClassLabels<'_> {
    /// The ±1 label of a row of class `class`.
    fn label(&self, class: usize) -> f64 {
        let positive = if self.class_count == 2 { 1 } else { self.model };
        if class == positive { 1.0 } else { -1.0 }
    }
}

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
    labelling: Labelling,
    block: BlockEncoder,
    classes: Vec<u8>,
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
    /// With [`Labelling::Classes`], each row's class index as `u32` little-endian (the
    /// checksum covers them in place of the ±1 labels); empty with [`Labelling::Signs`].
    pub classes: Vec<u8>,
}

impl<'a> PartitionEncoder<'a> {
    /// An encoder of rows to `transform`'s output features, labelled by `labelling`.
    pub fn new(
        schema: &'a Schema,
        encoder: &'a Encoder,
        transform: RowTransform,
        labelling: Labelling,
    ) -> Result<Self, CoreError> {
        let transform = transform.checked()?;
        let cols = transform.output_features(encoder.features());
        if let Labelling::Classes { class_of } = &labelling {
            let label = &schema.columns[schema.label_index()];
            let declared = match &label.kind {
                dp_schema::ColumnKind::Label { classes, .. } => classes.len(),
                _ => 0,
            };
            let count = class_of.len();
            if count != declared
                || !(2..=MAX_CLASSES).contains(&count)
                || class_of.iter().any(|&c| c >= count)
                || (0..count).any(|c| !class_of.contains(&c))
            {
                return Err(CoreError::value(
                    "class_of",
                    format!(
                        "must order the label's {declared} classes (a permutation of \
                         0..{declared}); got {count} indices"
                    ),
                ));
            }
        }
        Ok(Self {
            schema,
            encoder,
            transform,
            labelling,
            block: BlockEncoder::new(cols)?,
            classes: Vec::new(),
            checksum: RowChecksum::default(),
            rows: 0,
        })
    }

    /// The class index of each of the batch's `count` records (all accepted by the
    /// schema already), by the label cell as the encoding reads it.
    fn batch_classes(
        &self,
        class_of: &[usize],
        batch: &RecordBatch,
        count: usize,
    ) -> Result<Vec<usize>, CoreError> {
        let column = &self.schema.columns[self.schema.label_index()];
        let index = batch.schema().index_of(&column.name).map_err(|_| {
            CoreError::value(
                "frame",
                format!("has no column {:?}, which the schema encodes", column.name),
            )
        })?;
        let cells = FrameColumn::from_arrow(&column.name, batch.column(index))?;
        (0..count)
            .map(|i| {
                let class = self.encoder.class_index(cells.cell(i)).map_err(|e| {
                    CoreError::value(
                        "frame",
                        format!(
                            "row {}, column {:?}: {}",
                            self.rows + i,
                            column.name,
                            e.problem
                        ),
                    )
                })?;
                Ok(class_of[class])
            })
            .collect()
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
        let classes = match &self.labelling {
            Labelling::Signs => None,
            Labelling::Classes { class_of } => Some(self.batch_classes(class_of, batch, count)?),
        };
        let set = training_set_from(&rows, encoded.labels, &self.transform, self.rows)?;
        let mut entries = Vec::new();
        for (i, &label) in set.labels().iter().enumerate() {
            entries.clear();
            set.for_each_entry(i, |j, v| entries.push((j, v)));
            match &classes {
                None => self.checksum.add_row(&entries, label),
                Some(classes) => {
                    // Below MAX_CLASSES = 2^16.
                    self.classes.extend((classes[i] as u32).to_le_bytes());
                    self.checksum.add_row(&entries, classes[i] as f64);
                }
            }
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
            classes: self.classes,
        }
    }
}

/// One pass over a partition's encoded block (on an executor): decoded, relabelled for the
/// pass's model when its rows carry classes (`classes`: every class index below K, one per
/// row), checked against the data contract again (rows in the unit ball, labels ±1: a fit
/// never trusts a block it did not check), summed at `w` with `loss`, and the rows'
/// [`RowChecksum`] recomputed from the decoded rows (and classes), so that a block
/// recomputed from a source that changed is caught by the driver. `cols` is the
/// transformed feature count.
pub fn block_sums(
    block: &[u8],
    classes: Option<ClassLabels<'_>>,
    cols: usize,
    loss: Loss,
    w: &[f64],
    with_hessian: bool,
    groups: Option<&FeatureGroups>,
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
    let row_classes = match &classes {
        None => None,
        Some(c) => {
            if c.classes.len() % 4 != 0 || !(2..=MAX_CLASSES).contains(&c.class_count) {
                return Err(CoreError::value(
                    "classes",
                    "must hold one u32 class index per row, for 2 to 65536 classes",
                ));
            }
            let indices: Vec<usize> = c
                .classes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .collect();
            if indices.iter().any(|&k| k >= c.class_count) {
                return Err(CoreError::value(
                    "classes",
                    format!("hold a class index outside 0..{}", c.class_count),
                ));
            }
            Some(indices)
        }
    };
    let mut checksum = RowChecksum::default();
    let mut sums = Ok(PartialSums::zero(cols, with_hessian));
    let mut entries = Vec::new();
    let mut first = 0;
    let rows = visit_encoded_block(block, cols, &mut |rows| {
        let count = rows.rows();
        for i in 0..count {
            let (indices, values) = rows.row(i);
            entries.clear();
            entries.extend(
                indices
                    .iter()
                    .map(|&j| j as usize)
                    .zip(values.iter().copied()),
            );
            let label = match &row_classes {
                None => rows.labels()[i],
                Some(k) => k.get(first + i).map_or(f64::NAN, |&k| k as f64),
            };
            checksum.add_row(&entries, label);
        }
        sums = match (&classes, &row_classes) {
            (Some(labels), Some(k)) if first + count <= k.len() => relabelled_sums(
                &rows,
                &k[first..first + count],
                labels,
                w,
                loss,
                with_hessian,
                groups,
            ),
            (Some(_), _) => Err(CoreError::value(
                "classes",
                "hold fewer class indices than the block has rows",
            )),
            _ => checked_sums(&rows, w, loss, with_hessian, groups),
        };
        // A block is visited once (all its rows), or not at all when empty.
        first += count;
    })?;
    if let Some(k) = &row_classes
        && k.len() != rows
    {
        return Err(CoreError::value(
            "classes",
            format!("hold {} class indices for {rows} rows", k.len()),
        ));
    }
    Ok(PartitionSums {
        sums: sums?,
        checksum: checksum.value(),
    })
}

/// The contract sums of `rows` labelled ±1 by their classes for the pass's model.
fn relabelled_sums(
    rows: &RowBlock<'_>,
    classes: &[usize],
    labels: &ClassLabels<'_>,
    w: &[f64],
    loss: Loss,
    with_hessian: bool,
    groups: Option<&FeatureGroups>,
) -> Result<PartialSums, CoreError> {
    let mut offsets = Vec::with_capacity(rows.rows() + 1);
    offsets.push(0u32);
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows.rows() {
        let (row_indices, row_values) = rows.row(i);
        indices.extend_from_slice(row_indices);
        values.extend_from_slice(row_values);
        // The block's own offsets are u32 over the same entries.
        offsets.push(indices.len() as u32);
    }
    let signs: Vec<f64> = classes.iter().map(|&k| labels.label(k)).collect();
    let relabelled =
        RowBlock::new(rows.cols(), &offsets, &indices, &values, &signs).map_err(ErmError::from)?;
    checked_sums(&relabelled, w, loss, with_hessian, groups)
}

/// The block's sums after dp-erm's data contract: rows in the unit ball and labels ±1, and
/// with `groups` (group-shaped noise) every row's group norm at most 1.
fn checked_sums(
    rows: &RowBlock<'_>,
    w: &[f64],
    loss: Loss,
    with_hessian: bool,
    groups: Option<&FeatureGroups>,
) -> Result<PartialSums, CoreError> {
    match groups {
        Some(groups) => contract_sums_grouped(rows, w, loss, with_hessian, groups),
        None => contract_sums(rows, w, loss, with_hessian),
    }
    .map_err(|e| in_partition(e, 0))
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
        ErmError::RowGroupNormAboveOne { row, norm } => CoreError::value(
            "partition",
            format!(
                "row {} has group norm {norm:?} above 1 after the row transform (the \
                 schema's encoding keeps it at most 1: check the feature groups)",
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

/// What the driver asks the cluster for one pass, `ask(w, with_hessian, model)`: every
/// partition's `(checksum, serialized sums)` for model `model` (its index among the
/// one-vs-rest models; 0 for a binary fit), in partition order, or why the pass failed.
pub type AskPartitions<'a> =
    dyn Fn(&[f64], bool, usize) -> Result<Vec<(u64, Vec<u8>)>, String> + 'a;

/// The driver's [`SumsOracle`]: each pass asks the cluster (`ask`), decodes one partial per
/// partition, checks it against the validation pass (same partition count, and per
/// partition the same row count and checksum), and merges in partition order, so a pass has
/// the same bits however the cluster scheduled, retried or duplicated its tasks.
pub struct PartitionOracle<'a> {
    cols: usize,
    ask: &'a AskPartitions<'a>,
    expected: RefCell<Option<Vec<(usize, u64)>>>,
    passes: Cell<usize>,
    model: Cell<usize>,
}

impl<'a> PartitionOracle<'a> {
    /// An oracle over `cols` columns.
    pub fn new(cols: usize, ask: &'a AskPartitions<'a>) -> Self {
        Self {
            cols,
            ask,
            expected: RefCell::new(None),
            passes: Cell::new(0),
            model: Cell::new(0),
        }
    }

    /// Makes every later pass sum for one-vs-rest model `model` (the same rows, labelled
    /// for it: the checks against the validation pass are unchanged).
    pub fn set_model(&self, model: usize) {
        self.model.set(model);
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
        let answers = (self.ask)(w, with_hessian, self.model.get())
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

/// Trains a linear classifier over rows held by executors: binary (`class_count` 2, one
/// model) or one-vs-rest (K > 2 models, each at ε/K — at (ε/K, δ/K) for the Gaussian
/// mechanisms — as dp-erm's `OneVsRest` and the in-memory [`crate::fit::fit_linear`] split
/// it), every model from the same generator in class order. Every refusal of the
/// parameters, then the validation pass (rows checked, per-partition counts and checksums
/// recorded, the total checked against the public `examples`), all before the driver's
/// generator draws anything; then dp-erm's [`dp_erm::ErmParams::fit_sums`] (pure ε) or
/// [`dp_erm::GaussianErm::fit_sums`] (δ > 0) over a [`PartitionOracle`] once per model.
/// Returns the fit and the number of passes asked (validation included).
/// `input_features` is the schema's encoded feature count.
pub fn fit_linear_partitions(
    spec: &LinearSpec,
    examples: usize,
    input_features: usize,
    class_count: usize,
    ask: &AskPartitions<'_>,
    randomness: Randomness,
) -> Result<(FitReport<LinearModel>, usize), CoreError> {
    spec.transform.checked()?;
    if !(2..=MAX_CLASSES).contains(&class_count) {
        return Err(CoreError::value(
            "classes",
            format!("has {class_count} classes; 2 to 65536 are supported"),
        ));
    }
    let cols = spec.transform.output_features(input_features);
    // Every refusal of the parameters and sizes, before the validation pass: dp-fit's plan,
    // as in memory.
    let plan = spec.plan(examples, input_features, class_count)?;
    let models = plan.models();
    if cols > dp_optim::MAX_HESSIAN_DIMENSION {
        return Err(CoreError::value(
            "schema",
            format!("encodes {cols} features; fits over Spark take at most 16384"),
        ));
    }
    let oracle = PartitionOracle::new(cols, ask);
    oracle.validate(examples)?;
    let mut rng = generator(randomness)?;
    let mut fitted = Vec::with_capacity(models);
    for k in 0..models {
        oracle.set_model(k);
        fitted.push(match &plan.trainer {
            ErmTrainer::Pure(params) => params.fit_sums(&oracle, examples, &mut *rng)?.into_model(),
            // GaussianErm's models get the feature map after the fit, as in memory.
            ErmTrainer::Gaussian(erm) => {
                let (model, _) = erm.fit_sums(&oracle, examples, &mut *rng)?;
                model.with_feature_map(&plan.feature_map)?
            }
        });
    }
    Ok((
        FitReport::of(&plan, fitted, examples, cols),
        oracle.passes(),
    ))
}
