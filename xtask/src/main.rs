//! `cargo xtask`: the workspace's experiment runner.
//!
//! - `reproduce [kernel|predict|linear|tuning|all] [--quick] [--offline]` — the papers'
//!   experiments beside the published numbers (JSON, CSV, Markdown, SVG under `results/`,
//!   and `results/index.md` over all of them); missing data files are fetched first unless
//!   `--offline`.
//!
//! Every writer follows one rule (see `keep`): a run replaces earlier results only if it
//! holds at least what they hold (full ≥ quick, and every part they have); otherwise its
//! results go to a `quick/` or `partial/` subfolder and it says so. A run stopped by
//! SIGINT, SIGTERM or SIGHUP finishes the replacement in progress (an experiment's results
//! are all old or all new), removes its lock files and the folders it created, regenerates
//! `index.md` from the results on disk if it wrote any, and exits with 128 + the signal
//! (see `interrupt`).
//! - `datasets fetch [--from DIR]` — put the data files in the data directory, verified.
//! - `datasets synth --rows N --out FILE` — a synthetic CSV shaped like adult.data.
//! - `audit-noise [--quick]` — every dp-noise sampler against its exact law.
//! - `bench peers [--setup]`, `bench scale [--quick]` — speed beside the peers, and scaling.

mod audit_mechanism;
mod audit_mia;
mod audit_noise;
mod audit_summary;
mod bench;
mod datasets_cmd;
mod folder_lock;
mod interrupt;
mod keep;
mod reproduce;
mod safe_write;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Experiment runner of the dp-ml workspace"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Re-run the papers' experiments and write results beside the published numbers.
    Reproduce {
        /// Which experiments (default: all).
        #[command(subcommand)]
        experiment: Option<Experiment>,
        #[command(flatten)]
        options: ReproduceArgs,
    },
    /// Manage the data files.
    Datasets {
        #[command(subcommand)]
        action: DatasetsAction,
    },
    /// Empirical privacy audits of the library's mechanisms.
    Audit {
        #[command(subcommand)]
        what: AuditWhat,
    },
    /// Speed, accuracy and memory beside scikit-learn and diffprivlib (`peers`), and how a
    /// private fit's cost grows with n and d (`scale`); reports under results/bench/.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Test every dp-noise sampler against its exact distribution and write a report.
    AuditNoise {
        /// 40 times fewer draws (about 1 s after the build) than the full audit (about 25 s);
        /// over a full audit's report, writes to OUT/quick/ and keeps it.
        #[arg(long)]
        quick: bool,
        /// Seed of the (insecure, reproducible) generator used for the audit.
        #[arg(long, default_value_t = 2026)]
        seed: u64,
        /// Folder for noise_audit.md and noise_audit.csv.
        #[arg(long, default_value_os_t = workspace_path("results"))]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum AuditWhat {
    /// An ε lower bound for one mechanism beside its claimed and pair ε (names:
    /// objective-logistic, objective-logistic-cliff-free, objective-huber,
    /// objective-huber-cliff-free, output-logistic, output-huber; at (ε, δ):
    /// gaussian-objective-logistic, gaussian-objective-huber, gaussian-output-logistic,
    /// dp-sgd-huber, dp-sgd-huber-clipped).
    Mechanism {
        /// The mechanism.
        name: String,
        /// 20,000 fits per dataset instead of 100,000; over a full audit's report, writes to
        /// OUT/quick/ and keeps it.
        #[arg(long)]
        quick: bool,
        /// Fits per dataset (overrides --quick).
        #[arg(long)]
        runs: Option<usize>,
        /// Seed of the (insecure, reproducible) generators of the audit.
        #[arg(long, default_value_t = 2024)]
        seed: u64,
        /// Folder for audit_NAME.json and audit_NAME.md.
        #[arg(long, default_value_os_t = workspace_path("results/audit"))]
        out: PathBuf,
    },
    /// Membership inference (loss-threshold and shadow-model likelihood-ratio attacks)
    /// against a private and a deliberately overfit model: AUC, TPR at low FPR, advantage
    /// beside the ε-DP ceiling tanh(ε/2), ROC curves.
    Mia {
        /// synthetic, adult, kdd or all.
        #[arg(default_value = "all")]
        dataset: String,
        /// 16 models and a smaller pool instead of 64; over a full run's report, writes to
        /// OUT/quick/ and keeps it.
        #[arg(long)]
        quick: bool,
        /// ε of the private model.
        #[arg(long, default_value_t = 1.0)]
        epsilon: f64,
        /// Folder with the data files (default: $DP_ML_DATA_DIR, else data/ in the workspace).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Seed of the (insecure, reproducible) randomness.
        #[arg(long, default_value_t = 2018)]
        seed: u64,
        /// Folder for mia_DATASET.json, mia_DATASET.md and ROC curves.
        #[arg(long, default_value_os_t = workspace_path("results/audit"))]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Logistic regression on Adult's training rows, Λ ∈ {1e-3, 1e-4, 1e-5}, ε ∈ {0.1, 0.2}:
    /// dp-ml against scikit-learn (liblinear, lbfgs) and diffprivlib, runs interleaved.
    Peers {
        /// First create target/bench-venv with `--python` and pip-install the pinned peers.
        #[arg(long)]
        setup: bool,
        /// The interpreter that creates the environment (with --setup only: the peers always
        /// run in the environment).
        #[arg(long, default_value = "python3", requires = "setup")]
        python: String,
        /// Rounds (each runs every tool once per problem); the report shows medians.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Folder with the data files (default: $DP_ML_DATA_DIR, else data/ in the workspace).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Results go to OUT/bench/.
        #[arg(long, default_value_os_t = workspace_path("results"))]
        out: PathBuf,
    },
    /// A private fit's time and memory for n from 10^4 to 10^6 and d from 10 to 10^4
    /// (synthetic Adult-like rows).
    Scale {
        /// n up to 10^5 and d up to 10^3 only; over a full run's report, writes to
        /// OUT/bench/quick/ and keeps it.
        #[arg(long)]
        quick: bool,
        /// Results go to OUT/bench/.
        #[arg(long, default_value_os_t = workspace_path("results"))]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum Experiment {
    /// Linear classifiers on Adult and KDDCup99 (SVM paper, Figures 2a and 3).
    Linear,
    /// The private kernel SVM on nested balls (SVM paper, Figures 1c, 1f and 2b), with a
    /// sweep over the number of random features. Synthetic: needs no data files.
    Kernel,
    /// Private prediction (Dwork-Feldman): thresholds on a line (synthetic) and prediction
    /// versus training on Adult and KDDCup99 (without the data files only the synthetic
    /// part runs, and the command fails naming the part that could not run).
    Predict,
    /// Λ chosen privately (dp-tune): KDDCup99 learning curves (Figures 1(d), 1(e)) and the
    /// cost of private tuning on Adult.
    Tuning,
    /// The utility study: an ablation on Adult and KDDCup99 (calibration rule, loss and
    /// Huber width, a fine Λ grid, encodings), the data-independent Λ rule fitted on
    /// synthetic data, and the three ways to choose Λ end to end.
    Utility,
    /// The regression study (#50): every private regressor by its rule and in hindsight on
    /// synthetic data, diamonds, Adult's hours and diabetes, beside the non-private ridge
    /// and diffprivlib. Runs python/bench/regression_study.py in the bench environment
    /// (target/bench-venv, created on first use; not part of `all`).
    Regression,
    /// Every experiment but the regression study (the default).
    All,
}

#[derive(Args)]
struct ReproduceArgs {
    /// A smaller run of each experiment: fewer folds, noise draws, rows or grid points (linear:
    /// 3 folds × 2 draws instead of 10 × 50; utility: 3 folds, 1 draw, 7 Λ values; kernel:
    /// 24,000 rows, 2 folds × 1 draw, D ≤ 500); each summary.md says what it ran. Over
    /// full results, writes to OUT/EXPERIMENT/quick/ and keeps them.
    #[arg(long, global = true)]
    quick: bool,
    /// Folder with the data files (default: $DP_ML_DATA_DIR, else data/ in the workspace).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Kept for compatibility: missing data for a requested experiment (predict's real-data
    /// part included) is always an error.
    #[arg(long, global = true)]
    require_data: bool,
    /// Do not fetch missing data files (by default they are downloaded, verified, into the
    /// data directory before anything runs).
    #[arg(long, global = true)]
    offline: bool,
    /// Folder for the results.
    #[arg(long, global = true, default_value_os_t = workspace_path("results"))]
    out: PathBuf,
    /// Seed of the experiments' (insecure, reproducible) randomness.
    #[arg(long, global = true, default_value_t = 2011)]
    seed: u64,
}

#[derive(Subcommand)]
enum DatasetsAction {
    /// Download the files from the UCI repository (or copy them with --from) and verify them.
    Fetch {
        /// Copy from this local mirror instead of downloading.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Folder to put them in (default: $DP_ML_DATA_DIR, else data/ in the workspace).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Write a synthetic CSV shaped like adult.data (read it with schemas/adult.toml), for
    /// measuring `dpml train` on large files: 10^7 rows are about 1.2 GB.
    #[command(
        after_help = "Example:\n  cargo xtask datasets synth --rows 10000000 --out /tmp/adult-synth.csv\n  \
        /usr/bin/time -v dpml train --data /tmp/adult-synth.csv --schema schemas/adult.toml \
        --epsilon 1 --out synth.dpm"
    )]
    Synth {
        /// Number of rows.
        #[arg(long)]
        rows: u64,
        /// The file to write (refused if it exists).
        #[arg(long)]
        out: PathBuf,
        /// The generator's seed (the rows are a fixed function of it).
        #[arg(long, default_value_t = 2011)]
        seed: u64,
    },
}

/// Every experiment, synthetic ones first (they need no data files), with whether it reads
/// the data files.
type ExperimentFn =
    fn(&reproduce::Options) -> Result<reproduce::Finished, Box<dyn std::error::Error>>;
const EXPERIMENTS: [(&str, ExperimentFn, bool); 6] = [
    ("kernel", reproduce::kernel, false),
    ("predict", reproduce::predict, true),
    ("linear", reproduce::linear, true),
    ("tuning", reproduce::tuning, true),
    ("utility", reproduce::utility, true),
    ("regression", reproduce::regression, true),
];

/// Experiments that run only when named: the regression study needs the bench environment
/// (`bench peers --setup`), which the main job does not create.
const ON_REQUEST_ONLY: [&str; 1] = ["regression"];

/// Runs the named experiments (all but [`ON_REQUEST_ONLY`] when `only` is None): fetches missing data files first
/// unless `offline`, runs each even if an earlier one failed, regenerates `<out>/index.md`,
/// prints where each report is, and fails naming the experiments that could not run.
fn reproduce_experiments(
    only: Option<&str>,
    options: &reproduce::Options,
    offline: bool,
) -> Result<bool, Box<dyn std::error::Error>> {
    let chosen: Vec<(&str, ExperimentFn, bool)> = EXPERIMENTS
        .into_iter()
        .filter(|(name, ..)| match only {
            Some(o) => o == *name,
            None => !ON_REQUEST_ONLY.contains(name),
        })
        .collect();
    // The output folder first: a bad --out fails before anything is fetched or run.
    safe_write::OutDir::prepare(&options.out, &[])?;
    // An interrupted run regenerates the index from what it leaves on disk.
    interrupt::index_on_interrupt(&options.out);
    let shortfall = if chosen.iter().any(|(.., needs_data)| *needs_data) {
        reproduce::ensure_data(options, offline).err()
    } else {
        None
    };
    let mut all_sane = true;
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    let mut wrote_any = false;
    // The same data problem fails every experiment that needs the data: said once in full.
    let mut last_error: Option<String> = None;
    for (name, run, _) in &chosen {
        match run(options) {
            Ok(finished) => {
                all_sane &= finished.sane;
                wrote_any = true;
                let summary = finished.folder.join("summary.md");
                reports.push(match finished.not_run {
                    Some(part) => {
                        failed.push(part);
                        format!(
                            "  {name}: {} (partial: {part} could not run)",
                            summary.display()
                        )
                    }
                    None => format!("  {name}: {}", summary.display()),
                });
            }
            Err(e) => {
                let message = e.to_string();
                if last_error.as_deref() == Some(message.as_str()) {
                    eprintln!("xtask: reproduce {name} failed: the same problem (above)");
                } else {
                    eprintln!("xtask: reproduce {name} failed: {message}");
                }
                last_error = Some(message);
                reports.push(format!(
                    "  {name}: not run (earlier results, if any, untouched)"
                ));
                failed.push(*name);
            }
        }
    }
    // A run that wrote nothing leaves the index (and everything else) as it was.
    if wrote_any {
        interrupt::pause_point("indexing", None);
        match reproduce::regenerate_index(&options.out) {
            Ok(index) => {
                reports.push(format!("  index of every result: {}", index.display()));
                // The page beside it, regenerated from the same folders (index_html).
                reports.push(format!(
                    "  the same as one page with the figures: {}",
                    index.with_extension("html").display()
                ));
            }
            Err(e) => eprintln!("xtask: could not write {}: {e}", reproduce::INDEX_FILE),
        }
    }
    eprintln!("reports:\n{}", reports.join("\n"));
    if failed.is_empty() {
        return Ok(all_sane);
    }
    let mut message = format!("these experiments could not run: {}", failed.join(", "));
    if let Some(shortfall) = shortfall {
        message += &format!(
            "\nthe data files are not available: {}\n{}",
            shortfall.why,
            reproduce::WHAT_TO_DO
        );
    }
    Err(message.into())
}

fn main() -> ExitCode {
    // Before any thread starts: every thread inherits the signal mask it sets.
    interrupt::install();
    let outcome = match Cli::parse().command {
        Command::Reproduce {
            experiment,
            options,
        } => {
            // Nothing to switch on: a requested experiment without its data always fails.
            let _always_required = options.require_data;
            let offline = options.offline;
            let reproduce_options = reproduce::Options {
                quick: options.quick,
                data_dir: options.data_dir,
                out: options.out,
                seed: options.seed,
            };
            let only = match experiment {
                Some(Experiment::Linear) => Some("linear"),
                Some(Experiment::Kernel) => Some("kernel"),
                Some(Experiment::Predict) => Some("predict"),
                Some(Experiment::Tuning) => Some("tuning"),
                Some(Experiment::Utility) => Some("utility"),
                Some(Experiment::Regression) => Some("regression"),
                None | Some(Experiment::All) => None,
            };
            reproduce_experiments(only, &reproduce_options, offline)
        }
        Command::Datasets {
            action: DatasetsAction::Fetch { from, data_dir },
        } => datasets_cmd::fetch(data_dir, from).map(|()| true),
        Command::Datasets {
            action: DatasetsAction::Synth { rows, out, seed },
        } => datasets_cmd::synth::run(rows, &out, seed).map(|()| true),
        Command::AuditNoise { quick, seed, out } => audit_noise::run(quick, seed, &out),
        Command::Bench {
            what:
                BenchWhat::Peers {
                    setup,
                    python,
                    repeats,
                    data_dir,
                    out,
                },
        } => bench::peers::run(&bench::peers::Options {
            setup,
            python,
            repeats,
            data_dir,
            out,
        }),
        Command::Bench {
            what: BenchWhat::Scale { quick, out },
        } => bench::scale::run(&bench::scale::Options { quick, out }),
        Command::Audit {
            what:
                AuditWhat::Mechanism {
                    name,
                    quick,
                    runs,
                    seed,
                    out,
                },
        } => audit_mechanism::run(&name, quick, runs, seed, &out),
        Command::Audit {
            what:
                AuditWhat::Mia {
                    dataset,
                    quick,
                    epsilon,
                    data_dir,
                    seed,
                    out,
                },
        } => audit_mia::run(&dataset, quick, epsilon, data_dir, seed, &out),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("xtask: a check failed (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `relative` in the workspace this xtask belongs to (fixed at build time), so that results
/// land in the workspace's `results/` (git-ignored) from whatever folder `cargo xtask` runs.
fn workspace_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join(relative)
}
