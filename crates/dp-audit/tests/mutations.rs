//! The harness catches the classic calibration bugs of docs/src/reference/privacy-testing.md on the
//! workspace's own samplers, and passes the correct calibrations. The mutants are built
//! here, in the test, never offered by any public API.

use dp_audit::{Verdict, epsilon_lower_bound, judge, require_power, run_scores};
use dp_noise::{ExponentialMechanism, GammaNormVector, Laplace};

const RUNS: usize = 100_000;
const ALPHA: f64 = 1e-6;

/// `f(D) = 0`, `f(D') = 1` (sensitivity 1) released with one-dimensional Gamma-norm noise of
/// rate `beta`: ε = β for the correct calibration β = ε/Δ.
fn vector_audit(beta: f64, epsilon: f64) -> Verdict {
    require_power(RUNS, epsilon, ALPHA).unwrap();
    let noise = GammaNormVector::new(1, beta).unwrap();
    let first = run_scores(RUNS, 1, |rng| noise.sample(rng)[0]).unwrap();
    let second = run_scores(RUNS, 2, |rng| 1.0 + noise.sample(rng)[0]).unwrap();
    let bound = epsilon_lower_bound(&first, &second, ALPHA).unwrap();
    judge(&bound, epsilon, None).unwrap()
}

#[test]
fn vector_noise_passes_when_calibrated_and_fails_when_halved_or_swapped() {
    let epsilon = 0.5;
    assert_eq!(vector_audit(epsilon, epsilon), Verdict::Consistent);
    // Half the noise: β = 2ε/Δ (the missing factor 2).
    assert_eq!(vector_audit(2.0 * epsilon, epsilon), Verdict::ExceedsClaim);
    // Rate and scale swapped: β = Δ/ε = 2 instead of 0.5.
    assert_eq!(vector_audit(1.0 / epsilon, epsilon), Verdict::ExceedsClaim);
}

#[test]
fn laplace_passes_when_calibrated_and_fails_at_half_the_sensitivity() {
    let epsilon = 1.0;
    let verdict = |declared_sensitivity: f64| {
        let laplace = Laplace::new(epsilon, declared_sensitivity).unwrap();
        let first = run_scores(RUNS, 3, |rng| laplace.release(0.0, rng).unwrap()).unwrap();
        let second = run_scores(RUNS, 4, |rng| laplace.release(1.0, rng).unwrap()).unwrap();
        judge(
            &epsilon_lower_bound(&first, &second, ALPHA).unwrap(),
            epsilon,
            None,
        )
        .unwrap()
    };
    assert_eq!(verdict(1.0), Verdict::Consistent);
    assert_eq!(verdict(0.5), Verdict::ExceedsClaim);
}

#[test]
fn selection_passes_at_epsilon_and_fails_at_twice_epsilon() {
    let epsilon = 1.0;
    // Candidate 0 loses 1 in utility and the 49 others gain 1 (sensitivity 1): the pair on
    // which the exponential mechanism's loss approaches ε. Score: whether 0 was chosen.
    let mut on_first = vec![0.0; 50];
    on_first[0] = 1.0;
    let on_second: Vec<f64> = on_first.iter().map(|u| 1.0 - u).collect();
    let verdict = |used: f64| {
        let selector = ExponentialMechanism::new(used, 1.0).unwrap();
        let chose_zero = |utilities: &[f64], rng: &mut dp_noise::InsecureSeededRng| {
            f64::from(u8::from(selector.select(utilities, rng).unwrap() == 0))
        };
        let first = run_scores(RUNS, 5, |rng| chose_zero(&on_first, rng)).unwrap();
        let second = run_scores(RUNS, 6, |rng| chose_zero(&on_second, rng)).unwrap();
        let bound = epsilon_lower_bound(&first, &second, ALPHA).unwrap();
        (judge(&bound, epsilon, None).unwrap(), bound.epsilon)
    };
    let (correct, correct_bound) = verdict(epsilon);
    assert_eq!(correct, Verdict::Consistent, "{correct_bound}");
    let (doubled, doubled_bound) = verdict(2.0 * epsilon);
    assert_eq!(doubled, Verdict::ExceedsClaim, "{doubled_bound}");
}

/// Two-dimensional Gamma-norm noise with the norm drawn from `Gamma(shape, 1/β)` and a
/// uniform direction: shape d = 2 is the correct law; shape d − 1 = 1 (the classic
/// off-by-one) puts a singularity at the centre, which a "how close to the first centre"
/// score finds.
fn shaped_noise(shape: f64, beta: f64, rng: &mut dp_noise::InsecureSeededRng) -> [f64; 2] {
    use rand::RngExt;
    use rand_distr::{Distribution, Gamma};
    let norm = Gamma::new(shape, 1.0 / beta).unwrap().sample(rng);
    let angle = rng.random_range(0.0..std::f64::consts::TAU);
    [norm * angle.cos(), norm * angle.sin()]
}

#[test]
fn vector_noise_with_shape_d_minus_one_is_caught_at_small_d() {
    let epsilon = 0.5;
    let verdict = |shape: f64| {
        let closeness = |centre: f64, rng: &mut dp_noise::InsecureSeededRng| {
            let [x, y] = shaped_noise(shape, epsilon, rng);
            // Output centre + noise; score: minus its distance to the first centre, 0.
            -((centre + x).powi(2) + y * y).sqrt()
        };
        let first = run_scores(RUNS, 7, |rng| closeness(0.0, rng)).unwrap();
        let second = run_scores(RUNS, 8, |rng| closeness(1.0, rng)).unwrap();
        let bound = epsilon_lower_bound(&first, &second, ALPHA).unwrap();
        (judge(&bound, epsilon, None).unwrap(), bound.epsilon)
    };
    let (correct, correct_bound) = verdict(2.0);
    assert_eq!(correct, Verdict::Consistent, "{correct_bound}");
    let (off_by_one, off_by_one_bound) = verdict(1.0);
    assert_eq!(off_by_one, Verdict::ExceedsClaim, "{off_by_one_bound}");
}
