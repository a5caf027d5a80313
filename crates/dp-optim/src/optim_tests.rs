//! Tests of the objective's derivatives, the solvers' answers and certificates, and input
//! validation.

use dp_noise::InsecureSeededRng;
use faer::Mat;
use faer::linalg::solvers::Solve;
use rand::RngExt;

use super::*;
use crate::solution::norm;

/// ℓ(z) = ln(1 + e^{−z}), evaluated stably.
struct Logistic;
impl MarginLoss for Logistic {
    fn value(&self, z: f64) -> f64 {
        if z >= 0.0 {
            (-z).exp().ln_1p()
        } else {
            -z + z.exp().ln_1p()
        }
    }
    fn derivative(&self, z: f64) -> f64 {
        -1.0 / (1.0 + z.exp())
    }
    fn second_derivative(&self, z: f64) -> f64 {
        let s = 1.0 / (1.0 + (-z).exp());
        s * (1.0 - s)
    }
}

/// ℓ(z) = (1 − z)²/2: with labels ±1 the objective is ridge regression, solvable in
/// closed form.
struct Squared;
impl MarginLoss for Squared {
    fn value(&self, z: f64) -> f64 {
        0.5 * (1.0 - z) * (1.0 - z)
    }
    fn derivative(&self, z: f64) -> f64 {
        z - 1.0
    }
    fn second_derivative(&self, _: f64) -> f64 {
        1.0
    }
}

/// A loss that breaks: NaN beyond a margin, as an overflowing loss would.
struct Breaks;
impl MarginLoss for Breaks {
    fn value(&self, z: f64) -> f64 {
        if z.abs() > 0.1 {
            f64::NAN
        } else {
            Logistic.value(z)
        }
    }
    fn derivative(&self, z: f64) -> f64 {
        if z.abs() > 0.1 {
            f64::NAN
        } else {
            Logistic.derivative(z)
        }
    }
    fn second_derivative(&self, z: f64) -> f64 {
        Logistic.second_derivative(z)
    }
}

/// A sparse, one-hot-like problem in the unit ball: `numeric` dense columns plus one
/// active column in each group of `groups`; labels from a noisy linear rule.
struct Problem {
    sparse: CsrRows,
    dense: DenseRows,
    labels: Vec<f64>,
    dim: usize,
}

fn problem(rows: usize, numeric: usize, groups: &[usize], seed: u64) -> Problem {
    let mut rng = InsecureSeededRng::new(seed);
    let dim = numeric + groups.iter().sum::<usize>();
    let truth: Vec<f64> = (0..dim).map(|_| rng.random_range(-3.0..3.0)).collect();
    let mut dense = vec![0.0; rows * dim];
    let mut labels = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &mut dense[r * dim..(r + 1) * dim];
        for x in row.iter_mut().take(numeric) {
            *x = rng.random_range(0.0..1.0);
        }
        let mut offset = numeric;
        for &size in groups {
            row[offset + rng.random_range(0..size)] = 1.0;
            offset += size;
        }
        let length = row.iter().map(|x| x * x).sum::<f64>().sqrt();
        row.iter_mut().for_each(|x| *x /= length);
        let score: f64 = row.iter().zip(&truth).map(|(a, b)| a * b).sum();
        let flip = rng.random_range(0.0..1.0) < 0.1;
        labels.push(if (score > 0.0) != flip { 1.0 } else { -1.0 });
    }
    Problem {
        sparse: CsrRows::from_dense_row_major(rows, dim, &dense).unwrap(),
        dense: DenseRows::from_row_major(rows, dim, &dense).unwrap(),
        labels,
        dim,
    }
}

fn small() -> Problem {
    problem(300, 3, &[4, 3, 2], 1)
}

/// Labels of varied magnitude (not only ±1), so that the y² of the Hessian is exercised.
fn varied_labels(labels: &[f64]) -> Vec<f64> {
    labels
        .iter()
        .enumerate()
        .map(|(i, y)| y * [0.5, 2.0, 1.5][i % 3])
        .collect()
}

