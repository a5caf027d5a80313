//! Out-of-core fits over a row cache: the same model as in memory, refusals of bad caches,
//! changed files, rows that break the contract and a wrong n, and a fit under a memory
//! limit smaller than its file.

use std::fs::OpenOptions;
use std::path::PathBuf;

use dp_noise::InsecureSeededRng;
use dp_optim::{OptimError, PartialSums, RowBlock, RowBlocks, SumsOracle, sum_blocks};
use rand::RngExt;

use crate::estimator::Mutation;
use crate::{ErmError, ErmParams, Loss, RowCache, RowCacheWriter, TrainingSet};

use dp_datasets::{ADULT_SHAPED_COLUMNS as COLS, adult_shaped_row as adult_row};

pub(crate) fn training_set(rows: u64) -> TrainingSet {
    let (rows, labels): (Vec<_>, Vec<_>) = (0..rows).map(adult_row).unzip();
    TrainingSet::builder(COLS)
        .sparse_rows(rows)
        .labels(labels)
        .build()
        .unwrap()
}

/// A fresh path in the temporary directory, removed when dropped.
struct TempFile(PathBuf);
impl TempFile {
    fn new(name: &str) -> Self {
        Self(std::env::temp_dir().join(format!("dp-erm-{}-{name}.rows", std::process::id())))
    }
}
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn out_of_core_and_in_memory_fits_give_the_same_model_within_the_certificate() {
    let data = training_set(4_000);
    let file = TempFile::new("same-model");
    assert_eq!(data.write_row_cache(&file.0, 300).unwrap(), 4_000);
    let cache = RowCache::open(&file.0).unwrap();
    assert_eq!(
        (cache.rows(), cache.cols(), cache.block_count()),
        (4_000, COLS, 14)
    );
    let lambda = 1e-3;
    let cases = [
        ErmParams::non_private(Loss::Logistic, lambda),
        ErmParams::output_perturbation(Loss::Logistic, lambda, 1.0),
        ErmParams::objective_perturbation(Loss::Logistic, lambda, 1.0),
        ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), lambda, 0.5),
    ];
    for (seed, params) in cases.iter().enumerate() {
        let seed = seed as u64 + 10;
        let memory = params
            .fit(&data, &mut InsecureSeededRng::new(seed))
            .unwrap();
        let blocks = params
            .fit_blocks(&cache, 4_000, &mut InsecureSeededRng::new(seed))
            .unwrap();
        // The same public calibration and the same noise draw.
        assert_eq!(memory.calibration(), blocks.calibration());
        assert_eq!(memory.secret_noise_norm(), blocks.secret_noise_norm());
        // Both solver points are certified within ‖∇‖/μ of the one exact minimizer.
        let mu = lambda + memory.calibration().map_or(0.0, |c| c.extra_regularization);
        let tolerance = memory.calibration().map_or(1e-10, |c| c.tolerance);
        assert!(blocks.solver_gradient_norm() <= tolerance);
        let bound = (memory.solver_gradient_norm() + blocks.solver_gradient_norm()) / mu;
        let gap = distance(
            memory.secret_solver_weights(),
            blocks.secret_solver_weights(),
        );
        assert!(gap <= bound, "{params:?}: gap {gap:e} > {bound:e}");
        // The released models differ by that, plus at most a grid step per weight.
        let grid = memory.calibration().map_or(0.0, |c| c.release_grid);
        let released = distance(memory.model().weights(), blocks.model().weights());
        assert!(
            released <= bound + (COLS as f64).sqrt() * grid,
            "{params:?}"
        );
    }
}

