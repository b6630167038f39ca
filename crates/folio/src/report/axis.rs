//! Axes of the report's charts: their range, where the ticks go and how a
//! number reads on them.
//!
//! plotters draws the axes, but the ticks are chosen here and handed to it
//! as key points, so every chart labels what a reader looks for: on a
//! logarithmic axis the measured x values themselves (1, 8, 32 clients) or
//! 1-2-5 steps, on a percentile axis 50%, 90%, 99%, 99.9%. A logarithmic
//! axis is drawn as a linear one over log10 of the values; the labels say
//! the values.
//!
//! ```text
//!   values ──(Scale::Log: log10)──► drawn coordinates ──► plotters
//!   ticks  ── (coordinate, label) pairs, labels from the values
//! ```

/// How values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// log10 of the value; values at or below zero cannot be drawn.
    Log,
}

impl Scale {
    /// The drawn coordinate of `v`, if it can be drawn on this scale.
    pub(crate) fn to_coord(self, v: f64) -> Option<f64> {
        match self {
            _ if !v.is_finite() => None,
            Scale::Linear => Some(v),
            Scale::Log if v > 0.0 => Some(v.log10()),
            Scale::Log => None,
        }
    }
}

/// One axis as drawn: its description, range and ticks, in drawn
/// coordinates (log10 of the values on a logarithmic axis).
#[derive(Clone, Debug)]
pub(crate) struct Axis {
    pub desc: String,
    pub lo: f64,
    pub hi: f64,
    /// Labelled ticks, ascending.
    pub ticks: Vec<(f64, String)>,
    /// Unlabelled grid lines between the ticks.
    pub minor: Vec<f64>,
}

impl Axis {
    /// The label of the tick nearest to `c` (plotters asks by coordinate).
    pub fn label_at(&self, c: f64) -> String {
        self.ticks
            .iter()
            .min_by(|a, b| (a.0 - c).abs().total_cmp(&(b.0 - c).abs()))
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// A linear axis from zero (or the lowest value, if negative) to a
    /// little above the highest, with about six round ticks.
    pub fn linear_from_zero(desc: &str, values: impl Iterator<Item = f64>) -> Axis {
        let (lo, hi) = bounds(values).unwrap_or((0.0, 1.0));
        let lo = lo.min(0.0);
        let hi = if hi <= lo {
            lo + 1.0
        } else {
            hi + (hi - lo) * 0.06
        };
        Axis::linear(desc, lo, hi)
    }

    /// A linear axis over exactly `lo..hi` (widened if empty).
    pub fn linear(desc: &str, lo: f64, hi: f64) -> Axis {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 1.0, lo + 1.0)
        };
        let step = nice_step((hi - lo) / 6.0);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        let ticks = (first..=last)
            .map(|i| i as f64 * step)
            .map(|v| (v, number(v)))
            .collect();
        Axis {
            desc: desc.into(),
            lo,
            hi,
            ticks,
            minor: Vec::new(),
        }
    }

    /// A logarithmic axis over the given positive values (others are
    /// ignored), with a little room on either side.
    ///
    /// With `at_values`, the ticks are the values themselves when there
    /// are few distinct ones and none crowds its neighbour (the client
    /// counts of a sweep); otherwise 1-2-5 steps.
    pub fn log(desc: &str, values: impl Iterator<Item = f64>, at_values: bool) -> Axis {
        let mut vs: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
        vs.sort_by(f64::total_cmp);
        vs.dedup();
        let (lo, hi) = match (vs.first(), vs.last()) {
            (Some(&a), Some(&b)) => (a.log10(), b.log10()),
            _ => (0.0, 1.0),
        };
        let pad = ((hi - lo) * 0.06).max(0.15);
        let (lo, hi) = (lo - pad, hi + pad);
        let roomy = vs
            .windows(2)
            .all(|w| (w[1].log10() - w[0].log10()) / (hi - lo) >= MIN_TICK_GAP);
        let few = roomy && (1..=12).contains(&vs.len());
        let at = |vs: &[f64]| vs.iter().map(|&v| (v.log10(), number(v))).collect();
        let round = one_two_five(lo, hi);
        let ticks = if at_values && few {
            at(&vs)
        } else if round.len() >= 2 {
            round
        } else if few {
            at(&vs)
        } else {
            let inset = (hi - lo) * 0.1;
            at(&[
                two_digits(10f64.powf(lo + inset)),
                two_digits(10f64.powf(hi - inset)),
            ])
        };
        let minor = decades(lo, hi)
            .flat_map(|d| (2..10).map(move |m| d + f64::from(m).log10()))
            .filter(|c| (lo..=hi).contains(c))
            .collect();
        Axis {
            desc: desc.into(),
            lo,
            hi,
            ticks,
            minor,
        }
    }

    /// The percentile axis of a latency distribution: the coordinate of
    /// percentile p is log10(1/(1−p)), so each further "nine" (90%, 99%,
    /// 99.9%) takes the same room. Reaches at least 99% and at most
    /// `nines` nines (rounded up).
    pub fn percentiles(desc: &str, nines: f64) -> Axis {
        let hi = nines.ceil().clamp(2.0, 7.0);
        let mut ticks = vec![(0.0, "0%".to_string()), (2f64.log10(), "50%".to_string())];
        ticks.extend((1..=hi as i32).map(|k| (f64::from(k), percent_of_nines(k))));
        Axis {
            desc: desc.into(),
            lo: 0.0,
            hi,
            ticks,
            minor: Vec::new(),
        }
    }
}

