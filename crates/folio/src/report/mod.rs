//! The load workloads' report kit: `result.json` beside a `report.html`
//! for a person — a summary table first, then charts drawn with plotters
//! (inline SVG, self-contained, readable offline), then notes.
//!
//! * `page.rs`: page assembly, escaping, writing both files;
//! * `table.rs`: tables of settings and figures;
//! * `chart.rs`: the chart kinds (percentile curves, lines over a swept
//!   setting, figures per second with markers);
//! * `axis.rs`: ranges, ticks and number formats of the axes;
//! * `draw.rs`: rendering with plotters' SVG backend.

mod axis;
mod chart;
mod draw;
mod page;
mod table;
#[cfg(test)]
mod xmlcheck;

pub use axis::Scale;
pub use chart::{lines_over_x, per_second, percentile_curves, Axes, Chart, Marker, Series, Unit};
pub use page::{write, Page};
pub use table::{count_of, ms, percentile_table, settings_table, Table};
