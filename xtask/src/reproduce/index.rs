//! `<out>/index.md`: one page over every experiment whose results are on disk — its mode,
//! when it finished and how long it took, its headline numbers beside the paper's, and
//! links to its summary and figures. Regenerated after every `reproduce`, from the folders
//! on disk, so experiments not run this time keep their entry.
//!
//! An experiment joins the index by writing a [`RunEntry`] beside its summary when it
//! finishes:
//!
//! ```ignore
//! RunEntry::new("utility", "Utility of …", options.quick, start)
//!     .headline("error at ε = 1", measured, Some(published))
//!     .write(&out)?;
//! ```
//!
//! A folder with a `summary.md` but no entry (results of an older version) is still listed,
//! with the mode and wall time of its `cells.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::keep;
use crate::safe_write::{OutDir, PathError};

// `index.html`, from the same scan; a child module, so that it reads `Listed` as it is.
#[path = "index_html.rs"]
mod html;

/// The entry's file name, beside the experiment's summary.
pub const RUN_FILE: &str = "run.json";
/// The page's file name, in `<out>`.
pub const INDEX_FILE: &str = "index.md";

/// One number worth a glance, with the paper's value when it has one.
#[derive(Serialize, Deserialize)]
pub struct Headline {
    pub what: String,
    pub measured: f64,
    pub published: Option<f64>,
}

/// What an experiment tells the index about its finished run.
#[derive(Serialize, Deserialize)]
pub struct RunEntry {
    pub experiment: String,
    pub title: String,
    pub mode: String,
    pub wall_seconds: f64,
    /// When the run finished, UTC (`YYYY-MM-DD HH:MM`).
    pub finished_utc: String,
    pub headlines: Vec<Headline>,
    /// What the index says about the figures: those a quick run leaves out or draws without
    /// the published points, and why (absent in entries of older versions).
    #[serde(default)]
    pub figure_notes: Vec<String>,
}

impl RunEntry {
    /// An entry for a run that started at `start` and finishes now.
    pub fn new(experiment: &str, title: &str, quick: bool, start: Instant) -> Self {
        Self {
            experiment: experiment.to_owned(),
            title: title.to_owned(),
            mode: if quick { "quick" } else { "full" }.to_owned(),
            wall_seconds: start.elapsed().as_secs_f64(),
            finished_utc: utc_now(),
            headlines: Vec::new(),
            figure_notes: Vec::new(),
        }
    }

    /// Adds notes on the figures (see [`RunEntry::figure_notes`]).
    pub fn notes(mut self, notes: Vec<String>) -> Self {
        self.figure_notes.extend(notes);
        self
    }

    /// True for an entry of a quick run.
    pub fn is_quick(&self) -> bool {
        self.mode == "quick"
    }

    /// Adds a headline number (skipped when it was not measured: NaN).
    pub fn headline(mut self, what: &str, measured: f64, published: Option<f64>) -> Self {
        if measured.is_finite() {
            self.headlines.push(Headline {
                what: what.to_owned(),
                measured,
                published,
            });
        }
        self
    }

    /// Writes the entry into the experiment's folder (atomically).
    pub fn write(&self, out: &OutDir) -> Result<(), Box<dyn std::error::Error>> {
        out.write(RUN_FILE, serde_json::to_string_pretty(self)?)?;
        Ok(())
    }
}

/// The fields every experiment's `cells.json` has, for folders without a [`RunEntry`].
#[derive(Deserialize)]
struct CellsHeader {
    experiment: Option<String>,
    mode: Option<String>,
    wall_seconds: Option<f64>,
}

/// One listed experiment.
struct Listed {
    folder: String,
    entry: RunEntry,
    figures: Vec<String>,
    /// Subfolders linked beside these results, with what they hold (see [`beside`]).
    beside: Vec<(&'static str, &'static str)>,
}

