//! dp-optim: one logistic-loss solve to ‖∇F‖ ≤ 1e-10 from a cold start: Newton at every
//! size of `ROW_COUNTS` (μ = 1e-3), both solvers at 45,000 rows (μ = 1e-3, 1e-5), dense
//! random features with both. Target (issue #3): ≤ 20 ms on Adult-shaped data (45,000 ×
//! 104, 14 non-zeros per row).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dp_benches::{ROW_COUNTS, adult_shaped, configure_for_rows, criterion_config, random_features};
use dp_erm::Loss::Logistic;
use dp_optim::{GlmObjective, Lbfgs, Newton};

fn adult_shaped_solve(c: &mut Criterion) {
    let (rows, labels) = adult_shaped(45_000, 1);
    let mut group = c.benchmark_group("adult_shaped_45000x104");
    for mu in [1e-3, 1e-5] {
        let objective = GlmObjective::new(&rows, &labels, Logistic, mu).unwrap();
        group.bench_with_input(BenchmarkId::new("newton", mu), &mu, |b, _| {
            b.iter(|| {
                let solution = Newton::default()
                    .minimize(black_box(&objective), None)
                    .unwrap();
                assert!(solution.is_converged());
                solution
            })
        });
        group.bench_with_input(BenchmarkId::new("lbfgs", mu), &mu, |b, _| {
            b.iter(|| {
                let solution = Lbfgs::default()
                    .minimize(black_box(&objective), None)
                    .unwrap();
                assert!(solution.is_converged());
                solution
            })
        });
    }
    group.finish();
}

fn newton_by_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("adult_shaped_newton_mu1e-3");
    for rows in ROW_COUNTS {
        let (x, labels) = adult_shaped(rows, 1);
        let objective = GlmObjective::new(&x, &labels, Logistic, 1e-3).unwrap();
        configure_for_rows(&mut group, rows);
        group.bench_function(BenchmarkId::from_parameter(rows), |b| {
            b.iter(|| {
                Newton::default()
                    .minimize(black_box(&objective), None)
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn random_feature_solve(c: &mut Criterion) {
    let (rows, labels) = random_features(50_000, 2_000, 2);
    let mut group = c.benchmark_group("random_features_50000x2000");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    let mu = 1e-3;
    let objective = GlmObjective::new(&rows, &labels, Logistic, mu).unwrap();
    group.bench_with_input(BenchmarkId::new("newton", mu), &mu, |b, _| {
        b.iter(|| {
            Newton::default()
                .minimize(black_box(&objective), None)
                .unwrap()
        })
    });
    group.bench_with_input(BenchmarkId::new("lbfgs", mu), &mu, |b, _| {
        b.iter(|| {
            Lbfgs::default()
                .minimize(black_box(&objective), None)
                .unwrap()
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = adult_shaped_solve, newton_by_size, random_feature_solve
}
criterion_main!(benches);
