use dp_erm::{ErmParams, TrainingSet};
use dp_noise::DpRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 2,000 rows of two features inside the unit ball, labelled ±1 by a fixed line.
    // Your rows come from your data; the bound (norm ≤ 1) must be a public fact.
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    for i in 0..2_000 {
        let angle = 0.37 * f64::from(i);
        let (x, y) = (0.9 * angle.cos(), 0.9 * angle.sin());
        values.extend([x, y]);
        labels.push(if x + 0.3 * y > 0.0 { 1.0 } else { -1.0 });
    }
    let data = TrainingSet::builder(2)
        .dense_rows(values)
        .labels(labels)
        .build()?;

    // ε = 0.5; the loss and Λ come from the public n, d and ε alone (no data read).
    let params = ErmParams::recommended(data.len(), data.features(), 0.5)?;
    let fit = params.fit(&data, &mut DpRng::from_os_entropy()?)?;
    let model = fit.model();
    println!("ε spent: {}", fit.epsilon().unwrap_or(0.0));
    println!("training error: {:.3}", model.error_rate(&data)?);
    // A checksummed file recording ε, Λ and the mechanism (in the temporary folder, not here).
    let path = std::env::temp_dir().join("quick_start.dperm");
    model.save(&path)?;
    println!("saved {}", path.display());
    Ok(())
}
