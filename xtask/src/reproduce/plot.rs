//! The one plotting style every figure of `cargo xtask reproduce` goes through.
//!
//! The rules it enforces, for the whole class of figures (each has a test below):
//! - ticks chosen from the axis length and the labels' widths, so labels never collide, and
//!   at least two on every axis; a light major grid only (no minor grid);
//! - axes that end where the data end (a small margin so end markers are not cut);
//! - a log axis keeps zero values: they are drawn on a marked floor labelled 0, and the
//!   legend says so;
//! - every series has its own (colour, marker) pair; independent series never share a
//!   colour; hollow circles are reserved for published values;
//! - a figure without a single measured point is not written at all.
//!
//! Every SVG of `reproduce`, `bench` and `audit` goes through [`draw`] or [`render`].

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::linear::{Cell, Method};
use super::published::BEST_ERRORS;
use super::report::{best_over_lambda, cell};
use crate::safe_write::OutDir;

/// Colours of independent series, in order (Tableau 10, then black and navy).
const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(0, 0, 128),
];

/// Point markers. `Circle` (hollow) is only ever given to published values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
    Cross,
    Plus,
    Star,
}

/// Markers of measured curves, in order (never the circle, never the star).
const LINE_MARKERS: [Marker; 6] = [
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
    Marker::Plus,
];

/// What a series is, which decides how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A measured curve: a line with a marker at each point, its own colour.
    Line,
    /// Measured points without a line (stars), in the colour of series `of` if given.
    Points { of: Option<usize> },
    /// Published values (hollow circles), in the colour of series `of` if given.
    Published { of: Option<usize> },
}

/// One series of a figure.
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub kind: Kind,
    /// The standard error of each point (same order as `points`), drawn as a ±1 s.e. bar;
    /// empty: no bars. A NaN or zero entry draws no bar at that point.
    pub se: Vec<f64>,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            kind: Kind::Line,
            se: Vec::new(),
        }
    }

    pub fn points(name: impl Into<String>, points: Vec<(f64, f64)>, of: Option<usize>) -> Self {
        Series {
            name: name.into(),
            points,
            kind: Kind::Points { of },
            se: Vec::new(),
        }
    }

    pub fn published(name: impl Into<String>, points: Vec<(f64, f64)>, of: Option<usize>) -> Self {
        Series {
            name: name.into(),
            points,
            kind: Kind::Published { of },
            se: Vec::new(),
        }
    }

    /// A measured curve from (x, y, standard error of y) triples: drawn with ±1 s.e. bars.
    pub fn line_se(name: impl Into<String>, points: Vec<(f64, f64, f64)>) -> Self {
        Series::line(name, points.iter().map(|p| (p.0, p.1)).collect())
            .with_se(points.iter().map(|p| p.2).collect())
    }

    /// The same series with a ±1 s.e. bar at each point (`se[k]` belongs to `points[k]`).
    pub fn with_se(mut self, se: Vec<f64>) -> Self {
        self.se = se;
        self
    }

    /// The (low, high) ends of the ±1 s.e. bar at point `k`, the low end kept at or above 0
    /// (the figures' y values are errors, rates and times); `None` when the point has no
    /// finite, positive s.e.
    pub fn bar(&self, k: usize) -> Option<(f64, f64)> {
        let (_, y) = *self.points.get(k)?;
        let se = *self.se.get(k)?;
        (se.is_finite() && se > 0.0 && y.is_finite()).then(|| ((y - se).max(0.0), y + se))
    }
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scale {
    Linear,
    Log,
}

/// A figure: title, axes and series. The y axis of a linear figure starts at 0.
pub(crate) struct Figure {
    pub title: String,
    pub x_label: String,
    pub x_scale: Scale,
    pub y_label: String,
    pub y_scale: Scale,
    pub series: Vec<Series>,
    /// A second line under the title, in a warning colour: what the reader must know before
    /// reading the figure (a quick run's "not the paper's protocol", see [`quick_subtitle`]).
    pub subtitle: Option<String>,
    /// Spread the curves sideways by a few pixels each ([`DODGE`]), so that curves with
    /// equal values at the same x stay visible side by side instead of hiding each other.
    pub dodge: bool,
}

impl Figure {
    /// Test error (linear, from 0) against `x_label` on a log x axis: most figures.
    pub fn error_versus(title: impl Into<String>, x_label: impl Into<String>) -> Self {
        Figure {
            title: title.into(),
            x_label: x_label.into(),
            x_scale: Scale::Log,
            y_label: "test error".into(),
            y_scale: Scale::Linear,
            series: Vec::new(),
            subtitle: None,
            dodge: false,
        }
    }

    /// The number of distinct x values of the measured curves (`Kind::Line`): a curve
    /// needs at least [`MIN_CURVE_POINTS`] to show a trend.
    pub fn curve_x_values(&self) -> usize {
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .filter(|s| s.kind == Kind::Line)
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .filter(|x| x.is_finite())
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len()
    }

    /// Adds `series` and returns its index (for `of` links).
    pub fn push(&mut self, series: Series) -> usize {
        self.series.push(series);
        self.series.len() - 1
    }
}

/// The fewest distinct x values a curve is drawn from: two points make a segment, not a
/// curve; a quick run that has fewer leaves the figure out (and its index says so).
pub(crate) const MIN_CURVE_POINTS: usize = 3;

/// The subtitle of a figure from a quick run: `per_point` says how much stands behind each
/// point (e.g. "2 folds × 2 noise draws"); `extra`, when given, what else the reader must
/// know (e.g. that the published points are left out).
pub(crate) fn quick_subtitle(per_point: &str, extra: Option<&str>) -> String {
    let mut s = format!("QUICK RUN: {per_point} per point, not the paper's protocol");
    if let Some(extra) = extra {
        s += "; ";
        s += extra;
    }
    s
}

/// The colour index and marker of each series. Lines and unlinked points get the next
/// colour; linked ones the colour of the series they belong to. An error when there are
/// more independent series than colours, when a link does not point to an earlier series,
/// or when two series would get the same (colour, marker) pair.
pub(super) fn assign(series: &[Series]) -> Result<Vec<(usize, Marker)>, String> {
    let mut styles: Vec<(usize, Marker)> = Vec::with_capacity(series.len());
    let (mut colours, mut lines) = (0, 0);
    for (k, s) in series.iter().enumerate() {
        let (link, marker) = match s.kind {
            Kind::Line => {
                lines += 1;
                (None, LINE_MARKERS[(lines - 1) % LINE_MARKERS.len()])
            }
            Kind::Points { of } => (of, Marker::Star),
            Kind::Published { of } => (of, Marker::Circle),
        };
        let colour = match link {
            Some(of) if of < k => styles[of].0,
            Some(of) => {
                return Err(format!(
                    "series {k} links to series {of}, not an earlier one"
                ));
            }
            None => {
                colours += 1;
                colours - 1
            }
        };
        if colour >= PALETTE.len() {
            return Err(format!("more than {} independent series", PALETTE.len()));
        }
        if styles.contains(&(colour, marker)) {
            return Err(format!(
                "series {k} ({}) repeats another series' colour and marker",
                s.name
            ));
        }
        styles.push((colour, marker));
    }
    Ok(styles)
}

// ---------------------------------------------------------------------------------------
// Axes: ranges and ticks.

/// Font size of tick labels, in pixels.
const TICK_FONT: f64 = 17.0;
/// A conservative width of one character of a tick label (digits, `e`, `-`, `.`).
const CHAR_WIDTH: f64 = 0.62 * TICK_FONT;
/// The least free space between two neighbouring tick labels, in pixels.
const TICK_GAP: f64 = 12.0;

/// The value on the axis's own linear scale (log10 for a log axis).
fn forward(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log => v.log10(),
    }
}

