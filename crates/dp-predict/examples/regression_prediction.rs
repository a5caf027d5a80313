//! Private prediction of real values against a privately trained regressor (Dwork &
//! Feldman 2018 give no regression figure; docs/src/reference/algorithms.md §7.7–§7.8 and
//! docs/src/mechanisms/prediction.md report this run).
//!
//! Synthetic linear data, d = 5 and d = 100: rows uniform in the cube of half-width 1/√d
//! (inside the unit ball), `y = 10·(⟨w*, x⟩ + u)` with `‖w*‖ = 1` and `u` uniform in ±0.1, public
//! target bounds [−10, 10]. For each n, the mean absolute error (target units, range 20)
//! of answers at 500 fresh queries, averaged over 3 datasets:
//!
//! - stable ERM + Laplace and subsample-and-aggregate (median, clipped mean; k = 100) at
//!   ε = 1 **per answer**: q answers cost q (k = 100: the median's far candidates weigh
//!   about `1025·e^{−εk/4}`, which k = 50 leaves visible once the predictions cluster);
//! - a regressor trained by objective perturbation at total ε = 1 and ε = 10, the budgets
//!   of q = 1 and q = 10 answers: it then answers any number of queries;
//! - the non-private regressor (Λ = 1e-4) and the constant answer 0 (the bounds' centre),
//!   for reference.
//!
//! Every Λ (stable ERM, the private regressor) is the best of a grid by the error on 500
//! separate validation queries — tuning that is not private, the same advantage for each —
//! and the balanced λ of DF's bound (`2·√((1 + 1/ε)/n)`, comparator norm 1) is shown too.
//! The parts' Λ is `1/⌊n/k⌋`, as in Python's default.
//!
//! Run: `cargo run -p dp-predict --example regression_prediction --profile test`
//! (seeded generators: reproducible, **not private**; an experiment, not a release).

use dp_erm::{ErmParams, Loss, RegressionSet, TargetClipping, TargetScale, TrainingSet};
use dp_noise::InsecureSeededRng;
use dp_predict::{
    PrivatePredictor, RegressionEnsemble, RegressionMeanEnsemble, RegressionMedianEnsemble,
    StableRegressionParams,
};
use rand::RngExt;

const EPSILON: f64 = 1.0;
const PARTS: usize = 100;
const QUERIES: usize = 500;
const REPEATS: u64 = 3;
const LAMBDAS: [f64; 7] = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1];

type Error = Box<dyn std::error::Error>;

struct Problem {
    data: RegressionSet,
    validation: Vec<Vec<f64>>,
    test: Vec<Vec<f64>>,
    truth: Vec<f64>,
}

impl Problem {
    fn new(n: usize, d: usize, seed: u64) -> Result<Self, Error> {
        let mut r = InsecureSeededRng::new(seed);
        let truth: Vec<f64> = {
            let w: Vec<f64> = (0..d).map(|_| r.random_range(-1.0..1.0)).collect();
            let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt();
            w.iter().map(|v| v / norm).collect()
        };
        let side = 1.0 / (d as f64).sqrt();
        let row = |r: &mut InsecureSeededRng| -> Vec<f64> {
            (0..d).map(|_| r.random_range(-side..side)).collect()
        };
        let rows: Vec<Vec<f64>> = (0..n).map(|_| row(&mut r)).collect();
        let targets: Vec<f64> = rows
            .iter()
            .map(|x| (10.0 * (dot(&truth, x) + r.random_range(-0.1..0.1))).clamp(-10.0, 10.0))
            .collect();
        let builder = TrainingSet::builder(d).dense_rows(rows.concat());
        let data = RegressionSet::new(
            builder,
            &targets,
            TargetScale::new(-10.0, 10.0)?,
            TargetClipping::Refuse,
        )?;
        let validation = (0..QUERIES).map(|_| row(&mut r)).collect();
        let test = (0..QUERIES).map(|_| row(&mut r)).collect();
        Ok(Self {
            data,
            validation,
            test,
            truth,
        })
    }

