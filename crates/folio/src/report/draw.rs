//! Renders a [`Plot`] to SVG with plotters' SVG backend.
//!
//! Only the SVG backend is built, with no font files: text is emitted as
//! `<text>` elements for the browser to set (plotters only estimates text
//! extents for layout), so reports look the same wherever they are opened
//! and the build pulls in no font or image libraries.
//!
//! ```text
//!   ┌ title ────────────────────────────────┬ legend ───┐
//!   │ y ticks │ plot area (mesh, lines,     │ ■ series  │
//!   │         │ markers with their labels)  │ ■ series  │
//!   │         └ x ticks, x description ─────┤           │
//!   └───────────────────────────────────────┴───────────┘
//! ```
//!
//! The legend has its own column, so it never hides a line. Marker labels
//! run vertically beside their line; one too close to the previous label
//! is left unlabelled and named in the chart's caption instead.

use super::axis::{number, Axis};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::FontTransform;
use std::collections::BTreeMap;

/// A chart ready to draw, in drawn coordinates (see `axis.rs`).
pub(crate) struct Plot<'a> {
    pub title: &'a str,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub markers: Vec<PlotMarker>,
}

pub(crate) struct Line {
    pub name: String,
    /// Index into the palette.
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    /// Mark each point with a dot.
    pub dots: bool,
    /// Points further apart than this in x are not joined: the line
    /// breaks where nothing was measured.
    pub max_step: Option<f64>,
}

impl Line {
    /// The runs of points to join.
    fn segments(&self) -> Vec<&[(f64, f64)]> {
        let Some(step) = self.max_step else {
            return vec![&self.points];
        };
        self.points.chunk_by(|a, b| b.0 - a.0 <= step).collect()
    }
}

pub(crate) struct PlotMarker {
    pub label: String,
    pub x: f64,
    /// Palette index of the series it belongs to; grey if none.
    pub color: Option<usize>,
}

/// The SVG and, if some markers went unlabelled, a sentence naming them.
pub(crate) struct Drawn {
    pub svg: String,
    pub unlabelled: Option<String>,
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 440;
/// A chart with nothing to draw is only its title and "no data".
const NO_DATA_HEIGHT: u32 = 110;
const LEGEND_WIDTH: u32 = 210;
/// Characters of a legend line before it wraps (14 px text in 210 px).
const LEGEND_CHARS: usize = 22;
/// Horizontal room a vertical marker label needs, in pixels.
const MARKER_LABEL_ROOM: i32 = 17;

/// Colour-blind-safe (Okabe–Ito) first, then darker extras.
/// Ten, so that the mail workload's nine operations all differ.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(80, 80, 80),
    RGBColor(140, 86, 75),
    RGBColor(117, 82, 180),
    RGBColor(0, 0, 0),
];
const GREY: RGBColor = RGBColor(110, 110, 110);

pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A font of `px` CSS pixels: the SVG backend writes sizes divided by
/// 1.24, so ask for 1.24 times as much.
fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * 1.24).into_font()
}

pub(crate) fn render(plot: &Plot<'_>) -> Drawn {
    let mut svg = String::new();
    let mut unlabelled = Vec::new();
    let drawn = draw(plot, &mut svg, &mut unlabelled);
    match drawn {
        Ok(()) => Drawn {
            svg,
            unlabelled: unlabelled_sentence(&unlabelled),
        },
        Err(e) => Drawn {
            svg: failed(plot.title, &e),
            unlabelled: None,
        },
    }
}

type DrawResult = Result<(), String>;