fn random_vector(dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = InsecureSeededRng::new(seed);
    (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect()
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Central differences of `f` along each coordinate.
fn finite_difference_gradient(f: impl Fn(&[f64]) -> f64, w: &[f64], step: f64) -> Vec<f64> {
    (0..w.len())
        .map(|j| {
            let (mut plus, mut minus) = (w.to_vec(), w.to_vec());
            plus[j] += step;
            minus[j] -= step;
            (f(&plus) - f(&minus)) / (2.0 * step)
        })
        .collect()
}

#[test]
fn gradient_matches_finite_differences() {
    let p = small();
    let labels = varied_labels(&p.labels);
    let linear = random_vector(p.dim, 2);
    let w = random_vector(p.dim, 3);
    for design in [&p.sparse as &dyn Design, &p.dense as &dyn Design] {
        let logistic = GlmObjective::new(design, &labels, Logistic, 0.05)
            .unwrap()
            .with_linear_term(&linear)
            .unwrap();
        let squared = GlmObjective::new(design, &labels, Squared, 0.05).unwrap();
        for (analytic, numeric) in [
            (
                logistic.gradient(&w).unwrap(),
                finite_difference_gradient(|v| logistic.value(v).unwrap(), &w, 1e-5),
            ),
            (
                squared.gradient(&w).unwrap(),
                finite_difference_gradient(|v| squared.value(v).unwrap(), &w, 1e-5),
            ),
        ] {
            assert!(
                distance(&analytic, &numeric) < 1e-8,
                "{analytic:?} vs {numeric:?}"
            );
        }
    }
}

/// n = 5000 spans several dense blocks and sparse chunks; labels are not ±1.
#[test]
fn hessian_matches_finite_differences_of_the_gradient() {
    let p = problem(5000, 3, &[4, 3, 2], 1);
    let labels = varied_labels(&p.labels);
    let w = random_vector(p.dim, 4);
    for design in [&p.sparse as &dyn Design, &p.dense as &dyn Design] {
        let objective = GlmObjective::new(design, &labels, Logistic, 0.05).unwrap();
        let h = objective.hessian(&w).unwrap();
        for j in 0..p.dim {
            let column =
                finite_difference_gradient(|v| objective.gradient(v).unwrap()[j], &w, 1e-5);
            for (i, numeric) in column.iter().enumerate() {
                assert!(
                    (h[(i, j)] - numeric).abs() < 1e-8,
                    "H[{i},{j}] = {} vs {numeric}",
                    h[(i, j)]
                );
            }
        }
    }
}

#[test]
fn hessian_vector_product_matches_the_hessian() {
    let p = small();
    let (w, v) = (random_vector(p.dim, 5), random_vector(p.dim, 6));
    for design in [&p.sparse as &dyn Design, &p.dense as &dyn Design] {
        let objective = GlmObjective::new(design, &p.labels, Logistic, 0.05).unwrap();
        let h = objective.hessian(&w).unwrap();
        let product = objective.hessian_vector(&w, &v).unwrap();
        for i in 0..p.dim {
            let expected: f64 = (0..p.dim).map(|j| h[(i, j)] * v[j]).sum();
            assert!((product[i] - expected).abs() < 1e-14, "{i}");
        }
    }
}

/// Squared loss with labels ±1 is ridge regression with a linear term:
/// (XᵀX/n + μI) w = Xᵀy/n − g, solved here by LU (not the solvers' Cholesky path).
#[test]
fn minimizers_match_the_ridge_closed_form() {
    let p = small();
    let (n, d, mu) = (p.labels.len(), p.dim, 1e-3);
    let linear = random_vector(d, 7);
    let x = p.dense.as_mat();
    let mut a = Mat::<f64>::zeros(d, d);
    let mut rhs = Mat::<f64>::zeros(d, 1);
    for i in 0..d {
        for j in 0..d {
            a[(i, j)] = (0..n).map(|r| x[(r, i)] * x[(r, j)]).sum::<f64>() / n as f64
                + if i == j { mu } else { 0.0 };
        }
        rhs[(i, 0)] = (0..n).map(|r| x[(r, i)] * p.labels[r]).sum::<f64>() / n as f64 - linear[i];
    }
    a.partial_piv_lu().solve_in_place(rhs.as_mut());
    let closed_form: Vec<f64> = (0..d).map(|i| rhs[(i, 0)]).collect();
    let objective = GlmObjective::new(&p.sparse, &p.labels, Squared, mu)
        .unwrap()
        .with_linear_term(&linear)
        .unwrap();
    for solution in [
        Newton::default().minimize(&objective, None).unwrap(),
        Lbfgs::default().minimize(&objective, None).unwrap(),
    ] {
        assert!(solution.is_converged(), "{solution:?}");
        assert!(
            distance(solution.weights(), &closed_form) < 1e-7,
            "{:?}",
            solution.termination()
        );
    }
}

/// ℓ(z) = z²/2 of the residual `z = wᵀx − t`: with offsets the objective is ridge regression
/// on real targets.
struct Residual;
impl MarginLoss for Residual {
    fn value(&self, z: f64) -> f64 {
        0.5 * z * z
    }
    fn derivative(&self, z: f64) -> f64 {
        z
    }
    fn second_derivative(&self, _: f64) -> f64 {
        1.0
    }
}

/// With labels 1 and offsets t, `(XᵀX/n + μI) w = Xᵀt/n`: the offsets enter the margins of
/// the value, the gradient, the Hessian and its products (all four checked).
#[test]
fn offsets_make_the_margin_a_residual() {
    let p = small();
    let (n, d, mu) = (p.labels.len(), p.dim, 1e-3);
    let targets: Vec<f64> = varied_labels(&p.labels)
        .iter()
        .enumerate()
        .map(|(i, y)| 0.3 * y + 0.01 * i as f64)
        .collect();
    let ones = vec![1.0; n];
    let x = p.dense.as_mat();
    let mut a = Mat::<f64>::zeros(d, d);
    let mut rhs = Mat::<f64>::zeros(d, 1);
    for i in 0..d {
        for j in 0..d {
            a[(i, j)] = (0..n).map(|r| x[(r, i)] * x[(r, j)]).sum::<f64>() / n as f64
                + if i == j { mu } else { 0.0 };
        }
        rhs[(i, 0)] = (0..n).map(|r| x[(r, i)] * targets[r]).sum::<f64>() / n as f64;
    }
    a.partial_piv_lu().solve_in_place(rhs.as_mut());
    let closed_form: Vec<f64> = (0..d).map(|i| rhs[(i, 0)]).collect();
    let objective = GlmObjective::new(&p.sparse, &ones, Residual, mu)
        .unwrap()
        .with_offsets(&targets)
        .unwrap();
    for solution in [
        Newton::default().minimize(&objective, None).unwrap(),
        Lbfgs::default().minimize(&objective, None).unwrap(),
    ] {
        assert!(solution.is_converged(), "{solution:?}");
        assert!(distance(solution.weights(), &closed_form) < 1e-7);
    }
    let w = random_vector(d, 3);
    let residual_loss: f64 = (0..n)
        .map(|r| {
            let z: f64 = (0..d).map(|j| x[(r, j)] * w[j]).sum::<f64>() - targets[r];
            0.5 * z * z
        })
        .sum::<f64>()
        / n as f64;
    let value = objective.value(&w).unwrap();
    let expected = residual_loss + 0.5 * mu * w.iter().map(|v| v * v).sum::<f64>();
    assert!((value - expected).abs() < 1e-12, "{value} vs {expected}");
    let v = random_vector(d, 4);
    let by_product = objective.hessian_vector(&w, &v).unwrap();
    let hessian = objective.hessian(&w).unwrap();
    for i in 0..d {
        let row: f64 = (0..d).map(|j| hessian[(i, j)] * v[j]).sum();
        assert!((row - by_product[i]).abs() < 1e-12);
    }
    assert!(matches!(
        GlmObjective::new(&p.sparse, &ones, Residual, mu)
            .unwrap()
            .with_offsets(&targets[1..]),
        Err(OptimError::DimensionMismatch {
            what: "offsets",
            ..
        })
    ));
}

#[test]
fn newton_and_lbfgs_agree_within_their_certificates() {
    let p = problem(2000, 4, &[5, 8, 3], 8);
    for mu in [1e-2, 1e-4] {
        let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, mu).unwrap();
        let newton = Newton::default().minimize(&objective, None).unwrap();
        let lbfgs = Lbfgs::default().minimize(&objective, None).unwrap();
        assert!(
            newton.is_converged() && lbfgs.is_converged(),
            "{newton:?} {lbfgs:?}"
        );
        let gap = distance(newton.weights(), lbfgs.weights());
        assert!(
            gap <= newton.distance_bound() + lbfgs.distance_bound(),
            "μ = {mu}: {gap}"
        );
        assert!(
            newton.iterations() < 30,
            "Newton took {}",
            newton.iterations()
        );
    }
}

/// ‖ŵ − w*‖ ≤ ‖∇F(ŵ)‖/μ at a loosely solved point, with w* from a tight solve; the
/// reported gradient norm is the one recomputed at the returned weights.
#[test]
fn strong_convexity_certificate_holds() {
    let p = problem(1000, 3, &[6, 4], 9);
    let mu = 1e-3;
    let objective = GlmObjective::new(&p.dense, &p.labels, Logistic, mu).unwrap();
    let exact = Newton::default().minimize(&objective, None).unwrap();
    for tolerance in [1e-2, 1e-4, 1e-6] {
        let loose = Lbfgs::default()
            .tolerance(tolerance)
            .minimize(&objective, None)
            .unwrap();
        assert!(loose.is_converged());
        assert_eq!(
            norm(&objective.gradient(loose.weights()).unwrap()),
            loose.gradient_norm()
        );
        assert!(loose.gradient_norm() <= tolerance);
        let error = distance(loose.weights(), exact.weights());
        assert!(
            error <= loose.distance_bound() + exact.distance_bound(),
            "{error} > bound"
        );
    }
}

#[test]
fn sparse_and_dense_rows_give_the_same_minimizer() {
    let p = problem(1500, 5, &[7, 3, 9], 10);
    let linear = random_vector(p.dim, 11);
    let solve = |design: &dyn Design| {
        let objective = GlmObjective::new(design, &p.labels, Logistic, 1e-3)
            .unwrap()
            .with_linear_term(&linear)
            .unwrap();
        Newton::default()
            .minimize(&objective, None)
            .unwrap()
            .into_converged()
            .unwrap()
    };
    assert!(distance(&solve(&p.sparse), &solve(&p.dense)) < 1e-12);
}

/// Results are bit-for-bit the same for 1, 2 and 3 threads.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let p = problem(20_000, 6, &[9, 16, 7], 12);
    let solve_with = |threads: usize, design: &dyn Design| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let objective = GlmObjective::new(design, &p.labels, Logistic, 1e-4).unwrap();
            Newton::default()
                .minimize(&objective, None)
                .unwrap()
                .into_converged()
                .unwrap()
        })
    };
    for design in [&p.sparse as &dyn Design, &p.dense as &dyn Design] {
        let one = solve_with(1, design);
        assert_eq!(one, solve_with(2, design));
        assert_eq!(one, solve_with(3, design));
    }
}

