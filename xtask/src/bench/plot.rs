//! Log-log line plots of the benchmark reports, drawn in memory and written atomically.

use plotters::prelude::*;

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
    let points = || curves.iter().flat_map(|c| c.points.iter().copied());
    let (x_low, x_high) = points().fold((f64::INFINITY, 0.0f64), |(lo, hi), (x, _)| {
        (lo.min(x), hi.max(x))
    });
    let (y_low, y_high) = points().fold((f64::INFINITY, 0.0f64), |(lo, hi), (_, y)| {
        (lo.min(y), hi.max(y))
    });
    if !(x_low > 0.0 && y_low > 0.0 && x_high.is_finite() && y_high.is_finite()) {
        return Err(format!("{name}: nothing positive to plot").into());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 520)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (x_low / 1.5..x_high * 1.5).log_scale(),
                (y_low / 2.0..y_high * 2.0).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc(axis)
            .y_desc("time (ms)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.3}"))
            .draw()?;
        let colors = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)];
        for (k, curve) in curves.iter().enumerate() {
            let color = colors[k % colors.len()];
            chart
                .draw_series(LineSeries::new(curve.points.clone(), color.stroke_width(2)))?
                .label(curve.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(
                curve
                    .points
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    out.write(name, svg)?;
    Ok(())
}
