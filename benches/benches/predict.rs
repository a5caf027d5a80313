//! dp-predict: the latency of one private answer once the mechanism is trained (issue #12
//! targets): the exponential projected walk at n = 10^6 (≤ 1 µs), subsample-and-aggregate
//! with k = 100 logistic models of d = 105 (≤ 20 µs), stable ERM + Laplace at d = 105
//! (≤ 2 µs). Queries cycle through a precomputed list so that neither the branch
//! predictor nor the cache sees one repeated query.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dp_benches::{adult_shaped_rows, criterion_config};
use dp_erm::{ErmParams, Examples, Features, Loss};
use dp_noise::InsecureSeededRng;
use dp_predict::{
    Ensemble, LaplaceAverageEnsemble, LineData, PredictionInterface, PrivatePredictor,
    SoftMajorityEnsemble, StableErmParams, VoteKind, WalkParams,
};
use rand::RngExt;

fn walk(c: &mut Criterion) {
    let n = 1_000_000;
    let mut rng = InsecureSeededRng::new(1);
    let points: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
    let labels = points
        .iter()
        .map(|&x| (x >= 0.5) != (rng.random::<f64>() < 0.1))
        .collect();
    let data = LineData::new(points, labels).unwrap();
    let walk = WalkParams::new(1.0, 0.01).unwrap().fit(&data).unwrap();
    let queries: Vec<f64> = (0..4096).map(|_| rng.random::<f64>()).collect();
    let mut group = c.benchmark_group("predict_walk");
    let mut k = 0;
    group.bench_function(BenchmarkId::new("answer", n), |b| {
        b.iter(|| {
            k = (k + 1) % queries.len();
            walk.answer(black_box(queries[k]), &mut rng).unwrap()
        })
    });
    // Through the interface: the query check and the budget charge included.
    let mut interface = PredictionInterface::new(walk, 1e300).unwrap();
    group.bench_function(BenchmarkId::new("interface_answer", n), |b| {
        b.iter(|| {
            k = (k + 1) % queries.len();
            interface.answer(black_box(&queries[k]), &mut rng).unwrap()
        })
    });
    group.finish();
}

/// Adult-shaped rows (104 sparse features in the unit ball) scaled by 0.9, plus an
/// intercept feature 0.4: d = 105, norms ≤ 0.985.
fn adult_shaped_examples(rows: usize) -> (Examples, Vec<Vec<f64>>) {
    let (sparse, labels, dim) = adult_shaped_rows(rows, 3);
    let with_intercept: Vec<Vec<(usize, f64)>> = sparse
        .into_iter()
        .map(|row| {
            let mut row: Vec<(usize, f64)> = row.into_iter().map(|(j, v)| (j, 0.9 * v)).collect();
            row.push((dim, 0.4));
            row
        })
        .collect();
    let queries = with_intercept
        .iter()
        .take(4096)
        .map(|row| {
            let mut x = vec![0.0; dim + 1];
            row.iter().for_each(|&(j, v)| x[j] = v);
            x
        })
        .collect();
    let inputs = Features::sparse(dim + 1, with_intercept).unwrap();
    (Examples::new(inputs, labels).unwrap(), queries)
}

fn aggregate_and_stable(c: &mut Criterion) {
    let (data, queries) = adult_shaped_examples(30_000);
    let mut rng = InsecureSeededRng::new(4);
    let trainer = ErmParams::non_private(Loss::Logistic, 1e-2);
    let ensemble = Ensemble::train(&trainer, &data, 100, &mut rng).unwrap();
    let soft = SoftMajorityEnsemble::new(ensemble.clone(), 0.1).unwrap();
    let average = LaplaceAverageEnsemble::new(ensemble, 0.1, VoteKind::Sigmoid).unwrap();
    let stable = StableErmParams::new(Loss::Logistic, 1e-3, 0.1)
        .fit(&data, &mut rng)
        .unwrap();
    let mut group = c.benchmark_group("predict_query_d105");
    let mut k = 0;
    group.bench_function(BenchmarkId::new("soft_majority", "k100"), |b| {
        b.iter(|| {
            k = (k + 1) % queries.len();
            soft.answer_unchecked(black_box(&queries[k]), &mut rng)
                .unwrap()
        })
    });
    group.bench_function(BenchmarkId::new("laplace_average", "k100"), |b| {
        b.iter(|| {
            k = (k + 1) % queries.len();
            average
                .answer_unchecked(black_box(&queries[k]), &mut rng)
                .unwrap()
        })
    });
    group.bench_function(BenchmarkId::new("stable_erm_laplace", "n30000"), |b| {
        b.iter(|| {
            k = (k + 1) % queries.len();
            stable
                .answer_unchecked(black_box(&queries[k]), &mut rng)
                .unwrap()
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = walk, aggregate_and_stable
}
criterion_main!(benches);
