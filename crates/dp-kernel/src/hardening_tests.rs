//! Issue 30's classes in this crate, each with a `rejects_*` test that fails on the code
//! before the fix, and property tests of every public constructor: Ok parameters the map
//! and the fit then run on quickly, or an error naming the value — never a panic or a hang.

use std::time::Duration;

use dp_erm::{ErmError, ErmParams, Examples, Features, Loss, Trainer};
use dp_noise::InsecureSeededRng;
use dp_test_support::within;
use proptest::prelude::*;

use crate::{
    FeatureMap, Kernel, KernelError, KernelModel, KernelParams, MAX_GAMMA, MAX_ORTHOGONAL_WORK,
    Sampling,
};

fn within_limit<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    within(Duration::from_secs(10), f)
}

/// A kernel between inputs of unequal lengths is an error naming both lengths (it used to
/// zip them and answer); so is a non-finite input.
#[test]
fn rejects_kernel_inputs_of_unequal_length() {
    for kernel in [
        Kernel::gaussian(0.5).unwrap(),
        Kernel::laplacian(0.5).unwrap(),
    ] {
        let err = kernel.evaluate(&[0.1, 0.2, 0.3], &[0.1, 0.2]).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(
                err,
                KernelError::Erm(ErmError::DimensionMismatch {
                    expected: 3,
                    found: 2,
                    ..
                })
            ),
            "{err:?}"
        );
        assert!(message.contains('3') && message.contains('2'), "{message}");
        assert!(kernel.evaluate(&[], &[0.0]).is_err());
        assert!(kernel.evaluate(&[f64::NAN], &[0.0]).is_err());
        assert!(kernel.evaluate(&[0.0], &[f64::INFINITY]).is_err());
        assert_eq!(kernel.evaluate(&[0.25], &[0.25]).unwrap(), 1.0);
        assert_eq!(kernel.evaluate(&[1e308], &[-1e308]).unwrap(), 0.0);
    }
    // A kernel built as the enum, bypassing the constructor, is checked too.
    assert!(
        Kernel::Gaussian { gamma: f64::NAN }
            .evaluate(&[0.0], &[0.0])
            .is_err()
    );
}

/// Widths whose frequencies overflow (Gaussian at f64::MAX, Laplacian at 1e307) were
/// accepted by `draw`, trained, and then refused on load. Now refused by the constructor
/// and by `draw` with the check a file's map passes; the largest accepted width trains,
/// saves and loads.
#[test]
fn rejects_kernel_widths_whose_models_could_not_be_loaded() {
    for gamma in [f64::MAX, 1e307, 1e201, MAX_GAMMA.next_up()] {
        for kernel in [Kernel::gaussian(gamma), Kernel::laplacian(gamma)] {
            let err = kernel.unwrap_err();
            assert!(
                matches!(err, KernelError::InvalidParameter { what: "kernel width gamma", value, .. } if value == gamma),
                "{err:?}"
            );
        }
        for raw in [Kernel::Gaussian { gamma }, Kernel::Laplacian { gamma }] {
            assert!(FeatureMap::draw_seeded(raw, Sampling::Standard, 3, 64, 1).is_err());
        }
    }
    let data = nested(40);
    for kernel in [
        Kernel::gaussian(MAX_GAMMA).unwrap(),
        Kernel::laplacian(MAX_GAMMA).unwrap(),
    ] {
        // Many draws, so that the Laplacian's heavy tail is reached.
        let map = FeatureMap::draw_seeded(kernel, Sampling::Standard, 2, 4096, 2).unwrap();
        assert!(map.frequencies().iter().all(|w| w.is_finite()));
        let model = KernelParams::new(
            map,
            ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0),
        )
        .fit(&data, &mut InsecureSeededRng::new(3))
        .unwrap()
        .into_model();
        let loaded = KernelModel::from_bytes(&model.to_bytes().unwrap()).unwrap();
        assert_eq!(loaded.linear().weights(), model.linear().weights());
    }
}

/// Orthogonal features cost D·d·min(D, d), which the D·d cap did not see: d = D = 4096 was
/// accepted and took about 120 s. Refused at once now, naming the work; the largest
/// accepted orthogonal draw finishes in seconds.
#[test]
fn rejects_orthogonal_draws_beyond_the_work_cap() {
    let kernel = Kernel::gaussian(1.0).unwrap();
    let err =
        within_limit(move || FeatureMap::draw_seeded(kernel, Sampling::Orthogonal, 4096, 4096, 1))
            .unwrap_err();
    assert!(
        matches!(
            err,
            KernelError::InvalidCount { value, .. } if value == 4096 * 4096 * 4096
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("68719476736"), "{err}");
    // Standard sampling of the same size is cheap and accepted.
    assert!(FeatureMap::draw_seeded(kernel, Sampling::Standard, 4096, 4096, 1).is_ok());
    // At the cap (1024³ = 2^30): accepted, and drawn in bounded time (a generous limit for
    // a shared machine; it takes about a second alone).
    assert_eq!(1024 * 1024 * 1024, MAX_ORTHOGONAL_WORK);
    let map = within(Duration::from_secs(30), move || {
        FeatureMap::draw_seeded(kernel, Sampling::Orthogonal, 1024, 1024, 1)
    })
    .unwrap();
    assert_eq!(map.output_features(), 1024);
}

/// The child half of `rejects_designs_the_memory_limit_cannot_hold`: run only under a
/// memory limit, by that test.
#[test]
#[ignore = "run by rejects_designs_the_memory_limit_cannot_hold under a memory limit"]
fn map_a_design_under_a_memory_limit() {
    if std::env::var_os("DP_KERNEL_MEMORY_LIMITED").is_none() {
        return;
    }
    // n × D = 2^10 × 2^20 = 2^30: exactly the accepted cap, 8 GiB of design.
    let map = FeatureMap::draw_seeded(
        Kernel::gaussian(1.0).unwrap(),
        Sampling::Standard,
        1,
        1 << 20,
        1,
    )
    .unwrap();
    let rows = Features::dense(1, vec![0.5; 1 << 10]).unwrap();
    let err = map.map(&rows).unwrap_err();
    assert!(
        matches!(err, ErmError::AllocationFailed { bytes, .. } if bytes == 8 << 30),
        "{err:?}"
    );
    println!("refused: {err}");
}

/// A design of the accepted size that the process cannot allocate (here under a 3 GiB
/// address-space limit) is refused with an error; it used to abort inside faer's
/// allocation. The mapping runs in a child process that carries the limit.
#[cfg(target_os = "linux")]
#[test]
fn rejects_designs_the_memory_limit_cannot_hold() {
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 3145728 && exec '{}' --exact hardening_tests::map_a_design_under_a_memory_limit --ignored --nocapture",
            exe.display()
        ))
        .env("DP_KERNEL_MEMORY_LIMITED", "1")
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("refused: could not allocate"),
        "status {:?}\n{stdout}\n{stderr}",
        output.status
    );
}

