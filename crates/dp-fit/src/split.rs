//! How one fit's (ε, δ) is shared among the binary models of a one-vs-rest classifier:
//! evenly, by basic composition, each share rounded down so that the shares never add up
//! to more than the whole.

use dp_erm::OneVsRest;

/// Each of `models` models' ε out of `epsilon` (dp-erm's one-vs-rest share: dp-noise's even
/// share, rounded down); `None` when ε is too small to split (a share would round to 0), not
/// a valid ε, or `models` is beyond dp-erm's class ceiling.
pub fn per_model_epsilon(epsilon: f64, models: usize) -> Option<f64> {
    if models == 1 {
        return Some(epsilon);
    }
    OneVsRest::epsilon_per_class(epsilon, models).ok()
}

/// Each of `models` models' δ out of `delta`: fl(δ/K) is within half an ulp of δ/K, so the
/// next double down is at most δ/K.
pub fn per_model_delta(delta: f64, models: usize) -> f64 {
    if models == 1 || delta == 0.0 {
        delta
    } else {
        (delta / models as f64).next_down()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::ExactSum;

    #[test]
    fn shares_never_add_up_to_more_than_the_whole() {
        for (epsilon, delta) in [(1.0, 1e-6), (0.3, 1e-5), (7.0, 3e-7), (1e-3, 0.0)] {
            for models in [1, 2, 3, 7, 10, 26] {
                let e = per_model_epsilon(epsilon, models).unwrap();
                let d = per_model_delta(delta, models);
                let (mut es, mut ds) = (ExactSum::new(), ExactSum::new());
                (0..models).for_each(|_| {
                    es.add(e);
                    ds.add(d);
                });
                assert!(es <= ExactSum::of(epsilon), "{epsilon} / {models}");
                assert!(ds <= ExactSum::of(delta), "{delta} / {models}");
                assert!(e > 0.0 && e >= epsilon / models as f64 * (1.0 - 1e-12));
            }
        }
        assert_eq!(per_model_epsilon(f64::NAN, 3), None);
    }
}
