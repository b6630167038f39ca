//! When each `[[replication]]` entry runs next, and what its runs did:
//! a state machine fed with times and results, no I/O and no clock of
//! its own, so its rules are tested without waiting.
//!
//! ```text
//!   start ─▶ every entry due at once
//!   due(now) ─▶ the entry due longest ago that is not running ─▶ started(i)
//!   finished(i, now, outcome) ─▶ next run = now + interval (from the end
//!                                 of a run, so a slow run never piles up)
//!   wake_in(now) ─▶ how long until the next entry is due
//! ```
//!
//! One entry runs at a time (the task runs them one after the other on
//! one replicator thread). Its state is what `show stats` and `GET
//! /stats` report as `replication.<name>.*` (`statistics`): last run,
//! result, documents and bytes moved by it, errors so far, runs so far,
//! next run. Nothing here is stored: a restarted server runs every entry
//! at start, and each pull resumes from its stored history (I26).

use protocol::{StatValue, Statistic};
use std::time::Duration;

/// What one run of an entry did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Documents that travelled, both ways, all databases.
    pub documents: u64,
    /// Bytes the connections moved.
    pub bytes: u64,
    /// Databases whose replication failed, each with why.
    pub failures: Vec<String>,
    /// What the run warns about (purge interval).
    pub warnings: Vec<String>,
}

/// One entry's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryState {
    /// When it runs next, on the schedule's clock.
    pub next: Duration,
    /// Running now.
    pub running: bool,
    /// Runs finished.
    pub runs: u64,
    /// When the last run finished (wall clock, µs since the epoch).
    pub last_run_micros: Option<i64>,
    /// What the last run did.
    pub last: Option<Outcome>,
    /// Databases that failed, over every run.
    pub errors: u64,
}

/// Every entry's schedule (module docs).
#[derive(Clone, Debug)]
pub struct Schedule {
    names: Vec<String>,
    intervals: Vec<Duration>,
    states: Vec<EntryState>,
}

impl Schedule {
    /// The entries `(name, interval)`, all due at `now`.
    pub fn new(entries: Vec<(String, Duration)>, now: Duration) -> Schedule {
        let states = entries
            .iter()
            .map(|_| EntryState {
                next: now,
                ..EntryState::default()
            })
            .collect();
        let (names, intervals) = entries.into_iter().unzip();
        Schedule {
            names,
            intervals,
            states,
        }
    }

    /// The entry due longest ago, not running, if any is due at `now`.
    pub fn due(&self, now: Duration) -> Option<usize> {
        self.states
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.running && s.next <= now)
            .min_by_key(|(i, s)| (s.next, *i))
            .map(|(i, _)| i)
    }

    /// Entry `i` started.
    pub fn started(&mut self, i: usize) {
        if let Some(s) = self.states.get_mut(i) {
            s.running = true;
        }
    }

    /// Entry `i` finished at `now` (wall clock `wall_micros`) with
    /// `outcome`; it runs next one interval later.
    pub fn finished(&mut self, i: usize, now: Duration, wall_micros: i64, outcome: Outcome) {
        let Some(s) = self.states.get_mut(i) else {
            return;
        };
        s.running = false;
        s.runs += 1;
        s.errors += outcome.failures.len() as u64;
        s.last_run_micros = Some(wall_micros);
        s.last = Some(outcome);
        s.next = now + self.intervals[i];
    }

    /// How long from `now` until an entry not running is due (zero if one
    /// is); `None` with no such entry.
    pub fn wake_in(&self, now: Duration) -> Option<Duration> {
        self.states
            .iter()
            .filter(|s| !s.running)
            .map(|s| s.next.saturating_sub(now))
            .min()
    }

    /// Entry `i`'s state.
    pub fn state(&self, i: usize) -> Option<&EntryState> {
        self.states.get(i)
    }

    /// The statistics of every entry at `now`: `replication.<name>.` +
    /// `runs`, `errors`, `documents` and `bytes` (of the last run),
    /// `result` (`never run`, `running`, `ok`, `warning: …` or `failed:
    /// …`), `last_run` (RFC 3339) and `next_run_s` (seconds from now).
    pub fn statistics(&self, now: Duration, out: &mut Vec<Statistic>) {
        for (name, s) in self.names.iter().zip(&self.states) {
            let stat = |key: &str, value: StatValue| Statistic {
                name: format!("replication.{name}.{key}"),
                value,
            };
            let last = s.last.clone().unwrap_or_default();
            out.push(stat("runs", StatValue::Count(s.runs)));
            out.push(stat("errors", StatValue::Count(s.errors)));
            out.push(stat("documents", StatValue::Count(last.documents)));
            out.push(stat("bytes", StatValue::Count(last.bytes)));
            out.push(stat("result", StatValue::Text(result(s))));
            let when = s
                .last_run_micros
                .map_or_else(|| "never".to_string(), rfc3339);
            out.push(stat("last_run", StatValue::Text(when)));
            let next = if s.running {
                0.0
            } else {
                s.next.saturating_sub(now).as_secs_f64()
            };
            out.push(stat("next_run_s", StatValue::Gauge(next)));
        }
    }
}