fn nested(n: usize) -> Examples {
    let mut values = Vec::with_capacity(2 * n);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let angle = i as f64;
        let radius = if i % 2 == 0 { 0.1 } else { 0.4 };
        values.extend([radius * angle.cos(), radius * angle.sin()]);
        labels.push(if i % 2 == 0 { 1.0 } else { -1.0 });
    }
    Examples::new(Features::dense(2, values).unwrap(), labels).unwrap()
}

fn hostile_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1e-3..1e3f64,
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE / 4.0),
        1 => Just(1e-300),
        1 => Just(1e300),
        1 => Just(MAX_GAMMA),
        1 => any::<f64>(),
    ]
}

/// Sizes: small ones (whose maps are drawn within the time limit on a loaded machine),
/// and `edge`, beyond a cap, which must be refused at once.
fn hostile_usize(edge: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..6,
        2 => 1usize..300,
        1 => Just(usize::MAX),
        1 => Just(edge),
        1 => any::<usize>(),
    ]
}

/// The message carries the value the error names.
fn assert_names_its_value(err: &KernelError) {
    let message = err.to_string();
    match err {
        KernelError::InvalidParameter { value, .. } => {
            assert!(message.contains(&format!("{value:?}")), "{message}")
        }
        KernelError::InvalidCount { value, .. } => {
            assert!(message.contains(&value.to_string()), "{message}")
        }
        KernelError::OrthogonalNeedsGaussian => {}
        KernelError::Erm(e) => assert!(!e.to_string().is_empty()),
    }
    // The short form: 1e308 is five characters, not 309 digits.
    assert!(message.len() < 400, "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every public constructor of this crate on hostile numbers and sizes.
    #[test]
    fn kernel_constructors_check_everything(
        gamma in hostile_f64(),
        laplacian in any::<bool>(),
        orthogonal in any::<bool>(),
        d in hostile_usize((1 << 24) + 1),
        big_d in hostile_usize((1 << 20) + 1),
        rows in hostile_usize((1 << 30) + 1),
        x in prop::collection::vec(hostile_f64(), 0..4),
        y in prop::collection::vec(hostile_f64(), 0..4),
        seed in any::<u64>(),
    ) {
        within_limit(move || {
            let kernel = if laplacian { Kernel::laplacian(gamma) } else { Kernel::gaussian(gamma) };
            let kernel = match kernel {
                Ok(kernel) => kernel,
                Err(err) => {
                    assert_names_its_value(&err);
                    // Built as the enum, the same width is refused wherever it is used.
                    let raw = if laplacian { Kernel::Laplacian { gamma } } else { Kernel::Gaussian { gamma } };
                    assert!(raw.evaluate(&[0.0], &[0.0]).is_err());
                    assert!(FeatureMap::draw_seeded(raw, Sampling::Standard, 1, 1, seed).is_err());
                    return;
                }
            };
            match kernel.evaluate(&x, &y) {
                Ok(k) => assert!((0.0..=1.0).contains(&k), "{k}"),
                Err(err) => assert_names_its_value(&err),
            }
            let sampling = if orthogonal { Sampling::Orthogonal } else { Sampling::Standard };
            let map = match FeatureMap::draw_seeded(kernel, sampling, d, big_d, seed) {
                Ok(map) => map,
                Err(err) => return assert_names_its_value(&err),
            };
            assert!(map.frequencies().iter().all(|w| w.is_finite()));
            let mapped = map.map_row(&vec![0.5; map.input_features()]).unwrap();
            assert!(dp_erm::within_unit_ball(&mapped));
            let params = KernelParams::new(map, ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0));
            if let Err(err) = params.check_shape(rows, d) {
                assert_names_its_value(&err);
            }
        });
    }
}

/// A float in a refusal was printed with `{}`: a width of 1e201 came back as 202 digits.
/// Now the shortest round-trip form, as dp-erm prints its floats.
#[test]
fn rejects_a_huge_width_naming_it_in_short_form() {
    let message = Kernel::gaussian(1e201).unwrap_err().to_string();
    assert!(message.contains("1e201"), "{message}");
    assert!(message.len() < 200, "{message}");
}
