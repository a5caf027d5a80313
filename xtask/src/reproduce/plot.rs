//! SVG figures: error versus Λ (Figure 3) and versus ε (Figure 1), measured beside published.

use plotters::prelude::*;

use super::linear::{Cell, Method};
use super::published::BEST_ERRORS;
use super::report::{best_over_lambda, cell};
use crate::safe_write::OutDir;

const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(0, 0, 0),
];

/// One curve: legend, points, whether it is published data (circles, not a line), whether
/// it is a secondary curve of its colour (a thin line with larger dots), colour.
pub(super) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub published: bool,
    pub secondary: bool,
    pub color: usize,
}

/// The x range spanning every point of `series` with a margin on the log scale, or `None`
/// when there is no positive finite x (the axis is logarithmic: callers plot positive x).
pub(super) fn data_x_range(series: &[Series]) -> Option<(f64, f64)> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (low, high) = xs
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(x), h.max(x)));
    low.is_finite().then_some((low * 0.8, high * 1.25))
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
            // At most three decimals, without trailing zeros: 0.01, 0.2, 1.
            let text = format!("{x:.3}");
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
    };
    let legend: Vec<LegendEntry> = series
        .iter()
        .map(|s| LegendEntry {
            name: s.name.clone(),
            color: COLORS[s.color % COLORS.len()],
            mark: if s.published {
                Mark::Circle
            } else if s.secondary {
                Mark::LineWithDots
            } else {
                Mark::Line
            },
        })
        .collect();
    let plot_area = canvas(svg, &legend)?;
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.05f64, f64::max)
        .min(0.6)
        * 1.1;
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d((x_range.0..x_range.1).log_scale(), 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(axis)
        .y_desc("test error")
        .x_label_formatter(&tick)
        .draw()?;
    for curve in series {
        let color = COLORS[curve.color % COLORS.len()];
        if curve.published {
            chart.draw_series(
                curve
                    .points
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 5, color.stroke_width(2))),
            )?;
        } else {
            let (width, dot) = if curve.secondary { (1, 3) } else { (2, 2) };
            chart.draw_series(LineSeries::new(
                curve.points.clone(),
                color.stroke_width(width),
            ))?;
            chart.draw_series(
                curve
                    .points
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), dot, color.filled())),
            )?;
        }
    }
    plot_area.present()?;
    Ok(())
}

/// Width of every figure, in pixels.
const WIDTH: u32 = 900;
/// Height of the plotting part of every figure (the legend goes below it).
const CHART_HEIGHT: u32 = 500;
const LEGEND_ROW: u32 = 20;

/// How a legend entry is drawn: a line (measured), a hollow circle (published) or a line
/// with dots.
#[derive(Clone, Copy)]
pub(super) enum Mark {
    Line,
    Circle,
    LineWithDots,
}

/// One entry of a legend.
pub(super) struct LegendEntry {
    pub name: String,
    pub color: RGBColor,
    pub mark: Mark,
}

/// A white figure with `legend` drawn in its own band below; returns the plotting area
/// (present it when done: that writes the whole figure).
pub(super) fn canvas<'a>(
    svg: &'a mut String,
    legend: &[LegendEntry],
) -> Result<DrawingArea<SVGBackend<'a>, plotters::coord::Shift>, Box<dyn std::error::Error>> {
    let height = CHART_HEIGHT + legend_height(legend.len());
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_vertically(CHART_HEIGHT);
    draw_legend(&legend_area, legend)?;
    Ok(plot_area)
}

/// Height of the legend band below a chart with `entries` entries in two columns.
fn legend_height(entries: usize) -> u32 {
    entries.div_ceil(2) as u32 * LEGEND_ROW + 16
}

/// Draws the legend in its own band below the plotting area, in two columns, so that it
/// never covers the data.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[LegendEntry],
) -> Result<(), Box<dyn std::error::Error>> {
    let (width, _) = area.dim_in_pixel();
    let column = (width as i32 - 40) / 2;
    for (k, entry) in entries.iter().enumerate() {
        let x = 30 + (k as i32 % 2) * column;
        let y = 8 + (k as i32 / 2) * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        let line = PathElement::new(vec![(x, y), (x + 26, y)], entry.color.stroke_width(2));
        match entry.mark {
            Mark::Line => area.draw(&line)?,
            Mark::Circle => area.draw(&Circle::new((x + 13, y), 5, entry.color.stroke_width(2)))?,
            Mark::LineWithDots => {
                area.draw(&line)?;
                area.draw(&Circle::new((x + 13, y), 3, entry.color.filled()))?;
            }
        }
        area.draw(&Text::new(
            entry.name.clone(),
            (x + 34, y - 7),
            ("sans-serif", 13).into_font(),
        ))?;
    }
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
        secondary: false,
        color: 0,
    }];
    for (k, &e) in epsilons.iter().enumerate() {
        series.push(Series {
            name: format!("objective pert. SVM, ε = {e}"),
            points: measured(Method::ObjectiveSvm, Some(e)),
            published: false,
            secondary: false,
            color: k + 1,
        });
        series.push(Series {
            name: format!("published, ε = {e}"),
            points: published.iter().map(|(l, row)| (*l, row[k])).collect(),
            published: true,
            secondary: false,
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

/// Figure 1: best error over Λ versus ε, one line per method, with the published best
/// errors (Figure 2a) as circles of the method's colour, on the paper's ε range 0.01 to 1.
pub fn error_versus_epsilon(
    out: &OutDir,
    name: &str,
    cells: &[Cell],
    dataset: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let methods = [
        Method::OutputSvm,
        Method::ObjectiveLogistic,
        Method::ObjectiveSvm,
        Method::ObjectiveSvmCliffFree,
        Method::Scm09SvmNotPrivate,
    ];
    let mut epsilons: Vec<f64> = cells
        .iter()
        .filter(|c| c.dataset == dataset)
        .filter_map(|c| c.epsilon)
        .collect();
    epsilons.sort_by(f64::total_cmp);
    epsilons.dedup();
    let mut series = Vec::new();
    for (k, &method) in methods.iter().enumerate() {
        let points: Vec<(f64, f64)> = epsilons
            .iter()
            .filter_map(|&e| best_over_lambda(cells, dataset, method, Some(e)).map(|b| (e, b.0)))
            .collect();
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            name: method.label().to_owned(),
            points,
            published: false,
            secondary: false,
            color: k + 1,
        });
        let published: Vec<(f64, f64)> = BEST_ERRORS
            .iter()
            .filter(|p| p.0 == method.label() && p.1 == dataset)
            .filter_map(|p| p.2.map(|e| (e, p.3)))
            .collect();
        if !published.is_empty() {
            series.push(Series {
                name: format!("published, {}", method.label()),
                points: published,
                published: true,
                secondary: false,
                color: k + 1,
            });
        }
    }
    if let Some((error, _)) = best_over_lambda(cells, dataset, Method::NonPrivateSvm, None) {
        series.push(Series {
            name: "non-private SVM".into(),
            points: vec![(0.01, error), (1.0, error)],
            published: false,
            secondary: false,
            color: 0,
        });
        if let Some(p) = BEST_ERRORS
            .iter()
            .find(|p| p.0 == Method::NonPrivateSvm.label() && p.1 == dataset)
        {
            series.push(Series {
                name: "published, non-private SVM (no ε; drawn at ε = 1)".into(),
                points: vec![(1.0, p.3)],
                published: true,
                secondary: false,
                color: 0,
            });
        }
    }
    draw(
        out,
        name,
        &format!("{dataset}: best error over Λ versus ε"),
        "ε",
        (0.008, 1.25),
        &series,
    )
}
