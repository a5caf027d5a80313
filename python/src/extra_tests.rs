//! The selection, prediction and frame paths as plain Rust.

use dp_erm::Loss;
use dp_noise::add_rounding_up;
use dp_schema::Schema;

use crate::fit::{LinearSpec, Mechanism, Randomness, Regularization};
use crate::frame::{Encoded, FrameColumn, encode_columns};
use crate::predict::{Aggregation, EnsembleSpec, train_ensemble};
use crate::rows::{RowTransform, Rows};
use crate::select::{Candidates, Method, prepare, step_epsilon};

/// 400 rows in a disc of radius 1.8, label the sign of the first feature.
fn disc() -> (Vec<f64>, Vec<usize>) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for i in 0..400 {
        let a = i as f64 * 0.7;
        x.extend([1.8 * a.cos(), 1.8 * a.sin()]);
        y.push(usize::from(a.cos() >= 0.0));
    }
    (x, y)
}

fn spec(lambda: f64) -> LinearSpec {
    LinearSpec {
        loss: Loss::Logistic,
        mechanism: Mechanism::Objective {
            epsilon: 1.0,
            calibration: Default::default(),
        },
        regularization: Regularization::Fixed(lambda),
        feature_groups: None,
        tolerance: None,
        transform: RowTransform {
            norm_bound: 2.0,
            clip: false,
            intercept: Some(1.0),
        },
    }
}

const STOPPING: Method = Method::Stopping {
    stop_probability: 0.5,
    holdout_fraction: 0.1,
};

#[test]
fn random_stopping_gets_the_largest_step_whose_tripled_sum_fits() {
    for total in [1.0, 0.3, 0.9, 0.1, 2.0 / 3.0, 7.77, 1000.0] {
        let b = step_epsilon(total, STOPPING).unwrap();
        // dp-tune's end-to-end ε: (b + b) + b, each sum rounded up.
        let three = |b: f64| add_rounding_up(add_rounding_up(b, b), b);
        assert!(three(b) <= total, "{total}: 3·{b} = {}", three(b));
        assert!(
            three(b.next_up()) > total,
            "{total}: {b} is not the largest"
        );
    }
    assert_eq!(step_epsilon(0.8, Method::Split).unwrap(), 0.8);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1000.5] {
        assert!(step_epsilon(bad, Method::Split).is_err());
    }
}

#[test]
fn a_split_search_spends_the_total_and_releases_one_candidate() {
    let (x, y) = disc();
    let rows = Rows::Dense {
        values: &x,
        features: 2,
    };
    let candidates = Candidates::Linear(vec![spec(1e-3), spec(1e-2), spec(1e-1)]);
    let search = prepare(
        rows,
        &y,
        2,
        &candidates,
        0.7,
        Method::Split,
        Randomness::InsecureSeed(3),
    )
    .unwrap();
    let plan = search.plan().clone();
    assert_eq!(
        (plan.epsilon, plan.delta, plan.step_epsilon),
        (0.7, 0.0, 0.7)
    );
    assert_eq!((plan.training_rows, plan.held_out_rows), (100, 100));
    assert_eq!(plan.regularization, vec![1e-3, 1e-2, 1e-1]);
    let released = search.run().unwrap();
    assert!(released.index < 3 && released.noisy_mistakes.is_none());
    assert_eq!(released.models.info().epsilon_per_model, Some(0.7));

    let stopping = prepare(
        rows,
        &y,
        2,
        &candidates,
        0.9,
        STOPPING,
        Randomness::InsecureSeed(3),
    )
    .unwrap();
    let plan = stopping.plan();
    assert!(plan.epsilon <= 0.9 && plan.delta > 0.0 && plan.delta <= 1e-6);
    assert_eq!((plan.held_out_rows, plan.training_rows), (40, 360));
    assert!(stopping.run().unwrap().noisy_mistakes.is_some());
}