fn result(s: &EntryState) -> String {
    match &s.last {
        _ if s.running => "running".into(),
        None => "never run".into(),
        Some(o) if !o.failures.is_empty() => format!("failed: {}", o.failures.join("; ")),
        Some(o) if !o.warnings.is_empty() => format!("warning: {}", o.warnings.join("; ")),
        Some(_) => "ok".into(),
    }
}

fn rfc3339(micros: i64) -> String {
    nsf::Timestamp(micros).to_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn two() -> Schedule {
        Schedule::new(vec![("a".into(), 10 * S), ("b".into(), 30 * S)], S)
    }

    #[test]
    fn every_entry_runs_at_start_then_one_interval_after_its_end() {
        let mut s = two();
        assert_eq!(s.wake_in(Duration::ZERO), Some(S));
        assert_eq!(s.due(Duration::ZERO), None);
        assert_eq!(s.due(S), Some(0));
        s.started(0);
        assert_eq!(s.due(S), Some(1), "a running entry is not due again");
        s.started(1);
        assert_eq!(s.due(S), None);
        assert_eq!(s.wake_in(S), None, "nothing waits while both run");
        s.finished(0, 4 * S, 7, Outcome::default());
        assert_eq!(s.wake_in(4 * S), Some(10 * S));
        s.finished(1, 5 * S, 8, Outcome::default());
        assert_eq!(s.due(13 * S), None);
        assert_eq!(s.due(14 * S), Some(0));
        assert_eq!(s.state(1).unwrap().next, 35 * S);
    }

    #[test]
    fn the_entry_due_longest_ago_goes_first() {
        let mut s = two();
        s.finished(1, S, 0, Outcome::default());
        s.finished(0, 25 * S, 0, Outcome::default());
        // b is due at 31, a at 35.
        assert_eq!(s.due(40 * S), Some(1));
    }

    #[test]
    fn statistics_report_the_last_run_and_count_errors() {
        let mut s = two();
        let stats = |s: &Schedule, now| {
            let mut out = Vec::new();
            s.statistics(now, &mut out);
            out.into_iter()
                .map(|st| (st.name, st.value))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let st = stats(&s, S);
        assert_eq!(
            st["replication.a.result"],
            StatValue::Text("never run".into())
        );
        assert_eq!(
            st["replication.a.last_run"],
            StatValue::Text("never".into())
        );
        s.started(0);
        assert_eq!(
            stats(&s, S)["replication.a.result"],
            StatValue::Text("running".into())
        );
        let failed = Outcome {
            documents: 3,
            bytes: 900,
            failures: vec!["x.fdb: refused".into(), "y.fdb: gone".into()],
            warnings: vec![],
        };
        s.finished(0, 2 * S, 0, failed);
        let st = stats(&s, 5 * S);
        assert_eq!(st["replication.a.runs"], StatValue::Count(1));
        assert_eq!(st["replication.a.errors"], StatValue::Count(2));
        assert_eq!(st["replication.a.documents"], StatValue::Count(3));
        assert_eq!(st["replication.a.bytes"], StatValue::Count(900));
        assert_eq!(
            st["replication.a.result"],
            StatValue::Text("failed: x.fdb: refused; y.fdb: gone".into())
        );
        assert_eq!(
            st["replication.a.last_run"],
            StatValue::Text("1970-01-01T00:00:00.000000Z".into())
        );
        assert_eq!(st["replication.a.next_run_s"], StatValue::Gauge(7.0));
        s.started(0);
        s.finished(0, 13 * S, 0, Outcome::default());
        let st = stats(&s, 13 * S);
        assert_eq!(
            st["replication.a.errors"],
            StatValue::Count(2),
            "errors add up"
        );
        assert_eq!(st["replication.a.result"], StatValue::Text("ok".into()));
    }
}
