//! The compile-fail guarantee of `dp_noise::ReleaseRng`, checked from OUTSIDE the workspace
//! for every library crate a user can depend on.
//!
//! Inside the workspace, cargo unifies features across members, and xtask and the tests
//! turn on dp-noise's `insecure-seeded-rng` — so a leak (a library enabling that feature
//! for everyone who depends on it, as dp-audit once did) cannot be seen from here. This
//! test writes a small workspace of its own under the target directory: one package per
//! library crate, depending on it with default features (plus dp-erm and dp-noise, also
//! default), each package checked on its own (`cargo check -p`, so features are resolved
//! as a user's program would get them). Every package has one binary per (release path,
//! generator):
//!
//! - a seeded `InsecureSeededRng` (what the feature would let through) and a user-seeded
//!   `rand_chacha::ChaCha20Rng` must each fail with E0277 naming `ReleaseRng`;
//! - `DpRng` must compile — the same code, so the failures are not for another reason.
//!
//! The release paths: `ErmParams::fit` in every package, and one of the crate's own where
//! it has one. `cargo check --offline` into `<target>/compile-fail-seeded`, so the
//! dependencies are checked once and reused by later runs (the first run takes a few
//! minutes on 2 cores; later runs seconds).
//!
//! Mutation check (done by hand when this test was written): putting
//! `features = ["insecure-seeded-rng"]` back on dp-audit's dp-noise dependency makes the
//! `InsecureSeededRng` binaries of `user-of-dp-audit` compile, and this test fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library crates a user can depend on: (package name, path from the workspace root).
const LIBRARIES: [(&str, &str); 8] = [
    ("dp-noise", "crates/dp-noise"),
    ("dp-optim", "crates/dp-optim"),
    ("dp-erm", "crates/dp-erm"),
    ("dp-kernel", "crates/dp-kernel"),
    ("dp-tune", "crates/dp-tune"),
    ("dp-predict", "crates/dp-predict"),
    ("dp-audit", "crates/dp-audit"),
    ("dp-datasets", "datasets"),
];

/// Two rows, one feature, labels ±1: enough for every release path to type-check.
const DATA: &str = "
    let rows = vec![vec![(0, 0.5)], vec![(0, -0.5)]];
    let data = dp_erm::TrainingSet::builder(1).sparse_rows(rows).labels(vec![1.0, -1.0]).build().unwrap();
    let examples = dp_erm::Examples::new(dp_erm::Features::dense(1, vec![0.5, -0.5]).unwrap(), vec![1.0, -1.0]).unwrap();
    let params = dp_erm::ErmParams::objective_perturbation(dp_erm::Loss::Logistic, 0.1, 1.0);
    let _ = (&data, &examples, &params);
";

/// Release paths: (name, the crate that must provide it or "" for every crate, body).
/// `RNG` is replaced by the generator expression under test.
const PATHS: [(&str, &str, &str); 7] = [
    ("erm_fit", "", "let _ = params.fit(&data, RNG);"),
    (
        "laplace",
        "dp-noise",
        "let _ = dp_noise::Laplace::new(1.0, 1.0).unwrap().release(3.0, RNG);",
    ),
    (
        "kernel_fit",
        "dp-kernel",
        "let map = dp_kernel::FeatureMap::draw_seeded(dp_kernel::Kernel::gaussian(1.0).unwrap(), dp_kernel::Sampling::Standard, 1, 8, 1).unwrap();
         let _ = dp_kernel::KernelParams::objective_perturbation(map, dp_erm::Loss::Logistic, 0.1, 1.0).fit(&examples, RNG);",
    ),
    (
        "split_and_select",
        "dp-tune",
        "let _ = dp_tune::SplitAndSelect::new(vec![params.clone()], 1.0).unwrap().select(&examples, RNG);",
    ),
    (
        "threshold_learner",
        "dp-predict",
        "let line = dp_predict::LineData::new(vec![0.1, 0.7], vec![false, true]).unwrap();
         let _ = dp_predict::PrivateThresholdLearner::new(1.0, vec![0.0, 0.5]).unwrap().fit(&line, RNG);",
    ),
    // The generator an audit hands to its runs, passed to a release path.
    (
        "audit_runs",
        "dp-audit",
        "let _ = dp_audit::run_scores(4, 1, |seeded| { let _ = &seeded; params.fit(&data, RNG).map_or(0.0, |f| f.model().weights()[0]) });",
    ),
    (
        "canary_fit",
        "dp-audit",
        "let canary = dp_audit::label_flip_canary(9, 1).unwrap().training_set().unwrap();
         let _ = params.fit(&canary, RNG);",
    ),
];