fn inverse(scale: Scale, t: f64) -> f64 {
    match scale {
        Scale::Linear => t,
        Scale::Log => 10f64.powf(t),
    }
}

/// Where a log axis draws zero values: this far (in decades) below the smallest positive one.
const ZERO_FLOOR_DECADES: f64 = 0.6;

/// An axis after looking at the data: its range on the transformed scale, and on a log
/// axis with zeros, where the zero floor is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct AxisRange {
    pub scale: Scale,
    pub low: f64,
    pub high: f64,
    pub zero_floor: Option<f64>,
}

impl AxisRange {
    /// Where `v` goes on the transformed scale; `None` for a value that cannot be drawn.
    fn place(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match (self.scale, self.zero_floor) {
            (Scale::Log, Some(floor)) if v <= 0.0 => Some(floor),
            (Scale::Log, _) if v <= 0.0 => None,
            (scale, _) => Some(forward(scale, v)),
        }
    }
}

/// The range spanning `values` (NaN and infinities skipped) with a margin of 3% of the span
/// on each side, so the axis ends where the data end. A linear axis `from_zero` starts at 0.
/// A log axis with zero or negative values puts them on a floor below the smallest positive
/// value. `None` when there is nothing to draw.
pub(super) fn axis_range(
    scale: Scale,
    values: impl IntoIterator<Item = f64>,
    from_zero: bool,
) -> Option<AxisRange> {
    let finite: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    let has_zero = scale == Scale::Log && finite.iter().any(|&v| v <= 0.0);
    let placed: Vec<f64> = finite
        .iter()
        .filter(|&&v| scale == Scale::Linear || v > 0.0)
        .map(|&v| forward(scale, v))
        .collect();
    let (mut low, mut high) = placed
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &t| {
            (l.min(t), h.max(t))
        });
    if !low.is_finite() {
        // Only zeros on a log axis: draw them on a floor of an arbitrary decade.
        if !has_zero {
            return None;
        }
        (low, high) = (-1.0, -1.0);
    }
    let zero_floor = has_zero.then_some(low - ZERO_FLOOR_DECADES);
    if let Some(floor) = zero_floor {
        low = floor;
    }
    if from_zero && scale == Scale::Linear {
        low = low.min(0.0);
    }
    let span = high - low;
    let margin = if span > 0.0 {
        0.03 * span
    } else {
        match scale {
            Scale::Log => 0.1,
            Scale::Linear => 0.1 * high.abs().max(1e-3),
        }
    };
    let low = if from_zero && scale == Scale::Linear && low >= 0.0 {
        0.0
    } else {
        low - margin
    };
    Some(AxisRange {
        scale,
        low,
        high: high + margin,
        zero_floor,
    })
}

/// The text of a tick at `v`: decimals for ordinary magnitudes, `2.5e-4` for small or huge
/// ones, rounded to 6 significant digits so that float noise does not show.
pub(super) fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let rounded: f64 = format!("{v:.5e}").parse().unwrap_or(v);
    let a = rounded.abs();
    if !(1e-2..1e6).contains(&a) {
        format!("{rounded:e}")
    } else {
        format!("{rounded}")
    }
}

/// The labels of one axis's ticks: all in scientific notation when any needs it (so an
/// axis never mixes `1e-3` with `0.01`), else decimals; zero is `0`.
pub(super) fn tick_labels(values: &[f64]) -> Vec<String> {
    let labels: Vec<String> = values.iter().map(|&v| tick_label(v)).collect();
    if !labels.iter().any(|l| l.contains('e')) {
        return labels;
    }
    values
        .iter()
        .map(|&v| {
            if v == 0.0 {
                "0".to_owned()
            } else {
                let rounded: f64 = format!("{v:.5e}").parse().unwrap_or(v);
                format!("{rounded:e}")
            }
        })
        .collect()
}

/// The estimated width of a tick label in pixels.
pub(super) fn label_width(text: &str) -> f64 {
    text.chars().count() as f64 * CHAR_WIDTH
}

/// True when labels at `positions` (pixels along the axis, increasing) of the given
/// `widths` leave at least `TICK_GAP` between neighbours.
fn labels_fit(positions: &[f64], widths: &[f64]) -> bool {
    positions
        .windows(2)
        .zip(widths.windows(2))
        .all(|(p, w)| p[1] - p[0] >= (w[0] + w[1]) / 2.0 + TICK_GAP)
}

/// Ticks of a linear stretch `[low, high]` of raw values: multiples of the densest nice
/// step (1, 2, 2.5, 5 × 10^k) whose labels fit, at least two.
fn linear_candidates(low: f64, high: f64) -> Vec<Vec<f64>> {
    let span = high - low;
    if span <= 0.0 || !span.is_finite() {
        return Vec::new();
    }
    let mut candidates = Vec::new();
    let first = (span / 40.0).log10().floor() as i32;
    for k in first..first + 4 {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * 10f64.powi(k);
            let start = (low / step - 1e-9).ceil() as i64;
            let end = (high / step + 1e-9).floor() as i64;
            if end - start + 1 >= 2 && end - start < 60 {
                candidates.push((start..=end).map(|i| i as f64 * step).collect());
            }
        }
    }
    candidates
}

/// Ticks on a log axis spanning decades `[low, high]` (log10), densest first: mantissas
/// 1…9, {1, 2, 5}, {1, 3}, {1}, then every 2nd, 3rd, 5th, 10th decade.
fn log_candidates(low: f64, high: f64) -> Vec<Vec<f64>> {
    let mut sets: Vec<(Vec<f64>, i32)> = vec![
        ((1..10).map(f64::from).collect(), 1),
        (vec![1.0, 2.0, 5.0], 1),
        (vec![1.0, 3.0], 1),
    ];
    for every in [1, 2, 3, 5, 10] {
        sets.push((vec![1.0], every));
    }
    let mut candidates = Vec::new();
    for (mantissas, every) in sets {
        let mut ticks = Vec::new();
        for decade in (low.floor() as i32 - 1)..=(high.ceil() as i32) {
            if decade.rem_euclid(every) != 0 {
                continue;
            }
            for m in &mantissas {
                let v = m * 10f64.powi(decade);
                let t = v.log10();
                if t >= low - 1e-9 && t <= high + 1e-9 {
                    ticks.push(v);
                }
            }
        }
        if ticks.len() >= 2 {
            candidates.push(ticks);
        }
    }
    // A stretch narrower than a factor of about 2 has no two round decades in it: linear
    // nice values within it serve.
    candidates.extend(linear_candidates(10f64.powf(low), 10f64.powf(high)));
    candidates
}

/// The tick values (raw, not transformed) of an axis of `length` pixels: the densest
/// candidate whose labels fit (`vertical`: labels stacked, so only their height counts),
/// with at least two ticks. On a log axis with a zero floor, the floor is a tick ("0") and
/// the others keep clear of it.
pub(super) fn choose_ticks(range: &AxisRange, length: f64, vertical: bool) -> Vec<f64> {
    let low_data = range
        .zero_floor
        .map_or(range.low, |f| f + 0.5 * ZERO_FLOOR_DECADES);
    let candidates = match range.scale {
        Scale::Linear => linear_candidates(range.low, range.high),
        Scale::Log => log_candidates(low_data, range.high),
    };
    let pixel = |v: f64| {
        let t = if v == 0.0 && range.zero_floor.is_some() {
            range.zero_floor.unwrap_or(range.low)
        } else {
            forward(range.scale, v)
        };
        (t - range.low) / (range.high - range.low) * length
    };
    let fits = |ticks: &[f64]| {
        let mut all: Vec<f64> = Vec::new();
        if range.zero_floor.is_some() {
            all.push(0.0);
        }
        all.extend_from_slice(ticks);
        let positions: Vec<f64> = all.iter().map(|&v| pixel(v)).collect();
        let widths: Vec<f64> = tick_labels(&all)
            .iter()
            .map(|l| if vertical { TICK_FONT } else { label_width(l) })
            .collect();
        labels_fit(&positions, &widths)
    };
    // When no set fits (a short axis), the widest-spread pair of some candidate's ticks.
    let pairs = candidates
        .iter()
        .filter_map(|c| Some(vec![*c.first()?, *c.last()?]))
        .filter(|c| c[0] < c[1]);
    let mut chosen = candidates
        .iter()
        .filter(|c| c.len() <= 12)
        .cloned()
        .chain(pairs)
        .find(|c| fits(c))
        .or_else(|| candidates.iter().min_by_key(|c| c.len()).cloned())
        .unwrap_or_default();
    if range.zero_floor.is_some() {
        chosen.insert(0, 0.0);
    }
    chosen
}

