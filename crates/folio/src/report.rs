//! `report.html` for the load workloads: self-contained HTML with inline
//! SVG charts, so a result can be opened anywhere without a network.

use std::fmt::Write;

/// One line of a chart: a name and its (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A line chart; with `log_x` the x axis is logarithmic.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
) -> String {
    let (w, h, l, r, t, b) = (720.0, 400.0, 70.0, 170.0, 40.0, 50.0);
    let fx = |x: f64| if log_x { x.max(1e-9).log10() } else { x };
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(fx(x));
        x1 = x1.max(fx(x));
        y1 = y1.max(y);
    }
    if x0 >= x1 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let px = |x: f64| l + (fx(x) - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| h - b - y / y1 * (h - t - b);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>"#,
        (w - r + l) / 2.0,
        escape(title)
    );
    let _ = write!(
        s,
        r#"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
        h - b,
        w - r,
        h - b
    );
    let _ = write!(
        s,
        r#"<line x1="{l}" y1="{t}" x2="{l}" y2="{}" stroke="black"/>"#,
        h - b
    );
    for i in 0..=4 {
        let y = y1 * f64::from(i) / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{0}" text-anchor="end" dy="4">{3:.3}</text>"##,
            py(y),
            w - r,
            l - 6.0,
            y
        );
    }
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            h - b + 16.0,
            x
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (w - r + l) / 2.0,
        h - 10.0,
        escape(x_label)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{}</text>"#,
        h / 2.0,
        h / 2.0,
        escape(y_label)
    );
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in &se.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = t + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
            w - r + 12.0,
            ly,
            w - r + 30.0,
            ly + 10.0,
            escape(&se.name)
        );
    }
    s.push_str("</svg>");
    s
}

/// A whole report page: a title, charts and a preformatted summary.
pub fn page(title: &str, charts: &[String], summary: &str) -> String {
    let mut s = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0}</title></head><body><h1>{0}</h1>",
        escape(title)
    );
    for c in charts {
        s.push_str("<div>");
        s.push_str(c);
        s.push_str("</div>");
    }
    let _ = write!(s, "<pre>{}</pre></body></html>", escape(summary));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let svg = line_chart(
            "t<1>",
            "x",
            "y",
            &[Series {
                name: "a".into(),
                points: vec![(1000.0, 1.0), (1_000_000.0, 2.0)],
            }],
            true,
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("t&lt;1&gt;") && svg.contains("polyline"));
    }
}
