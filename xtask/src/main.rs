//! `cargo xtask`: the workspace's experiment runner.
//!
//! - `reproduce [linear|tuning|all] [--quick]` — the papers' experiments beside the published
//!   numbers (JSON, CSV, Markdown, SVG under `results/`).
//! - `datasets fetch [--from DIR]` — put the data files in the data directory, verified.
//! - `audit-noise [--quick]` — every dp-noise sampler against its exact law.
//! - `bench peers [--setup]`, `bench scale [--quick]` — speed beside the peers, and scaling.

mod audit_mechanism;
mod audit_mia;
mod audit_noise;
mod bench;
mod datasets_cmd;
mod reproduce;
mod safe_write;

use std::path::PathBuf;
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
        /// 40 times fewer draws (about 1 s after the build) than the full audit (about 25 s).
        #[arg(long)]
        quick: bool,
        /// Seed of the (insecure, reproducible) generator used for the audit.
        #[arg(long, default_value_t = 2026)]
        seed: u64,
        /// Folder for noise_audit.md and noise_audit.csv.
        #[arg(long, default_value = "results")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum AuditWhat {
    /// An ε lower bound for one mechanism beside its claimed and pair ε (names:
    /// objective-logistic, objective-logistic-cliff-free, objective-huber,
    /// objective-huber-cliff-free, output-logistic, output-huber).
    Mechanism {
        /// The mechanism.
        name: String,
        /// 20,000 fits per dataset instead of 100,000.
        #[arg(long)]
        quick: bool,
        /// Fits per dataset (overrides --quick).
        #[arg(long)]
        runs: Option<usize>,
        /// Seed of the (insecure, reproducible) generators of the audit.
        #[arg(long, default_value_t = 2024)]
        seed: u64,
        /// Folder for audit_<name>.json and audit_<name>.md.
        #[arg(long, default_value = "results/audit")]
        out: PathBuf,
    },
    /// Membership inference (loss-threshold and shadow-model likelihood-ratio attacks)
    /// against a private and a deliberately overfit model: AUC, TPR at low FPR, advantage
    /// beside the ε-DP ceiling tanh(ε/2), ROC curves.
    Mia {
        /// synthetic, adult, kdd or all.
        #[arg(default_value = "all")]
        dataset: String,
        /// 16 models and a smaller pool instead of 64.
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
        /// Folder for mia_<dataset>.{json,md} and ROC curves.
        #[arg(long, default_value = "results/audit")]
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
        /// The interpreter that creates the environment.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Rounds (each runs every tool once per problem); the report shows medians.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Folder with the data files (default: $DP_ML_DATA_DIR, else data/ in the workspace).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Results go to OUT/bench/.
        #[arg(long, default_value = "results")]
        out: PathBuf,
    },
    /// A private fit's time and memory for n from 10^4 to 10^6 and d from 10 to 10^4
    /// (synthetic Adult-like rows).
    Scale {
        /// n up to 10^5 and d up to 10^3 only.
        #[arg(long)]
        quick: bool,
        /// Results go to OUT/bench/.
        #[arg(long, default_value = "results")]
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
    /// versus training on Adult and KDDCup99 (skipped without the data files).
    Predict,
    /// Λ chosen privately (dp-tune): KDDCup99 learning curves (Figures 1(d), 1(e)) and the
    /// cost of private tuning on Adult.
    Tuning,
    /// The utility study: an ablation on Adult and KDDCup99 (calibration rule, loss and
    /// Huber width, a fine Λ grid, encodings), the data-independent Λ rule fitted on
    /// synthetic data, and the three ways to choose Λ end to end.
    Utility,
    /// Every experiment (the default).
    All,
}

#[derive(Args)]
struct ReproduceArgs {
    /// Fewer folds and noise draws (3 × 2 instead of the paper's 10 × 50).
    #[arg(long, global = true)]
    quick: bool,
    /// Folder with the data files (default: $DP_ML_DATA_DIR, else data/ in the workspace).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Kept for compatibility: missing data for a requested experiment is always an error.
    #[arg(long, global = true)]
    require_data: bool,
    /// Folder for the results.
    #[arg(long, global = true, default_value = "results")]
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
}

/// Every experiment, synthetic ones first (they need no data files). Each runs even if an
/// earlier one failed; the run fails if any did, naming them.
fn run_every_experiment(options: &reproduce::Options) -> Result<bool, Box<dyn std::error::Error>> {
    type Experiment = fn(&reproduce::Options) -> Result<bool, Box<dyn std::error::Error>>;
    let experiments: [(&str, Experiment); 5] = [
        ("kernel", reproduce::kernel),
        ("predict", reproduce::predict),
        ("linear", reproduce::linear),
        ("tuning", reproduce::tuning),
        ("utility", reproduce::utility),
    ];
    let mut all_sane = true;
    let mut failed = Vec::new();
    for (name, run) in experiments {
        match run(options) {
            Ok(sane) => all_sane &= sane,
            Err(e) => {
                eprintln!("xtask: reproduce {name} failed: {e}");
                failed.push(name);
            }
        }
    }
    if failed.is_empty() {
        Ok(all_sane)
    } else {
        Err(format!("these experiments could not run: {}", failed.join(", ")).into())
    }
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Reproduce {
            experiment,
            options,
        } => {
            let _always_required = options.require_data;
            let options = reproduce::Options {
                quick: options.quick,
                data_dir: options.data_dir,
                out: options.out,
                seed: options.seed,
            };
            match experiment {
                Some(Experiment::Linear) => reproduce::linear(&options),
                Some(Experiment::Kernel) => reproduce::kernel(&options),
                Some(Experiment::Predict) => reproduce::predict(&options),
                Some(Experiment::Tuning) => reproduce::tuning(&options),
                Some(Experiment::Utility) => reproduce::utility(&options),
                None | Some(Experiment::All) => run_every_experiment(&options),
            }
        }
        Command::Datasets {
            action: DatasetsAction::Fetch { from, data_dir },
        } => datasets_cmd::fetch(data_dir, from).map(|()| true),
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
