//! The three kinds of chart a load report draws, as inline SVG.
//!
//! * [`percentile_curves`]: latency distributions from HDR histograms,
//!   latency against percentile with each "nine" (90%, 99%, 99.9%) an
//!   equal step, so the tail is as visible as the median.
//! * [`lines_over_x`]: figures against a swept setting (clients, users,
//!   folder sizes), each measured point marked, optionally on log axes.
//! * [`per_second`]: figures over the run's time, with moments of the run
//!   (a flush, a checkpoint, a phase) as labelled vertical lines.
//!
//! Each turns its input into a [`Plot`] (drawn coordinates, ticks, lines,
//! markers; see `axis.rs`), which `draw.rs` renders with plotters. Input
//! is measured data, so nothing in it may panic or break the page: values
//! that cannot be drawn (NaN, infinities, zero on a log axis) are left
//! out, an empty histogram draws no curve, and a chart with nothing to
//! draw says so in place of its plot.

use super::axis::{Axis, Scale};
use super::draw::{self, Line, Plot, PlotMarker};
use hdrhistogram::Histogram;

/// One named line: its (x, y) points, in the caller's units.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// A moment of the run, drawn as a vertical line at `at_s` seconds and
/// labelled; in the colour of series `series` (its index), or grey when it
/// belongs to the whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub label: String,
    pub at_s: f64,
    pub series: Option<usize>,
}

/// What a histogram's values count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Microseconds,
    Nanoseconds,
}

impl Unit {
    /// `v` of this unit in milliseconds.
    pub fn ms(self, v: u64) -> f64 {
        match self {
            Unit::Microseconds => v as f64 / 1e3,
            Unit::Nanoseconds => v as f64 / 1e6,
        }
    }
}

/// The axes of [`lines_over_x`]: what x and y are, and their scales.
#[derive(Clone, Copy, Debug)]
pub struct Axes<'a> {
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: Scale,
    pub y: Scale,
}

/// A drawn chart: its title, its SVG (one `<svg>` element) and, when the
/// chart could not label everything, a sentence saying what it left out.
#[derive(Clone, Debug)]
pub struct Chart {
    pub(crate) title: String,
    pub(crate) svg: String,
    pub(crate) caption: Option<String>,
}

impl Chart {
    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn svg(&self) -> &str {
        &self.svg
    }

    pub fn caption(&self) -> Option<&str> {
        self.caption.as_deref()
    }

    /// The chart with `text` added to its caption (after what the chart
    /// itself says it left out).
    pub fn captioned(mut self, text: &str) -> Chart {
        self.caption = Some(match self.caption.take() {
            Some(c) => format!("{c} {text}"),
            None => text.to_string(),
        });
        self
    }
}

/// Ticks of quantile iteration per halving of the distance to 100%: fine
/// enough for a smooth curve, a few hundred points at most.
const QUANTILE_TICKS: u32 = 8;

/// Latency (ms) against percentile, one curve per histogram; `unit` is
/// what the histograms recorded. Empty histograms are left out (named in
/// the caption).
pub fn percentile_curves(title: &str, unit: Unit, series: &[(&str, &Histogram<u64>)]) -> Chart {
    let mut lines = Vec::new();
    let mut empty = Vec::new();
    let mut nines = 0.0f64;
    for (i, (name, h)) in series.iter().enumerate() {
        if h.is_empty() {
            // Kept as a line with no points: the legend says "no data".
            empty.push(*name);
        }
        let points = if h.is_empty() {
            Vec::new()
        } else {
            percentile_points(h, unit)
        };
        nines = nines.max(points.last().map_or(0.0, |p| p.0));
        lines.push(Line {
            name: (*name).to_string(),
            color: i,
            // One sample, or all alike: a point that needs a dot to show.
            dots: draw::collapsed(&points),
            points,
            max_step: None,
        });
    }
    let y = Axis::linear_from_zero(
        "response time, ms",
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
    );
    let caption = (!empty.is_empty()).then(|| format!("No samples: {}.", empty.join(", ")));
    let plot = Plot {
        title,
        x: Axis::percentiles("percentile (log of 1/(1 − p))", nines),
        y,
        lines,
        markers: Vec::new(),
    };
    finish(plot, caption)
}

