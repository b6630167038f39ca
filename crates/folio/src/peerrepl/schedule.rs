//! When each `[[replication]]` entry runs next, and what its runs did:
//! a state machine fed with times, commits seen and results, no I/O and
//! no clock of its own, so its rules are tested without waiting.
//!
//! ```text
//!   new ─▶ every entry due at once
//!   restore(saved, now, wall) ─▶ an entry that ran within its interval
//!                 is due one interval after that run, with its counts
//!   due(now) ─▶ the entry due longest ago that is not running ─▶ started(i)
//!   changed(i, now) ─▶ an on-change entry is due `delay` after the first
//!                 commit seen (later ones in the burst do not move it;
//!                 doubled per failed run in a row, up to the interval)
//!   finished(i, now, outcome, seen) ─▶ next run = now + interval (from the
//!                 end of a run, so a slow run never piles up)
//!   wake_in(now) ─▶ how long until the next entry is due
//!   run_now(name, now) ─▶ an entry asked for by hand is due at `now`
//!                 (one running is left to finish)
//! ```
//!
//! One entry runs at a time (the task runs them one after the other on
//! one replicator thread). Its state is what `show stats` and `GET
//! /stats` report as `replication.<name>.*` (`statistics`): last run,
//! result, documents and bytes moved by it, errors so far, runs so far,
//! next run. What survives a restart is `saved` (`state.rs` writes it
//! after each run, design.md §11.8); an on-change entry also keeps
//! `seen`, each database's change sequence when its last run started, so
//! a commit made after that — by a user, or by the run's own pull — still
//! makes one more run, even across a restart. That run finds nothing new
//! when the commits were the replicator's own, so two servers replicating
//! both ways on change settle (I51).

use super::state::{SavedEntry, SavedState};
use protocol::{StatValue, Statistic};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the schedule needs of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Its statistics' key, and its key in the saved state.
    pub name: String,
    /// Its peer: saved state of an entry now pointed elsewhere is dropped.
    pub peer: String,
    /// From the end of one run to the start of the next.
    pub interval: Duration,
    /// With on-change runs, their delay after the first commit seen.
    pub on_change: Option<Duration>,
}

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
    /// A commit was seen while it ran (it runs again after the delay).
    pub changed_while_running: bool,
    /// Runs in a row that had a failure (each doubles the on-change
    /// delay, up to the interval); not saved.
    pub failed_in_a_row: u32,
    /// Each database's change sequence when its last run started.
    pub seen: BTreeMap<String, u64>,
}

/// Every entry's schedule (module docs).
#[derive(Clone, Debug)]
pub struct Schedule {
    plans: Vec<Plan>,
    states: Vec<EntryState>,
}

impl Schedule {
    /// The entries, all due at `now`.
    pub fn new(plans: Vec<Plan>, now: Duration) -> Schedule {
        let states = plans
            .iter()
            .map(|_| EntryState {
                next: now,
                ..EntryState::default()
            })
            .collect();
        Schedule { plans, states }
    }

    /// Takes back what `saved` holds of each entry of the same name and
    /// peer (an entry renamed, removed or pointed at another peer starts
    /// afresh), at `now` on the schedule's clock and `wall_micros` on the
    /// wall clock: an entry that last finished a run less than its
    /// interval ago is due one interval after that run, not at once. A
    /// wall clock gone back before the last run counts as "just ran".
    pub fn restore(&mut self, saved: &SavedState, now: Duration, wall_micros: i64) {
        for (plan, state) in self.plans.iter().zip(&mut self.states) {
            let Some(entry) = saved.entries.get(&plan.name) else {
                continue;
            };
            if entry.peer != plan.peer {
                continue;
            }
            state.runs = entry.runs;
            state.errors = entry.errors;
            state.last_run_micros = entry.last_run_micros;
            state.last = entry.last_run_micros.map(|_| Outcome {
                documents: entry.documents,
                bytes: entry.bytes,
                failures: entry.failures.clone(),
                warnings: entry.warnings.clone(),
            });
            state.seen = entry.seen.clone();
            if let Some(last) = entry.last_run_micros {
                let ago = u64::try_from(wall_micros.saturating_sub(last)).unwrap_or(0);
                state.next = now + plan.interval.saturating_sub(Duration::from_micros(ago));
            }
        }
    }

