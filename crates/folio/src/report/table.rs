//! The report's tables: the settings of a run and its figures, shown
//! before any chart so the numbers are the first thing a reader meets.

use super::chart::Unit;
use super::page::escape;
use hdrhistogram::Histogram;
use std::fmt::Write;

/// A table of figures: a caption, a header row and rows of cells (text;
/// numbers already formatted by the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(caption: &str, header: &[&str]) -> Table {
        Table {
            caption: caption.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as HTML, its caption a heading above it (a `<caption>`
    /// would wrap to the table's width); columns whose every cell is a
    /// number are set right-aligned.
    pub(crate) fn html(&self) -> String {
        let numeric: Vec<bool> = (0..self.header.len())
            .map(|i| {
                let mut cells = self.rows.iter().filter_map(|r| r.get(i)).peekable();
                cells.peek().is_some() && cells.all(|c| looks_numeric(c))
            })
            .collect();
        let mut s = format!("<h3>{}</h3><table><tr>", escape(&self.caption));
        for h in &self.header {
            let _ = write!(s, "<th>{}</th>", escape(h));
        }
        s.push_str("</tr>");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let class = if numeric.get(i).copied().unwrap_or(false) {
                    " class=\"n\""
                } else {
                    ""
                };
                let _ = write!(s, "<td{class}>{}</td>", escape(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</table>");
        s
    }
}

/// A figure as tables print it: a number, perhaps with a ratio or percent
/// sign after it ("1.50×", "42%") or a short unit ("84.6 MB"), or a dash
/// for "not measured"; or several such side by side ("0.66 / 7.47 /
/// 17.90", "8.9 MB / –"), set alike so they do not wrap.
fn looks_numeric(c: &str) -> bool {
    c.split(" / ").all(|part| {
        let part = part.trim();
        let number = match part.split_once(' ') {
            Some((n, unit)) if unit.len() <= 3 && unit.chars().all(char::is_alphabetic) => n,
            _ => part,
        };
        number == "–" || number.trim_end_matches(['×', '%']).parse::<f64>().is_ok()
    })
}

/// The run's settings and machine, one row each, from a result's
/// `settings` and `machine` objects (unset settings left out).
pub fn settings_table(result: &serde_json::Value) -> Table {
    let mut t = Table::new("Settings", &["setting", "value"]);
    if let Some(settings) = result["settings"].as_object() {
        for (k, v) in settings.iter().filter(|(_, v)| !v.is_null()) {
            t.row(vec![k.replace('_', " "), plain(v)]);
        }
    }
    let m = &result["machine"];
    if !m.is_null() {
        t.row(vec![
            "machine".into(),
            format!(
                "{} cores, {:.0} GiB RAM, kernel {}",
                m["cores"],
                m["ram_bytes"].as_f64().unwrap_or(0.0) / f64::from(1u32 << 30),
                m["kernel"].as_str().unwrap_or("?")
            ),
        ]);
    }
    t
}

/// A JSON value as a reader wants it: strings bare, lists comma-separated.
fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().map(plain).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Response-time percentiles of each named histogram, in milliseconds:
/// count, p50, p95, p99, p99.9 and max (a dash where there are no
/// samples).
pub fn percentile_table(caption: &str, unit: Unit, rows: &[(&str, &Histogram<u64>)]) -> Table {
    let mut t = Table::new(
        caption,
        &[
            "operation",
            "count",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
        ],
    );
    for (name, h) in rows {
        let q = |q: f64| {
            if h.is_empty() {
                "–".to_string()
            } else {
                ms(unit.ms(h.value_at_quantile(q)))
            }
        };
        let max = if h.is_empty() {
            "–".to_string()
        } else {
            ms(unit.ms(h.max()))
        };
        t.row(vec![
            (*name).to_string(),
            h.len().to_string(),
            q(0.5),
            q(0.95),
            q(0.99),
            q(0.999),
            max,
        ]);
    }
    t
}

/// "1 client", "8 clients".
pub fn count_of(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// Milliseconds with three significant decimals below 10 ms, one above.
pub fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_list_what_was_set_and_the_machine() {
        let r = json!({"settings": {"clients": [1, 8], "http": null, "doc_size": 1024, "server": "a:1"},
                       "machine": {"cores": 2, "ram_bytes": 2u64 << 30, "kernel": "6.1"}});
        let t = settings_table(&r);
        let rows: Vec<(&str, &str)> = t
            .rows
            .iter()
            .map(|r| (r[0].as_str(), r[1].as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("clients", "1, 8"),
                ("doc size", "1024"),
                ("server", "a:1"),
                ("machine", "2 cores, 2 GiB RAM, kernel 6.1")
            ]
        );
        assert!(settings_table(&json!({})).is_empty());
    }

    #[test]
    fn figures_side_by_side_and_with_units_are_numbers_and_words_are_not() {
        for n in [
            "12",
            "1.50×",
            "42%",
            "–",
            "84.6 MB",
            "0.66 / 7.47 / 17.90",
            "8.9 MB / –",
            "1209 / 1209",
        ] {
            assert!(looks_numeric(n), "{n}");
        }
        for w in [
            "on",
            "met ◀ capacity",
            "100 users",
            "1 / 2 runs",
            "a / 1",
            "",
        ] {
            assert!(!looks_numeric(w), "{w}");
        }
    }

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count_of(1, "client"), "1 client");
        assert_eq!(count_of(0, "client"), "0 clients");
        assert_eq!(count_of(32, "client"), "32 clients");
    }

    #[test]
    fn percentiles_of_an_empty_histogram_are_dashes() {
        let empty = Histogram::<u64>::new_with_bounds(1, 1000, 3).expect("bounds");
        let mut h = empty.clone();
        h.record(250).expect("in bounds");
        let t = percentile_table("ops", Unit::Microseconds, &[("a", &h), ("b", &empty)]);
        assert_eq!(t.rows[0][1..3], ["1", "0.250"]);
        assert_eq!(t.rows[1][1..], ["0", "–", "–", "–", "–", "–"]);
        assert!(t.html().contains("<td class=\"n\">–</td>"));
    }
}
