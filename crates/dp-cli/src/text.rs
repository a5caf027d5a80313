//! Text helpers for what the command line prints.

/// Writes `args` to standard output. A reader that went away (`dpml inspect m.dpm | head
/// -1`) ends the run as Unix tools end, quietly with the status a shell gives a process
/// that SIGPIPE ended (141), never with a panic. Only commands that write no file print to
/// standard output, so nothing is left half-written.
pub fn emit(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("dpml: error: standard output: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`emit`].
macro_rules! say {
    () => {
        $crate::text::emit(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::text::emit(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;

/// The first `chars` characters of `text` (all of it if shorter): never a slice inside a
/// multi-byte character, whatever a file put there.
pub fn prefix(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `x` in Rust's shortest round-trip form (`{:?}`: `1e308`, `1e-300`, `0.1`, never hundreds
/// of digits), a whole number without its `.0` (`2`, as `{}` prints it).
pub fn number(x: f64) -> String {
    let shortest = format!("{x:?}");
    match shortest.strip_suffix(".0") {
        Some(whole) => whole.to_owned(),
        None => shortest,
    }
}

/// `x` rounded to `decimals` places where that is short (|x| in [10⁻³, 10⁶), or 0), in
/// scientific notation otherwise: never hundreds of digits for a tiny or huge value.
pub fn compact(x: f64, decimals: usize) -> String {
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) || !x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        format!("{x:.decimals$e}")
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
