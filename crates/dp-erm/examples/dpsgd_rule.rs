//! A data-independent choice of DP-SGD's batch size, epochs and learning rate for each ε,
//! fitted on synthetic data only (`dp_datasets::tabular_mixed`, four fixed shapes around
//! Adult's size: 30,000 training rows, 10,000 test rows), then applied once, end to end,
//! to Adult's official split (train on `adult.data`, test on `adult.test`): nothing is
//! chosen on Adult.
//!
//! The rule is, per ε, the configuration of a small grid with the least mean regret
//! (test error minus the best configuration's, per problem) over the synthetic problems.
//! Logistic loss, C = 1, iterate averaging, no intercept, δ = 10⁻⁵, replace-one; one draw
//! per synthetic cell, two on Adult.
//!
//! `DP_ML_DATA_DIR=/path/to/data cargo run --release -p dp-erm --example dpsgd_rule`
//!
//! Seeded generators: the numbers are for measurement, nothing here is private.

use dp_datasets::{DataDir, Dataset, Scaling, TabularShape, load_adult_split, tabular_mixed};
use dp_erm::{Classifier, DpSgd, DpSgdConfig, Examples, Loss};
use dp_noise::InsecureSeededRng;

const DELTA: f64 = 1e-5;
const EPSILONS: [f64; 5] = [0.1, 0.2, 0.5, 1.0, 2.0];
const BATCHES: [usize; 2] = [1024, 4096];
const EPOCHS: [usize; 2] = [5, 20];
const RATES: [f64; 3] = [2.0, 8.0, 32.0];

fn shapes() -> Vec<TabularShape> {
    let shape = |levels: Vec<usize>, numeric, skew, sharpness, positive_share| TabularShape {
        levels,
        numeric,
        skew,
        sharpness,
        positive_share,
    };
    vec![
        shape(vec![9, 16, 7, 15, 6, 5, 2, 41], 6, 1.0, 2.0, 0.25),
        shape(vec![3, 12, 30, 4, 8], 4, 0.5, 4.0, 0.4),
        shape(vec![20, 20, 6, 2, 10, 3, 25, 5, 7, 2], 8, 1.5, 1.0, 0.15),
        shape(vec![5, 5, 5, 40], 2, 0.2, 8.0, 0.3),
    ]
}

fn examples(data: &Dataset) -> Result<Examples, Box<dyn std::error::Error>> {
    let all: Vec<usize> = (0..data.len()).collect();
    Ok(data.training_set(&all)?.to_examples())
}

/// Mean test error of DP-SGD with one configuration over `repeats` draws (1 if it diverged).
fn error(
    train: &Examples,
    test: &Examples,
    epsilon: f64,
    (batch, epochs, rate): (usize, usize, f64),
    rng: &mut InsecureSeededRng,
    repeats: u64,
) -> Result<f64, Box<dyn std::error::Error>> {
    let n = train.len();
    let steps = (epochs * n).div_ceil(batch) as u64;
    let mut config = DpSgdConfig::new(Loss::Logistic, batch as f64 / n as f64, steps, rate, DELTA);
    config.average_iterates = true;
    let sgd = DpSgd::for_target(config, epsilon)?;
    let mut total = 0.0;
    for _ in 0..repeats {
        total += match sgd.fit(train, rng) {
            Ok(model) => model.mistakes(test)? as f64 / test.len() as f64,
            Err(_) => 1.0,
        };
    }
    Ok(total / repeats as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut grid = Vec::new();
    for batch in BATCHES {
        for epochs in EPOCHS {
            for rate in RATES {
                grid.push((batch, epochs, rate));
            }
        }
    }
    let mut rng = InsecureSeededRng::new(7);
    let problems: Vec<(Examples, Examples)> = shapes()
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let data = tabular_mixed(40_000, shape, 100 + i as u64)?;
            let train: Vec<usize> = (0..30_000).collect();
            let test: Vec<usize> = (30_000..40_000).collect();
            let part = |rows: &[usize]| -> Result<Examples, Box<dyn std::error::Error>> {
                Ok(data.training_set(rows)?.to_examples())
            };
            Ok((part(&train)?, part(&test)?))
        })
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    let (adult_train, adult_test) =
        load_adult_split(&DataDir::resolve(None), Scaling::PaperColumnMax)?;
    let (adult_train, adult_test) = (examples(&adult_train)?, examples(&adult_test)?);
    println!("| ε | rule: batch, epochs, η | mean regret (synthetic) | Adult official split |");
    println!("|---|---|---|---|");
    for epsilon in EPSILONS {
        let mut regret = vec![0.0; grid.len()];
        for (train, test) in &problems {
            let errors = grid
                .iter()
                .map(|&c| error(train, test, epsilon, c, &mut rng, 1))
                .collect::<Result<Vec<_>, _>>()?;
            let best = errors.iter().cloned().fold(f64::INFINITY, f64::min);
            for (r, e) in regret.iter_mut().zip(&errors) {
                *r += (e - best) / problems.len() as f64;
            }
        }
        let (index, least) =
            regret.iter().enumerate().fold(
                (0, f64::INFINITY),
                |a, (i, &r)| if r < a.1 { (i, r) } else { a },
            );
        let chosen = grid[index];
        let adult = error(&adult_train, &adult_test, epsilon, chosen, &mut rng, 2)?;
        println!(
            "| {epsilon} | {}, {}, {} | {least:.4} | {adult:.4} |",
            chosen.0, chosen.1, chosen.2
        );
    }
    Ok(())
}