/// μ = 1e-7 on nearly separable data: either certified, or honest about why not.
#[test]
fn ill_conditioned_problems_converge_or_say_so() {
    let p = problem(3000, 2, &[20, 10], 13);
    let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-7).unwrap();
    for solution in [
        Newton::default().minimize(&objective, None).unwrap(),
        Lbfgs::default()
            .max_iterations(2000)
            .minimize(&objective, None)
            .unwrap(),
    ] {
        assert_eq!(
            norm(&objective.gradient(solution.weights()).unwrap()),
            solution.gradient_norm()
        );
        if solution.is_converged() {
            assert!(solution.gradient_norm() <= DEFAULT_TOLERANCE);
        } else {
            assert!(solution.gradient_norm() > DEFAULT_TOLERANCE);
            assert!(matches!(
                solution.clone().into_converged(),
                Err(OptimError::NotConverged { .. })
            ));
        }
    }
    // Newton handles this one.
    assert!(
        Newton::default()
            .minimize(&objective, None)
            .unwrap()
            .is_converged()
    );
}

#[test]
fn iteration_limit_is_reported_not_hidden() {
    let p = small();
    let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-4).unwrap();
    let solution = Newton::default()
        .max_iterations(1)
        .minimize(&objective, None)
        .unwrap();
    assert_eq!(solution.termination(), Termination::IterationLimit);
    assert_eq!(solution.iterations(), 1);
    let err = solution.into_converged().unwrap_err();
    assert!(err.to_string().contains("did not converge"), "{err}");
}