fn draw(plot: &Plot<'_>, svg: &mut String, unlabelled: &mut Vec<String>) -> DrawResult {
    let err = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    if plot.lines.iter().all(|l| l.points.is_empty()) {
        let root = SVGBackend::with_string(svg, (WIDTH, NO_DATA_HEIGHT)).into_drawing_area();
        return no_data(&root, plot.title).map_err(err);
    }
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (area, legend) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&area)
        .caption(plot.title, font(19.0))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(54)
        .y_label_area_size(78)
        .build_cartesian_2d(plot.x.clone(), plot.y.clone())
        .map_err(err)?;
    let x_label = |c: &f64| plot.x.label_at(*c);
    let y_label = |c: &f64| plot.y.label_at(*c);
    chart
        .configure_mesh()
        .x_desc(plot.x.desc.as_str())
        .y_desc(plot.y.desc.as_str())
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(font(14.0))
        .axis_desc_style(font(15.0))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(238, 238, 238))
        .axis_style(RGBColor(90, 90, 90))
        .draw()
        .map_err(err)?;
    for m in &plot.markers {
        let c = m.color.map_or(GREY, color);
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(m.x, plot.y.lo), (m.x, plot.y.hi)],
                6,
                4,
                c.stroke_width(1),
            )))
            .map_err(err)?;
    }
    for line in &plot.lines {
        let c = color(line.color);
        for segment in line.segments() {
            chart
                .draw_series(LineSeries::new(segment.to_vec(), c.stroke_width(2)))
                .map_err(err)?;
            // A point joined to nothing would not show: it gets a dot.
            if let (Some(&alone), true, false) = (segment.first(), collapsed(segment), line.dots) {
                chart
                    .draw_series(std::iter::once(Circle::new(alone, 3, c.filled())))
                    .map_err(err)?;
            }
        }
        if line.dots {
            chart
                .draw_series(line.points.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(err)?;
        }
    }
    let mut last_label: Option<i32> = None;
    let mut markers: Vec<&PlotMarker> = plot.markers.iter().collect();
    markers.sort_by(|a, b| a.x.total_cmp(&b.x));
    for m in markers {
        let (px, top) = chart.backend_coord(&(m.x, plot.y.hi));
        if last_label.is_some_and(|l| px - l < MARKER_LABEL_ROOM) {
            unlabelled.push(m.label.clone());
            continue;
        }
        last_label = Some(px);
        let style = font(13.0)
            .transform(FontTransform::Rotate90)
            .color(&m.color.map_or(GREY, color));
        // Offsets are relative to the whole chart: the root area is where
        // backend coordinates are absolute.
        root.draw_text(&m.label, &style, (px + 14, top + 6))
            .map_err(err)?;
    }
    draw_legend(&legend, &plot.lines).map_err(err)?;
    root.present().map_err(err)
}

/// An axis is a plotters coordinate: linear over its drawn coordinates,
/// its ticks the grid's bold lines and its minor lines the light ones.
impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, (from, to): (i32, i32)) -> i32 {
        let share = (v - self.lo) / (self.hi - self.lo);
        if !share.is_finite() {
            return from;
        }
        from + (f64::from(to - from) * share).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Whether the points are all one point (or none): a line through them
/// would draw nothing.
pub(crate) fn collapsed(points: &[(f64, f64)]) -> bool {
    points.windows(2).all(|w| w[0] == w[1])
}

/// The legend column: a swatch and the (wrapped) name of each line.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    lines: &[Line],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut y = 52;
    for line in lines {
        let c = color(line.color);
        area.draw(&Rectangle::new([(4, y + 2), (20, y + 14)], c.filled()))?;
        let mut text = wrap(&line.name, LEGEND_CHARS);
        if line.points.is_empty() {
            text.push("(no data)".into());
        }
        for row in text {
            area.draw_text(&row, &font(14.0).color(&BLACK), (28, y))?;
            y += 18;
        }
        y += 6;
    }
    Ok(())
}

/// A chart with nothing to draw: its title and "no data".
fn no_data<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let centre = |t: &str, px: f64, y: i32| {
        let style = font(px)
            .color(&BLACK)
            .pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ));
        root.draw_text(t, &style, (WIDTH as i32 / 2, y))
    };
    root.fill(&WHITE)?;
    centre(title, 19.0, 16)?;
    centre("no data", 16.0, 62)?;
    root.present()
}

/// A chart plotters refused to draw: its title and the reason, so the
/// rest of the report still stands.
fn failed(title: &str, reason: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="80"><text x="10" y="30" font-family="sans-serif" font-size="16">{}</text><text x="10" y="60" font-family="sans-serif" font-size="14">chart not drawn: {}</text></svg>"#,
        super::page::escape(title),
        super::page::escape(reason)
    )
}

/// Words of `s` in lines of at most `width` characters (a longer word
/// gets a line of its own).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in s.split_whitespace() {
        match out.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// "Not labelled for want of room: checkpoint ×12, flush ×2."
fn unlabelled_sentence(labels: &[String]) -> Option<String> {
    if labels.is_empty() {
        return None;
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in labels {
        *counts.entry(l.as_str()).or_default() += 1;
    }
    let list: Vec<String> = counts
        .into_iter()
        .map(|(l, n)| match n {
            1 => l.to_string(),
            n => format!("{l} ×{}", number(n as f64)),
        })
        .collect();
    Some(format!(
        "Marked but not labelled for want of room: {}.",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_names_wrap_at_word_boundaries() {
        assert_eq!(
            wrap("max_open_databases = 2000 (failed)", 22),
            ["max_open_databases =", "2000 (failed)"]
        );
        assert_eq!(wrap("", 22), Vec::<String>::new());
    }

    #[test]
    fn unlabelled_markers_are_counted_by_label() {
        let l: Vec<String> = ["flush", "checkpoint", "checkpoint"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            unlabelled_sentence(&l).as_deref(),
            Some("Marked but not labelled for want of room: checkpoint ×2, flush.")
        );
        assert_eq!(unlabelled_sentence(&[]), None);
    }
}
