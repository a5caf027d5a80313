//! `--tune GRID`: the candidate Λ values, parsed and checked before anything else is read.
//!
//! Two forms: a comma-separated list (`1e-4,1e-3,1e-2`) or an evenly spaced grid in log
//! scale, `log:LOW..HIGH:COUNT` (`log:1e-6..1e-2:5` = 1e-6, 1e-5, …, 1e-2, both ends
//! included). The grid is part of the public parameters: it must not be chosen by looking
//! at the data.

/// Fewest candidates: one value is not a choice (use `--regularization`).
pub const MIN_CANDIDATES: usize = 2;

/// Most candidates: split-and-select gives each `n/(m+1)` rows, so a long grid starves
/// every candidate; and random stopping's expected runs do not depend on it.
pub const MAX_CANDIDATES: usize = 64;

/// The Λ values of `text`, each in `[min, max]`, distinct, in the order given (a `log:`
/// grid from LOW to HIGH), or why not.
pub fn parse(text: &str, min: f64, max: f64) -> Result<Vec<f64>, String> {
    let values = match text.strip_prefix("log:") {
        Some(spec) => log_grid(spec)?,
        None => list(text)?,
    };
    if !(MIN_CANDIDATES..=MAX_CANDIDATES).contains(&values.len()) {
        return Err(format!(
            "{} values; a grid has {MIN_CANDIDATES} to {MAX_CANDIDATES}",
            values.len()
        ));
    }
    for (i, &v) in values.iter().enumerate() {
        if !(v.is_finite() && (min..=max).contains(&v)) {
            return Err(format!(
                "value {} is {v:?}; every Λ must be in [{min:?}, {max:?}]",
                i + 1
            ));
        }
        if values[..i].contains(&v) {
            return Err(format!("value {} ({v:?}) is listed twice", i + 1));
        }
    }
    Ok(values)
}

fn number(text: &str, what: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("{what} {:?} is not a number", text.trim()))
}

fn list(text: &str) -> Result<Vec<f64>, String> {
    if text.trim().is_empty() {
        return Err("empty; write values such as 1e-4,1e-3,1e-2 or log:1e-6..1e-2:5".into());
    }
    let pieces: Vec<&str> = text.split(',').collect();
    if pieces.len() > MAX_CANDIDATES {
        return Err(format!(
            "{} values; a grid has {MIN_CANDIDATES} to {MAX_CANDIDATES}",
            pieces.len()
        ));
    }
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| number(piece, &format!("value {}", i + 1)))
        .collect()
}

fn log_grid(spec: &str) -> Result<Vec<f64>, String> {
    let shape = "write log:LOW..HIGH:COUNT, e.g. log:1e-6..1e-2:5";
    let (range, count) = spec
        .rsplit_once(':')
        .ok_or_else(|| format!("no COUNT; {shape}"))?;
    let (low, high) = range
        .split_once("..")
        .ok_or_else(|| format!("no LOW..HIGH range; {shape}"))?;
    let (low, high) = (number(low, "LOW")?, number(high, "HIGH")?);
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| format!("COUNT {:?} is not a whole number", count.trim()))?;
    if !(MIN_CANDIDATES..=MAX_CANDIDATES).contains(&count) {
        return Err(format!(
            "COUNT is {count}; a grid has {MIN_CANDIDATES} to {MAX_CANDIDATES} values"
        ));
    }
    if !(low > 0.0 && high > low && high.is_finite()) {
        return Err(format!(
            "LOW = {low:?} and HIGH = {high:?}: need 0 < LOW < HIGH (finite)"
        ));
    }
    let (a, b) = (low.log10(), high.log10());
    let step = (b - a) / (count - 1) as f64;
    // The ends exactly as written; the points between in log scale, as powers of 10 (so a
    // grid over decades gives 1e-3, not 0.001000000000000001).
    Ok((0..count)
        .map(|i| match i {
            0 => low,
            i if i == count - 1 => high,
            i => 10f64.powf(a + step * i as f64),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<f64> {
        parse(text, 1e-12, 1e6).unwrap()
    }

    fn refused(text: &str) -> String {
        parse(text, 1e-12, 1e6).unwrap_err()
    }

    #[test]
    fn lists_and_log_grids() {
        assert_eq!(ok("1e-4,1e-3, 1e-2"), vec![1e-4, 1e-3, 1e-2]);
        let g = ok("log:1e-6..1e-2:5");
        assert_eq!(g.len(), 5);
        assert_eq!((g[0], g[4]), (1e-6, 1e-2));
        assert_eq!(g, vec![1e-6, 1e-5, 1e-4, 1e-3, 1e-2]);
        let g = ok("log:1e-4..1e-2:5");
        for (v, e) in g
            .iter()
            .zip([1e-4, 10f64.powf(-3.5), 1e-3, 10f64.powf(-2.5), 1e-2])
        {
            assert!((v / e - 1.0).abs() < 1e-12, "{v} vs {e}");
        }
    }

    #[test]
    fn bad_grids_say_why() {
        assert!(refused("").contains("empty"));
        assert!(refused("1e-3").contains("1 values"));
        assert!(refused("1e-3,abc").contains("value 2 \"abc\" is not a number"));
        assert!(refused("1e-3,0").contains("value 2 is 0"));
        assert!(refused("1e-3,1e-3").contains("listed twice"));
        assert!(refused("1e-3,inf").contains("value 2 is inf"));
        assert!(refused("log:1e-1..1e-5:3").contains("need 0 < LOW < HIGH"));
        assert!(refused("log:0..1:3").contains("need 0 < LOW < HIGH"));
        assert!(refused("log:1e-5..1e-1:1").contains("COUNT is 1"));
        assert!(refused("log:1e-5..1e-1:65").contains("COUNT is 65"));
        assert!(refused("log:1e-5..1e-1").contains("no COUNT"));
        assert!(refused("log:1e-5:3").contains("no LOW..HIGH"));
        assert!(refused("log:1e-1..1e7:3").contains("value 3 is 10000000"));
        assert!(refused(&vec!["1"; 1000].join(",")).contains("1000 values"));
    }
}