/// Whatever stops the solver, "converged" means exactly "‖∇F‖ ≤ tolerance at the returned
/// weights" (an iteration limit whose last step reached the tolerance is converged).
#[test]
fn converged_means_within_tolerance_at_the_returned_point() {
    for seed in 0..5 {
        let p = problem(400, 3, &[5, 4], 100 + seed);
        let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-3).unwrap();
        for limit in 1..8 {
            for tolerance in [1e-3, 1e-6, 1e-10] {
                for solution in [
                    Newton::default()
                        .max_iterations(limit)
                        .tolerance(tolerance)
                        .minimize(&objective, None)
                        .unwrap(),
                    Lbfgs::default()
                        .max_iterations(limit)
                        .tolerance(tolerance)
                        .minimize(&objective, None)
                        .unwrap(),
                ] {
                    assert_eq!(
                        solution.is_converged(),
                        solution.gradient_norm() <= tolerance,
                        "{solution:?}"
                    );
                    assert_eq!(
                        norm(&objective.gradient(solution.weights()).unwrap()),
                        solution.gradient_norm()
                    );
                }
            }
        }
    }
}

#[test]
fn warm_start_at_the_optimum_takes_no_step() {
    let p = small();
    let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-3).unwrap();
    let optimum = Newton::default().minimize(&objective, None).unwrap();
    let again = Newton::default()
        .minimize(&objective, Some(optimum.weights()))
        .unwrap();
    assert_eq!(again.iterations(), 0);
    assert!(again.is_converged());
    let cold = Lbfgs::default().minimize(&objective, None).unwrap();
    let warm = Lbfgs::default()
        .minimize(&objective, Some(optimum.weights()))
        .unwrap();
    assert!(warm.iterations() < cold.iterations());
}