// ---------------------------------------------------------------------------------------
// Drawing.

/// Width of every figure, in pixels.
pub(crate) const WIDTH: u32 = 900;
/// Height of the plotting part of every figure, below its title (the legend goes below it).
const CHART_HEIGHT: u32 = 500;
/// Height of the title's row, and of each row of the subtitle.
const TITLE_ROW: u32 = 34;
const SUBTITLE_ROW: u32 = 22;
const LEGEND_ROW: u32 = 24;
const MARGIN: u32 = 15;
const X_LABEL_AREA: u32 = 54;
const Y_LABEL_AREA: u32 = 76;
const GRID: RGBColor = RGBColor(225, 225, 225);
/// Font sizes as plotters takes them; its SVG backend writes `font-size` = size /
/// [`SVG_FONT_SCALE`]. The smallest, [`SMALLEST_FONT`], is chosen with the page:
/// `index.html` never shows a figure narrower than [`MIN_PAGE_WIDTH`], so no text of a
/// figure renders below 11 px there (`xtask/tests/render_index.sh` measures it).
const TITLE_FONT: u32 = 22;
const SUBTITLE_FONT: u32 = 17;
const AXIS_FONT: u32 = 18;
const LEGEND_FONT: u32 = 17;
pub(crate) const SMALLEST_FONT: u32 = 17;
/// plotters' SVG `font-size` is the size it is given divided by this.
pub(crate) const SVG_FONT_SCALE: f64 = 1.24;
const NOTE_FONT: u32 = SMALLEST_FONT;
/// The narrowest a figure is shown on `index.html`, in CSS pixels (see `index_html.rs`).
pub(crate) const MIN_PAGE_WIDTH: u32 = 760;
/// The subtitle's colour: a warning, not data.
const WARNING: RGBColor = RGBColor(170, 51, 0);
/// Sideways spread between neighbouring curves of a figure with `dodge`, in pixels.
pub(crate) const DODGE: f64 = 4.0;
/// Dash patterns of the measured curves, in order (dash, gap; `None`: solid), so that
/// curves drawn over each other differ in more than colour.
const DASHES: [Option<(u32, u32)>; 6] = [
    None,
    Some((10, 5)),
    Some((3, 4)),
    Some((16, 5)),
    Some((7, 3)),
    Some((2, 8)),
];

