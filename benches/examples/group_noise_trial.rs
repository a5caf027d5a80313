//! Trial: objective perturbation on Adult with ℓ2 Gamma-norm noise vs group-norm noise.
use dp_datasets::{ADULT_TRAIN_ROWS, DataDir, Scaling, load_adult};
use dp_erm::{ErmParams, Loss};
use dp_noise::InsecureSeededRng;
use dp_optim::{Design, GlmObjective, Newton};
use rand::RngExt;
use rand_distr::{Distribution, Exp1, Gamma, StandardNormal};

fn main() {
    let dir = DataDir::resolve(None);
    let adult = load_adult(&dir, Scaling::PaperColumnMax).unwrap();
    let d = adult.features();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut last = String::new();
    for (j, name) in adult.feature_names.iter().enumerate() {
        let attr = name
            .split_once('=')
            .map_or(name.as_str(), |(a, _)| a)
            .to_string();
        if attr != last || !name.contains('=') {
            groups.push(vec![]);
        }
        groups.last_mut().unwrap().push(j);
        last = attr;
    }
    // Every row: K-norm check.
    let worst = adult
        .rows
        .iter()
        .map(|row| {
            let mut sums = vec![0.0; groups.len()];
            for &(j, v) in row {
                let g = groups.iter().position(|g| g.contains(&j)).unwrap();
                sums[g] += v.abs();
            }
            sums.iter().map(|s| s * s).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max);
    for (j, name) in adult.feature_names.iter().enumerate().take(30) {
        print!("{j}:{name} ");
    }
    println!();
    println!("row0 {:?}", adult.rows[0]);
    if std::env::var_os("ONLY_DEBUG").is_some() {
        return;
    }
    println!(
        "{} groups: sizes {:?}; largest group-norm of a row {worst}",
        groups.len(),
        groups.iter().map(|g| g.len()).collect::<Vec<_>>()
    );
    let train = adult
        .training_set(&(0..ADULT_TRAIN_ROWS).collect::<Vec<_>>())
        .unwrap();
    let test = adult
        .training_set(&(ADULT_TRAIN_ROWS..adult.len()).collect::<Vec<_>>())
        .unwrap();
    let n = train.len();
    let mut rng = InsecureSeededRng::new(5);
    let draws = 20;
    for loss in [Loss::Huber { width: 1.0 }, Loss::Logistic] {
        for epsilon in [0.05, 0.1, 0.2] {
            for lambda in [1e-2, 5.6e-3, 3.2e-3, 1.8e-3, 1e-3] {
                let params = ErmParams::objective_perturbation(loss, lambda, epsilon);
                let cal = params.noise_calibration(n, d).unwrap().unwrap();
                let mut errs = [0.0, 0.0];
                for _ in 0..draws {
                    let rho: f64 = Gamma::new(d as f64, 1.0 / cal.beta)
                        .unwrap()
                        .sample(&mut rng);
                    // ℓ2
                    let g: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
                    let gn = g.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let b2: Vec<f64> = g.iter().map(|x| rho * x / gn).collect();
                    // group
                    let xi: Vec<f64> = groups
                        .iter()
                        .map(|gr| {
                            (0..gr.len())
                                .map(|_| {
                                    let z: f64 = StandardNormal.sample(&mut rng);
                                    z * z
                                })
                                .sum::<f64>()
                                .sqrt()
                        })
                        .collect();
                    let xn = xi.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let mut bk = vec![0.0; d];
                    for (gi, gr) in groups.iter().enumerate() {
                        let a = rho * xi[gi] / xn;
                        let e: Vec<f64> = gr.iter().map(|_| Exp1.sample(&mut rng)).collect();
                        let es: f64 = e.iter().sum();
                        for (k, &j) in gr.iter().enumerate() {
                            let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
                            bk[j] = a * sign * e[k] / es;
                        }
                    }
                    for (k, b) in [b2, bk].iter().enumerate() {
                        let lin: Vec<f64> = b.iter().map(|x| x / n as f64).collect();
                        let obj = GlmObjective::new(
                            train.design(),
                            train.labels(),
                            loss,
                            lambda + cal.extra_regularization,
                        )
                        .unwrap()
                        .with_linear_term(&lin)
                        .unwrap();
                        let sol = Newton::default().minimize(&obj, None).unwrap();
                        let w = sol.weights();
                        let x = test.design();
                        let mut m = vec![0.0; x.rows()];
                        x.multiply(w, &mut m);
                        let wrong = m
                            .iter()
                            .zip(test.labels())
                            .filter(|(m, y)| *m * *y <= 0.0)
                            .count();
                        errs[k] += wrong as f64 / x.rows() as f64 / draws as f64;
                    }
                }
                println!(
                    "{loss:?} ε={epsilon} Λ={lambda:e}: ℓ2 {:.4}  group {:.4}",
                    errs[0], errs[1]
                );
            }
        }
    }
}