#[test]
fn a_loss_that_turns_nan_stops_without_claiming_convergence() {
    let p = small();
    let objective = GlmObjective::new(&p.sparse, &p.labels, Breaks, 1e-4).unwrap();
    for solution in [
        Newton::default().minimize(&objective, None).unwrap(),
        Lbfgs::default().minimize(&objective, None).unwrap(),
    ] {
        assert!(
            matches!(
                solution.termination(),
                Termination::LineSearchFailed | Termination::NumericalFailure
            ),
            "{solution:?}"
        );
        assert!(solution.weights().iter().all(|w| w.is_finite()));
    }
}

#[test]
fn solver_for_dimension_picks_newton_then_lbfgs() {
    assert!(matches!(Solver::for_dimension(104), Solver::Newton(_)));
    assert!(matches!(Solver::for_dimension(10_000), Solver::Lbfgs(_)));
}

#[test]
fn solver_for_design_weighs_hessian_against_gradient_cost() {
    // Sparse one-hot rows: Newton. Dense rows with many columns: L-BFGS.
    let p = problem(2000, 3, &[40, 30, 20], 14);
    assert!(matches!(Solver::for_design(&p.sparse), Solver::Newton(_)));
    let wide = DenseRows::from_row_major(200, 1000, &vec![0.001; 200_000]).unwrap();
    assert!(matches!(Solver::for_design(&wide), Solver::Lbfgs(_)));
    let narrow = DenseRows::from_row_major(5000, 20, &vec![0.1; 100_000]).unwrap();
    assert!(matches!(Solver::for_design(&narrow), Solver::Newton(_)));
}

