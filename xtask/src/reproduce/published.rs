//! The published numbers (SVM paper, Figures 2 and 3, as restated in docs/src/reference/experiments.md).

/// Figure 2a, best error over Λ: (method label, dataset, ε, error).
pub const BEST_ERRORS: [(&str, &str, Option<f64>, f64); 14] = [
    ("non-private Huber SVM", "adult", None, 0.1536),
    ("non-private Huber SVM", "kddcup99", None, 0.0063),
    ("output perturbation Huber SVM", "adult", Some(0.2), 0.2469),
    ("output perturbation Huber SVM", "adult", Some(0.1), 0.2456),
    (
        "output perturbation Huber SVM",
        "kddcup99",
        Some(0.1),
        0.0207,
    ),
    (
        "output perturbation Huber SVM",
        "kddcup99",
        Some(0.05),
        0.0784,
    ),
    (
        "objective perturbation logistic",
        "adult",
        Some(0.2),
        0.1819,
    ),
    (
        "objective perturbation logistic",
        "adult",
        Some(0.1),
        0.1988,
    ),
    (
        "objective perturbation logistic",
        "kddcup99",
        Some(0.1),
        0.0148,
    ),
    (
        "objective perturbation logistic",
        "kddcup99",
        Some(0.05),
        0.0216,
    ),
    (
        "objective perturbation Huber SVM",
        "adult",
        Some(0.2),
        0.1762,
    ),
    (
        "objective perturbation Huber SVM",
        "adult",
        Some(0.1),
        0.1853,
    ),
    (
        "objective perturbation Huber SVM",
        "kddcup99",
        Some(0.1),
        0.0179,
    ),
    (
        "objective perturbation Huber SVM",
        "kddcup99",
        Some(0.05),
        0.0181,
    ),
];

/// Figure 3a (Adult, objective perturbation Huber SVM): rows Λ, columns
/// [non-private, ε = 0.2, 0.15, 0.1, 0.05].
pub const ADULT_BY_LAMBDA: [(f64, [f64; 5]); 6] = [
    (1e-2, [0.2478, 0.2478, 0.2478, 0.2477, 0.2439]),
    (1e-3, [0.1728, 0.1762, 0.1793, 0.1853, 0.2181]),
    (1e-4, [0.1650, 0.1845, 0.1921, 0.2149, 0.2539]),
    (1e-5, [0.1551, 0.2053, 0.2262, 0.2376, 0.2604]),
    (1e-6, [0.1536, 0.2646, 0.2717, 0.3063, 0.3628]),
    (1e-7, [0.1536, 0.2909, 0.3002, 0.3301, 0.3595]),
];
/// The ε columns of [`ADULT_BY_LAMBDA`].
pub const ADULT_EPSILONS: [f64; 4] = [0.2, 0.15, 0.1, 0.05];

/// Figure 3b (KDD, 60,000 rows): rows Λ, columns [non-private, then for ε = 0.1, 0.05,
/// 0.01: objective perturbation ("Alg. 1"), output perturbation ("Sens.")].
pub const KDD_BY_LAMBDA: [(f64, [f64; 7]); 7] = [
    (
        1e-1,
        [0.0682, 0.0688, 0.0753, 0.0730, 0.0846, 0.0912, 0.1110],
    ),
    (
        1e-2,
        [0.0225, 0.0202, 0.0226, 0.0182, 0.1045, 0.0346, 0.3994],
    ),
    (
        1e-3,
        [0.0132, 0.0156, 0.3741, 0.0207, 0.4466, 0.0494, 0.5003],
    ),
    (
        1e-4,
        [0.0088, 0.0295, 0.5048, 0.0308, 0.4974, 0.0677, 0.4954],
    ),
    (
        1e-5,
        [0.0074, 0.0358, 0.4961, 0.0468, 0.4992, 0.1522, 0.5061],
    ),
    (
        1e-6,
        [0.0067, 0.0853, 0.4962, 0.0908, 0.5089, 0.3464, 0.5020],
    ),
    (
        1e-7,
        [0.0068, 0.2446, 0.4982, 0.2516, 0.5037, 0.4332, 0.5244],
    ),
];
/// The ε of [`KDD_BY_LAMBDA`]'s column pairs.
pub const KDD_EPSILONS: [f64; 3] = [0.1, 0.05, 0.01];