/// The distribution of `h` as (log10(1/(1−p)), ms) points, ascending.
/// The last point (100%) goes where the sample count ends the axis: with
/// n samples the highest percentile seen is 1 − 1/n.
fn percentile_points(h: &Histogram<u64>, unit: Unit) -> Vec<(f64, f64)> {
    let top = (h.len().max(1) as f64).log10();
    h.iter_quantiles(QUANTILE_TICKS)
        .map(|v| {
            let q = v.quantile_iterated_to();
            let x = if q >= 1.0 {
                top
            } else {
                (-(1.0 - q).log10()).min(top)
            };
            (x, unit.ms(v.value_iterated_to()))
        })
        .collect()
}

/// Figures against a swept setting; each point marked.
pub fn lines_over_x(title: &str, axes: Axes<'_>, series: &[Series]) -> Chart {
    let lines = drawable(series, axes.x, axes.y, true);
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    // Ranges come from the drawable points, in value terms for Log.
    let x = match axes.x {
        Scale::Linear => Axis::linear_from_zero(axes.x_label, xs),
        Scale::Log => Axis::log(axes.x_label, xs.map(|c| 10f64.powf(c)), true),
    };
    let y = match axes.y {
        Scale::Linear => Axis::linear_from_zero(axes.y_label, ys),
        Scale::Log => Axis::log(axes.y_label, ys.map(|c| 10f64.powf(c)), false),
    };
    let plot = Plot {
        title,
        x,
        y,
        lines,
        markers: Vec::new(),
    };
    finish(plot, None)
}

/// Figures over the run (x: seconds since it started), with `markers` as
/// labelled vertical lines.
pub fn per_second(title: &str, y_label: &str, series: &[Series], markers: &[Marker]) -> Chart {
    let lines = drawable_with(series, Scale::Linear, Scale::Linear, false, gap);
    let markers: Vec<PlotMarker> = markers
        .iter()
        .filter(|m| m.at_s.is_finite())
        .map(|m| PlotMarker {
            label: m.label.clone(),
            x: m.at_s,
            color: m.series,
        })
        .collect();
    let x = Axis::linear_from_zero(
        "seconds since the start",
        lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(markers.iter().map(|m| m.x)),
    );
    let y = Axis::linear_from_zero(
        y_label,
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
    );
    let plot = Plot {
        title,
        x,
        y,
        lines,
        markers,
    };
    finish(plot, None)
}

/// Steps in time more than three times the usual one are gaps in the
/// measurement (a restart, a stall of the sampler), not joined.
fn gap(points: &[(f64, f64)]) -> Option<f64> {
    let mut steps: Vec<f64> = points.windows(2).map(|w| w[1].0 - w[0].0).collect();
    if steps.len() < 3 {
        return None;
    }
    steps.sort_by(f64::total_cmp);
    let usual = steps[steps.len() / 2];
    (usual > 0.0).then_some(usual * 3.0)
}

/// The series as drawn lines: coordinates on the given scales, points
/// that cannot be drawn left out. A lone point is always marked.
fn drawable(series: &[Series], x: Scale, y: Scale, dots: bool) -> Vec<Line> {
    drawable_with(series, x, y, dots, |_| None)
}

/// [`drawable`], with the largest x step of each line to join.
fn drawable_with(
    series: &[Series],
    x: Scale,
    y: Scale,
    dots: bool,
    max_step: impl Fn(&[(f64, f64)]) -> Option<f64>,
) -> Vec<Line> {
    series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter_map(|&(px, py)| Some((x.to_coord(px)?, y.to_coord(py)?)))
                .collect();
            Line {
                name: s.name.clone(),
                color: i,
                dots: dots || draw::collapsed(&points),
                max_step: max_step(&points),
                points,
            }
        })
        .collect()
}

