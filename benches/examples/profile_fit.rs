//! Repeats one private fit on real data, for a profiler (`perf record`, say):
//! `cargo run --release -p dp-benches --example profile_fit -- [adult|kddcup99] [fits]
//! [lambda] [epsilon] [huber width]` (defaults: adult 200 1e-4 0.1, logistic). Adult: its
//! 30,162 training rows; KDDCup99: 54,000 rows (a 10-fold training split of the experiments'
//! 60,000-row subset) drawn from its whole file with a fixed seed. Prints the median wall
//! time and the solver iterations. With `PROFILE_FIT_FRESH=1`, each fit first builds its
//! training set from CSR arrays, as a caller holding arrays (the Python binding) does, and
//! the build, that first fit and a second fit on the same set are timed apart.

use dp_datasets::{DataDir, load_kddcup99};
use dp_erm::{ErmParams, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;
use rand::seq::SliceRandom;

const USAGE: &str = "usage: profile_fit [adult|kddcup99] [fits] [lambda] [epsilon] [huber width] \
                     (fits: 1 to 100000; the others positive numbers)";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bad = |name: &str, i: usize| -> ! {
        fail(&format!(
            "{name} = {:?} is not accepted\n{USAGE}",
            args[i].as_str()
        ))
    };
    let arg = |i: usize, name: &str, default: f64| match args.get(i).map(|a| a.parse::<f64>()) {
        None => default,
        Some(Ok(value)) if value.is_finite() && value > 0.0 => value,
        Some(_) => bad(name, i),
    };
    let dataset = args.get(1).map_or("adult", String::as_str);
    let fits = match args.get(2).map(|a| a.parse::<usize>()) {
        None => 200,
        Some(Ok(fits)) if (1..=100_000).contains(&fits) => fits,
        Some(_) => bad("fits", 2),
    };
    let (lambda, epsilon) = (arg(3, "lambda", 1e-4), arg(4, "epsilon", 0.1));
    let loss = match args.get(5) {
        None => Loss::Logistic,
        Some(_) => Loss::huber(arg(5, "huber width", 0.5)).unwrap_or_else(|e| fail(&e.to_string())),
    };
    let train = match dataset {
        "adult" => dp_benches::real_adult().map(|(train, _)| train),
        "kddcup99" => kdd_rows(54_000),
        _ => bad("dataset", 1),
    };
    let Some(train) = train else {
        std::process::exit(2);
    };
    let params = ErmParams::objective_perturbation(loss, lambda, epsilon);
    let mut rng = InsecureSeededRng::new(7);
    if std::env::var_os("PROFILE_FIT_FRESH").is_some() {
        fresh_fits(&train, &params, fits, &mut rng);
        return;
    }
    let mut times = Vec::with_capacity(fits);
    let mut iterations = 0;
    for _ in 0..fits {
        let start = std::time::Instant::now();
        let fit = params
            .fit(&train, &mut rng)
            .unwrap_or_else(|e| fail(&e.to_string()));
        times.push(start.elapsed().as_secs_f64() * 1e3);
        iterations += fit.solver_iterations();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{dataset}, {loss:?}, Λ = {lambda:e}, ε = {epsilon}: median {:.2} ms, min {:.2} ms over \
         {fits} fits, {:.1} solver iterations on average",
        times[fits / 2],
        times[0],
        iterations as f64 / fits as f64
    );
}

/// `rows` rows of KDDCup99 drawn without replacement (seeded), or `None` with a message.
fn kdd_rows(rows: usize) -> Option<TrainingSet> {
    let kdd = load_kddcup99(&DataDir::resolve(None))
        .map_err(|e| eprintln!("KDDCup99 profile skipped: {e} (set DP_ML_DATA_DIR)"))
        .ok()?;
    let mut order: Vec<usize> = (0..kdd.len()).collect();
    order.shuffle(&mut InsecureSeededRng::new(11));
    order.truncate(rows.min(kdd.len()));
    Some(
        kdd.training_set(&order)
            .unwrap_or_else(|e| fail(&e.to_string())),
    )
}

/// `PROFILE_FIT_FRESH=1`: each fit builds its set from CSR arrays first, as a caller that
/// holds arrays (the Python binding) does; prints the median build, first fit on the new set,
/// and a second fit on it (which reuses the set's derived copies).
fn fresh_fits(train: &TrainingSet, params: &ErmParams, fits: usize, rng: &mut InsecureSeededRng) {
    let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
    for i in 0..train.len() {
        train.for_each_entry(i, |j, v| {
            indices.push(j as u32);
            values.push(v);
        });
        indptr.push(indices.len());
    }
    // PROFILE_FIT_INTERCEPT=c: the builder appends the intercept feature c (the Python
    // estimators' default path).
    let intercept = std::env::var("PROFILE_FIT_INTERCEPT").ok().map(|c| {
        c.parse::<f64>()
            .unwrap_or_else(|e| fail(&format!("PROFILE_FIT_INTERCEPT: {e}")))
    });
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..fits {
        let arrays = (
            indptr.clone(),
            indices.clone(),
            values.clone(),
            train.labels().to_vec(),
        );
        let start = std::time::Instant::now();
        let builder = TrainingSet::builder(train.features())
            .csr_rows(arrays.0, arrays.1, arrays.2)
            .labels(arrays.3);
        let builder = match intercept {
            Some(constant) => builder.append_intercept(constant),
            None => builder,
        };
        let set = builder.build().unwrap_or_else(|e| fail(&e.to_string()));
        let built = start.elapsed();
        params
            .fit(&set, rng)
            .unwrap_or_else(|e| fail(&e.to_string()));
        let first = start.elapsed();
        params
            .fit(&set, rng)
            .unwrap_or_else(|e| fail(&e.to_string()));
        let second = start.elapsed();
        for (k, t) in [built, first - built, second - first]
            .into_iter()
            .enumerate()
        {
            times[k].push(t.as_secs_f64() * 1e3);
        }
    }
    for (name, mut t) in ["build", "first fit", "second fit"].into_iter().zip(times) {
        t.sort_by(f64::total_cmp);
        println!("{name}: median {:.2} ms, min {:.2} ms", t[fits / 2], t[0]);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}
