//! Progress bars on standard error, only when it is a terminal (never in pipes, logs or
//! tests).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar for reading `file` (bytes of CSV or rows of Parquet), or a hidden one.
pub fn reading(file: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent:>3}% {elapsed_precise}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(format!("reading {file}"));
    bar
}

/// A spinner for a step of unknown length, or a hidden one.
pub fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// The callback readers take: `(done, total)`.
pub fn updater(bar: &ProgressBar) -> impl FnMut(u64, u64) + '_ {
    move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    }
}
