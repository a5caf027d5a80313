//! dp-optim: one logistic-loss solve to ‖∇F‖ ≤ 1e-10 from a cold start: Newton at every
//! size of `ROW_COUNTS` (μ = 1e-3), both solvers at 45,000 rows (μ = 1e-3, 1e-5), dense
//! random features with both. Target (issue #3): ≤ 20 ms on Adult-shaped data (45,000 ×
//! 104, 14 non-zeros per row). And the passes a Newton step makes over sparse rows, one at
//! a time (`X w`, `Xᵀv`, the weighted Gram of the Hessian), on Adult-shaped rows and on
//! the real Adult training rows when the data are there.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dp_benches::{ROW_COUNTS, adult_shaped, configure_for_rows, criterion_config, random_features};
use dp_erm::Loss::Logistic;
use dp_optim::{CsrRows, Design, GlmObjective, Lbfgs, Newton};

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

/// One of each pass over `x` (n × d), with fixed inputs built outside the timed closures.
fn passes(c: &mut Criterion, name: &str, x: &dyn Design) {
    let (n, d) = (x.rows(), x.cols());
    let w: Vec<f64> = (0..d).map(|j| (j as f64 * 0.37).sin()).collect();
    // Hessian weights as a logistic fit has them: positive, at most 1/(4n).
    let v: Vec<f64> = (0..n)
        .map(|i| (0.5 + 0.5 * (i as f64 * 0.11).cos()) * 0.25 / n as f64)
        .collect();
    let mut margins = vec![0.0; n];
    let mut gradient = vec![0.0; d];
    let mut hessian = faer::Mat::<f64>::zeros(d, d);
    let mut group = c.benchmark_group(name);
    group.bench_function("multiply", |b| {
        b.iter(|| x.multiply(black_box(&w), &mut margins))
    });
    group.bench_function("multiply_transpose", |b| {
        b.iter(|| x.multiply_transpose(black_box(&v), &mut gradient))
    });
    group.bench_function("weighted_gram", |b| {
        b.iter(|| {
            hessian.fill(0.0);
            x.add_weighted_gram_lower(black_box(&v), hessian.as_mut())
        })
    });
    group.finish();
}

fn sparse_passes(c: &mut Criterion) {
    let (rows, _): (CsrRows, _) = adult_shaped(45_000, 1);
    passes(c, "sparse_passes_adult_shaped_45000x104", &rows);
    if let Some((train, _)) = dp_benches::real_adult() {
        passes(c, "sparse_passes_real_adult_n30162", train.design());
    }
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = adult_shaped_solve, newton_by_size, random_feature_solve, sparse_passes
}
criterion_main!(benches);