/// Generators: (name, declaration, expression, must compile). For `audit_runs` the
/// seeded case uses the generator `run_scores` hands out.
const GENERATORS: [(&str, &str, &str, bool); 3] = [
    (
        "insecure_seeded",
        "let mut rng = dp_noise::InsecureSeededRng::new(7);",
        "&mut rng",
        false,
    ),
    (
        "chacha_seeded",
        "let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(7);",
        "&mut rng",
        false,
    ),
    (
        "secure",
        "let mut rng = dp_noise::DpRng::from_os_entropy().unwrap();",
        "&mut rng",
        true,
    ),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// Writes `contents` to `path` unless it already holds exactly that (so cargo's
/// fingerprints stay fresh between runs).
fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() == Some(contents) {
        return;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// The binaries of the package for `library`: name → (source, must compile).
fn binaries(library: &str) -> BTreeMap<String, (String, bool)> {
    let mut bins = BTreeMap::new();
    for (path, owner, body) in PATHS {
        if !(owner.is_empty() || owner == library) {
            continue;
        }
        for (generator, declaration, expression, compiles) in GENERATORS {
            let (declaration, expression) = match (path, compiles) {
                // Inside `run_scores` the seeded generator is the one it hands out.
                ("audit_runs", false) if generator == "insecure_seeded" => ("", "seeded"),
                _ => (declaration, expression),
            };
            let body = body.replace("RNG", expression);
            let source = if path == "audit_runs" {
                // The declaration goes inside the closure, beside its use.
                format!(
                    "fn main() {{\n{DATA}\n{}\n}}\n",
                    body.replace(
                        "let _ = &seeded;",
                        &format!("let _ = &seeded; {declaration}")
                    )
                )
            } else {
                format!("fn main() {{\n{DATA}\n{declaration}\n{body}\n}}\n")
            };
            bins.insert(format!("{path}_{generator}"), (source, compiles));
        }
    }
    bins
}

/// One compiler error: its code (if any) and rendered text.
#[derive(Debug)]
struct Diagnostic {
    code: Option<String>,
    rendered: String,
}

#[test]
fn seeded_generators_reach_no_release_path_of_any_library_crate() {
    let root = workspace_root();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("compile-fail-seeded");
    let fixture = target.join("fixture");
    let mut members = Vec::new();
    let mut expected: BTreeMap<(String, String), bool> = BTreeMap::new();
    for (library, path) in LIBRARIES {
        let package = format!("user-of-{library}");
        let mut dependencies = format!(
            "{library} = {{ path = {:?} }}\n",
            root.join(path).display().to_string()
        );
        for (dep, dep_path) in [("dp-erm", "crates/dp-erm"), ("dp-noise", "crates/dp-noise")] {
            if dep != library {
                dependencies += &format!(
                    "{dep} = {{ path = {:?} }}\n",
                    root.join(dep_path).display().to_string()
                );
            }
        }
        dependencies += "rand = \"0.10\"\nrand_chacha = \"0.10\"\n";
        write_if_changed(
            &fixture.join(&package).join("Cargo.toml"),
            &format!(
                "[package]\nname = {package:?}\nversion = \"0.0.0\"\nedition = \"2024\"\n\
                 publish = false\n\n[dependencies]\n{dependencies}"
            ),
        );
        for (name, (source, compiles)) in binaries(library) {
            write_if_changed(
                &fixture
                    .join(&package)
                    .join("src/bin")
                    .join(format!("{name}.rs")),
                &source,
            );
            expected.insert((package.clone(), name), compiles);
        }
        members.push(format!("{package:?}"));
    }
    // Its own workspace (not a member of ours), the same dependency versions as ours.
    write_if_changed(
        &fixture.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    );
    if !fixture.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), fixture.join("Cargo.lock")).unwrap();
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut errors: BTreeMap<(String, String), Vec<Diagnostic>> = BTreeMap::new();
    let mut compiled: Vec<(String, String)> = Vec::new();
    for (library, _) in LIBRARIES {
        let package = format!("user-of-{library}");
        let output = Command::new(&cargo)
            .args(["check", "--offline", "--keep-going", "--bins"])
            .args(["--message-format=json", "-p", &package])
            .arg("--manifest-path")
            .arg(fixture.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target.join("target"))
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .output()
            .expect("cargo runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        for line in stdout.lines() {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let target_name = message["target"]["name"].as_str().unwrap_or_default();
            let key = (package.clone(), target_name.to_owned());
            match message["reason"].as_str() {
                Some("compiler-artifact")
                    if message["package_id"]
                        .as_str()
                        .is_some_and(|id| id.contains(&package)) =>
                {
                    compiled.push(key)
                }
                Some("compiler-message") if message["message"]["level"] == "error" => {
                    errors.entry(key).or_default().push(Diagnostic {
                        code: message["message"]["code"]["code"]
                            .as_str()
                            .map(str::to_owned),
                        rendered: message["message"]["rendered"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    })
                }
                _ => {}
            }
        }
        // A dependency that fails to check (or cargo failing to run at all) would make
        // every binary "fail"; refuse to read that as success.
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("could not compile `dp-") && !stderr.contains("error: failed"),
            "{package}: a dependency failed, not the binaries:\n{stderr}"
        );
    }

    let mut failures = Vec::new();
    for ((package, bin), compiles) in &expected {
        let key = (package.clone(), bin.clone());
        let diagnostics = errors.get(&key).map(Vec::as_slice).unwrap_or_default();
        let did_compile = compiled.contains(&key);
        if *compiles {
            if !did_compile || !diagnostics.is_empty() {
                failures.push(format!(
                    "{package}/{bin} must compile with DpRng: {diagnostics:#?}"
                ));
            }
            continue;
        }
        let release_rng_refusal = diagnostics
            .iter()
            .any(|d| d.code.as_deref() == Some("E0277") && d.rendered.contains("ReleaseRng"));
        let other = diagnostics
            .iter()
            .filter(|d| d.code.is_some() && d.code.as_deref() != Some("E0277"))
            .count();
        if did_compile || !release_rng_refusal || other > 0 {
            failures.push(format!(
                "{package}/{bin} must fail with E0277 (ReleaseRng) and nothing else; \
                 compiled: {did_compile}, errors: {diagnostics:#?}"
            ));
        }
    }
    assert!(
        expected.values().filter(|c| !**c).count() >= 2 * LIBRARIES.len()
            && expected.values().filter(|c| **c).count() >= LIBRARIES.len(),
        "too few cases: {expected:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
