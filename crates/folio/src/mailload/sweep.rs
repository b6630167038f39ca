//! `--sweep`: one run per user count, grouped into arms (the log on, and
//! with `--compare-logging` the log off too), and each arm's capacity.
//!
//! Capacity is the highest user count whose run met every part of the
//! rule: the response p95 within [`P95_MS`], the router's delivery p99
//! within [`ROUTER_P99_MS`], at least [`DELIVERED_SHARE`] of the
//! deliveries offered in the window delivered in it, and trans/min at
//! least [`IN_LINE`] of proportional to the arm's smallest count (a
//! server that falls behind the offered load does not count, however
//! short its answers). The highest such count, not the first failure:
//! counts are independent runs on fresh data, and a count that misses the
//! rule is shown as missing it, beside the others.
//!
//! ```text
//!   runs ──Point::of──▶ points per arm ──capacity──▶ verdict per point,
//!                                                    capacity per arm
//!   arms "log on" and "log off" ──▶ capacity ratio on ÷ off
//! ```
//!
//! All of it is pure: figures in, verdicts out, no I/O.

use serde_json::{json, Value};

/// The response p95 (ms) a count must stay within.
pub const P95_MS: f64 = 50.0;
/// The router's delivery p99 (ms) a count must stay within.
pub const ROUTER_P99_MS: f64 = 1000.0;
/// The share of offered deliveries a count must deliver.
pub const DELIVERED_SHARE: f64 = 0.95;
/// How far below proportional growth trans/min may fall and still count
/// as growing in line with users.
pub const IN_LINE: f64 = 0.9;

/// What the capacity rule reads of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub users: usize,
    pub trans_per_min: f64,
    pub p95_ms: f64,
    /// `None`: the server reported no router figures.
    pub router_p99_ms: Option<f64>,
    pub delivered: Option<u64>,
    pub offered: u64,
}

impl Point {
    /// The figures of a run's `result.json` entry.
    pub fn of(run: &Value) -> Option<Point> {
        Some(Point {
            users: run["users"].as_u64()? as usize,
            trans_per_min: run["trans_per_min"].as_f64()?,
            p95_ms: run["response"]["overall"]["p95_ms"].as_f64()?,
            router_p99_ms: run["server"]["router_latency_p99_ms"].as_f64(),
            delivered: run["deliveries"]["delivered"].as_u64(),
            offered: run["deliveries"]["offered"].as_u64().unwrap_or(0),
        })
    }
}

/// Which parts of the rule one point met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub p95: bool,
    pub router_p99: bool,
    pub deliveries: bool,
    pub in_line: bool,
}

impl Verdict {
    pub fn met(self) -> bool {
        self.p95 && self.router_p99 && self.deliveries && self.in_line
    }

    /// The parts missed, as the report words them.
    pub fn missed(self) -> Vec<String> {
        [
            (self.p95, format!("p95 > {P95_MS} ms")),
            (self.router_p99, format!("router p99 > {ROUTER_P99_MS} ms")),
            (
                self.deliveries,
                format!("delivered < {:.0}%", DELIVERED_SHARE * 100.0),
            ),
            (self.in_line, "trans/min not in line".to_string()),
        ]
        .into_iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, why)| why)
        .collect()
    }
}

/// One arm's verdicts (in the order of `points`) and its capacity: the
/// highest user count that met the rule, `None` if none did.
pub fn capacity(points: &[Point]) -> (Vec<Verdict>, Option<usize>) {
    let smallest = points.iter().min_by_key(|p| p.users);
    let per_user = smallest.map_or(0.0, |p| p.trans_per_min / p.users.max(1) as f64);
    let verdicts: Vec<Verdict> = points
        .iter()
        .map(|p| Verdict {
            p95: p.p95_ms <= P95_MS,
            router_p99: p.router_p99_ms.is_some_and(|r| r <= ROUTER_P99_MS),
            deliveries: p
                .delivered
                .is_some_and(|d| d as f64 >= DELIVERED_SHARE * p.offered as f64),
            in_line: p.trans_per_min >= IN_LINE * per_user * p.users as f64,
        })
        .collect();
    let best = points
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.met())
        .map(|(p, _)| p.users)
        .max();
    (verdicts, best)
}

/// The rule in words, for the result and the report.
pub fn rule() -> String {
    format!(
        "highest user count with response p95 ≤ {P95_MS} ms, router delivery p99 ≤ \
         {ROUTER_P99_MS} ms, delivered ≥ {:.0}% of the deliveries offered in the window, and \
         trans/min ≥ {IN_LINE} × proportional to the arm's smallest count",
        DELIVERED_SHARE * 100.0
    )
}

/// An arm's name: what it switches.
pub fn arm_name(logging: bool) -> &'static str {
    if logging {
        "log on"
    } else {
        "log off"
    }
}

