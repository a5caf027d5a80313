//! Scores of released linear models.

/// The canary margin `y*·fᵀx*` of weights `f` on the canary `(x*, y*)` given as sparse
/// `(feature, value)` pairs: the black-box score of PRIVACY_TESTING.md §2. Features beyond
/// the weights count as 0.
pub fn canary_margin(weights: &[f64], canary: &[(usize, f64)], label: f64) -> f64 {
    label
        * canary
            .iter()
            .filter_map(|&(j, v)| weights.get(j).map(|w| w * v))
            .sum::<f64>()
}