    /// What survives a restart: every entry's counts, last run and seen
    /// sequences, by name.
    pub fn saved(&self) -> SavedState {
        let entries = self
            .plans
            .iter()
            .zip(&self.states)
            .map(|(plan, s)| {
                let last = s.last.clone().unwrap_or_default();
                let entry = SavedEntry {
                    peer: plan.peer.clone(),
                    runs: s.runs,
                    errors: s.errors,
                    last_run_micros: s.last_run_micros,
                    documents: last.documents,
                    bytes: last.bytes,
                    failures: last.failures,
                    warnings: last.warnings,
                    seen: s.seen.clone(),
                };
                (plan.name.clone(), entry)
            })
            .collect();
        SavedState { entries }
    }

    /// A local commit of one of entry `i`'s databases was seen at `now`:
    /// an on-change entry runs its delay from now (`change_delay`),
    /// unless it is due sooner already; one running now runs again that
    /// delay after it ends. Other entries ignore it.
    pub fn changed(&mut self, i: usize, now: Duration) {
        let Some(delay) = self.change_delay(i) else {
            return;
        };
        let Some(s) = self.states.get_mut(i) else {
            return;
        };
        if s.running {
            s.changed_while_running = true;
        } else {
            s.next = s.next.min(now + delay);
        }
    }

    /// Whether entry `i` waits for a commit at `now`: an on-change entry
    /// not running and not due within its delay anyway (a burst already
    /// seen need not be seen again).
    pub fn waits_for_change(&self, i: usize, now: Duration) -> bool {
        match (self.change_delay(i), self.states.get(i)) {
            (Some(delay), Some(s)) => !s.running && s.next > now + delay,
            _ => false,
        }
    }