/// Rewrites `<out>/index.md` (and `index.html`) from every experiment folder under `out`;
/// returns the path of `index.md`.
pub fn regenerate(out: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let mut listed = Vec::new();
    if out.is_dir() {
        let mut folders: Vec<PathBuf> = std::fs::read_dir(out)
            .map_err(PathError::on("list", out))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("summary.md").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            listed.push(read_folder(&folder)?);
        }
    }
    let dir = OutDir::prepare(out, &[INDEX_FILE, html::FILE])?;
    dir.write(INDEX_FILE, page(&listed))?;
    dir.write(html::FILE, html::page(out, &listed))?;
    Ok(out.join(INDEX_FILE))
}

fn read_folder(folder: &Path) -> Result<Listed, Box<dyn std::error::Error>> {
    let name = folder
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let read = |file: &str| std::fs::read_to_string(folder.join(file)).ok();
    let entry = match read(RUN_FILE).and_then(|s| serde_json::from_str::<RunEntry>(&s).ok()) {
        Some(entry) => entry,
        None => {
            let header = read("cells.json")
                .and_then(|s| serde_json::from_str::<CellsHeader>(&s).ok())
                .unwrap_or(CellsHeader {
                    experiment: None,
                    mode: None,
                    wall_seconds: None,
                });
            let modified = std::fs::metadata(folder.join("summary.md"))
                .and_then(|m| m.modified())
                .ok();
            RunEntry {
                experiment: header.experiment.unwrap_or_else(|| name.clone()),
                title: String::new(),
                mode: header.mode.unwrap_or_else(|| "—".into()),
                wall_seconds: header.wall_seconds.unwrap_or(f64::NAN),
                finished_utc: modified.map_or_else(|| "—".into(), utc),
                headlines: Vec::new(),
                figure_notes: Vec::new(),
            }
        }
    };
    let mut figures: Vec<String> = std::fs::read_dir(folder)
        .map_err(PathError::on("list", folder))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg") && !n.starts_with('.'))
        .collect();
    figures.sort();
    Ok(Listed {
        folder: name,
        entry,
        figures,
        beside: beside(folder),
    })
}

/// The subfolders of `folder` worth a link beside its results, with their labels: a lesser
/// run the keep rule set aside, if it finished after those results (an older one was
/// superseded when they were written), and the finished datasets of a linear run that was
/// interrupted or is still running.
fn beside(folder: &Path) -> Vec<(&'static str, &'static str)> {
    let finished = |dir: &Path| {
        std::fs::metadata(dir.join("summary.md"))
            .and_then(|m| m.modified())
            .ok()
    };
    let main = finished(folder);
    let mut linked: Vec<(&str, &str)> = [keep::QUICK_FOLDER, keep::PARTIAL_FOLDER]
        .into_iter()
        .filter(|sub| match (finished(&folder.join(sub)), main) {
            (Some(aside), Some(main)) => aside >= main,
            (aside, _) => aside.is_some(),
        })
        .map(|sub| (sub, "run, kept aside"))
        .collect();
    let unfinished = super::UNFINISHED_FOLDER;
    if finished(&folder.join(unfinished)).is_some() {
        linked.push((unfinished, "run: the datasets it finished"));
    }
    linked
}

