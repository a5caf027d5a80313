//! The README and the user guide (`docs/src`) hold together: every relative link names a file
//! of the project (and, with `#anchor`, a heading of that file), every page of the guide is in
//! its table of contents, and no file of the project points outside it.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::{documents, markdown_under, root};

/// The targets of inline links `[text](target)` outside code blocks and code spans.
fn links(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Drop code spans, whose brackets are code, not links.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            match after.find(')') {
                Some(end) => {
                    targets.push(after[..end].to_string());
                    rest = &after[end..];
                }
                None => break,
            }
        }
    }
    targets
}

/// GitHub/mdBook-style anchors of a Markdown file's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_relative_link_of_the_readme_and_the_guide_resolves() {
    let pages = documents();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !linked.exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap_or_default());
                if !headings.contains(anchor) {
                    broken.push(format!("{}: {target} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_guide_is_in_its_table_of_contents() {
    let source = root().join("docs/src");
    let summary = std::fs::read_to_string(source.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|target| source.join(target))
        .collect();
    let missing: Vec<String> = markdown_under(&source)
        .into_iter()
        .filter(|page| !page.ends_with("SUMMARY.md") && !listed.contains(page))
        .map(|page| page.display().to_string())
        .collect();
    assert!(missing.is_empty(), "pages not in SUMMARY.md: {missing:?}");
}

/// Files of the project that are read by people: sources, manifests, documents.
fn project_text_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !name.starts_with('.') && !["target", "data", "results"].contains(&name.as_str())
                {
                    folders.push(path);
                }
            } else if ["rs", "md", "toml", "py"]
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e))
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn no_file_of_the_project_refers_to_documents_outside_it() {
    // Assembled so that this file does not match itself.
    let outside = [
        ["ALGORITHMS", ".md"].concat(),
        ["PRIVACY_TESTING", ".md"].concat(),
        ["EXPERIMENTS", ".md"].concat(),
        ["DEVELOPERS", ".md"].concat(),
        ["shared/", "spec"].concat(),
    ];
    let mut offending = Vec::new();
    for file in project_text_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for name in &outside {
            if text.contains(name.as_str()) {
                offending.push(format!("{}: {name}", file.display()));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "references to files outside the project:\n{}",
        offending.join("\n")
    );
}