#[test]
fn a_mutated_mechanism_over_blocks_releases_a_different_model() {
    // The block path runs the mechanism's own code: its test-only bug shows through it.
    let data = training_set(2_000);
    let file = TempFile::new("mutant");
    data.write_row_cache(&file.0, 500).unwrap();
    let cache = RowCache::open(&file.0).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    let fit = |mutation| {
        params
            .fit_blocks_with(&cache, 2_000, &mut InsecureSeededRng::new(3), mutation)
            .unwrap()
            .0
    };
    let right = fit(Mutation::NoiseRate(1.0));
    let half_noise = fit(Mutation::NoiseRate(2.0));
    assert!(half_noise.secret_noise_norm() < right.secret_noise_norm());
}

#[test]
fn truncated_and_corrupted_caches_are_refused() {
    let data = training_set(1_000);
    let file = TempFile::new("corrupt");
    data.write_row_cache(&file.0, 128).unwrap();
    let original = std::fs::read(&file.0).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    let refused = |bytes: &[u8]| {
        std::fs::write(&file.0, bytes).unwrap();
        match RowCache::open(&file.0) {
            Err(error) => error,
            Ok(cache) => params
                .fit_blocks(&cache, 1_000, &mut InsecureSeededRng::new(1))
                .unwrap_err(),
        }
    };
    let message = |error: ErmError| match error {
        ErmError::InvalidRowCache(why) => why,
        other => panic!("not a cache refusal: {other:?}"),
    };
    assert!(message(refused(&original[..original.len() - 1])).contains("table"));
    assert!(message(refused(&original[..40])).contains("header"));
    assert!(message(refused(&original[..original.len() / 2])).contains("table"));
    let mut extended = original.clone();
    extended.push(0);
    assert!(message(refused(&extended)).contains("table"));
    // One flipped bit in a column index of block 3: the table is intact, the block's
    // checksum not.
    let mut flipped = original.clone();
    let at = 64 + 3 * (128 + 4 * 129 + 12 * 128 * 14) + 200 * 8;
    flipped[at] ^= 0x10;
    assert!(message(refused(&flipped)).contains("block 3 fails its checksum"));
    let mut header = original.clone();
    header[13] ^= 1;
    assert!(message(refused(&header)).contains("header"));
    assert!(
        message(refused(
            b"not a cache, but long enough to hold a header of sixty-four bytes"
        ))
        .contains("magic")
    );
    // The intact file still trains.
    std::fs::write(&file.0, &original).unwrap();
    let cache = RowCache::open(&file.0).unwrap();
    assert!(
        params
            .fit_blocks(&cache, 1_000, &mut InsecureSeededRng::new(1))
            .is_ok()
    );
}

#[test]
fn a_cache_that_changes_between_passes_is_refused() {
    let data = training_set(1_000);
    let file = TempFile::new("changed");
    data.write_row_cache(&file.0, 128).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    let w = vec![0.1; COLS];
    // A pass, then the file's modification time moves (its contents unchanged).
    let cache = RowCache::open(&file.0).unwrap();
    assert!(sum_blocks(&cache, &w, &Loss::Logistic, false).is_ok());
    let handle = OpenOptions::new().write(true).open(&file.0).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    handle.set_modified(later).unwrap();
    let error = params
        .fit_blocks(&cache, 1_000, &mut InsecureSeededRng::new(1))
        .unwrap_err();
    assert!(
        matches!(&error, ErmError::InvalidRowCache(why) if why.contains("changed since it was opened")),
        "{error:?}"
    );
    // A byte rewritten in place with the modification time put back: the checksum sees it.
    let cache = RowCache::open(&file.0).unwrap();
    assert!(sum_blocks(&cache, &w, &Loss::Logistic, false).is_ok());
    let mut bytes = std::fs::read(&file.0).unwrap();
    bytes[64 + 5] ^= 0x02; // a label of block 0: +1 ↔ +3 or −1 ↔ −3
    std::fs::write(&file.0, &bytes).unwrap();
    OpenOptions::new()
        .write(true)
        .open(&file.0)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let error = params
        .fit_blocks(&cache, 1_000, &mut InsecureSeededRng::new(1))
        .unwrap_err();
    assert!(
        matches!(&error, ErmError::InvalidRowCache(why) if why.contains("block 0 fails its checksum")),
        "{error:?}"
    );
}

