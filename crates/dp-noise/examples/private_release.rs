//! Three private releases from one budget: a mean, a model choice, a weight vector.
//!
//! `cargo run --release -p dp-noise --example private_release`

use dp_noise::{DpRng, ExponentialMechanism, GammaNormVector, Laplace, NoiseError, PrivacyBudget};

fn main() -> Result<(), NoiseError> {
    let mut rng = DpRng::from_os_entropy()?; // ChaCha20 keyed by the OS
    let mut budget = PrivacyBudget::new(1.0)?; // pure ε

    // A real number of sensitivity 1/1000, released with ε = 0.5.
    let laplace = Laplace::new(0.5, 1.0 / 1000.0)?;
    budget.spend("mean age", laplace.epsilon())?;
    let mean = laplace.release(0.4172, &mut rng)?;

    // One of several candidates by utility (e.g. minus the number of mistakes), ε = 0.25.
    let selector = ExponentialMechanism::new(0.25, 1.0)?;
    budget.spend("choose model", selector.epsilon())?;
    let chosen = selector.select(&[-120.0, -97.0, -101.0], &mut rng)?;

    // A d-dimensional vector of L2 sensitivity 2/(nΛ), released with ε = 0.25.
    let noise = GammaNormVector::from_epsilon(104, 0.25, 2.0 / (45_000.0 * 1e-3))?;
    budget.spend("weights", 0.25)?;
    let b = noise.sample(&mut rng);

    println!(
        "mean {mean}, model {chosen}, ‖b‖ = {:.1}, ε left {}",
        norm(&b),
        budget.remaining()
    );
    for charge in budget.ledger() {
        println!("  spent {} on {}", charge.epsilon, charge.label);
    }
    // The budget is spent: a fourth release is refused with an error naming the numbers.
    if let Err(refused) = budget.spend("one more", 0.01) {
        println!("refused: {refused}");
    }
    Ok(())
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}
