//! Log-log line plots of the benchmark reports, in the figures' one style
//! (`crate::reproduce::plot`), drawn in memory and written atomically.

use crate::reproduce::plot::{self, Figure, Scale, Series};
use crate::safe_write::OutDir;

/// One measured curve.
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Draws `curves` on log-log axes (x labelled `axis`, y in ms) and replaces `name` in `out`.
pub fn log_log(
    out: &OutDir,
    name: &str,
    title: &str,
    axis: &str,
    curves: &[Curve],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut figure = Figure {
        title: title.to_owned(),
        x_label: axis.to_owned(),
        x_scale: Scale::Log,
        y_label: "time (ms)".to_owned(),
        y_scale: Scale::Log,
        series: Vec::new(),
        subtitle: None,
        dodge: false,
    };
    for curve in curves {
        figure.push(Series::line(curve.name.clone(), curve.points.clone()));
    }
    if !plot::draw(out, name, &figure)? {
        return Err(format!("{name}: nothing to plot").into());
    }
    Ok(())
}