    /// Entry `i`'s delay after a commit: its `on_change` delay, doubled
    /// for each failed run in a row (a peer down is retried ever less
    /// often), at most its interval; `None` for an entry not on change.
    fn change_delay(&self, i: usize) -> Option<Duration> {
        let plan = self.plans.get(i)?;
        let delay = plan.on_change?;
        let fails = self.states.get(i)?.failed_in_a_row.min(20);
        Some(delay.saturating_mul(1 << fails).min(plan.interval))
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
    /// `outcome`, having started when its databases' change sequences
    /// were `seen`; it runs next one interval later (or its delay later
    /// if a commit was seen while it ran).
    pub fn finished(
        &mut self,
        i: usize,
        now: Duration,
        wall_micros: i64,
        outcome: Outcome,
        seen: BTreeMap<String, u64>,
    ) {
        let (Some(plan), Some(s)) = (self.plans.get(i), self.states.get_mut(i)) else {
            return;
        };
        s.running = false;
        s.runs += 1;
        s.errors += outcome.failures.len() as u64;
        s.failed_in_a_row = match outcome.failures.is_empty() {
            true => 0,
            false => s.failed_in_a_row.saturating_add(1),
        };
        s.last_run_micros = Some(wall_micros);
        s.last = Some(outcome);
        s.seen = seen;
        s.next = now + plan.interval;
        if std::mem::take(&mut s.changed_while_running) {
            if let Some(delay) = self.change_delay(i) {
                self.states[i].next = self.states[i].next.min(now + delay);
            }
        }
    }

    /// The entry named `name` (ignoring case), asked for by hand at
    /// `now` ("Run now"): due at once unless it is running; `None` with
    /// no such entry, else whether it was running.
    pub fn run_now(&mut self, name: &str, now: Duration) -> Option<bool> {
        let i = self
            .plans
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(name))?;
        let s = &mut self.states[i];
        if !s.running {
            s.next = s.next.min(now);
        }
        Some(s.running)
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
        for (name, s) in self.plans.iter().map(|p| &p.name).zip(&self.states) {
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

    fn plan(name: &str, interval: Duration, on_change: Option<Duration>) -> Plan {
        Plan {
            name: name.into(),
            peer: "hub:1352".into(),
            interval,
            on_change,
        }
    }

    fn two() -> Schedule {
        Schedule::new(vec![plan("a", 10 * S, None), plan("b", 30 * S, None)], S)
    }

    fn none() -> BTreeMap<String, u64> {
        BTreeMap::new()
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
        s.finished(0, 4 * S, 7, Outcome::default(), none());
        assert_eq!(s.wake_in(4 * S), Some(10 * S));
        s.finished(1, 5 * S, 8, Outcome::default(), none());
        assert_eq!(s.due(13 * S), None);
        assert_eq!(s.due(14 * S), Some(0));
        assert_eq!(s.state(1).unwrap().next, 35 * S);
    }

    #[test]
    fn an_entry_run_by_hand_is_due_at_once_unless_running() {
        let mut s = two();
        s.finished(0, S, 0, Outcome::default(), none());
        s.finished(1, S, 0, Outcome::default(), none());
        assert_eq!(s.due(2 * S), None);
        assert_eq!(s.run_now("B", 2 * S), Some(false), "names ignore case");
        assert_eq!(s.due(2 * S), Some(1));
        assert_eq!(s.wake_in(2 * S), Some(Duration::ZERO));
        s.started(1);
        assert_eq!(
            s.run_now("b", 3 * S),
            Some(true),
            "a running entry is left to finish"
        );
        s.finished(1, 4 * S, 0, Outcome::default(), none());
        assert_eq!(s.state(1).unwrap().next, 34 * S);
        assert_eq!(s.run_now("c", 3 * S), None);
        assert_eq!(s.run_now(" b", 3 * S), None);
        assert_eq!(
            s.state(0).unwrap().next,
            11 * S,
            "the other entry keeps its time"
        );
    }

    #[test]
    fn the_entry_due_longest_ago_goes_first() {
        let mut s = two();
        s.finished(1, S, 0, Outcome::default(), none());
        s.finished(0, 25 * S, 0, Outcome::default(), none());
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
        s.finished(0, 2 * S, 0, failed, none());
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
        s.finished(0, 13 * S, 0, Outcome::default(), none());
        let st = stats(&s, 13 * S);
        assert_eq!(
            st["replication.a.errors"],
            StatValue::Count(2),
            "errors add up"
        );
        assert_eq!(st["replication.a.result"], StatValue::Text("ok".into()));
    }

    /// An on-change entry (interval 60 s, delay 2 s) beside a plain one
    /// (interval 600 s), both last run at 5 s.
    fn on_change() -> Schedule {
        let mut s = Schedule::new(
            vec![plan("a", 60 * S, Some(2 * S)), plan("b", 600 * S, None)],
            Duration::ZERO,
        );
        for i in [0, 1] {
            s.started(i);
            s.finished(i, 5 * S, 0, Outcome::default(), none());
        }
        s
    }

    #[test]
    fn a_burst_of_commits_makes_one_run_after_the_delay() {
        let mut s = on_change();
        assert!(s.waits_for_change(0, 5 * S));
        assert!(!s.waits_for_change(1, 5 * S), "not an on-change entry");
        s.changed(1, 10 * S);
        assert_eq!(s.due(64 * S), None, "b ignores commits");
        assert_eq!(s.state(1).unwrap().next, 605 * S);
        s.changed(0, 10 * S);
        assert!(!s.waits_for_change(0, 10 * S), "the burst is already seen");
        s.changed(0, 11 * S);
        assert_eq!(s.due(11 * S), None);
        assert_eq!(s.wake_in(11 * S), Some(S), "the first commit sets the time");
        assert_eq!(s.due(12 * S), Some(0));
        s.started(0);
        assert!(!s.waits_for_change(0, 12 * S), "not while it runs");
        s.finished(0, 13 * S, 0, Outcome::default(), none());
        assert_eq!(s.wake_in(13 * S), Some(60 * S), "then the interval again");
        assert!(s.waits_for_change(0, 13 * S));
    }

    #[test]
    fn a_commit_seen_during_a_run_makes_one_more_run() {
        let mut s = on_change();
        s.changed(0, 10 * S);
        s.started(0);
        s.changed(0, 13 * S);
        assert_eq!(s.due(13 * S), None, "not while it runs");
        s.finished(0, 20 * S, 0, Outcome::default(), none());
        assert_eq!(s.due(21 * S), None);
        assert_eq!(s.due(22 * S), Some(0), "the delay after the run's end");
        s.started(0);
        s.finished(0, 23 * S, 0, Outcome::default(), none());
        assert_eq!(s.wake_in(23 * S), Some(60 * S), "once only");
    }

    #[test]
    fn failed_runs_in_a_row_double_the_delay_up_to_the_interval() {
        let mut s = on_change();
        let failed = || Outcome {
            failures: vec!["a.fdb: connection refused".into()],
            ..Outcome::default()
        };
        let mut now = 10 * S;
        for expected in [4, 8, 16, 32, 60, 60] {
            s.started(0);
            s.finished(0, now, 0, failed(), none());
            // At the interval's length, the interval runs it anyway.
            assert_eq!(s.waits_for_change(0, now), expected < 60);
            s.changed(0, now);
            assert!(!s.waits_for_change(0, now), "seen once per retry");
            assert_eq!(s.wake_in(now), Some(expected * S));
            now += expected * S;
        }
        s.started(0);
        s.finished(0, now, 0, Outcome::default(), none());
        s.changed(0, now);
        assert_eq!(s.wake_in(now), Some(2 * S), "a success resets it");
    }

    #[test]
    fn an_interval_due_within_the_delay_is_not_brought_forward_or_put_back() {
        let mut s = on_change();
        // Due at 65 by the interval.
        assert!(!s.waits_for_change(0, 64 * S));
        s.changed(0, 64 * S);
        assert_eq!(s.due(65 * S), Some(0));
    }

    #[test]
    fn restored_state_keeps_counts_and_the_time_of_the_last_run() {
        const WALL: i64 = 1_000_000_000_000_000;
        let micros = |d: Duration| d.as_micros() as i64;
        let mut before = Schedule::new(
            vec![
                plan("recent", 10 * S, Some(S)),
                plan("old", 10 * S, None),
                plan("moved", 10 * S, None),
                plan("never", 10 * S, None),
            ],
            Duration::ZERO,
        );
        let failed = Outcome {
            documents: 4,
            bytes: 512,
            failures: vec!["x.fdb: refused".into()],
            warnings: vec![],
        };
        let seen = BTreeMap::from([("a.fdb".to_string(), 17)]);
        before.started(0);
        before.finished(0, S, WALL - micros(3 * S), failed.clone(), seen.clone());
        before.started(1);
        before.finished(1, S, WALL - micros(20 * S), Outcome::default(), none());
        before.started(2);
        before.finished(2, S, WALL - micros(3 * S), Outcome::default(), none());
        let mut saved = before.saved();
        let gone = saved.entries["old"].clone();
        saved.entries.insert("gone".into(), gone);

        let mut after = Schedule::new(
            vec![
                plan("recent", 10 * S, Some(S)),
                plan("old", 10 * S, None),
                Plan {
                    peer: "elsewhere:1352".into(),
                    ..plan("moved", 10 * S, None)
                },
                plan("never", 10 * S, None),
                plan("new", 10 * S, None),
            ],
            100 * S,
        );
        after.restore(&saved, 100 * S, WALL);
        let recent = after.state(0).unwrap();
        assert_eq!((recent.runs, recent.errors), (1, 1));
        assert_eq!(recent.last, Some(failed));
        assert_eq!(recent.seen, seen);
        assert_eq!(recent.last_run_micros, Some(WALL - micros(3 * S)));
        assert_eq!(
            after.due(100 * S),
            Some(1),
            "only the entry last run longer ago than its interval"
        );
        after.started(1);
        for (i, fresh) in [(2, "moved to another peer"), (3, "never run"), (4, "new")] {
            assert_eq!(after.state(i).unwrap().runs, 0, "{fresh}");
            assert_eq!(after.due(100 * S), Some(i), "{fresh} runs at start");
            after.started(i);
        }
        assert_eq!(after.wake_in(100 * S), Some(7 * S), "ran 3 s ago");
        let resaved = after.saved();
        assert!(
            !resaved.entries.contains_key("gone"),
            "an entry no longer configured drops its state"
        );
        assert_eq!(resaved.entries["moved"].peer, "elsewhere:1352");
        assert_eq!(resaved.entries["moved"].runs, 0);
        assert_eq!(resaved.entries["recent"], saved.entries["recent"]);

        // A wall clock gone back: a whole interval from now.
        let mut back = Schedule::new(vec![plan("recent", 10 * S, Some(S))], 100 * S);
        back.restore(&saved, 100 * S, WALL - micros(60 * S));
        assert_eq!(back.wake_in(100 * S), Some(10 * S));
    }
}
