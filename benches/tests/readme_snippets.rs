//! The Rust blocks of the README and of the user guide (`docs/src`) are compiled and run here,
//! so that they cannot drift from the API: each snippet below sits between `README snippet N`
//! markers inside a function that makes its inputs, and a test checks that every Rust block of
//! those documents is, character for character, one of these snippets or a whole example
//! program that `cargo test` builds (and every snippet is shown somewhere).

mod common;

use std::error::Error;
use std::path::Path;

use common::{documents, root};

type Outcome = Result<(), Box<dyn Error>>;

/// `n` points on an arc inside the unit ball, labelled by a fixed line: (x₀, x₁) pairs.
fn arc(n: usize) -> (Vec<[f64; 2]>, Vec<f64>) {
    let points: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            let angle = 0.37 * i as f64;
            [0.9 * angle.cos(), 0.9 * angle.sin()]
        })
        .collect();
    let labels = points
        .iter()
        .map(|p| if p[0] + 0.3 * p[1] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    (points, labels)
}

#[rustfmt::skip]
fn snippet_1() -> Outcome {
    let (points, labels) = arc(500);
    let features = 3;
    let rows: Vec<Vec<(usize, f64)>> = points
        .iter()
        .map(|p| vec![(0, p[0]), (2, 1.5 * p[1])])
        .collect();
    // README snippet 1 begins
    use dp_erm::{ErmParams, Loss, TrainingSet};
    use dp_noise::DpRng;

    let data = TrainingSet::builder(features)
        .sparse_rows(rows)              // (column, value) pairs
        .labels(labels)                 // each −1 or +1
        .clip_rows_to_unit_ball()       // opt-in; without it, a row of norm > 1 is an error
        .build()?;
    let fit = ErmParams::objective_perturbation(Loss::huber(0.5)?, 1e-3, 0.1)
        .fit(&data, &mut DpRng::from_os_entropy()?)?;
    println!("ε spent: {:?}", fit.epsilon());
    fit.model().save("model.dperm")?;

    // No Λ to choose: the loss and Λ from the public n, d and ε alone (no privacy spent on
    // the choice; see "What accuracy to expect at each ε" in choosing/utility.md).
    let fit = ErmParams::recommended(data.len(), data.features(), 0.1)?
        .fit(&data, &mut DpRng::from_os_entropy()?)?;
    // README snippet 1 ends
    assert_eq!(fit.epsilon(), Some(0.1));
    assert!(Path::new("model.dperm").is_file());
    Ok(())
}

#[rustfmt::skip]
fn snippet_2() -> Outcome {
    let (points, labels) = arc(300);
    let five = |p: &[f64; 2]| [p[0], p[1], p[0] * p[1], 0.5, -0.25];
    let raw_values: Vec<f64> = points.iter().flat_map(five).collect();
    let new_rows: Vec<f64> = points[..10].iter().flat_map(five).collect();
    // README snippet 2 begins
    use dp_erm::{Classifier, Examples, Features, Loss}; // Classifier: predictions on batches
    use dp_kernel::{FeatureMap, Kernel, KernelParams, Sampling};
    use dp_noise::DpRng;

    let data = Examples::new(Features::dense(5, raw_values)?, labels)?; // any finite values
    let map = FeatureMap::draw_seeded(Kernel::gaussian(0.5)?, Sampling::Orthogonal, 5, 200, 7)?;
    let fit = KernelParams::objective_perturbation(map, Loss::huber(0.5)?, 1e-4, 0.1)
        .fit(&data, &mut DpRng::from_os_entropy()?)?;
    let labels = fit.model().predictions(&Features::dense(5, new_rows)?)?; // batches, in parallel
    fit.model().save("kernel.dpm")?; // the map travels with the weights
    // README snippet 2 ends
    assert_eq!(labels.len(), 10);
    assert!(labels.iter().all(|&y| y == 1.0 || y == -1.0));
    Ok(())
}

#[rustfmt::skip]
fn snippet_3() -> Outcome {
    let points: Vec<f64> = (0..200).map(|i| f64::from(i) / 200.0).collect();
    let labels: Vec<bool> = points.iter().map(|&x| x > 0.6).collect();
    // README snippet 3 begins
    use dp_noise::DpRng;
    use dp_predict::{LineData, PredictionInterface, WalkParams};

    let walk = WalkParams::new(1.0, 0.05)?.fit(&LineData::new(points, labels)?)?; // ε = 1 per answer
    let mut interface = PredictionInterface::new(walk, 10.0)?;                    // ten answers
    let label = interface.answer(&0.8, &mut DpRng::from_os_entropy()?)?;
    // README snippet 3 ends
    let _: bool = label;
    Ok(())
}

