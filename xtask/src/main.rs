//! `cargo xtask`: the workspace's experiment runner.
//!
//! Commands:
//! - `audit-noise` — draws from every dp-noise sampler and tests the draws against their
//!   exact laws (KS, chi-square) at a chosen power; writes a Markdown and a CSV report.
//!
//! The paper reproductions (`reproduce`) arrive with the crates they exercise.

mod audit_noise;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::AuditNoise { quick, seed, out } => match audit_noise::run(quick, seed, &out) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                eprintln!("audit-noise: at least one sampler failed its test (see the report)");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("audit-noise: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
