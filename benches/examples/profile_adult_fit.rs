//! Repeats one private logistic fit on the real Adult training rows, for a profiler:
//! `cargo run --release -p dp-benches --example profile_adult_fit -- [fits] [lambda] [epsilon]`
//! (under `perf record`, say). Prints the median wall time and the solver iterations.

use dp_erm::{ErmParams, Loss};
use dp_noise::InsecureSeededRng;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: f64| match args.get(i).map(|a| a.parse::<f64>()) {
        None => default,
        Some(Ok(value)) if value.is_finite() && value > 0.0 => value,
        Some(_) => {
            eprintln!("usage: profile_adult_fit [fits] [lambda] [epsilon] (positive numbers)");
            std::process::exit(2);
        }
    };
    let fits = (arg(1, 200.0) as usize).max(1);
    let (lambda, epsilon) = (arg(2, 1e-4), arg(3, 0.1));
    let Some((train, _)) = dp_benches::real_adult() else {
        std::process::exit(2);
    };
    let params = ErmParams::objective_perturbation(Loss::Logistic, lambda, epsilon);
    let mut rng = InsecureSeededRng::new(7);
    let mut times = Vec::with_capacity(fits);
    let mut iterations = 0;
    for _ in 0..fits {
        let start = std::time::Instant::now();
        let fit = params.fit(&train, &mut rng).expect("Adult fits");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        iterations += fit.solver_iterations();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "Λ = {lambda:e}, ε = {epsilon}: median {:.2} ms, min {:.2} ms over {fits} fits, {:.1} solver iterations on average",
        times[fits / 2],
        times[0],
        iterations as f64 / fits as f64
    );
}