    /// Mean absolute error of `answer` at `queries`, against the noiseless `10·⟨w*, x⟩`.
    fn error(
        &self,
        queries: &[Vec<f64>],
        mut answer: impl FnMut(&[f64]) -> Result<f64, Error>,
    ) -> Result<f64, Error> {
        let mut total = 0.0;
        for x in queries {
            total += (answer(x)? - 10.0 * dot(&self.truth, x)).abs();
        }
        Ok(total / queries.len() as f64)
    }

    /// The test error of the Λ in [`LAMBDAS`] whose validation error is smallest.
    fn tuned(
        &self,
        mut error_at: impl FnMut(f64, &[Vec<f64>]) -> Result<f64, Error>,
    ) -> Result<f64, Error> {
        let mut best = (f64::INFINITY, 0.0);
        for lambda in LAMBDAS {
            // A Λ the mechanism refuses at this n (objective perturbation's floor) is skipped.
            let Ok(validation) = error_at(lambda, &self.validation) else {
                continue;
            };
            if validation < best.0 {
                best = (validation, lambda);
            }
        }
        error_at(best.1, &self.test)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn stable_error(
    problem: &Problem,
    lambda: f64,
    queries: &[Vec<f64>],
    rng: &mut InsecureSeededRng,
) -> Result<f64, Error> {
    let loss = Loss::huber_regression(1.0)?;
    let stable = StableRegressionParams::new(loss, lambda, EPSILON).fit(&problem.data, rng)?;
    problem.error(queries, |x| Ok(stable.answer_unchecked(x, rng)?))
}

fn trained_error(
    problem: &Problem,
    params: ErmParams,
    queries: &[Vec<f64>],
    rng: &mut InsecureSeededRng,
) -> Result<f64, Error> {
    let model = params.fit_regression(&problem.data, rng)?.into_model();
    problem.error(queries, |x| Ok(model.predict(x)?))
}

fn main() -> Result<(), Error> {
    for d in [5, 100] {
        table(d)?;
    }
    Ok(())
}

/// One table: the errors at every n for rows of `d` features.
fn table(d: usize) -> Result<(), Error> {
    println!("\nd = {d}\n");
    println!(
        "| n | stable ERM (tuned λ) | stable ERM (balanced λ) | S&A median | S&A mean | \
         private model, total ε = 1 | total ε = 10 | non-private | constant 0 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let loss = Loss::huber_regression(1.0)?;
    for n in [1_000, 4_000, 16_000, 64_000] {
        let mut sums = [0.0; 8];
        for repeat in 0..REPEATS {
            let problem = Problem::new(n, d, 100 * n as u64 + repeat)?;
            let mut rng = InsecureSeededRng::new(7 + repeat);
            let balanced = StableRegressionParams::balanced_regularization(1.0, EPSILON, n)?;
            let ensemble = RegressionEnsemble::train(
                &ErmParams::non_private(loss, 1.0 / (n / PARTS) as f64),
                &problem.data,
                PARTS,
                &mut rng,
            )?;
            let median = RegressionMedianEnsemble::new(ensemble.clone(), EPSILON)?;
            let mean = RegressionMeanEnsemble::new(ensemble, EPSILON)?;
            let errors = [
                problem.tuned(|l, q| stable_error(&problem, l, q, &mut rng))?,
                stable_error(&problem, balanced, &problem.test, &mut rng)?,
                problem.error(&problem.test, |x| Ok(median.answer_unchecked(x, &mut rng)?))?,
                problem.error(&problem.test, |x| Ok(mean.answer_unchecked(x, &mut rng)?))?,
                problem.tuned(|l, q| {
                    let params = ErmParams::objective_perturbation(loss, l, 1.0);
                    trained_error(&problem, params, q, &mut rng)
                })?,
                problem.tuned(|l, q| {
                    let params = ErmParams::objective_perturbation(loss, l, 10.0);
                    trained_error(&problem, params, q, &mut rng)
                })?,
                trained_error(
                    &problem,
                    ErmParams::non_private(loss, 1e-4),
                    &problem.test,
                    &mut rng,
                )?,
                problem.error(&problem.test, |_| Ok(0.0))?,
            ];
            for (sum, error) in sums.iter_mut().zip(errors) {
                *sum += error;
            }
        }
        let cells: Vec<String> = sums
            .iter()
            .map(|s| format!("{:.3}", s / REPEATS as f64))
            .collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
    Ok(())
}