fn page(listed: &[Listed]) -> String {
    let mut s = String::from(
        "# Results\n\nEvery experiment whose results are in this folder, regenerated by each \
         `cargo xtask reproduce`. Quick runs use fewer folds and noise draws than the \
         papers: compare full runs with the published numbers.\n\n",
    );
    if listed.is_empty() {
        s += "No experiment has written results here yet.\n";
        return s;
    }
    s += "| experiment | mode | finished (UTC) | wall time | report |\n|---|---|---|---|---|\n";
    for l in listed {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | [{f}/summary.md]({f}/summary.md) |",
            l.entry.experiment,
            l.entry.mode,
            l.entry.finished_utc,
            duration(l.entry.wall_seconds),
            f = l.folder
        );
    }
    for l in listed {
        let _ = write!(s, "\n## {}", l.entry.experiment);
        if !l.entry.title.is_empty() {
            let _ = write!(s, ": {}", l.entry.title);
        }
        s += "\n\n";
        if l.entry.headlines.is_empty() {
            s += "No headline numbers recorded; see the summary.\n";
        } else {
            s += "| | measured | published | difference |\n|---|---|---|---|\n";
            for h in &l.entry.headlines {
                let (published, difference) = match h.published {
                    Some(p) => (format!("{p:.4}"), format!("{:+.4}", h.measured - p)),
                    None => ("—".into(), "—".into()),
                };
                let _ = writeln!(
                    s,
                    "| {} | {:.4} | {published} | {difference} |",
                    h.what, h.measured
                );
            }
        }
        s += &figure_notes(l);
        let links: Vec<String> = std::iter::once(format!("[summary]({}/summary.md)", l.folder))
            .chain(
                l.figures
                    .iter()
                    .map(|f| format!("[{}]({}/{f})", f.trim_end_matches(".svg"), l.folder)),
            )
            .chain(
                l.beside
                    .iter()
                    .map(|(sub, what)| format!("[{sub} {what}]({}/{sub}/summary.md)", l.folder)),
            )
            .collect();
        let _ = writeln!(s, "\n{}", links.join(" · "));
    }
    s
}

/// The paragraph on an experiment's figures (Markdown): a quick run's are marked as such,
/// and each note says what was left out and why. Empty for a full run without notes.
fn figure_notes(l: &Listed) -> String {
    let mut s = String::new();
    if l.entry.is_quick() {
        let _ = writeln!(s, "\n**{QUICK_HEAD}** {QUICK_BODY}");
    }
    if !l.entry.figure_notes.is_empty() {
        s += "\n";
        for note in &l.entry.figure_notes {
            let _ = writeln!(s, "- {note}");
        }
    }
    s
}

/// What the index says above a quick run's figures.
const QUICK_HEAD: &str = "Quick run: these figures are not the paper's protocol.";
const QUICK_BODY: &str = "Each \
    says so in its subtitle, with how many fits stand behind a point; its bars are ± 1 \
    standard error. A figure a quick run cannot support is left out or drawn without the \
    published points, as noted here.";

fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        "—".into()
    } else if seconds < 120.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{:.1} min", seconds / 60.0)
    }
}

fn utc_now() -> String {
    utc(SystemTime::now())
}

/// `YYYY-MM-DD HH:MM` (UTC) of `time`.
fn utc(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        of_day / 3600,
        of_day % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn links_only_runs_kept_aside_after_the_results_and_names_unfinished_ones() {
        let dir = std::env::temp_dir().join(format!("xtask-index-beside-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let summary = |sub: &str, age_seconds: u64| {
            let folder = dir.join(sub);
            std::fs::create_dir_all(&folder).unwrap();
            let file = std::fs::File::create(folder.join("summary.md")).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(age_seconds))
                .unwrap();
        };
        summary("", 100);
        // A quick run set aside before the full results were written is stale.
        summary(keep::QUICK_FOLDER, 200);
        summary(keep::PARTIAL_FOLDER, 10);
        summary(super::super::UNFINISHED_FOLDER, 300);
        let linked = beside(&dir);
        assert_eq!(
            linked,
            [
                (keep::PARTIAL_FOLDER, "run, kept aside"),
                ("unfinished", "run: the datasets it finished")
            ]
        );
        summary(keep::QUICK_FOLDER, 0);
        assert_eq!(beside(&dir)[0], (keep::QUICK_FOLDER, "run, kept aside"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn utc_dates_match_known_instants() {
        let at = |s: u64| utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01 00:00");
        assert_eq!(at(951_782_400), "2000-02-29 00:00");
        assert_eq!(at(1_798_761_599), "2026-12-31 23:59");
    }
}
