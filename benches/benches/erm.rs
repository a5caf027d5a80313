//! dp-erm: one private fit on Adult-shaped data (45,000 × 104 sparse rows in the unit
//! ball), each mechanism and loss, Λ = 1e-3, ε = 0.1. Target (issue #4): ≤ 20 ms per fit.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dp_benches::{adult_shaped_rows, criterion_config};
use dp_erm::{ErmParams, Loss, ObjectiveCalibration, TrainingSet};
use dp_noise::InsecureSeededRng;

fn private_fits(c: &mut Criterion) {
    let (rows, labels, dim) = adult_shaped_rows(45_000, 1);
    // The generator normalizes rows to norm 1, which rounding can leave a hair above 1.
    let data = TrainingSet::builder(dim)
        .sparse_rows(rows)
        .labels(labels)
        .clip_rows_to_unit_ball()
        .build()
        .unwrap();
    let (lambda, epsilon) = (1e-3, 0.1);
    let mut group = c.benchmark_group("adult_shaped_fit");
    for (loss_name, loss) in [
        ("logistic", Loss::Logistic),
        ("huber", Loss::huber(0.5).unwrap()),
    ] {
        for (mechanism, params) in [
            ("non_private", ErmParams::non_private(loss, lambda)),
            (
                "output",
                ErmParams::output_perturbation(loss, lambda, epsilon),
            ),
            (
                "objective",
                ErmParams::objective_perturbation(loss, lambda, epsilon),
            ),
            (
                "objective_cliff_free",
                ErmParams::objective_perturbation(loss, lambda, epsilon)
                    .objective_calibration(ObjectiveCalibration::CliffFree),
            ),
        ] {
            let mut rng = InsecureSeededRng::new(2);
            group.bench_function(BenchmarkId::new(mechanism, loss_name), |b| {
                b.iter(|| params.fit(black_box(&data), &mut rng).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = private_fits
}
criterion_main!(benches);
