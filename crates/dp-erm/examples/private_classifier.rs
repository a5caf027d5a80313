//! Train a private classifier on synthetic data, save it, load it, predict.
//!
//! `cargo run --release -p dp-erm --example private_classifier`

use dp_erm::{
    ErmParams, LinearModel, Loss, ModelKey, ModelPurpose, ObjectiveCalibration, TrainingSet,
};
use dp_noise::{DpRng, InsecureSeededRng};
use rand::RngExt;

/// `n` rows of a noisy linear problem in the unit ball (labels from the sign along
/// `direction`, 10% flipped).
fn synthetic(n: usize, direction: &[f64], rng: &mut InsecureSeededRng) -> TrainingSet {
    let d = direction.len();
    let mut values = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let score: f64 = row.iter().zip(direction).map(|(a, b)| a * b).sum();
        let flip = rng.random_range(0.0..1.0) < 0.1;
        labels.push(if (score > 0.0) != flip { 1.0 } else { -1.0 });
        values.extend(row);
    }
    // Rows of [−1, 1]^d have norm up to √d: clip them into the unit ball (a per-row,
    // privacy-free transformation, requested explicitly).
    TrainingSet::builder(d)
        .dense_rows(values)
        .labels(labels)
        .clip_rows_to_unit_ball()
        .build()
        .expect("valid data")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Synthetic data from a seeded generator (the data are not secret here); the noise of
    // the private fits comes from the OS-seeded generator, as in production.
    let mut data_rng = InsecureSeededRng::new(7);
    let direction: Vec<f64> = (0..10).map(|_| data_rng.random_range(-1.0..1.0)).collect();
    let (train, test) = (
        synthetic(20_000, &direction, &mut data_rng),
        synthetic(5_000, &direction, &mut data_rng),
    );
    let mut rng = DpRng::from_os_entropy()?;
    let huber = Loss::huber(0.5)?;
    let lambda = 1e-3;
    for (name, params) in [
        (
            "non-private Huber SVM",
            ErmParams::non_private(huber, lambda),
        ),
        (
            "output perturbation, ε = 0.5",
            ErmParams::output_perturbation(huber, lambda, 0.5),
        ),
        (
            "objective perturbation (papers' rule), ε = 0.5",
            ErmParams::objective_perturbation(huber, lambda, 0.5)
                .objective_calibration(ObjectiveCalibration::Cms11),
        ),
        (
            "objective perturbation (cliff-free), ε = 0.5",
            ErmParams::objective_perturbation(huber, lambda, 0.5),
        ),
    ] {
        let fit = params.fit(&train, &mut rng)?;
        println!(
            "{name:<46} test error {:.4}   ε spent {}",
            fit.model().error_rate(&test)?,
            fit.epsilon()
                .map_or("none (not private)".into(), |e| e.to_string())
        );
        if let Some(calibration) = fit.calibration() {
            println!(
                "{:<46} ε' = {:.4}, Δ = {:.2e}, β = {:.4}",
                "", calibration.epsilon_prime, calibration.extra_regularization, calibration.beta
            );
        }
    }

    let model = ErmParams::objective_perturbation(huber, lambda, 0.5)
        .fit(&train, &mut rng)?
        .into_model();
    // Stored where others can write: authenticate the file, so that nobody without the key
    // can relabel the model's ε (a plain file's checksum only detects corruption), bound to
    // what it is for, so that no other model signed with the key can stand in for it; the
    // loader also refuses any model that is not private with ε ≤ 1.
    let key = ModelKey::from_os_entropy()?;
    let purpose = ModelPurpose::new("example/classifier")?.require_private(1.0)?;
    let path = std::env::temp_dir().join("dp-erm-example.model");
    model.save_authenticated(&path, &key, &purpose)?;
    let loaded = LinearModel::load_authenticated(&path, &key, &purpose)?;
    let row = [0.1, -0.2, 0.05, 0.0, 0.3, -0.1, 0.2, 0.0, -0.05, 0.1];
    println!(
        "saved to {} (authenticated), loaded, ε = {:?}, predicts {} for {row:?}",
        path.display(),
        loaded.epsilon(),
        loaded.predict(&row)?
    );
    let wrong_key = ModelKey::from_os_entropy()?;
    if let Err(refused) = LinearModel::load_authenticated(&path, &wrong_key, &purpose) {
        println!("with another key: {refused}");
    }
    let other_use = ModelPurpose::new("example/other")?;
    if let Err(refused) = LinearModel::load_authenticated(&path, &key, &other_use) {
        println!("for another purpose: {refused}");
    }
    std::fs::remove_file(&path)?;
    Ok(())
}
