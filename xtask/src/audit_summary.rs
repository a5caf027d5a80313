//! `summary.md` in an audit folder: every audit report there (mechanism audits and
//! membership inference) on one page, with its figures. Rewritten after each audit, from
//! the reports on disk, so that `reproduce`'s index (which lists every folder with a
//! `summary.md`) shows the audits beside the experiments.

use std::fmt::Write as _;

use crate::safe_write::{OutDir, PathError};

const SUMMARY: &str = "summary.md";

/// Rewrites `summary.md` in `out` from the audit reports (`audit_*.md`, `mia_*.md`) in it.
pub fn regenerate(out: &OutDir) -> Result<(), PathError> {
    let dir = out.path();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(PathError::on("list", dir))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let reports: Vec<&String> = names
        .iter()
        .filter(|n| (n.starts_with("audit_") || n.starts_with("mia_")) && n.ends_with(".md"))
        .collect();
    let mut page = String::from(
        "# Privacy audits\n\nEvery audit report in this folder (written by `cargo xtask audit`), \
         each below in full with its figures.\n",
    );
    for report in reports {
        let text = std::fs::read_to_string(dir.join(report))
            .map_err(PathError::on("read", &dir.join(report)))?;
        let stem = report.trim_end_matches(".md");
        let _ = write!(page, "\n---\n\n[{report}]({report})\n\n");
        page += &demoted(&text);
        for figure in names
            .iter()
            .filter(|n| n.starts_with(stem) && n.ends_with(".svg"))
        {
            let _ = write!(page, "\n![{figure}]({figure})\n");
        }
    }
    out.write(SUMMARY, page)
}

/// `markdown` with every ATX heading one level lower, so that each report sits under the
/// page's title.
fn demoted(markdown: &str) -> String {
    let mut s = String::with_capacity(markdown.len() + 16);
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            s.push('#');
        }
        s += line;
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_report_with_its_figures_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("audit-summary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mia_adult.md"), "# MIA on adult\n\ntext\n").unwrap();
        std::fs::write(dir.join("mia_adult_roc.svg"), "<svg/>").unwrap();
        std::fs::write(
            dir.join("audit_output-huber.md"),
            "# Audit\n```\n# not a heading\n```\n",
        )
        .unwrap();
        std::fs::write(dir.join("notes.md"), "# unrelated").unwrap();
        let out = OutDir::prepare(&dir, &[SUMMARY]).unwrap();
        regenerate(&out).unwrap();
        let page = std::fs::read_to_string(dir.join(SUMMARY)).unwrap();
        assert!(page.contains("## MIA on adult"), "{page}");
        assert!(page.contains("## Audit"), "{page}");
        assert!(page.contains("\n# not a heading\n"), "{page}");
        assert!(
            page.contains("![mia_adult_roc.svg](mia_adult_roc.svg)"),
            "{page}"
        );
        assert!(!page.contains("unrelated"), "{page}");
        assert!(page.find("audit_output").unwrap() < page.find("mia_adult.md").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
