//! Scores of released linear models.

/// The canary margin `y*·fᵀx*` of weights `f` on the canary `(x*, y*)` given as sparse
/// `(feature, value)` pairs: the black-box score of docs/src/reference/privacy-testing.md §2. Features beyond
/// the weights count as 0.
pub fn canary_margin(weights: &[f64], canary: &[(usize, f64)], label: f64) -> f64 {
    label
        * canary
            .iter()
            .filter_map(|&(j, v)| weights.get(j).map(|w| w * v))
            .sum::<f64>()
}

/// The exact log-likelihood ratio `β(‖o − c₂‖ − ‖o − c₁‖)`, divided by β, of an output `o`
/// of a Gamma-norm mechanism (density `∝ exp(−β‖o − c‖)`) centred at `c₁` on the first
/// dataset and `c₂` on the second: the most powerful score for such a pair (Neyman–Pearson).
/// Output perturbation is this mechanism with `c` the solver's point on each dataset.
pub fn gamma_noise_likelihood_ratio(
    output: &[f64],
    first_centre: &[f64],
    second_centre: &[f64],
) -> f64 {
    let distance = |c: &[f64]| {
        output
            .iter()
            .zip(c)
            .map(|(o, c)| (o - c) * (o - c))
            .sum::<f64>()
            .sqrt()
    };
    distance(second_centre) - distance(first_centre)
}
