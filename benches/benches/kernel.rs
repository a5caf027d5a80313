//! dp-kernel: random Fourier feature mapping throughput (d = 5 as nested balls, D ∈ {100,
//! 1000, 5000}) and one private fit at the paper's scale (n = 216,000 nested-balls rows,
//! D = 1000, objective perturbation, Huber h = 0.5, Λ = 1e-4, ε = 0.1; issue #11 target:
//! ≤ 3 s on 2 cores).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dp_benches::criterion_config;
use dp_datasets::nested_balls;
use dp_erm::Loss;
use dp_kernel::{FeatureMap, Kernel, KernelParams, Sampling};
use dp_noise::InsecureSeededRng;

fn examples(n: usize) -> dp_erm::Examples {
    let data = nested_balls(n, 1).unwrap();
    data.examples(&(0..n).collect::<Vec<_>>()).unwrap()
}

fn mapping(c: &mut Criterion) {
    let n = 10_000;
    let data = examples(n);
    let mut group = c.benchmark_group("rff_map_d5");
    group.throughput(Throughput::Elements(n as u64));
    for big_d in [100, 1000, 5000] {
        for (name, sampling) in [
            ("standard", Sampling::Standard),
            ("orthogonal", Sampling::Orthogonal),
        ] {
            let map =
                FeatureMap::draw_seeded(Kernel::gaussian(0.5).unwrap(), sampling, 5, big_d, 1)
                    .unwrap();
            group.bench_function(BenchmarkId::new(format!("{name}_n{n}"), big_d), |b| {
                b.iter(|| map.map(black_box(data.inputs())).unwrap())
            });
        }
    }
    group.finish();
}

fn private_fit(c: &mut Criterion) {
    let n = 216_000;
    let data = examples(n);
    let map = FeatureMap::draw_seeded(
        Kernel::gaussian(0.5).unwrap(),
        Sampling::Orthogonal,
        5,
        1000,
        1,
    )
    .unwrap();
    let params = KernelParams::objective_perturbation(map, Loss::huber(0.5).unwrap(), 1e-4, 0.1);
    let mut rng = InsecureSeededRng::new(2);
    let mut group = c.benchmark_group("kernel_fit");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function(BenchmarkId::new("objective_huber_n216000", 1000), |b| {
        b.iter(|| params.fit(black_box(&data), &mut rng).unwrap())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = mapping, private_fit
}
criterion_main!(benches);