/// A block's offsets, indices, values and labels.
type OwnedBlock = (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>);

/// Rows in memory as blocks, without the cache's checks: what an executor might send.
pub(crate) struct Handed {
    blocks: Vec<OwnedBlock>,
}

impl Handed {
    pub(crate) fn of(rows: &[(Vec<(usize, f64)>, f64)], block_rows: usize) -> Self {
        let blocks = rows
            .chunks(block_rows)
            .map(|chunk| {
                let mut offsets = vec![0u32];
                let (mut indices, mut values, mut labels) = (vec![], vec![], vec![]);
                for (row, label) in chunk {
                    indices.extend(row.iter().map(|&(j, _)| j as u32));
                    values.extend(row.iter().map(|&(_, v)| v));
                    offsets.push(indices.len() as u32);
                    labels.push(*label);
                }
                (offsets, indices, values, labels)
            })
            .collect();
        Self { blocks }
    }
}

impl RowBlocks for Handed {
    type Error = OptimError;
    fn cols(&self) -> usize {
        COLS
    }
    fn rows(&self) -> usize {
        self.blocks.iter().map(|b| b.3.len()).sum()
    }
    fn block_count(&self) -> usize {
        self.blocks.len()
    }
    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), OptimError> {
        let (o, i, v, l) = &self.blocks[index];
        visit(RowBlock::new(COLS, o, i, v, l)?);
        Ok(())
    }
}

#[test]
fn a_block_with_a_row_outside_the_unit_ball_or_a_bad_label_is_refused() {
    let rows: Vec<_> = (0..600).map(adult_row).collect();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    assert!(
        params
            .fit_blocks(&Handed::of(&rows, 100), 600, &mut InsecureSeededRng::new(1))
            .is_ok()
    );
    let mut outside = rows.clone();
    outside[250].0.iter_mut().for_each(|(_, v)| *v *= 1.5);
    let error = params
        .fit_blocks(
            &Handed::of(&outside, 100),
            600,
            &mut InsecureSeededRng::new(1),
        )
        .unwrap_err();
    assert!(
        matches!(&error, ErmError::InBlock { block: 2, error } if matches!(**error, ErmError::RowNormAboveOne { row: 50, .. })),
        "{error:?}"
    );
    // Just outside, by less than rounding can explain: still refused (the safe direction).
    let mut barely = rows.clone();
    let norm = barely[7].0.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
    barely[7]
        .0
        .iter_mut()
        .for_each(|(_, v)| *v *= (1.0 + 4e-16) / norm);
    assert!(
        params
            .fit_blocks(
                &Handed::of(&barely, 100),
                600,
                &mut InsecureSeededRng::new(1)
            )
            .is_err()
    );
    let mut label = rows.clone();
    label[599].1 = 0.5;
    let error = params
        .fit_blocks(
            &Handed::of(&label, 100),
            600,
            &mut InsecureSeededRng::new(1),
        )
        .unwrap_err();
    assert!(
        matches!(&error, ErmError::InBlock { block: 5, error } if matches!(**error, ErmError::InvalidLabel { row: 99, .. })),
        "{error:?}"
    );
    // The cache writer refuses the same row before writing it.
    let file = TempFile::new("outside");
    let mut writer = RowCacheWriter::create(&file.0, COLS, 100).unwrap();
    for (row, label) in &outside[..250] {
        writer.push_row(row, *label).unwrap();
    }
    assert!(matches!(
        writer.push_row(&outside[250].0, outside[250].1),
        Err(ErmError::RowNormAboveOne { row: 250, .. })
    ));
}