/// Draws `figure` into `name` in `out` (rendered in memory, then replaced atomically, so
/// a drawing error cannot leave a truncated SVG). Returns `false`, writing nothing, when
/// no series has a point to draw: an experiment that did not run leaves no figure.
pub(crate) fn draw(
    out: &OutDir,
    name: &str,
    figure: &Figure,
) -> Result<bool, Box<dyn std::error::Error>> {
    match render(figure)? {
        Some(svg) => {
            out.write(name, svg)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Removes figure `name` from `out` if an earlier run left it there: a figure this run
/// decided not to draw must not stay on the index beside the note that says so.
pub(crate) fn leave_out(out: &OutDir, name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let path = out.path().join(name);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(crate::safe_write::PathError::on("remove", &path)(e).into())
        }
        _ => Ok(()),
    }
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word gets a
/// line of its own).
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// The sideways pixel offset of each series: 0 without `dodge`; with it, the curves and
/// unlinked point sets spread symmetrically [`DODGE`] pixels apart, and a linked series
/// (published values, a rule's point) moves with the series it belongs to.
pub(super) fn offsets(series: &[Series], dodge: bool) -> Vec<f64> {
    let mut offsets = vec![0.0; series.len()];
    if !dodge {
        return offsets;
    }
    let own: Vec<usize> = (0..series.len())
        .filter(|&k| match series[k].kind {
            Kind::Line => true,
            Kind::Points { of } | Kind::Published { of } => of.is_none(),
        })
        .collect();
    let middle = (own.len() as f64 - 1.0) / 2.0;
    for (j, &k) in own.iter().enumerate() {
        offsets[k] = (j as f64 - middle) * DODGE;
    }
    for k in 0..series.len() {
        if let Kind::Points { of: Some(of) } | Kind::Published { of: Some(of) } = series[k].kind
            && of < k
        {
            offsets[k] = offsets[of];
        }
    }
    offsets
}

/// The figure's SVG, or `None` when there is no point to draw.
pub(crate) fn render(figure: &Figure) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let styles = assign(&figure.series)?;
    let xs = figure
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    // The y axis also spans the error bars (a log axis only their positive ends).
    let mut ys: Vec<f64> = Vec::new();
    for s in &figure.series {
        for (k, p) in s.points.iter().enumerate() {
            ys.push(p.1);
            if let Some((low, high)) = s.bar(k) {
                ys.push(high);
                if figure.y_scale == Scale::Linear || low > 0.0 {
                    ys.push(low);
                }
            }
        }
    }
    let (Some(x), Some(y)) = (
        axis_range(figure.x_scale, xs, false),
        axis_range(figure.y_scale, ys, true),
    ) else {
        return Ok(None);
    };
    let offsets = offsets(&figure.series, figure.dodge);
    let mut lines = 0;
    let drawn: Vec<Drawn> = figure
        .series
        .iter()
        .zip(styles)
        .zip(offsets)
        .map(|((series, (colour, marker)), offset)| {
            let dash = (series.kind == Kind::Line).then(|| {
                lines += 1;
                DASHES[(lines - 1) % DASHES.len()]
            });
            Drawn {
                series,
                colour: PALETTE[colour],
                marker,
                dash,
                offset,
            }
        })
        .filter(|d| {
            d.series
                .points
                .iter()
                .any(|&(a, b)| x.place(a).is_some() && y.place(b).is_some())
        })
        .collect();
    // Published values alone are no result: an experiment that did not run draws nothing.
    if drawn
        .iter()
        .all(|d| matches!(d.series.kind, Kind::Published { .. }))
    {
        return Ok(None);
    }
    let mut legend = legend(&drawn);
    let mut notes: Vec<String> = Vec::new();
    if drawn.iter().any(|d| !d.series.se.is_empty()) {
        notes.push("bars: ± 1 standard error of the mean (the tables' ± s.e.)".to_owned());
    }
    if figure.dodge {
        notes.push(format!(
            "curves are spread {DODGE} px apart sideways so that equal values stay visible"
        ));
    }
    if y.zero_floor.is_some() {
        notes.push("log axis: points on the line marked 0 have an error of exactly 0".to_owned());
    }
    let subtitle = figure
        .subtitle
        .as_deref()
        .map_or_else(Vec::new, |s| wrap(s, subtitle_chars()));
    let header = TITLE_ROW + SUBTITLE_ROW * subtitle.len() as u32;
    let mut svg = String::new();
    {
        let plot_area = canvas(&mut svg, header, &mut legend, &notes)?;
        plot_area.draw(&Text::new(
            figure.title.clone(),
            ((WIDTH / 2) as i32, 10),
            TextStyle::from(("sans-serif", TITLE_FONT).into_font())
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        for (k, line) in subtitle.iter().enumerate() {
            plot_area.draw(&Text::new(
                line.clone(),
                (MARGIN as i32, (TITLE_ROW + SUBTITLE_ROW * k as u32) as i32),
                ("sans-serif", SUBTITLE_FONT)
                    .into_font()
                    .style(FontStyle::Bold)
                    .color(&WARNING),
            ))?;
        }
        let x_length = f64::from(WIDTH - 2 * MARGIN - Y_LABEL_AREA);
        let y_length = f64::from(CHART_HEIGHT - 2 * MARGIN - X_LABEL_AREA);
        // Each axis's ticks, placed on its scale, with their labels.
        let ticks = |range: &AxisRange, length: f64, vertical: bool| {
            let values = choose_ticks(range, length, vertical);
            let labels = tick_labels(&values);
            let placed: Vec<(f64, String)> = values
                .iter()
                .zip(labels)
                .filter_map(|(&v, l)| Some((range.place(v)?, l)))
                .collect();
            placed
        };
        let (x_ticks, y_ticks) = (ticks(&x, x_length, false), ticks(&y, y_length, true));
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(MARGIN)
            .margin_top(header + MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(
                Ticked::new(x.low..x.high, x_ticks.iter().map(|t| t.0).collect()),
                Ticked::new(y.low..y.high, y_ticks.iter().map(|t| t.0).collect()),
            )?;
        let label = |ticks: &[(f64, String)], range: AxisRange| {
            let ticks = ticks.to_vec();
            move |t: &f64| {
                ticks
                    .iter()
                    .find(|(at, _)| (at - t).abs() < 1e-9)
                    .map_or_else(|| tick_label(inverse(range.scale, *t)), |(_, l)| l.clone())
            }
        };
        chart
            .configure_mesh()
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .x_desc(&figure.x_label)
            .y_desc(&figure.y_label)
            .label_style(("sans-serif", TICK_FONT as u32))
            .axis_desc_style(("sans-serif", AXIS_FONT))
            .x_label_formatter(&label(&x_ticks, x))
            .y_label_formatter(&label(&y_ticks, y))
            .draw()?;
        if let Some(floor) = y.zero_floor {
            // The floor is not a value of the axis: a dashed line marks it.
            let dash = (0..40).map(|k| {
                let a = x.low + (x.high - x.low) * f64::from(k) / 40.0;
                let b = a + (x.high - x.low) / 80.0;
                PathElement::new(vec![(a, floor), (b, floor)], BLACK.mix(0.5))
            });
            chart.draw_series(dash)?;
        }
        // In pixels (moved sideways by the series' offset): lines first, then the error
        // bars, then the markers, so that no line covers a marker.
        let pixel = |a: f64, b: f64, offset: f64| -> (i32, i32) {
            let (px, py) = chart.backend_coord(&(a, b));
            (px + offset.round() as i32, py)
        };
        let placed = |d: &Drawn| -> Vec<(f64, f64)> {
            d.series
                .points
                .iter()
                .filter_map(|&(a, b)| Some((x.place(a)?, y.place(b)?)))
                .collect()
        };
        for d in &drawn {
            let Some(dash) = d.dash else { continue };
            let path: Vec<(i32, i32)> = placed(d)
                .iter()
                .map(|&(a, b)| pixel(a, b, d.offset))
                .collect();
            let style = d.colour.stroke_width(2);
            match dash {
                None => plot_area.draw(&PathElement::new(path, style))?,
                Some((on, off)) => {
                    plot_area.draw(&DashedPathElement::new(path, on, off, style))?;
                }
            }
        }
        for d in &drawn {
            for k in 0..d.series.points.len() {
                let (Some((low, high)), Some(at)) =
                    (d.series.bar(k), x.place(d.series.points[k].0))
                else {
                    continue;
                };
                // A log axis draws a bar reaching 0 down to the axis's end.
                let low = y
                    .place(low)
                    .filter(|_| low > 0.0 || figure.y_scale == Scale::Linear);
                let (Some(high), low) = (y.place(high), low.unwrap_or(y.low)) else {
                    continue;
                };
                let (top, bottom) = (pixel(at, high, d.offset), pixel(at, low, d.offset));
                let style = d.colour.stroke_width(1);
                plot_area.draw(&PathElement::new(vec![top, bottom], style))?;
                for end in [top, bottom] {
                    plot_area.draw(&PathElement::new(
                        vec![(end.0 - 4, end.1), (end.0 + 4, end.1)],
                        style,
                    ))?;
                }
            }
        }
        for d in &drawn {
            for (a, b) in thinned(&placed(d)) {
                draw_marker(&plot_area, pixel(a, b, d.offset), d.marker, d.colour)?;
            }
        }
        plot_area.present()?;
    }
    Ok(Some(svg))
}

/// A series with how it is drawn.
struct Drawn<'a> {
    series: &'a Series,
    colour: RGBColor,
    marker: Marker,
    /// For a curve, its dash pattern (`Some(None)`: solid); `None` for points.
    dash: Option<Option<(u32, u32)>>,
    /// Sideways shift in pixels (see [`offsets`]).
    offset: f64,
}

/// The characters of subtitle that fit on one line of the figure (a conservative width of
/// 0.62 em per character, bold).
fn subtitle_chars() -> usize {
    (f64::from(WIDTH - 2 * MARGIN) / (0.62 * f64::from(SUBTITLE_FONT) / SVG_FONT_SCALE)) as usize
}

/// The legend: one entry per drawn series, except that series linked to a curve share
/// entries: all published values one (a hollow circle in its curve's colour), linked points
/// one per name (a figure with a rule's point beside every curve names them alike), drawn
/// in grey. A figure with a published value beside every curve needs no twice the entries.
fn legend(drawn: &[Drawn]) -> Vec<LegendEntry> {
    const SHARED: RGBColor = RGBColor(90, 90, 90);
    let mut entries: Vec<LegendEntry> = Vec::new();
    let mut published = false;
    for d in drawn {
        let entry = match d.series.kind {
            Kind::Published { of: Some(_) } => {
                published = true;
                continue;
            }
            Kind::Points { of: Some(_) } => {
                if entries
                    .iter()
                    .any(|e| e.name == d.series.name && e.color == SHARED)
                {
                    continue;
                }
                LegendEntry {
                    name: d.series.name.clone(),
                    color: SHARED,
                    marker: d.marker,
                    line: None,
                }
            }
            _ => LegendEntry {
                name: d.series.name.clone(),
                color: d.colour,
                marker: d.marker,
                line: d.dash,
            },
        };
        entries.push(entry);
    }
    if published {
        entries.push(LegendEntry {
            name: PUBLISHED_ENTRY.to_owned(),
            color: SHARED,
            marker: Marker::Circle,
            line: None,
        });
    }
    entries
}

/// The legend's one entry for the published values linked to curves.
pub(super) const PUBLISHED_ENTRY: &str =
    "published value (paper, full protocol), in its curve's colour";

/// A linear coordinate whose grid lines and labels are exactly the chosen ticks: no light
/// (minor) lines, and no ticks of plotters' own choosing.
struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Vec<f64>) -> Self {
        Ticked {
            inner: range.into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// The points of a curve that get a marker: all of a short curve; about 12, evenly
/// spaced along the list, of a dense one (an ROC curve), whose markers would merge.
fn thinned(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    const MOST: usize = 24;
    if points.len() <= MOST {
        return points.to_vec();
    }
    let every = points.len().div_ceil(12);
    points.iter().copied().step_by(every).collect()
}

/// One entry of a legend.
struct LegendEntry {
    name: String,
    color: RGBColor,
    marker: Marker,
    /// A curve's dash pattern (`Some(None)`: solid); `None`: a marker alone.
    line: Option<Option<(u32, u32)>>,
}

/// The legend's columns: two when every entry fits in half the width, else one.
fn legend_columns(legend: &[LegendEntry]) -> usize {
    let half = f64::from(WIDTH - 40) / 2.0;
    // A conservative width of one character (0.58 em).
    let legend_char = 0.58 * f64::from(LEGEND_FONT) / SVG_FONT_SCALE;
    let fits = legend
        .iter()
        .all(|e| 44.0 + e.name.chars().count() as f64 * legend_char <= half);
    if fits { 2 } else { 1 }
}

/// A white figure with `legend` (and `notes`) drawn in its own band below; returns the
/// plotting area (`header` pixels above the chart left for the title), whose pixel origin
/// is the figure's (present it when done).
fn canvas<'a>(
    svg: &'a mut String,
    header: u32,
    legend: &mut [LegendEntry],
    notes: &[String],
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, Box<dyn std::error::Error>> {
    let columns = legend_columns(legend);
    let legend_rows = legend.len().div_ceil(columns) as u32;
    let rows = legend_rows + notes.len() as u32;
    let top = header + CHART_HEIGHT;
    let height = top + rows * LEGEND_ROW + 16;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_vertically(top);
    let (width, _) = legend_area.dim_in_pixel();
    let column = (width as i32 - 40) / columns as i32;
    let row = LEGEND_ROW as i32;
    for (k, entry) in legend.iter().enumerate() {
        let x = 30 + (k % columns) as i32 * column;
        let y = 8 + (k / columns) as i32 * row + row / 2;
        match entry.line {
            Some(None) => legend_area.draw(&PathElement::new(
                vec![(x - 4, y), (x + 30, y)],
                entry.color.stroke_width(2),
            ))?,
            Some(Some((on, off))) => legend_area.draw(&DashedPathElement::new(
                vec![(x - 4, y), (x + 30, y)],
                on,
                off,
                entry.color.stroke_width(2),
            ))?,
            None => {}
        }
        draw_marker(&legend_area, (x + 13, y), entry.marker, entry.color)?;
        legend_area.draw(&Text::new(
            entry.name.clone(),
            (x + 38, y - 8),
            ("sans-serif", LEGEND_FONT).into_font(),
        ))?;
    }
    for (k, note) in notes.iter().enumerate() {
        let y = 8 + (legend_rows as i32 + k as i32) * row + row / 2;
        legend_area.draw(&Text::new(
            note.clone(),
            (30, y - 8),
            ("sans-serif", NOTE_FONT)
                .into_font()
                .style(FontStyle::Italic),
        ))?;
    }
    Ok(plot_area)
}

/// Draws `marker` centred on pixel `at` of `area`.
fn draw_marker(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    at: (i32, i32),
    marker: Marker,
    color: RGBColor,
) -> Result<(), Box<dyn std::error::Error>> {
    let (x, y) = at;
    let r = 5;
    let polygon = |corners: &[(i32, i32)]| {
        Polygon::new(
            corners
                .iter()
                .map(|(dx, dy)| (x + dx, y + dy))
                .collect::<Vec<_>>(),
            color.filled(),
        )
    };
    let stroke = color.stroke_width(2);
    match marker {
        Marker::Circle => area.draw(&Circle::new(at, 6, stroke))?,
        Marker::Square => area.draw(&Rectangle::new(
            [(x - 4, y - 4), (x + 4, y + 4)],
            color.filled(),
        ))?,
        Marker::Triangle => area.draw(&polygon(&[(0, -r), (r, r - 1), (-r, r - 1)]))?,
        Marker::TriangleDown => area.draw(&polygon(&[(0, r), (r, 1 - r), (-r, 1 - r)]))?,
        Marker::Diamond => area.draw(&polygon(&[(0, -r - 1), (r, 0), (0, r + 1), (-r, 0)]))?,
        Marker::Cross => {
            area.draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                stroke,
            ))?;
            area.draw(&PathElement::new(
                vec![(x - r, y + r), (x + r, y - r)],
                stroke,
            ))?;
        }
        Marker::Plus => {
            area.draw(&PathElement::new(vec![(x - r, y), (x + r, y)], stroke))?;
            area.draw(&PathElement::new(vec![(x, y - r), (x, y + r)], stroke))?;
        }
        Marker::Star => {
            let corners: Vec<(i32, i32)> = (0..10)
                .map(|k| {
                    let angle = std::f64::consts::PI * f64::from(k) / 5.0;
                    let radius = if k % 2 == 0 { 8.0 } else { 3.5 };
                    (
                        (radius * angle.sin()).round() as i32,
                        (-radius * angle.cos()).round() as i32,
                    )
                })
                .collect();
            area.draw(&polygon(&corners))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The linear experiment's figures (Figures 1a, 1b, 3a, 3b of the SVM paper).

/// Figure 3: error versus Λ: the non-private SVM and, at each ε, objective perturbation
/// (and output perturbation where `published` has its columns), each beside its
/// published values (hollow circles of its colour). `published` rows are (Λ, non-private,
/// then per ε the objective column and, with `with_output`, the output column).
#[allow(clippy::too_many_arguments)]
pub fn error_versus_lambda(
    out: &OutDir,
    name: &str,
    cells: &[Cell],
    dataset: &str,
    lambdas: &[f64],
    epsilons: &[f64],
    published: &[(f64, Vec<f64>)],
    with_output: bool,
    subtitle: Option<&str>,
) -> Result<bool, Box<dyn std::error::Error>> {
    // (Λ, mean error, its s.e.) of each Λ measured.
    let measured = |method, epsilon| -> Vec<(f64, f64, f64)> {
        lambdas
            .iter()
            .filter_map(|&l| {
                cell(cells, dataset, method, l, epsilon)?;
                let c = cells.iter().find(|c| {
                    c.dataset == dataset
                        && c.method == method
                        && c.lambda == l
                        && c.epsilon == epsilon
                })?;
                Some((l, c.mean_error, c.std_error))
            })
            .collect()
    };
    let column = |k: usize| -> Vec<(f64, f64)> {
        published
            .iter()
            .filter_map(|(l, row)| row.get(k).map(|v| (*l, *v)))
            .collect()
    };
    let mut figure = Figure::error_versus(format!("{dataset}: error versus Λ"), "Λ");
    figure.subtitle = subtitle.map(str::to_owned);
    let np = figure.push(Series::line_se(
        "non-private SVM",
        measured(Method::NonPrivateSvm, None),
    ));
    figure.push(Series::published(
        "published, non-private SVM",
        column(0),
        Some(np),
    ));
    let per_epsilon = if with_output { 2 } else { 1 };
    for (k, &e) in epsilons.iter().enumerate() {
        let objective = figure.push(Series::line_se(
            format!("objective pert. SVM, ε = {e}"),
            measured(Method::ObjectiveSvm, Some(e)),
        ));
        figure.push(Series::published(
            format!("published, objective, ε = {e}"),
            column(1 + per_epsilon * k),
            Some(objective),
        ));
        if with_output {
            let output = figure.push(Series::line_se(
                format!("output pert. SVM, ε = {e}"),
                measured(Method::OutputSvm, Some(e)),
            ));
            figure.push(Series::published(
                format!("published, output, ε = {e}"),
                column(2 + per_epsilon * k),
                Some(output),
            ));
        }
    }
    draw(out, name, &figure)
}

/// Figure 1: best error over Λ versus ε, one line per method, with the published best
/// errors (Figure 2a) as hollow circles of the method's colour.
pub fn error_versus_epsilon(
    out: &OutDir,
    name: &str,
    cells: &[Cell],
    dataset: &str,
    subtitle: Option<&str>,
) -> Result<bool, Box<dyn std::error::Error>> {
    // The best mean error over Λ with its s.e. (that cell's).
    let best = |method: Method, epsilon: Option<f64>| -> Option<(f64, f64)> {
        let (error, lambda) = best_over_lambda(cells, dataset, method, epsilon)?;
        let c = cells.iter().find(|c| {
            c.dataset == dataset && c.method == method && c.epsilon == epsilon && c.lambda == lambda
        })?;
        Some((error, c.std_error))
    };
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
    let mut figure = Figure::error_versus(format!("{dataset}: best error over Λ versus ε"), "ε");
    figure.subtitle = subtitle.map(str::to_owned);
    for method in methods {
        let points: Vec<(f64, f64, f64)> = epsilons
            .iter()
            .filter_map(|&e| best(method, Some(e)).map(|b| (e, b.0, b.1)))
            .collect();
        if points.is_empty() {
            continue;
        }
        let line = figure.push(Series::line_se(method.label(), points));
        let published: Vec<(f64, f64)> = BEST_ERRORS
            .iter()
            .filter(|p| p.0 == method.label() && p.1 == dataset)
            .filter_map(|p| p.2.map(|e| (e, p.3)))
            .collect();
        if !published.is_empty() {
            figure.push(Series::published(
                format!("published, {}", method.label()),
                published,
                Some(line),
            ));
        }
    }
    if let (Some((error, se)), Some(&first), Some(&last)) = (
        best(Method::NonPrivateSvm, None),
        epsilons.first(),
        epsilons.last(),
    ) {
        let line = figure.push(Series::line_se(
            "non-private SVM (no ε: level line; its published value drawn at the largest ε)",
            vec![(first, error, se), (last, error, se)],
        ));
        if let Some(p) = BEST_ERRORS
            .iter()
            .find(|p| p.0 == Method::NonPrivateSvm.label() && p.1 == dataset)
        {
            figure.push(Series::published(
                "published, non-private SVM (no ε; drawn at the largest ε)",
                vec![(last, p.3)],
                Some(line),
            ));
        }
    }
    draw(out, name, &figure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(scale: Scale, low: f64, high: f64) -> AxisRange {
        axis_range(scale, [low, high], false).unwrap()
    }

    fn pixels(range: &AxisRange, ticks: &[f64], length: f64) -> Vec<f64> {
        ticks
            .iter()
            .map(|&v| (range.place(v).unwrap() - range.low) / (range.high - range.low) * length)
            .collect()
    }

    /// Tick labels never overlap and there are at least two of them, over axis lengths from
    /// a thumbnail to a wide figure and ranges from a factor of 1.2 to 12 decades.
    #[test]
    fn ticks_never_collide_and_are_at_least_two() {
        let ranges = [
            (Scale::Log, 1e-7, 1e-1),
            (Scale::Log, 1e-12, 1.0),
            (Scale::Log, 0.01, 1.0),
            (Scale::Log, 0.05, 1.0),
            (Scale::Log, 1000.0, 45_000.0),
            (Scale::Log, 50.0, 500.0),
            (Scale::Log, 2000.0, 60_000.0),
            (Scale::Log, 1.0, 10_000.0),
            (Scale::Log, 0.1, 0.12),
            (Scale::Log, 3.0e-4, 5.0e-4),
            (Scale::Linear, 0.0, 0.6),
            (Scale::Linear, 0.0, 0.013),
            (Scale::Linear, 0.0, 123_456.0),
        ];
        for (scale, low, high) in ranges {
            let r = range(scale, low, high);
            for length in [150.0, 250.0, 400.0, 600.0, 810.0, 1200.0] {
                for vertical in [false, true] {
                    let ticks = choose_ticks(&r, length, vertical);
                    assert!(
                        ticks.len() >= 2,
                        "{scale:?} {low}..{high} at {length}px: {ticks:?}"
                    );
                    let at = pixels(&r, &ticks, length);
                    let labels = tick_labels(&ticks);
                    let widths: Vec<f64> = labels
                        .iter()
                        .map(|l| if vertical { TICK_FONT } else { label_width(l) })
                        .collect();
                    assert!(
                        labels_fit(&at, &widths),
                        "{scale:?} {low}..{high} at {length}px: {ticks:?} at {at:?}"
                    );
                    for v in &ticks {
                        let t = r.place(*v).unwrap();
                        assert!(t >= r.low - 1e-9 && t <= r.high + 1e-9, "{v} outside");
                    }
                    let mut unique = labels.clone();
                    unique.dedup();
                    assert_eq!(labels, unique, "repeated labels");
                }
            }
        }
    }

    /// The chooser is not trivially sparse: a wide axis over 6 decades labels every decade.
    #[test]
    fn a_wide_axis_gets_every_decade() {
        let r = range(Scale::Log, 1e-7, 1e-1);
        assert_eq!(choose_ticks(&r, 810.0, false).len(), 7);
    }

    /// The collision check itself catches overlapping labels.
    #[test]
    fn overlapping_labels_are_detected() {
        assert!(!labels_fit(&[0.0, 20.0], &[40.0, 40.0]));
        assert!(labels_fit(&[0.0, 60.0], &[40.0, 40.0]));
    }

    /// The axis ends where the data end: it contains every point and its margin is at
    /// most 3% of the data's span on each side (no D axis to 2,500 for data up to 500).
    #[test]
    fn axis_range_ends_at_the_data() {
        let r = axis_range(Scale::Log, [50.0, 100.0, 500.0], false).unwrap();
        let span = 500f64.log10() - 50f64.log10();
        assert!(r.low <= 50f64.log10() && r.high >= 500f64.log10());
        assert!(r.high - 500f64.log10() <= 0.03 * span + 1e-12);
        assert!(50f64.log10() - r.low <= 0.03 * span + 1e-12);
        assert!(inverse(Scale::Log, r.high) < 600.0);
        let y = axis_range(Scale::Linear, [0.12, 0.3], true).unwrap();
        assert_eq!(y.low, 0.0);
        assert!(y.high >= 0.3 && y.high <= 0.3 * 1.031);
        assert!(axis_range(Scale::Log, [f64::NAN], false).is_none());
    }

    /// A log axis with zeros keeps those points (on the floor below the smallest positive
    /// value) and labels the floor 0.
    #[test]
    fn zeros_on_a_log_axis_are_kept() {
        let r = axis_range(Scale::Log, [0.0, 0.01, 0.3], true).unwrap();
        let floor = r.zero_floor.expect("a floor for the zeros");
        assert!(floor < 0.01f64.log10() && r.low <= floor);
        assert_eq!(r.place(0.0), Some(floor));
        let ticks = choose_ticks(&r, 400.0, true);
        assert_eq!(ticks[0], 0.0);
        assert!(ticks.len() >= 3, "{ticks:?}");
        // Every point of a series with zero errors is drawn.
        let mut figure = Figure::error_versus("t", "n");
        figure.y_scale = Scale::Log;
        figure.push(Series::line(
            "walk",
            vec![(10.0, 0.0), (100.0, 0.0), (1000.0, 0.0)],
        ));
        figure.push(Series::line("learner", vec![(10.0, 0.2), (1000.0, 0.01)]));
        let svg = render(&figure).unwrap().unwrap();
        assert!(svg.contains("walk") && svg.contains("exactly 0"));
        // 3 + 2 squares/triangles drawn plus the two legend markers.
        assert_eq!(svg.matches("<rect").count() - 1, 3 + 1, "{svg}");
    }

    /// Every series gets its own (colour, marker) pair; independent series get distinct
    /// colours; circles are for published values only; a link must point backwards.
    #[test]
    fn series_get_distinct_colour_and_marker_pairs() {
        let mut series = Vec::new();
        for k in 0..8 {
            series.push(Series::line(format!("m{k}"), vec![]));
            series.push(Series::published(format!("p{k}"), vec![], Some(2 * k)));
        }
        series.push(Series::points("rule", vec![], Some(0)));
        series.push(Series::published("alone", vec![], None));
        let styles = assign(&series).unwrap();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert_ne!(a, b);
            }
        }
        for (s, (colour, marker)) in series.iter().zip(&styles) {
            assert_eq!(
                *marker == Marker::Circle,
                matches!(s.kind, Kind::Published { .. })
            );
            if s.kind == Kind::Line {
                let same = series
                    .iter()
                    .zip(&styles)
                    .filter(|(t, st)| t.kind == Kind::Line && st.0 == *colour)
                    .count();
                assert_eq!(same, 1, "two curves share a colour");
            }
        }
        let twice = [
            Series::line("a", vec![]),
            Series::published("p", vec![], Some(0)),
            Series::published("q", vec![], Some(0)),
        ];
        assert!(assign(&twice).is_err());
        assert!(assign(&[Series::published("p", vec![], Some(0))]).is_err());
        let many: Vec<Series> = (0..13)
            .map(|k| Series::line(format!("{k}"), vec![]))
            .collect();
        assert!(assign(&many).is_err());
    }

    /// A figure without points is not drawn.
    #[test]
    fn no_points_no_figure() {
        let mut figure = Figure::error_versus("nothing", "ε");
        figure.push(Series::line("a", vec![]));
        figure.push(Series::published("p", vec![], Some(0)));
        assert!(render(&figure).unwrap().is_none());
        assert!(
            render(&Figure::error_versus("empty", "ε"))
                .unwrap()
                .is_none()
        );
        let mut published_only = Figure::error_versus("not run", "ε");
        published_only.push(Series::line("measured", vec![]));
        published_only.push(Series::published("published", vec![(0.1, 0.2)], Some(0)));
        assert!(render(&published_only).unwrap().is_none());
    }

    /// The text elements of an SVG: (x, y, anchor, font size, text).
    fn texts(svg: &str) -> Vec<(f64, f64, String, f64, String)> {
        let attribute = |tag: &str, name: &str| -> String {
            let key = format!(" {name}=\"");
            tag.find(&key)
                .map(|at| {
                    let rest = &tag[at + key.len()..];
                    rest[..rest.find('"').unwrap()].to_owned()
                })
                .unwrap_or_default()
        };
        svg.split("<text")
            .skip(1)
            .map(|part| {
                let (tag, rest) = part.split_once('>').unwrap();
                let text = rest.split("</text>").next().unwrap().trim().to_owned();
                let number = |name| attribute(tag, name).parse::<f64>().unwrap_or(f64::NAN);
                (
                    number("x"),
                    number("y"),
                    attribute(tag, "text-anchor"),
                    number("font-size"),
                    text,
                )
            })
            .collect()
    }

    /// In drawn figures (the whole path: ranges, chooser, plotters' layout), the x tick
    /// labels do not overlap, the y tick labels keep a line apart, and both axes have at
    /// least two.
    #[test]
    fn drawn_tick_labels_never_overlap() {
        let lambdas: Vec<f64> = (0..25)
            .map(|k| 10f64.powf(-7.0 + 0.25 * f64::from(k)))
            .collect();
        let cases: [(Scale, Vec<f64>); 5] = [
            (Scale::Log, lambdas),
            (Scale::Log, vec![1000.0, 3000.0, 10_000.0, 45_000.0]),
            (Scale::Log, vec![0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]),
            (Scale::Log, vec![20_000.0, 60_000.0, 100_000.0]),
            (
                Scale::Linear,
                (0..=50).map(|k| f64::from(k) / 50.0).collect(),
            ),
        ];
        for (scale, xs) in cases {
            let mut figure = Figure::error_versus("case", "x");
            figure.x_scale = scale;
            let points = xs.iter().map(|&x| (x, 0.1 + 0.3 * x.fract())).collect();
            figure.push(Series::line("a", points));
            let svg = render(&figure).unwrap().unwrap();
            let all = texts(&svg);
            // Tick labels share the smallest font (the y ones are right-aligned).
            let tick_size = all
                .iter()
                .filter(|t| t.2 == "end")
                .map(|t| t.3)
                .fold(f64::INFINITY, f64::min);
            let mut x_labels: Vec<_> = all
                .iter()
                .filter(|t| t.2 == "middle" && (t.3 - tick_size).abs() < 1e-6)
                .collect();
            x_labels.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(x_labels.len() >= 2, "{xs:?}: {x_labels:?}");
            for pair in x_labels.windows(2) {
                let width =
                    |t: &(f64, f64, String, f64, String)| t.4.chars().count() as f64 * 0.6 * t.3;
                assert!(
                    pair[1].0 - pair[0].0 >= (width(pair[0]) + width(pair[1])) / 2.0 + 4.0,
                    "{xs:?}: {pair:?}"
                );
            }
            let mut y_labels: Vec<_> = all.iter().filter(|t| t.2 == "end").collect();
            y_labels.sort_by(|a, b| a.1.total_cmp(&b.1));
            assert!(y_labels.len() >= 2, "{y_labels:?}");
            for pair in y_labels.windows(2) {
                assert!(pair[1].1 - pair[0].1 >= 1.5 * pair[0].3, "{pair:?}");
            }
            // A light major grid only: no grid line of plotters' own (minor) choosing.
            assert!(!svg.contains("opacity=\"0.1\""), "minor grid drawn");
        }
    }

    /// The ± s.e. bar of a point: y ± se, the low end kept at 0, none without a finite,
    /// positive s.e.; a series built from triples carries them in order.
    #[test]
    fn error_bars_span_one_standard_error() {
        let s = Series::line_se(
            "a",
            vec![
                (1.0, 0.3, 0.05),
                (2.0, 0.02, 0.05),
                (3.0, 0.1, f64::NAN),
                (4.0, 0.1, 0.0),
            ],
        );
        let (low, high) = s.bar(0).unwrap();
        assert!((low - 0.25).abs() < 1e-12 && (high - 0.35).abs() < 1e-12);
        assert_eq!(s.bar(1), Some((0.0, 0.07)));
        assert_eq!(s.bar(2), None);
        assert_eq!(s.bar(3), None);
        assert_eq!(s.bar(4), None);
        assert_eq!(Series::line("b", vec![(1.0, 0.3)]).bar(0), None);
    }

    /// A bar is drawn at its points' pixels, the axis stretched to hold it: in the SVG, a
    /// vertical segment from y − se to y + se at each point (with two caps).
    #[test]
    fn drawn_error_bars_reach_the_standard_error() {
        let mut figure = Figure::error_versus("bars", "x");
        figure.x_scale = Scale::Linear;
        figure.push(Series::line_se(
            "a",
            vec![(1.0, 0.5, 0.1), (2.0, 0.5, 0.1), (3.0, 0.9, 0.3)],
        ));
        let svg = render(&figure).unwrap().unwrap();
        // Vertical two-point polylines of the curve's colour, 1 px: (x, top) → (x, bottom).
        let verticals: Vec<(f64, f64, f64)> = svg
            .split("<polyline")
            .skip(1)
            .filter(|p| p.contains("stroke=\"#1F77B4\" stroke-width=\"1\""))
            .filter_map(|p| {
                let points = p.split("points=\"").nth(1)?.split('"').next()?;
                let xy: Vec<(f64, f64)> = points
                    .split_whitespace()
                    .map(|pair| {
                        let (a, b) = pair.split_once(',').unwrap();
                        (a.parse().unwrap(), b.parse().unwrap())
                    })
                    .collect();
                (xy.len() == 2 && xy[0].0 == xy[1].0 && xy[0].1 != xy[1].1)
                    .then(|| (xy[0].0, xy[0].1, xy[1].1))
            })
            .collect();
        assert_eq!(verticals.len(), 3, "{verticals:?}");
        let lengths: Vec<f64> = verticals.iter().map(|v| (v.2 - v.1).abs()).collect();
        // Same s.e., same length; three times the s.e., three times the length (± rounding).
        assert!((lengths[0] - lengths[1]).abs() <= 1.0, "{lengths:?}");
        assert!((lengths[2] / lengths[0] - 3.0).abs() < 0.1, "{lengths:?}");
        assert!(svg.contains("± 1 standard error"));
        // The top of the highest bar (1.2) is inside the axis: no bar is cut.
        let plain = {
            let mut f = Figure::error_versus("bars", "x");
            f.x_scale = Scale::Linear;
            f.push(Series::line("a", vec![(1.0, 0.5), (2.0, 0.5), (3.0, 0.9)]));
            render(&f).unwrap().unwrap()
        };
        assert!(!plain.contains("standard error"));
        let top = verticals
            .iter()
            .map(|v| v.1.min(v.2))
            .fold(f64::INFINITY, f64::min);
        assert!(top > f64::from(TITLE_ROW + MARGIN), "bar cut at {top}");
    }

    /// A quick figure says so in its subtitle (wrapped to the width, in the warning
    /// colour), and the subtitle helper names the run's size.
    #[test]
    fn quick_figures_say_so() {
        let text = quick_subtitle("2 fits", Some("published points left out"));
        assert!(text.starts_with("QUICK RUN: 2 fits per point, not the paper's protocol"));
        assert!(text.ends_with("; published points left out"));
        let mut figure = Figure::error_versus("t", "ε");
        figure.subtitle = Some(format!("{text}{}", " and more words".repeat(8)));
        figure.push(Series::line("a", vec![(0.1, 0.3), (1.0, 0.2)]));
        let svg = render(&figure).unwrap().unwrap();
        assert!(svg.contains("QUICK RUN: 2 fits per point"), "{svg}");
        assert!(
            svg.contains("#AA3300") || svg.contains("rgb(170,51,0)"),
            "{svg}"
        );
        let lines = wrap(figure.subtitle.as_deref().unwrap(), subtitle_chars());
        assert!(lines.len() >= 2);
        assert!(lines.iter().all(|l| l.chars().count() <= subtitle_chars()));
        assert_eq!(lines.join(" "), figure.subtitle.unwrap());
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdef g", 4), ["abcdef", "g"]);
        // No subtitle without one.
        let mut plain = Figure::error_versus("t", "ε");
        plain.push(Series::line("a", vec![(0.1, 0.3), (1.0, 0.2)]));
        assert!(!render(&plain).unwrap().unwrap().contains("QUICK RUN"));
    }

    /// Every text of a figure is at least `SMALLEST_FONT`, which at `MIN_PAGE_WIDTH` of the
    /// figure's `WIDTH` renders at 11 px or more.
    #[test]
    fn text_is_readable_at_the_least_page_width() {
        let smallest = f64::from(SMALLEST_FONT) / SVG_FONT_SCALE;
        assert!(smallest * f64::from(MIN_PAGE_WIDTH) / f64::from(WIDTH) >= 11.0);
        let mut figure = Figure::error_versus("t", "ε");
        figure.subtitle = Some(quick_subtitle("2 fits", None));
        figure.y_scale = Scale::Log;
        let a = figure.push(Series::line_se(
            "a",
            vec![(0.1, 0.0, 0.1), (1.0, 0.2, 0.01)],
        ));
        figure.push(Series::published("p", vec![(0.1, 0.25)], Some(a)));
        let svg = render(&figure).unwrap().unwrap();
        let sizes: Vec<f64> = texts(&svg).iter().map(|t| t.3).collect();
        assert!(!sizes.is_empty());
        for size in sizes {
            assert!(size >= smallest - 1e-9, "font-size {size} in {svg}");
        }
        assert!(svg.contains(&format!("width=\"{WIDTH}\"")));
    }

    /// Published values linked to curves share one legend entry, linked points one per
    /// name; curves and unlinked series keep their own.
    #[test]
    fn linked_series_share_legend_entries() {
        let mut figure = Figure::error_versus("t", "Λ");
        for k in 0..3 {
            let line = figure.push(Series::line(
                format!("ε = {k}"),
                vec![(1.0, 0.2), (2.0, 0.3)],
            ));
            figure.push(Series::published(
                format!("published {k}"),
                vec![(1.0, 0.25)],
                Some(line),
            ));
            figure.push(Series::points("rule point", vec![(1.5, 0.22)], Some(line)));
        }
        figure.push(Series::published("alone", vec![(2.0, 0.1)], None));
        let svg = render(&figure).unwrap().unwrap();
        let entry = PUBLISHED_ENTRY.replace('\'', "&apos;");
        assert_eq!(
            svg.matches(PUBLISHED_ENTRY).count() + svg.matches(entry.as_str()).count(),
            1,
            "{svg}"
        );
        assert_eq!(svg.matches("rule point").count(), 1);
        assert!(!svg.contains("published 1") && svg.contains("alone"));
        for k in 0..3 {
            assert!(svg.contains(&format!("ε = {k}")));
        }
    }

    /// With `dodge`, own series spread symmetrically `DODGE` px apart and linked ones move
    /// with their curve; without it nothing moves. Curves get distinct dash patterns.
    #[test]
    fn dodged_series_spread_and_linked_ones_follow() {
        let series = vec![
            Series::line("a", vec![]),
            Series::line("b", vec![]),
            Series::published("pb", vec![], Some(1)),
            Series::line("c", vec![]),
        ];
        assert_eq!(offsets(&series, false), [0.0; 4]);
        let o = offsets(&series, true);
        assert_eq!(o, [-DODGE, 0.0, 0.0, DODGE]);
        let mut unique = DASHES.to_vec();
        unique.dedup();
        assert_eq!(unique.len(), DASHES.len());
        // Two equal curves, dodged, put their markers at different pixels.
        let mut figure = Figure::error_versus("t", "n");
        figure.dodge = true;
        figure.push(Series::line("a", vec![(10.0, 0.2), (100.0, 0.1)]));
        figure.push(Series::line("b", vec![(10.0, 0.2), (100.0, 0.1)]));
        let svg = render(&figure).unwrap().unwrap();
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 4);
        assert!(svg.contains("spread"));
    }

    /// Curves are counted by their distinct x values, for the "fewer than three: not drawn"
    /// rule of learning curves.
    #[test]
    fn curve_x_values_count_distinct_x_of_curves() {
        let mut figure = Figure::error_versus("t", "n");
        figure.push(Series::line("a", vec![(10.0, 0.2), (100.0, 0.1)]));
        figure.push(Series::line("b", vec![(10.0, 0.3), (100.0, 0.2)]));
        figure.push(Series::published("p", vec![(1000.0, 0.1)], None));
        assert_eq!(figure.curve_x_values(), 2);
        assert!(figure.curve_x_values() < MIN_CURVE_POINTS);
        figure.push(Series::line("c", vec![(1000.0, 0.3)]));
        assert_eq!(figure.curve_x_values(), 3);
    }

    #[test]
    fn tick_labels_are_short_and_exact() {
        assert_eq!(tick_label(1e-5), "1e-5");
        assert_eq!(tick_label(0.1), "0.1");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(2.5e-4), "2.5e-4");
        assert_eq!(tick_label(20_000.0), "20000");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_labels(&[1e-3, 0.01, 0.1]), ["1e-3", "1e-2", "1e-1"]);
        assert_eq!(tick_labels(&[0.0, 0.05, 0.1]), ["0", "0.05", "0.1"]);
    }
}
