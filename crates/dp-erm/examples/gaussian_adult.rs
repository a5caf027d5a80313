//! A quick measurement (not a study): test error on Adult's official split (train on
//! `adult.data`, test on `adult.test`, the papers' preprocessing, logistic regression) of
//! Gaussian objective perturbation at (ε, 10⁻⁵) beside pure-ε objective perturbation, for
//! ε ∈ {0.1, 1} and a few Λ, mean over a few noise draws.
//!
//! `DP_ML_DATA_DIR=/path/to/data cargo run --release -p dp-erm --example gaussian_adult`
//!
//! Seeded generators: the numbers are for measurement, nothing here is private.

use dp_datasets::{ADULT_TRAIN_ROWS, DataDir, Scaling, load_adult};
use dp_erm::{ErmParams, GaussianErm, LinearModel, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;

const DRAWS: u64 = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = load_adult(&DataDir::resolve(None), Scaling::PaperColumnMax)?;
    let train: Vec<usize> = (0..ADULT_TRAIN_ROWS).collect();
    let test: Vec<usize> = (ADULT_TRAIN_ROWS..data.len()).collect();
    let (train, test) = (data.training_set(&train)?, data.training_set(&test)?);
    let error = |model: &LinearModel, set: &TrainingSet| model.error_rate(set).unwrap();
    let mut rng = InsecureSeededRng::new(2026);
    let nonprivate = ErmParams::non_private(Loss::Logistic, 1e-6).fit(&train, &mut rng)?;
    println!(
        "n = {}, d = {}, test rows {}; non-private (Λ = 1e-6): {:.4}",
        train.len(),
        train.features(),
        test.len(),
        error(nonprivate.model(), &test)
    );
    println!(
        "| ε | Λ | Gaussian objective (ε, 1e-5) | σ | pure-ε objective | Gaussian output (ε, 1e-5) |"
    );
    println!("|---|---|---|---|---|---|");
    for epsilon in [0.1, 1.0] {
        for lambda in [1e-5, 1e-4, 1e-3, 3e-3, 1e-2] {
            let gaussian =
                GaussianErm::objective_perturbation(Loss::Logistic, lambda, epsilon, 1e-5);
            let output = GaussianErm::output_perturbation(Loss::Logistic, lambda, epsilon, 1e-5);
            let pure = ErmParams::objective_perturbation(Loss::Logistic, lambda, epsilon);
            let (mut g, mut p, mut o, mut sigma) = (0.0, 0.0, 0.0, 0.0);
            for _ in 0..DRAWS {
                let (model, cal) = gaussian.fit(&train, &mut rng)?;
                g += error(&model, &test) / DRAWS as f64;
                sigma = cal.sigma;
                p += error(pure.fit(&train, &mut rng)?.model(), &test) / DRAWS as f64;
                o += error(&output.fit(&train, &mut rng)?.0, &test) / DRAWS as f64;
            }
            println!("| {epsilon} | {lambda:e} | {g:.4} | {sigma:.1} | {p:.4} | {o:.4} |");
        }
    }
    Ok(())
}