#[test]
fn rejects_empty_data() {
    assert!(matches!(
        DenseRows::from_row_major(0, 3, &[]),
        Err(OptimError::EmptyData { .. })
    ));
    assert!(matches!(
        DenseRows::from_row_major(2, 0, &[]),
        Err(OptimError::EmptyData { .. })
    ));
    assert!(matches!(
        CsrRows::new(3, vec![0], vec![], vec![]),
        Err(OptimError::EmptyData { .. })
    ));
    assert!(matches!(
        CsrRows::new(0, vec![0, 0], vec![], vec![]),
        Err(OptimError::EmptyData { .. })
    ));
}

#[test]
fn rejects_sizes_whose_product_overflows() {
    assert!(matches!(
        DenseRows::from_row_major(usize::MAX, 2, &[]),
        Err(OptimError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        CsrRows::from_dense_row_major(usize::MAX, 2, &[]),
        Err(OptimError::DimensionMismatch { .. })
    ));
}

/// A Hessian too large to form is refused before anything is allocated.
#[test]
fn rejects_newton_beyond_the_hessian_dimension_limit() {
    let cols = MAX_HESSIAN_DIMENSION + 1;
    let x = CsrRows::from_rows(cols, &[vec![(0, 1.0)], vec![(cols - 1, 1.0)]]).unwrap();
    let objective = GlmObjective::new(&x, &[1.0, -1.0], Logistic, 1e-3).unwrap();
    assert!(matches!(
        Newton::default().minimize(&objective, None),
        Err(OptimError::InvalidParameter { .. })
    ));
    assert!(matches!(
        objective.hessian(&vec![0.0; cols]),
        Err(OptimError::InvalidParameter { .. })
    ));
    assert!(
        Lbfgs::default()
            .minimize(&objective, None)
            .unwrap()
            .is_converged()
    );
    assert!(
        Lbfgs::default()
            .memory(usize::MAX)
            .minimize(&objective, None)
            .unwrap()
            .is_converged()
    );
}

#[test]
fn rejects_non_finite_data_naming_the_entry() {
    assert_eq!(
        DenseRows::from_row_major(2, 2, &[1.0, 0.0, 0.0, f64::NAN])
            .unwrap_err()
            .to_string(),
        "data entry at row 1, column 1 is not finite: NaN"
    );
    assert!(matches!(
        CsrRows::from_rows(3, &[vec![(0, 1.0)], vec![(2, f64::INFINITY)]]),
        Err(OptimError::NonFiniteData { row: 1, col: 2, .. })
    ));
}

#[test]
fn rejects_inconsistent_sparse_structure() {
    let bad = [
        CsrRows::new(3, vec![1, 1], vec![0], vec![1.0]), // indptr does not start at 0
        CsrRows::new(3, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]), // indptr decreases
        CsrRows::new(3, vec![0, 10, 2], vec![0, 1], vec![1.0, 1.0]), // inner indptr past the end
        CsrRows::new(3, vec![0, 1], vec![3], vec![1.0]), // column out of range
        CsrRows::new(3, vec![0, 2], vec![1, 0], vec![1.0, 1.0]), // not increasing
        CsrRows::new(3, vec![0, 1], vec![0], vec![1.0, 2.0]), // lengths differ
        CsrRows::from_rows(3, &[vec![(1, 1.0), (1, 2.0)]]), // repeated column
    ];
    for (i, result) in bad.into_iter().enumerate() {
        assert!(
            matches!(result, Err(OptimError::InvalidSparseStructure(_))),
            "case {i}: {result:?}"
        );
    }
}

