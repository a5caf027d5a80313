//! dp-erm: private fits per mechanism and loss (Λ = 1e-3, ε = 0.1) on Adult-shaped data
//! (104 sparse features, 14 per row, in the unit ball), at 45,000 rows for every mechanism
//! and at every size of `ROW_COUNTS` for objective perturbation; the same on the real Adult
//! training rows when the data files are there; and batch scoring (prediction queries of
//! a released linear model) at every size. Target (issue #4): ≤ 20 ms per fit at 45,000.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dp_benches::{
    ROW_COUNTS, adult_shaped_training_set, configure_for_rows, criterion_config, real_adult,
};
use dp_erm::{Classifier, ErmParams, Loss, ObjectiveCalibration, TrainingSet};
use dp_noise::InsecureSeededRng;

const LAMBDA: f64 = 1e-3;
const EPSILON: f64 = 0.1;

/// Every mechanism with `loss`, named for the benchmark id.
fn mechanisms(loss: Loss) -> [(&'static str, ErmParams); 4] {
    [
        ("non_private", ErmParams::non_private(loss, LAMBDA)),
        (
            "output",
            ErmParams::output_perturbation(loss, LAMBDA, EPSILON),
        ),
        (
            "objective_cms11",
            ErmParams::objective_perturbation(loss, LAMBDA, EPSILON)
                .objective_calibration(ObjectiveCalibration::Cms11),
        ),
        (
            "objective_cliff_free",
            ErmParams::objective_perturbation(loss, LAMBDA, EPSILON)
                .objective_calibration(ObjectiveCalibration::CliffFree),
        ),
    ]
}

fn losses() -> [(&'static str, Loss); 2] {
    [
        ("logistic", Loss::Logistic),
        ("huber", Loss::huber(0.5).expect("valid width")),
    ]
}

fn bench_fits(c: &mut Criterion, group_name: &str, data: &TrainingSet) {
    let mut group = c.benchmark_group(group_name);
    configure_for_rows(&mut group, data.len());
    for (loss_name, loss) in losses() {
        for (mechanism, params) in mechanisms(loss) {
            let mut rng = InsecureSeededRng::new(2);
            group.bench_function(BenchmarkId::new(mechanism, loss_name), |b| {
                b.iter(|| params.fit(black_box(data), &mut rng).unwrap())
            });
        }
    }
    group.finish();
}

fn every_mechanism(c: &mut Criterion) {
    let data = adult_shaped_training_set(45_000, 1);
    bench_fits(c, "adult_shaped_fit_n45000", &data);
}

fn objective_by_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("adult_shaped_objective_logistic");
    for rows in ROW_COUNTS {
        let data = adult_shaped_training_set(rows, 1);
        configure_for_rows(&mut group, rows);
        let params = ErmParams::objective_perturbation(Loss::Logistic, LAMBDA, EPSILON);
        let mut rng = InsecureSeededRng::new(2);
        group.throughput(criterion::Throughput::Elements(rows as u64));
        group.bench_with_input(BenchmarkId::from_parameter(rows), &data, |b, data| {
            b.iter(|| params.fit(black_box(data), &mut rng).unwrap())
        });
    }
    group.finish();
}

/// The real Adult training rows (30,162 × 105), as `cargo xtask bench peers` fits them.
fn real_adult_fits(c: &mut Criterion) {
    let Some((train, _)) = real_adult() else {
        return;
    };
    bench_fits(c, "real_adult_fit_n30162", &train);
}

fn scoring(c: &mut Criterion) {
    let model = ErmParams::non_private(Loss::Logistic, LAMBDA)
        .fit(
            &adult_shaped_training_set(10_000, 5),
            &mut InsecureSeededRng::new(3),
        )
        .unwrap()
        .into_model();
    let mut group = c.benchmark_group("linear_model_predictions");
    for rows in ROW_COUNTS {
        let queries = adult_shaped_training_set(rows, 6).to_examples();
        configure_for_rows(&mut group, rows);
        group.throughput(Throughput::Elements(rows as u64));
        group.bench_with_input(BenchmarkId::from_parameter(rows), &queries, |b, q| {
            b.iter(|| model.predictions(black_box(q.inputs())).unwrap())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = every_mechanism, objective_by_size, real_adult_fits, scoring
}
criterion_main!(benches);