#[test]
fn a_row_count_other_than_the_public_n_is_refused_before_any_noise_is_drawn() {
    let data = training_set(500);
    let file = TempFile::new("count");
    data.write_row_cache(&file.0, 64).unwrap();
    let cache = RowCache::open(&file.0).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    for n in [499, 501] {
        let mut rng = InsecureSeededRng::new(4);
        let error = params.fit_blocks(&cache, n, &mut rng).unwrap_err();
        assert_eq!(
            error,
            ErmError::DimensionMismatch {
                what: "rows the block source declares (n is given, not counted)",
                expected: n,
                found: 500,
            }
        );
        // Nothing was drawn: the generator is where a fresh one starts.
        let next: u64 = rng.random();
        assert_eq!(next, InsecureSeededRng::new(4).random::<u64>());
    }
    // A source that declares n but yields fewer rows is refused by the pass.
    let rows: Vec<_> = (0..300).map(adult_row).collect();
    let mut short = Handed::of(&rows, 100);
    short.blocks[1].3.pop();
    short.blocks[1].0.pop();
    let last = *short.blocks[1].0.last().unwrap() as usize;
    short.blocks[1].1.truncate(last);
    short.blocks[1].2.truncate(last);
    struct Claims(Handed);
    impl RowBlocks for Claims {
        type Error = OptimError;
        fn cols(&self) -> usize {
            COLS
        }
        fn rows(&self) -> usize {
            300
        }
        fn block_count(&self) -> usize {
            self.0.block_count()
        }
        fn with_block(
            &self,
            index: usize,
            visit: &mut dyn FnMut(RowBlock<'_>),
        ) -> Result<(), OptimError> {
            self.0.with_block(index, visit)
        }
    }
    let error = params
        .fit_blocks(&Claims(short), 300, &mut InsecureSeededRng::new(1))
        .unwrap_err();
    assert!(
        matches!(
            error,
            ErmError::Optim(OptimError::DimensionMismatch {
                expected: 300,
                found: 299,
                ..
            })
        ),
        "{error:?}"
    );
}

/// Rows of the memory test: a cache of about 173 MB.
const LIMITED_ROWS: u64 = 1_000_000;

/// The process's peak resident memory (VmHWM), in bytes.
fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// The child half of `a_fit_over_a_file_holds_a_block_at_a_time_not_the_file`.
#[test]
#[ignore = "run by a_fit_over_a_file_holds_a_block_at_a_time_not_the_file in a fresh process"]
fn fit_a_cache_and_report_peak_memory() {
    let Some(path) = std::env::var_os("DP_ERM_MEMORY_CACHE") else {
        return;
    };
    let cache = RowCache::open(std::path::Path::new(&path)).unwrap();
    let fit = ErmParams::objective_perturbation(Loss::Logistic, 1e-4, 1.0)
        .fit_blocks(
            &cache,
            LIMITED_ROWS as usize,
            &mut InsecureSeededRng::new(8),
        )
        .unwrap();
    println!(
        "trained: {} iterations over {} bytes; peak resident {} bytes",
        fit.solver_iterations(),
        cache.file_bytes(),
        peak_resident_bytes()
    );
}

/// A fit over a cache holds blocks, not the file: in a fresh process (so that the peak is
/// the fit's), training over a 173 MB cache in blocks of 16,384 rows peaks below a quarter
/// of the file's size (in memory the same rows take 24 bytes an entry, 336 MB). Peak
/// resident memory, not an address-space limit (`ulimit -v`): faer's matrix kernels
/// reserve twice the L3 cache's size of address space per thread (600 MB on a machine
/// that reports a 300 MB L3), which says nothing about the memory a fit uses.
#[cfg(target_os = "linux")]
#[test]
fn a_fit_over_a_file_holds_a_block_at_a_time_not_the_file() {
    let file = TempFile::new("memory");
    let mut writer = RowCacheWriter::create(&file.0, COLS, 16_384).unwrap();
    for i in 0..LIMITED_ROWS {
        let (row, label) = adult_row(i);
        writer.push_row(&row, label).unwrap();
    }
    writer.finish().unwrap();
    let bytes = std::fs::metadata(&file.0).unwrap().len();
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(exe)
        .args([
            "--exact",
            "row_cache_tests::fit_a_cache_and_report_peak_memory",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("DP_ERM_MEMORY_CACHE", &file.0)
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let peak: u64 = stdout
        .split("peak resident ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("status {:?}\n{stdout}\n{stderr}", output.status));
    println!("cache {bytes} bytes, child's peak resident memory {peak} bytes");
    assert!(peak < bytes / 4, "peak {peak} of a {bytes}-byte file");
}

/// The fast unit-ball check (every training set's and every pass's) never accepts a row the
/// error-bounded check refuses, on rows scaled to within a few ulps of norm 1 (where a
/// check without its rounding margin would accept rows just outside), and it does take the
/// fast way on typical rows.
#[test]
fn the_fast_unit_ball_check_accepts_only_rows_the_exact_check_accepts() {
    use crate::data::unit_ball::{
        clearly_within_unit_ball, within_unit_ball_by_bounded_sum as within_unit_ball,
    };
    let mut rng = InsecureSeededRng::new(5);
    let (mut fast, mut outside) = (0, 0);
    for trial in 0..300_000 {
        let k = 1 + trial % 40;
        let mut row: Vec<f64> = (0..k).map(|_| rng.random_range(-1.0..1.0)).collect();
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        let scale = 1.0 + f64::EPSILON * rng.random_range(-8.0..8.0) * k as f64;
        row.iter_mut().for_each(|v| *v = *v / norm * scale);
        let exact = within_unit_ball(&row);
        outside += usize::from(!exact);
        if clearly_within_unit_ball(&row) {
            fast += 1;
            assert!(exact, "{row:?}");
        }
    }
    assert!(fast > 1_000 && outside > 1_000, "{fast} {outside}");
    let typical: Vec<f64> = adult_row(3).0.iter().map(|&(_, v)| v).collect();
    assert!(clearly_within_unit_ball(&typical));
    assert!(!clearly_within_unit_ball(&[1.0]) && within_unit_ball(&[1.0]));
    assert!(!clearly_within_unit_ball(&[f64::NAN]) && !clearly_within_unit_ball(&[f64::INFINITY]));
}

/// Partials as executors send them: one per "partition" (block), each contract-checked and
/// through its bytes, merged in partition order.
pub(crate) struct Partitions<'a>(pub(crate) &'a Handed);

impl SumsOracle for Partitions<'_> {
    type Error = ErmError;
    fn cols(&self) -> usize {
        COLS
    }
    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, ErmError> {
        merged_remote_sums(self.0, with_hessian, &|block| {
            crate::contract_sums(block, w, Loss::Logistic, with_hessian)
        })
    }
}

/// Each block's sums as a worker computes them (`worker`), serialized and merged in block
/// order, as a driver merges its partitions' answers.
fn merged_remote_sums(
    handed: &Handed,
    with_hessian: bool,
    worker: &dyn Fn(&RowBlock<'_>) -> Result<PartialSums, ErmError>,
) -> Result<PartialSums, ErmError> {
    let mut total = PartialSums::zero(COLS, with_hessian);
    for index in 0..handed.block_count() {
        let mut bytes = None;
        handed.with_block(index, &mut |block| bytes = Some(worker(&block)))?;
        let bytes = bytes.expect("visited")?.to_bytes();
        total.merge(&PartialSums::from_bytes(&bytes)?)?;
    }
    Ok(total)
}

#[test]
fn a_fit_over_partial_sums_from_elsewhere_equals_the_block_fit_bit_for_bit() {
    let rows: Vec<_> = (0..900).map(adult_row).collect();
    let handed = Handed::of(&rows, 128);
    for params in [
        ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0),
        ErmParams::output_perturbation(Loss::Logistic, 1e-2, 1.0),
    ] {
        let local = params
            .fit_blocks(&handed, 900, &mut InsecureSeededRng::new(5))
            .unwrap();
        let remote = params
            .fit_sums(&Partitions(&handed), 900, &mut InsecureSeededRng::new(5))
            .unwrap();
        let bits = |f: &crate::Fit| {
            f.model()
                .weights()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&remote), bits(&local));
        // The public n is checked against every answer.
        assert!(matches!(
            params.fit_sums(&Partitions(&handed), 901, &mut InsecureSeededRng::new(5)),
            Err(ErmError::Optim(OptimError::DimensionMismatch { .. }))
                | Err(ErmError::DimensionMismatch { .. })
        ));
    }
}

/// The adult-shaped rows' groups: six numeric columns alone, then the eight one-hot groups
/// of `dp_datasets::adult_shaped_row` (sizes 9, 16, 7, 15, 6, 5, 2, 39).
fn adult_shaped_groups() -> dp_noise::FeatureGroups {
    let mut group_of: Vec<usize> = (0..6).collect();
    for (g, size) in [9, 16, 7, 15, 6, 5, 2, 39].into_iter().enumerate() {
        group_of.extend(std::iter::repeat_n(6 + g, size));
    }
    dp_noise::FeatureGroups::new(&group_of).unwrap()
}

/// Partial sums as a worker computes them for group-shaped noise.
struct GroupedPartitions<'a>(&'a Handed, dp_noise::FeatureGroups);