#[test]
fn searches_refuse_bad_grids_before_anything_is_drawn() {
    let (x, y) = disc();
    let rows = Rows::Dense {
        values: &x,
        features: 2,
    };
    let run = |candidates: &Candidates, classes: usize| {
        prepare(
            rows,
            &y,
            classes,
            candidates,
            1.0,
            Method::Split,
            Randomness::InsecureSeed(1),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
    };
    assert!(run(&Candidates::Linear(vec![]), 2).contains("no candidate"));
    assert!(run(&Candidates::Linear(vec![spec(0.1)]), 3).contains("binary models"));
    let mut other = spec(0.1);
    other.transform.norm_bound = 3.0;
    assert!(run(&Candidates::Linear(vec![spec(0.1), other]), 2).contains("candidate 1 scales"));
    let mut open = spec(0.1);
    open.mechanism = Mechanism::NonPrivate;
    assert!(run(&Candidates::Linear(vec![open]), 2).contains("not private"));
}

#[test]
fn an_ensemble_charges_each_answer_and_refuses_an_overspend_whole() {
    let (x, y) = disc();
    let rows = Rows::Dense {
        values: &x,
        features: 2,
    };
    let ensemble = EnsembleSpec {
        parts: 10,
        loss: Loss::Logistic,
        regularization: None,
        aggregation: Aggregation::SoftMajority,
        epsilon_per_query: 0.25,
        total_epsilon: 1.0,
        slot: None,
        transform: spec(0.1).transform,
    };
    let mut predictor = train_ensemble(rows, &y, &ensemble, Randomness::InsecureSeed(2)).unwrap();
    assert_eq!(predictor.status().queries_left, 4);
    let three = Rows::Dense {
        values: &x[..6],
        features: 2,
    };
    assert_eq!(predictor.answer(three).unwrap().len(), 3);
    let status = predictor.status();
    assert_eq!((status.spent, status.queries_left), (0.75, 1));
    let refused = predictor.answer(three).err().unwrap().to_string();
    assert!(refused.contains("nothing was answered"), "{refused}");
    assert_eq!(predictor.status().spent, 0.75);
}

#[test]
fn frame_columns_encode_by_the_schema_only() {
    let schema = Schema::from_toml(
        "version = 1\nrow_scaling = \"attributes\"\n\
         [[columns]]\nname = \"a\"\ntype = \"numeric\"\nlower = 0\nupper = 10\n\
         [[columns]]\nname = \"c\"\ntype = \"categorical\"\nlevels = [\"x\", \"y\"]\n\
         [[columns]]\nname = \"l\"\ntype = \"label\"\nclasses = [\"n\", \"p\"]\npositive = \"p\"\n",
        "test",
    )
    .unwrap();
    let encoder = dp_schema::Encoder::new(&schema);
    let columns = vec![
        Some(FrameColumn::Numbers(vec![Some(5.0), Some(20.0)])),
        Some(FrameColumn::Texts(vec![Some("y".into()), Some("x".into())])),
        Some(FrameColumn::Texts(vec![Some("p".into()), Some("n".into())])),
    ];
    let mut out = Encoded::default();
    encode_columns(&schema, &encoder, &columns, true, &mut out).unwrap();
    let s = (1.0 - 1e-12) / 2f64.sqrt();
    assert_eq!(out.rows, 2);
    assert_eq!(out.values, vec![0.5 * s, 0.0, s, s, s, 0.0]);
    assert_eq!(out.labels, vec![1.0, -1.0]);
    let short = vec![
        Some(FrameColumn::Numbers(vec![Some(5.0)])),
        columns[1]
            .as_ref()
            .map(|_| FrameColumn::Texts(vec![None, None])),
        None,
    ];
    let e = encode_columns(&schema, &encoder, &short, false, &mut Encoded::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("has 2 rows, the others 1"), "{e}");
}

/// A Gaussian refusal names δ beside ε, and never shows ρ as "epsilon".
#[test]
fn gaussian_refusals_name_delta_and_rho() {
    use crate::error::gaussian_refusal;
    use dp_erm::ErmError;
    let tiny = gaussian_refusal(
        ErmError::NoiseBeyondPrecision {
            epsilon: 1.0,
            noise_norm: f64::INFINITY,
        },
        1.0,
        1e-300,
    );
    let text = tiny.to_string();
    assert!(
        text.starts_with("(epsilon, delta) = (1.0, 1e-300)"),
        "{text}"
    );
    assert!(text.contains("larger delta"), "{text}");
    let rho = gaussian_refusal(
        ErmError::InvalidParameter {
            what: "epsilon",
            value: 0.25,
            requirement: "a target whose Gaussian noise scale settles (rho shown)",
        },
        2.0,
        1e-6,
    )
    .to_string();
    assert!(
        rho.contains("rho = 0.25") && !rho.contains("epsilon = 0.25"),
        "{rho}"
    );
    // Other refusals pass through unchanged.
    let other = gaussian_refusal(ErmError::EmptyData, 1.0, 1e-6);
    assert_eq!(other.to_string(), ErmError::EmptyData.to_string());
}