#[rustfmt::skip]
fn snippet_4() -> Outcome {
    let (points, labels) = arc(800);
    let values: Vec<f64> = points.iter().flatten().copied().collect();
    let data = dp_erm::Examples::new(dp_erm::Features::dense(2, values)?, labels)?;
    let mut budget = dp_noise::PrivacyBudget::new(2.0)?;
    // README snippet 4 begins
    use dp_erm::{ErmParams, Loss};
    use dp_noise::{DpRng, PrivacyBudget};
    use dp_tune::SplitAndSelect;

    let candidates: Vec<ErmParams> = [1e-1, 1e-2, 1e-3]
        .into_iter()
        .map(|lambda| ErmParams::objective_perturbation(Loss::Logistic, lambda, 1.0))
        .collect();
    let chosen = SplitAndSelect::new(candidates, 1.0)?            // selection at ε = 1
        .select_charging(&data, &mut budget, &mut DpRng::from_os_entropy()?)?; // charges ε = 1 in all
    // README snippet 4 ends
    let _: &PrivacyBudget = &budget;
    assert!(chosen.index() < 3);
    assert_eq!(budget.spent(), 1.0);
    Ok(())
}

/// The Rust code blocks of one Markdown file, in order, with mdBook's `{{#include path}}`
/// lines replaced by the file they name (relative to the page).
fn rust_blocks(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(block), _) => match line
                .trim()
                .strip_prefix("{{#include ")
                .and_then(|rest| rest.strip_suffix("}}"))
            {
                Some(included) => {
                    let path = page.parent().unwrap().join(included);
                    block.push_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
                        panic!("{}: cannot include {}: {e}", page.display(), path.display())
                    }));
                }
                None => {
                    block.push_str(line);
                    block.push('\n');
                }
            },
            (None, _) => {}
        }
    }
    blocks
}

/// The text between this file's markers of snippet `n`, one indentation level removed.
fn marked_snippet(n: usize) -> String {
    let source = include_str!("readme_snippets.rs");
    let begin = format!("// README snippet {n} begins\n");
    let end = format!("    // README snippet {n} ends");
    let start = source.find(&begin).unwrap() + begin.len();
    let length = source[start..].find(&end).unwrap();
    source[start..start + length]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Whole programs the documents may show: examples that `cargo test` builds.
const EXAMPLES: [&str; 2] = [
    "crates/dp-erm/examples/quick_start.rs",
    "crates/dp-noise/examples/private_release.rs",
];

/// What a block may be: a snippet run here, or an example program from its first `use` on.
fn allowed_blocks() -> Vec<(String, String)> {
    let mut allowed: Vec<(String, String)> = (1..=4)
        .map(|n| (format!("snippet {n}"), marked_snippet(n)))
        .collect();
    for example in EXAMPLES {
        let text = std::fs::read_to_string(root().join(example)).unwrap();
        let first_use = if text.starts_with("use ") {
            0
        } else {
            text.find("\nuse ").unwrap() + 1
        };
        let program = text[first_use..].to_string();
        allowed.push((example.to_string(), program));
    }
    allowed
}

#[test]
fn every_rust_block_of_the_readme_and_the_guide_is_compiled_here() {
    let allowed = allowed_blocks();
    let mut shown = vec![false; allowed.len()];
    let mut blocks = 0;
    for page in documents() {
        for (i, block) in rust_blocks(&page).iter().enumerate() {
            blocks += 1;
            match allowed.iter().position(|(_, text)| text == block) {
                Some(k) => shown[k] = true,
                None => panic!(
                    "{} block {} is neither a snippet of readme_snippets.rs nor an example:\n{block}",
                    page.display(),
                    i + 1
                ),
            }
        }
    }
    assert!(blocks >= allowed.len(), "only {blocks} Rust blocks found");
    for ((name, _), seen) in allowed.iter().zip(shown) {
        assert!(seen, "{name} is shown in no document");
    }
}

#[test]
fn the_readme_snippets_run() {
    // The snippets save models under relative names: run them in a scratch folder.
    let scratch = std::env::temp_dir().join(format!("dp-readme-snippets-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    std::env::set_current_dir(&scratch).unwrap();
    for (n, snippet) in [snippet_1, snippet_2, snippet_3, snippet_4]
        .iter()
        .enumerate()
    {
        if let Err(e) = snippet() {
            panic!("README snippet {} failed: {e}", n + 1);
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}