impl SumsOracle for GroupedPartitions<'_> {
    type Error = ErmError;
    fn cols(&self) -> usize {
        COLS
    }
    fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, ErmError> {
        merged_remote_sums(self.0, with_hessian, &|block| {
            crate::contract_sums_grouped(block, w, Loss::Logistic, with_hessian, &self.1)
        })
    }
}

#[test]
fn group_shaped_noise_over_sums_draws_the_in_memory_noise_and_row_blocks_refuse_it() {
    let rows: Vec<_> = (0..900).map(adult_row).collect();
    let handed = Handed::of(&rows, 128);
    let groups = adult_shaped_groups();
    let params =
        ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0).group_noise(groups.clone());
    let remote = params
        .fit_sums(
            &GroupedPartitions(&handed, groups.clone()),
            900,
            &mut InsecureSeededRng::new(5),
        )
        .unwrap();
    // The same noise (drawn before any pass, from the same seed) and the same objective:
    // the two minimizers differ only within the solvers' certified tolerances.
    let local = params
        .fit(&training_set(900), &mut InsecureSeededRng::new(5))
        .unwrap();
    let gap = remote
        .model()
        .weights()
        .iter()
        .zip(local.model().weights())
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(
        gap < 1e-3,
        "the fits over sums and in memory are {gap} apart"
    );
    // Row blocks read during the passes cannot check every group norm before the noise.
    assert!(matches!(
        params.fit_blocks(&handed, 900, &mut InsecureSeededRng::new(5)),
        Err(ErmError::MisplacedOption { .. })
    ));
}

#[test]
fn a_worker_refuses_a_row_beyond_group_norm_one_inside_the_unit_ball() {
    // ℓ2 norm 0.85 (inside the unit ball), but one group's ℓ1 norm is 1.2.
    let groups = dp_noise::FeatureGroups::new(&[0, 0, 1]).unwrap();
    let block = RowBlock::new(3, &[0, 2], &[0, 1], &[0.6, 0.6], &[1.0]).unwrap();
    assert!(crate::contract_sums(&block, &[0.0; 3], Loss::Logistic, false).is_ok());
    assert!(matches!(
        crate::contract_sums_grouped(&block, &[0.0; 3], Loss::Logistic, false, &groups),
        Err(ErmError::RowGroupNormAboveOne { row: 0, .. })
    ));
}