/// The sweep's result: per arm (runs grouped by `logging`, the log on
/// first), each count's figures, verdict and where its run is in `runs`,
/// and the arm's capacity; with two arms, the capacity ratio on ÷ off.
pub fn result(runs: &[Value]) -> Value {
    let mut arms = Vec::new();
    let mut capacities = Vec::new();
    for logging in [true, false] {
        let mine: Vec<(usize, Point)> = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r["logging"].as_bool() == Some(logging))
            .filter_map(|(i, r)| Some((i, Point::of(r)?)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let points: Vec<Point> = mine.iter().map(|(_, p)| p.clone()).collect();
        let (verdicts, best) = capacity(&points);
        capacities.push(best);
        arms.push(json!({
            "arm": arm_name(logging),
            "logging": logging,
            "capacity_users": best,
            "points": mine.iter().zip(&verdicts).map(|((i, p), v)| json!({
                "users": p.users,
                "run": i,
                "turn": runs[*i]["turn"],
                "trans_per_min": p.trans_per_min,
                "p95_ms": p.p95_ms,
                "router_p99_ms": p.router_p99_ms,
                "delivered": p.delivered,
                "offered": p.offered,
                "met": v.met(),
                "missed": v.missed(),
            })).collect::<Vec<_>>(),
        }));
    }
    json!({
        "rule": rule(),
        "arms": arms,
        "capacity_ratio_on_over_off": match capacities[..] {
            [Some(on), Some(off)] => json!(on as f64 / off as f64),
            _ => Value::Null,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count whose every figure is well within the rule.
    fn good(users: usize) -> Point {
        Point {
            users,
            trans_per_min: 16.0 * users as f64,
            p95_ms: 5.0,
            router_p99_ms: Some(40.0),
            delivered: Some(9 * users as u64),
            offered: 9 * users as u64,
        }
    }

    #[test]
    fn capacity_is_the_highest_count_meeting_every_part() {
        let mut slow = good(4000);
        slow.p95_ms = 50.1;
        let (v, cap) = capacity(&[good(1000), good(2000), slow]);
        assert_eq!(cap, Some(2000));
        assert_eq!(
            v.iter().map(|v| v.met()).collect::<Vec<_>>(),
            [true, true, false]
        );
        assert_eq!(v[2].missed(), ["p95 > 50 ms"]);
        let mut edge = good(4000);
        edge.p95_ms = P95_MS;
        assert_eq!(capacity(&[good(1000), edge]).1, Some(4000), "≤ is within");
    }

    #[test]
    fn a_router_that_is_late_or_falls_behind_bounds_capacity() {
        let mut late = good(2000);
        late.router_p99_ms = Some(1000.5);
        let mut behind = good(4000);
        behind.delivered = Some((0.94 * behind.offered as f64) as u64);
        let mut enough = good(8000);
        enough.delivered = Some((0.95 * enough.offered as f64).ceil() as u64);
        let (v, cap) = capacity(&[good(1000), late, behind.clone()]);
        assert_eq!(cap, Some(1000));
        assert_eq!(v[1].missed(), ["router p99 > 1000 ms"]);
        assert_eq!(v[2].missed(), ["delivered < 95%"]);
        assert_eq!(capacity(&[good(1000), behind, enough]).1, Some(8000));
    }

    #[test]
    fn missing_router_figures_do_not_count_as_met_but_nothing_offered_does() {
        let mut unknown = good(2000);
        unknown.router_p99_ms = None;
        unknown.delivered = None;
        let (v, cap) = capacity(&[good(1000), unknown]);
        assert_eq!(cap, Some(1000));
        assert!(!v[1].router_p99 && !v[1].deliveries);
        let mut quiet = good(2000);
        (quiet.offered, quiet.delivered) = (0, Some(0));
        assert_eq!(capacity(&[quiet]).1, Some(2000));
    }

    #[test]
    fn trans_per_min_must_grow_in_line_with_the_smallest_count() {
        let mut flat = good(4000);
        flat.trans_per_min = 0.89 * 16.0 * 4000.0;
        let (v, cap) = capacity(&[flat, good(1000)]);
        assert_eq!(cap, Some(1000), "order of the points does not matter");
        assert_eq!(v[0].missed(), ["trans/min not in line"]);
        assert_eq!(capacity(&[]), (Vec::new(), None));
    }

    #[test]
    fn a_count_past_a_missed_one_still_counts() {
        let mut noisy = good(2000);
        noisy.p95_ms = 80.0;
        assert_eq!(capacity(&[good(1000), noisy, good(4000)]).1, Some(4000));
    }

    fn run(users: usize, logging: bool, turn: u64, p95: f64) -> Value {
        json!({"users": users, "logging": logging, "turn": turn,
               "trans_per_min": 16.0 * users as f64,
               "response": {"overall": {"p95_ms": p95}},
               "server": {"router_latency_p99_ms": 10.0},
               "deliveries": {"offered": 30, "delivered": 30}})
    }

    #[test]
    fn each_arm_has_its_capacity_and_the_ratio_is_on_over_off() {
        let runs = [
            run(1000, true, 1, 4.0),
            run(1000, false, 2, 6.0),
            run(2000, false, 1, 70.0),
            run(2000, true, 2, 9.0),
        ];
        let r = result(&runs);
        let arms = r["arms"].as_array().unwrap();
        assert_eq!(arms.len(), 2);
        assert_eq!(
            (arms[0]["arm"].clone(), arms[1]["arm"].clone()),
            ("log on".into(), "log off".into())
        );
        assert_eq!(arms[0]["capacity_users"], 2000);
        assert_eq!(arms[1]["capacity_users"], 1000);
        assert_eq!(r["capacity_ratio_on_over_off"], 2.0);
        let off = arms[1]["points"].as_array().unwrap();
        assert_eq!(
            (off[0]["run"].clone(), off[1]["run"].clone()),
            (1.into(), 2.into())
        );
        assert_eq!(off[1]["turn"], 1, "the log-off arm went first at 2000");
        assert_eq!(off[1]["missed"], json!(["p95 > 50 ms"]));
    }

    #[test]
    fn one_arm_or_an_arm_with_no_capacity_has_no_ratio() {
        let r = result(&[run(1000, true, 1, 4.0)]);
        assert_eq!(r["arms"].as_array().unwrap().len(), 1);
        assert!(r["capacity_ratio_on_over_off"].is_null());
        let r = result(&[run(1000, true, 1, 4.0), run(1000, false, 2, 90.0)]);
        assert_eq!(r["arms"][1]["capacity_users"], Value::Null);
        assert!(r["capacity_ratio_on_over_off"].is_null());
    }
}