/// Renders the plot; the caption gathers what the chart could not show.
fn finish(plot: Plot<'_>, caption: Option<String>) -> Chart {
    let title = plot.title.to_string();
    let drawn = draw::render(&plot);
    let caption = [caption, drawn.unlabelled]
        .into_iter()
        .flatten()
        .reduce(|a, b| format!("{a} {b}"));
    Chart {
        title,
        svg: drawn.svg,
        caption,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::xmlcheck::{check, Seen};
    use proptest::prelude::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds");
        for &v in values {
            h.record(v).expect("in bounds");
        }
        h
    }

    /// The chart's SVG parses, is one `<svg>`, and its text is readable.
    fn well_formed(c: &Chart) -> Seen {
        let seen = check(c.svg()).unwrap_or_else(|e| panic!("{}: {e}\n{}", c.title(), c.svg()));
        assert_eq!(seen.root.as_deref(), Some("svg"));
        assert!(
            seen.font_sizes.iter().all(|&s| s >= 12.9),
            "tiny text: {:?}",
            seen.font_sizes
        );
        seen
    }

    #[test]
    fn percentile_points_run_from_the_minimum_to_the_maximum() {
        let values: Vec<u64> = (1..=1000).map(|v| v * 10).collect();
        let h = hist(&values);
        let p = percentile_points(&h, Unit::Microseconds);
        assert_eq!(p[0].0, 0.0);
        assert!((p[0].1 - 0.01).abs() < 1e-3, "{:?}", p[0]);
        let last = p.last().expect("points");
        assert!((last.0 - 3.0).abs() < 1e-9 && (last.1 - 10.0).abs() < 0.01);
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        // At 99% (two nines) the curve is at the 99th percentile.
        let near = p.iter().find(|q| q.0 >= 2.0).expect("reaches 99%");
        assert!((near.1 - 9.9).abs() < 0.1, "{near:?}");
        assert_eq!(Unit::Nanoseconds.ms(2_000_000), 2.0);
    }

    #[test]
    fn percentile_curves_draw_each_histogram_and_name_the_empty_ones() {
        let (a, b, empty) = (hist(&[100, 200, 5000]), hist(&[300; 50]), hist(&[]));
        let c = percentile_curves(
            "latency",
            Unit::Microseconds,
            &[("a<1>", &a), ("b", &b), ("none", &empty)],
        );
        let seen = well_formed(&c);
        assert!(seen.count("polyline") >= 2, "{:?}", seen.elements);
        assert!(c.svg().contains("a&lt;1&gt;"));
        for t in ["a<1>", "none", "(no data)", "50%", "90%", "99%"] {
            assert!(seen.has_text(t), "{t} missing: {:?}", seen.texts);
        }
        assert_eq!(c.caption(), Some("No samples: none."));
    }

    #[test]
    fn a_caption_added_follows_what_the_chart_says_it_left_out() {
        let (b, empty) = (hist(&[300; 50]), hist(&[]));
        let c = percentile_curves("x", Unit::Microseconds, &[("b", &b), ("none", &empty)]);
        let c = c.captioned("Drawn from a test.");
        assert_eq!(c.caption(), Some("No samples: none. Drawn from a test."));
        let plain = percentile_curves("plain", Unit::Microseconds, &[("b", &b)]);
        assert_eq!(plain.captioned("Only this.").caption(), Some("Only this."));
    }

    #[test]
    fn empty_and_single_sample_histograms_do_not_break_the_chart() {
        let empty = hist(&[]);
        let c = percentile_curves("nothing yet", Unit::Microseconds, &[("x", &empty)]);
        assert!(well_formed(&c).count("text") >= 2);
        assert!(c.svg().contains("no data"));
        let c = percentile_curves("none at all", Unit::Nanoseconds, &[]);
        assert!(c.svg().contains("no data"));
        let one = hist(&[42]);
        let c = percentile_curves("one sample", Unit::Microseconds, &[("x", &one)]);
        assert!(well_formed(&c).count("circle") >= 1);
        // Many samples of one value: a flat line from 0% to 99%.
        let alike = hist(&[42; 100]);
        let points = percentile_points(&alike, Unit::Microseconds);
        assert!(
            points.iter().all(|p| (p.1 - 0.042).abs() < 1e-3),
            "{points:?}"
        );
        assert_eq!((points[0].0, points[points.len() - 1].0), (0.0, 2.0));
        let c = percentile_curves("alike", Unit::Microseconds, &[("x", &alike)]);
        assert_eq!(well_formed(&c).count("circle"), 0);
    }

    #[test]
    fn lines_over_x_take_single_points_and_undrawable_values() {
        let axes = Axes {
            x_label: "clients",
            y_label: "commits/s",
            x: Scale::Log,
            y: Scale::Log,
        };
        let one = [Series::new("one", vec![(8.0, 100.0)])];
        let c = lines_over_x("one point", axes, &one);
        let seen = well_formed(&c);
        assert_eq!(seen.count("circle"), 1);
        assert!(
            seen.has_text("8") && seen.has_text("100"),
            "{:?}",
            seen.texts
        );
        let odd = [Series::new(
            "odd",
            vec![
                (0.0, 1.0),
                (f64::NAN, 2.0),
                (4.0, -1.0),
                (f64::INFINITY, 1.0),
            ],
        )];
        let c = lines_over_x("nothing drawable on log axes", axes, &odd);
        assert!(c.svg().contains("no data"));
        well_formed(&c);
        let linear = Axes {
            x: Scale::Linear,
            y: Scale::Linear,
            ..axes
        };
        let c = lines_over_x(
            "flat",
            linear,
            &[Series::new("zero", vec![(1.0, 0.0), (2.0, 0.0)])],
        );
        well_formed(&c);
        assert!(lines_over_x("no series", linear, &[])
            .svg()
            .contains("no data"));
    }

    #[test]
    fn per_second_marks_moments_and_says_which_it_could_not_label() {
        let s = [Series::new(
            "ops/s",
            (0..50).map(|t| (t as f64, 10.0)).collect(),
        )];
        let markers = [
            Marker {
                label: "flush".into(),
                at_s: 10.0,
                series: None,
            },
            Marker {
                label: "checkpoint".into(),
                at_s: 10.2,
                series: Some(0),
            },
            Marker {
                label: "after the end".into(),
                at_s: 80.0,
                series: None,
            },
            Marker {
                label: "never".into(),
                at_s: f64::NAN,
                series: None,
            },
        ];
        let c = per_second("rate", "operations/s", &s, &markers);
        let seen = well_formed(&c);
        assert!(seen.has_text("flush") && seen.has_text("after the end"));
        assert!(!seen.has_text("never") && !seen.has_text("checkpoint"));
        assert_eq!(seen.count("circle"), 0, "dense series are lines only");
        assert_eq!(
            c.caption(),
            Some("Marked but not labelled for want of room: checkpoint.")
        );
    }

    #[test]
    fn per_second_lines_break_where_nothing_was_measured() {
        let points: Vec<(f64, f64)> = [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0]
            .iter()
            .map(|&t| (t, 5.0))
            .collect();
        let series = [Series::new("rss", points)];
        // The first colour's data lines, 2 px wide (axes are 1 px, grey).
        let lines = |c: &Chart| {
            c.svg()
                .matches(r##"stroke="#0072B2" stroke-width="2""##)
                .count()
        };
        assert_eq!(lines(&per_second("t", "y", &series, &[])), 2);
        // A point cut off on its own still shows, as a dot.
        let mut lone = series.clone();
        lone[0].points.push((30.0, 5.0));
        let c = per_second("t", "y", &lone, &[]);
        assert_eq!(check(c.svg()).expect("well formed").count("circle"), 1);
        let axes = Axes {
            x_label: "x",
            y_label: "y",
            x: Scale::Linear,
            y: Scale::Linear,
        };
        assert_eq!(lines(&lines_over_x("t", axes, &series)), 1);
        assert_eq!(gap(&[(0.0, 1.0), (1.0, 1.0)]), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the numbers, every chart kind draws well-formed SVG.
        #[test]
        fn any_points_draw_well_formed_svg(
            points in prop::collection::vec(
                (prop_oneof![any::<f64>(), -1e9f64..1e9], prop_oneof![any::<f64>(), -1e9f64..1e9]),
                0..20,
            ),
            log_x in any::<bool>(),
            log_y in any::<bool>(),
            samples in prop::collection::vec(1u64..60_000_000, 0..50),
        ) {
            let scale = |log| if log { Scale::Log } else { Scale::Linear };
            let axes = Axes { x_label: "x", y_label: "y", x: scale(log_x), y: scale(log_y) };
            let series = [Series::new("s", points.clone())];
            prop_assert!(check(lines_over_x("t", axes, &series).svg()).is_ok());
            let markers: Vec<Marker> = points
                .iter()
                .map(|p| Marker { label: "m".into(), at_s: p.0, series: Some(0) })
                .collect();
            prop_assert!(check(per_second("t", "y", &series, &markers).svg()).is_ok());
            let h = hist(&samples);
            prop_assert!(check(percentile_curves("t", Unit::Microseconds, &[("h", &h)]).svg()).is_ok());
        }
    }
}
