//! dp-noise throughput. Target (issue #2): a d = 10^5 vector in ≤ 1.5 ms.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dp_benches::criterion_config;
use dp_noise::{
    DiscreteLaplace, ExponentialMechanism, GammaNormVector, InsecureSeededRng, Laplace,
    PermuteAndFlip,
};

fn vector_noise(c: &mut Criterion) {
    let mut group = c.benchmark_group("vector_noise");
    for dim in [10usize, 1_000, 100_000] {
        let noise = GammaNormVector::new(dim, 0.5).unwrap();
        let mut rng = InsecureSeededRng::new(1);
        let mut out = vec![0.0; dim];
        group.throughput(Throughput::Elements(dim as u64));
        group.bench_with_input(BenchmarkId::new("sample_into", dim), &dim, |b, _| {
            b.iter(|| noise.sample_into(black_box(&mut out), &mut rng).unwrap())
        });
    }
    group.finish();
}

fn scalar_noise(c: &mut Criterion) {
    let mut group = c.benchmark_group("scalar_noise");
    let mut rng = InsecureSeededRng::new(2);
    for scale in [1.0, 1e6] {
        let dist = DiscreteLaplace::with_scale_at_least(scale).unwrap();
        group.bench_with_input(
            BenchmarkId::new("discrete_laplace", scale),
            &scale,
            |b, _| b.iter(|| black_box(dist.sample(&mut rng))),
        );
    }
    let laplace = Laplace::new(0.1, 1.0).unwrap();
    group.bench_function("laplace_release/eps=0.1", |b| {
        b.iter(|| black_box(laplace.release(black_box(0.37), &mut rng).unwrap()))
    });
    group.finish();
}

fn selection(c: &mut Criterion) {
    let mut group = c.benchmark_group("selection");
    let mut rng = InsecureSeededRng::new(3);
    for candidates in [7usize, 100, 1_000] {
        // Utilities like mistake counts: spread out, one clear winner.
        let utilities: Vec<f64> = (0..candidates)
            .map(|i| -(((i * 7919) % candidates) as f64))
            .collect();
        let em = ExponentialMechanism::new(1.0, 1.0).unwrap();
        let pf = PermuteAndFlip::new(1.0, 1.0).unwrap();
        group.throughput(Throughput::Elements(candidates as u64));
        group.bench_with_input(
            BenchmarkId::new("exponential", candidates),
            &candidates,
            |b, _| b.iter(|| black_box(em.select(black_box(&utilities), &mut rng).unwrap())),
        );
        group.bench_with_input(
            BenchmarkId::new("permute_and_flip", candidates),
            &candidates,
            |b, _| b.iter(|| black_box(pf.select(black_box(&utilities), &mut rng).unwrap())),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = vector_noise, scalar_noise, selection
}
criterion_main!(benches);