#[test]
fn rejects_mismatched_or_non_finite_labels() {
    let p = small();
    assert!(matches!(
        GlmObjective::new(&p.sparse, &p.labels[1..], Logistic, 1.0),
        Err(OptimError::DimensionMismatch { what: "labels", .. })
    ));
    let mut labels = p.labels.clone();
    labels[7] = f64::NAN;
    assert!(matches!(
        GlmObjective::new(&p.sparse, &labels, Logistic, 1.0),
        Err(OptimError::NonFiniteInput {
            what: "labels",
            index: 7,
            ..
        })
    ));
}

#[test]
fn rejects_invalid_regularization() {
    let p = small();
    for bad in [0.0, -1e-3, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            GlmObjective::new(&p.sparse, &p.labels, Logistic, bad),
            Err(OptimError::InvalidRegularization(_))
        ));
    }
}

#[test]
fn rejects_bad_linear_terms_and_points() {
    let p = small();
    let objective = || GlmObjective::new(&p.sparse, &p.labels, Logistic, 1.0).unwrap();
    assert!(matches!(
        objective().with_linear_term(&[1.0]),
        Err(OptimError::DimensionMismatch { .. })
    ));
    let mut linear = vec![0.0; p.dim];
    linear[2] = f64::NEG_INFINITY;
    assert!(matches!(
        objective().with_linear_term(&linear),
        Err(OptimError::NonFiniteInput { index: 2, .. })
    ));
    assert!(matches!(
        objective().value(&[0.0]),
        Err(OptimError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        Newton::default().minimize(&objective(), Some(&[0.0; 2])),
        Err(OptimError::DimensionMismatch {
            what: "starting point",
            ..
        })
    ));
    assert!(matches!(
        Lbfgs::default().minimize(&objective(), Some(&vec![f64::NAN; p.dim])),
        Err(OptimError::NonFiniteInput {
            what: "starting point",
            ..
        })
    ));
}

#[test]
fn rejects_invalid_solver_parameters() {
    let p = small();
    let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1.0).unwrap();
    for bad in [0.0, -1.0, f64::NAN] {
        assert!(matches!(
            Newton::default().tolerance(bad).minimize(&objective, None),
            Err(OptimError::InvalidTolerance(_))
        ));
        assert!(matches!(
            Lbfgs::default().tolerance(bad).minimize(&objective, None),
            Err(OptimError::InvalidTolerance(_))
        ));
    }
    assert!(matches!(
        Lbfgs::default().memory(0).minimize(&objective, None),
        Err(OptimError::InvalidParameter { .. })
    ));
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<CsrRows>();
    check::<DenseRows>();
    check::<Newton>();
    check::<Lbfgs>();
    check::<Solution>();
    check::<OptimError>();
}

/// Enough rows for Newton's sampled-Hessian phase (every 4th row here), including rows
/// ordered against it: every sampled row from one class, with labels independent of the
/// features there. Newton must still certify the optimum L-BFGS finds.
#[test]
fn newton_with_a_sampled_start_certifies_the_same_optimum() {
    let p = problem(20_000, 4, &[5, 8, 3], 21);
    let mut adversarial = p.labels.clone();
    for (i, y) in adversarial.iter_mut().enumerate() {
        if i % 4 == 0 {
            *y = 1.0;
        }
    }
    for labels in [&p.labels, &adversarial] {
        for mu in [1e-2, 1e-5] {
            let objective = GlmObjective::new(&p.sparse, labels, Logistic, mu).unwrap();
            let newton = Newton::default().minimize(&objective, None).unwrap();
            let lbfgs = Lbfgs::default().minimize(&objective, None).unwrap();
            assert!(newton.is_converged(), "μ = {mu}: {newton:?}");
            assert!(
                newton.iterations() < 30,
                "Newton took {}",
                newton.iterations()
            );
            if lbfgs.is_converged() {
                let gap = distance(newton.weights(), lbfgs.weights());
                assert!(gap <= newton.distance_bound() + lbfgs.distance_bound());
            }
        }
    }
}