/// The least distance between two ticks, as a share of the axis, for
/// their labels not to run into each other.
const MIN_TICK_GAP: f64 = 0.07;

/// "90%", "99%", "99.9%" … for 1, 2, 3 … nines.
fn percent_of_nines(k: i32) -> String {
    let decimals = (k - 2).max(0) as usize;
    format!("{:.*}%", decimals, 100.0 * (1.0 - 10f64.powi(-k)))
}

/// The lowest and highest finite value, if any.
pub(crate) fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// The round step (1, 2, 2.5 or 5 times a power of ten) nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|&n| m <= n)
        .unwrap_or(10.0);
    nice * p
}

/// The powers of ten (as log10) covering `lo..hi`.
fn decades(lo: f64, hi: f64) -> impl Iterator<Item = f64> {
    (lo.floor() as i32..=hi.ceil() as i32).map(f64::from)
}

/// Ticks at 1, 2, 5 × 10^k inside `lo..hi` (log10 coordinates); only the
/// powers of ten when that would be more than ten ticks.
fn one_two_five(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let steps: &[f64] = if hi - lo > 3.5 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    decades(lo, hi)
        .flat_map(|d| steps.iter().map(move |m| d + m.log10()))
        .filter(|c| (lo..=hi).contains(c))
        .map(|c| (c, number(10f64.powf(c))))
        .collect()
}

/// `v` (positive) rounded to two significant digits.
fn two_digits(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor() - 1.0);
    (v / p).round() * p
}

/// A number as a tick or a legend shows it: short, no trailing zeros,
/// thousands as k and millions as M.
pub fn number(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let a = scaled.abs();
    let decimals = if a == 0.0 || a >= 100.0 {
        0
    } else if a >= 1.0 {
        2
    } else {
        // Two significant digits below one.
        ((-a.log10()).floor() as usize + 2).min(9)
    };
    let s = format!("{scaled:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    let s = if s == "-0" { "0" } else { s };
    format!("{s}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_short() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(2500.0), "2500");
        assert_eq!(number(12_500.0), "12.5k");
        assert_eq!(number(3_000_000.0), "3M");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(0.0042), "0.0042");
        assert_eq!(number(-0.0), "0");
    }

    #[test]
    fn percentile_ticks_read_as_percentiles() {
        let a = Axis::percentiles("p", 3.2);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0%", "50%", "90%", "99%", "99.9%", "99.99%"]);
        assert_eq!(a.hi, 4.0);
        assert_eq!(Axis::percentiles("p", 0.0).hi, 2.0);
    }

    #[test]
    fn a_log_axis_labels_the_values_of_a_sweep() {
        let a = Axis::log("clients", [1.0, 8.0, 32.0, 8.0].into_iter(), true);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "8", "32"]);
        assert!(a.lo < 0.0 && a.hi > 32f64.log10());
        assert_eq!(a.label_at(0.9), "8");
        // One value still makes a range; none gives a default one.
        let one = Axis::log("x", [5.0].into_iter(), true);
        assert!(one.lo < one.hi);
        let none = Axis::log("x", [0.0, -1.0, f64::NAN].into_iter(), true);
        assert!(none.lo < none.hi && none.ticks.len() <= 12);
    }

    #[test]
    fn crowded_or_narrow_log_axes_fall_back_to_round_ticks() {
        let a = Axis::log("ms", [0.004, 0.005, 0.006, 0.9].into_iter(), true);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert!(
            labels.contains(&"0.01") && labels.contains(&"0.5"),
            "{labels:?}"
        );
        // Less than one 1-2-5 step wide: the values if they have room,
        // else two round ends.
        let one = Axis::log("ms", [132.0].into_iter(), false);
        assert_eq!(one.ticks, [(132f64.log10(), "132".to_string())]);
        let near = Axis::log("ms", [0.0041, 0.0043].into_iter(), false);
        let labels: Vec<&str> = near.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.0031", "0.0056"]);
        let many: Vec<f64> = (0..40).map(|i| 100.0 + f64::from(i) * 0.01).collect();
        let crowded = Axis::log("ms", many.into_iter(), false);
        assert_eq!(crowded.ticks.len(), 2);
        assert!(crowded
            .ticks
            .iter()
            .all(|t| t.0 > crowded.lo && t.0 < crowded.hi));
    }

    #[test]
    fn linear_ticks_are_round_and_inside() {
        let a = Axis::linear_from_zero("y", [3.0, 97.0].into_iter());
        assert_eq!(a.lo, 0.0);
        assert!(a.ticks.iter().all(|t| t.0 >= a.lo && t.0 <= a.hi));
        assert_eq!(a.ticks[1].1, "20");
        let flat = Axis::linear_from_zero("y", [0.0, 0.0].into_iter());
        assert!(flat.hi > flat.lo);
        assert_eq!(Scale::Log.to_coord(0.0), None);
        assert_eq!(Scale::Linear.to_coord(f64::INFINITY), None);
    }
}
