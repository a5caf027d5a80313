//! SVG figures: error versus Λ (Figure 3) and versus ε (Figure 1), measured beside published.

use plotters::prelude::*;

use super::linear::{Cell, Method};
use super::report::{best_over_lambda, cell};
use crate::safe_write::OutDir;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One curve: legend, points, whether it is published data (circles, not a line), colour.
pub(super) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub published: bool,
    pub color: usize,
}

/// Renders the figure in memory and then replaces `name` in `out` atomically, so a drawing
/// error cannot leave a truncated SVG in place of a good one.
pub(super) fn draw(
    out: &OutDir,
    name: &str,
    title: &str,
    axis: &str,
    x_range: (f64, f64),
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut svg = String::new();
    render(&mut svg, title, axis, x_range, series)?;
    out.write(name, svg)?;
    Ok(())
}

fn render(
    svg: &mut String,
    title: &str,
    axis: &str,
    x_range: (f64, f64),
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    // Λ spans decades (scientific labels); counts (n, D) are integers; ε is decimal.
    let tick = |x: &f64| {
        if axis == "Λ" {
            format!("{x:.0e}")
        } else if axis.starts_with('n') || axis.starts_with('D') {
            format!("{x:.0}")
        } else {
            format!("{x:.2}")
        }
    };
    let root = SVGBackend::with_string(svg, (800, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.1f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d((x_range.0..x_range.1).log_scale(), 0.0..y_max.min(0.6))?;
    chart
        .configure_mesh()
        .x_desc(axis)
        .y_desc("test error")
        .x_label_formatter(&tick)
        .draw()?;
    for curve in series {
        let color = COLORS[curve.color % COLORS.len()];
        if curve.published {
            chart
                .draw_series(
                    curve
                        .points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, color.stroke_width(1))),
                )?
                .label(curve.name.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.stroke_width(1)));
        } else {
            chart
                .draw_series(LineSeries::new(curve.points.clone(), color.stroke_width(2)))?
                .label(curve.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Figure 3: error versus Λ for the objective-perturbation SVM at each ε (lines: measured;
/// circles of the same colour: published) and the non-private SVM.
pub fn error_versus_lambda(
    out: &OutDir,
    name: &str,
    cells: &[Cell],
    dataset: &str,
    lambdas: &[f64],
    epsilons: &[f64],
    published: &[(f64, Vec<f64>)],
) -> Result<(), Box<dyn std::error::Error>> {
    let measured = |method, epsilon| -> Vec<(f64, f64)> {
        lambdas
            .iter()
            .filter_map(|&l| cell(cells, dataset, method, l, epsilon).map(|e| (l, e)))
            .collect()
    };
    let mut series = vec![Series {
        name: "non-private SVM".into(),
        points: measured(Method::NonPrivateSvm, None),
        published: false,
        color: 0,
    }];
    for (k, &e) in epsilons.iter().enumerate() {
        series.push(Series {
            name: format!("objective pert. SVM, ε = {e}"),
            points: measured(Method::ObjectiveSvm, Some(e)),
            published: false,
            color: k + 1,
        });
        series.push(Series {
            name: format!("published, ε = {e}"),
            points: published.iter().map(|(l, row)| (*l, row[k])).collect(),
            published: true,
            color: k + 1,
        });
    }
    let low = lambdas.iter().cloned().fold(f64::INFINITY, f64::min) * 0.5;
    let high = lambdas.iter().cloned().fold(0.0, f64::max) * 2.0;
    draw(
        out,
        name,
        &format!("{dataset}: error versus Λ"),
        "Λ",
        (low, high),
        &series,
    )
}

/// Figure 1: best error over Λ versus ε, one line per method.
pub fn error_versus_epsilon(
    out: &OutDir,
    name: &str,
    cells: &[Cell],
    dataset: &str,
    epsilons: &[f64],
) -> Result<(), Box<dyn std::error::Error>> {
    let methods = [
        Method::OutputSvm,
        Method::ObjectiveLogistic,
        Method::ObjectiveSvm,
        Method::ObjectiveSvmCliffFree,
        Method::Scm09SvmNotPrivate,
    ];
    let mut series: Vec<Series> = methods
        .iter()
        .enumerate()
        .map(|(k, &method)| Series {
            name: method.label().to_owned(),
            points: epsilons
                .iter()
                .filter_map(|&e| {
                    best_over_lambda(cells, dataset, method, Some(e)).map(|b| (e, b.0))
                })
                .collect(),
            published: false,
            color: k + 1,
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if let Some((error, _)) = best_over_lambda(cells, dataset, Method::NonPrivateSvm, None) {
        series.push(Series {
            name: "non-private SVM".into(),
            points: epsilons.iter().map(|&e| (e, error)).collect(),
            published: false,
            color: 0,
        });
    }
    let low = epsilons.iter().cloned().fold(f64::INFINITY, f64::min) * 0.8;
    let high = epsilons.iter().cloned().fold(0.0, f64::max) * 1.25;
    draw(
        out,
        name,
        &format!("{dataset}: best error over Λ versus ε"),
        "ε",
        (low, high),
        &series,
    )
}