/// Counts the products with `X` a solve makes.
struct CountingDesign<'a> {
    inner: &'a CsrRows,
    products: std::sync::atomic::AtomicUsize,
}

impl Design for CountingDesign<'_> {
    fn rows(&self) -> usize {
        self.inner.rows()
    }
    fn cols(&self) -> usize {
        self.inner.cols()
    }
    fn stored_entries(&self) -> usize {
        self.inner.stored_entries()
    }
    fn multiply(&self, w: &[f64], out: &mut [f64]) {
        self.products
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.multiply(w, out);
    }
    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        self.inner.multiply_transpose(v, out);
    }
    fn add_weighted_gram_lower(&self, weights: &[f64], h: faer::MatMut<'_, f64>) {
        self.inner.add_weighted_gram_lower(weights, h);
    }
    fn multiply_weigh_transpose(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &crate::WeighChunk<'_>,
        rows: crate::RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        self.products
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner
            .multiply_weigh_transpose(w, chunk_rows, weigh, rows, out)
    }
}

/// A solve from 0 makes one product with `X` per step (the full step's `X(w + p)`, in one
/// pass with the gradient; full steps are taken throughout here) and none after: the last
/// point's margins were computed from scratch, so its gradient is the certificate without a
/// second evaluation. The certificate is still the gradient at the returned weights.
#[test]
fn the_last_step_is_certified_without_a_second_evaluation() {
    for seed in 0..4 {
        let p = problem(2_000, 3, &[5, 4], 300 + seed);
        let design = CountingDesign {
            inner: &p.sparse,
            products: 0.into(),
        };
        let objective = GlmObjective::new(&design, &p.labels, Logistic, 1e-3).unwrap();
        let solution = Newton::default().minimize(&objective, None).unwrap();
        assert!(solution.is_converged());
        assert_eq!(
            design.products.into_inner(),
            solution.iterations(),
            "seed {seed}"
        );
        let fresh = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-3).unwrap();
        assert_eq!(
            norm(&fresh.gradient(solution.weights()).unwrap()),
            solution.gradient_norm()
        );
    }
}

/// A stop hook set by `stop_when` on the calling thread reaches the solve on its pool
/// worker: answering true after `k` questions stops both solvers with `Interrupted` after
/// k iterations' questions; a hook that never answers true changes nothing.
#[test]
fn a_stop_hook_interrupts_both_solvers_between_iterations() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let p = problem(2_000, 4, &[5, 3], 7);
    let objective = GlmObjective::new(&p.sparse, &p.labels, Logistic, 1e-4).unwrap();
    for solver in [
        Solver::Newton(Newton::default()),
        Solver::Lbfgs(Lbfgs::default()),
    ] {
        let unhooked = solver.minimize(&objective, None).unwrap();
        assert!(unhooked.is_converged());
        let never = stop_when(Arc::new(|| false), || solver.minimize(&objective, None)).unwrap();
        assert_eq!(never.weights(), unhooked.weights());

        let asked = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&asked);
        let hook: StopHook = Arc::new(move || counter.fetch_add(1, Ordering::Relaxed) >= 2);
        let stopped = stop_when(hook, || solver.minimize(&objective, None));
        assert!(
            matches!(stopped, Err(OptimError::Interrupted)),
            "{solver:?}: {stopped:?}"
        );
        assert_eq!(
            asked.load(Ordering::Relaxed),
            3,
            "asked before each iteration"
        );
        // Outside the call the hook is gone: the same solve converges.
        assert!(solver.minimize(&objective, None).unwrap().is_converged());
    }
}
