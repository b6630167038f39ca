//! The router's statistics: counters the pass moves, a latency histogram
//! (deposit → the copy in the recipient's Inbox), deliveries per second
//! over the last minute, and what the last pass found waiting and why.
//! Times come from the router's clock, so tests can read exact rates.
//!
//! Where passes spend their time is kept too, in wall-clock milliseconds
//! summed over passes: per phase of a pass ([`Phase`]), and inside the
//! mail files per step of a delivery ([`Step`], summed over whoever
//! delivers, so steps run side by side add up to more than the phase).
//! These say what bounds the router (reading boxes, the directory, or
//! waiting for the mail files' commits) from `show stats` alone.
//!
//! And how far behind it is: the deposits pending in the boxes when the
//! last pass began (the queue), the age of the oldest, the copies and
//! mail files being delivered right now, and how many passes found more
//! than a pass takes (back-pressure: the router runs the next at once).

use hdrhistogram::Histogram;
use nsf::Timestamp;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The phases of a pass (pass.rs), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Reading the boxes' pending deposits.
    Scan,
    /// Resolving recipients through the directory.
    Resolve,
    /// Filing the copies in the mail files.
    Deliver,
    /// NDRs and delay notices.
    Notices,
    /// Recording the deposits' states in their boxes.
    Record,
}

impl Phase {
    const ALL: [Phase; 5] = [
        Phase::Scan,
        Phase::Resolve,
        Phase::Deliver,
        Phase::Notices,
        Phase::Record,
    ];

    fn name(self) -> &'static str {
        match self {
            Phase::Scan => "scan",
            Phase::Resolve => "resolve",
            Phase::Deliver => "deliver",
            Phase::Notices => "notices",
            Phase::Record => "record",
        }
    }
}

/// The steps of one mail file's delivery (batch.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Opening the mail file.
    Open,
    /// Looking for copies already there and filing the new ones (one
    /// logged commit, waited for).
    Copies,
    /// Adding the copies to the Inbox (one logged commit, waited for).
    Inbox,
    /// Applying meeting notices to the calendar.
    Calendar,
}

impl Step {
    const ALL: [Step; 4] = [Step::Open, Step::Copies, Step::Inbox, Step::Calendar];

    fn name(self) -> &'static str {
        match self {
            Step::Open => "open",
            Step::Copies => "copies",
            Step::Inbox => "inbox",
            Step::Calendar => "calendar",
        }
    }
}

/// What the router reports (see [`RouterStats::snapshot`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatsSnapshot {
    /// Deposits with a recipient still pending, as of the last pass.
    pub waiting: u64,
    /// Recipients waiting after a failed attempt, as of the last pass.
    pub retrying: u64,
    /// Why they wait: reason → recipients, as of the last pass.
    pub retry_reasons: Vec<(String, u64)>,
    pub delivered: u64,
    /// Deliveries in the last 60 seconds.
    pub delivered_per_min: u64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub ndr: u64,
    pub delay_notices: u64,
    pub passes: u64,
    /// Deposits pending in the boxes when the last pass began.
    pub queue_depth: u64,
    /// Age of the oldest deposit the last pass took, in milliseconds.
    pub oldest_pending_ms: u64,
    /// Copies being filed into mail files now.
    pub in_flight: u64,
    /// Mail files being delivered into now (workers busy).
    pub workers_busy: u64,
    /// Passes that left deposits for the next (it ran at once).
    pub passes_behind: u64,
    /// Milliseconds spent per phase of a pass, summed over passes.
    pub phase_ms: Vec<(&'static str, u64)>,
    /// Milliseconds spent per step of delivering into a mail file,
    /// summed over deliveries (those run side by side add up).
    pub step_ms: Vec<(&'static str, u64)>,
}

/// Shared between the router and whoever reports (the server's stats).
pub struct RouterStats {
    delivered: AtomicU64,
    ndr: AtomicU64,
    delay_notices: AtomicU64,
    passes: AtomicU64,
    passes_behind: AtomicU64,
    queue: Mutex<(u64, u64)>,
    in_flight: AtomicU64,
    workers_busy: AtomicU64,
    phase_us: [AtomicU64; Phase::ALL.len()],
    step_us: [AtomicU64; Step::ALL.len()],
    latency_ms: Mutex<Histogram<u64>>,
    /// (second, deliveries in it), the last 60 seconds.
    per_second: Mutex<VecDeque<(i64, u64)>>,
    waiting: Mutex<(u64, BTreeMap<String, u64>)>,
}

impl Default for RouterStats {
    fn default() -> Self {
        RouterStats {
            delivered: AtomicU64::new(0),
            ndr: AtomicU64::new(0),
            delay_notices: AtomicU64::new(0),
            passes: AtomicU64::new(0),
            passes_behind: AtomicU64::new(0),
            queue: Mutex::new((0, 0)),
            in_flight: AtomicU64::new(0),
            workers_busy: AtomicU64::new(0),
            phase_us: Default::default(),
            step_us: Default::default(),
            latency_ms: Mutex::new(
                Histogram::new_with_bounds(1, 30 * 86_400_000, 3).expect("valid histogram bounds"),
            ),
            per_second: Mutex::new(VecDeque::new()),
            waiting: Mutex::new((0, BTreeMap::new())),
        }
    }
}

/// Reasons are grouped by their first characters (a reason names a file,
/// and a few hundred distinct ones are still a readable report).
const REASON_CHARS: usize = 120;

impl RouterStats {
    pub(crate) fn delivered(&self, latency_us: i64, now: Timestamp) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
        let ms = (latency_us.max(0) / 1000) as u64;
        self.latency_ms.lock().saturating_record(ms.max(1));
        let sec = now.0.div_euclid(1_000_000);
        let mut q = self.per_second.lock();
        match q.back_mut() {
            Some((s, n)) if *s == sec => *n += 1,
            _ => q.push_back((sec, 1)),
        }
        while q.front().is_some_and(|(s, _)| *s <= sec - 60) {
            q.pop_front();
        }
    }

    /// Counts the time since `start` to `phase`, and returns now (the
    /// start of the next phase).
    pub(crate) fn phase(&self, phase: Phase, start: Instant) -> Instant {
        let now = Instant::now();
        let us = now.duration_since(start).as_micros() as u64;
        self.phase_us[phase as usize].fetch_add(us, Ordering::Relaxed);
        now
    }

    /// Counts the time since `start` to `step`, and returns now.
    pub(crate) fn step(&self, step: Step, start: Instant) -> Instant {
        let now = Instant::now();
        let us = now.duration_since(start).as_micros() as u64;
        self.step_us[step as usize].fetch_add(us, Ordering::Relaxed);
        now
    }

    /// What a pass found at its start: `pending` deposits in the boxes,
    /// the oldest it took `oldest_ms` old, and whether it leaves some
    /// for the next pass.
    pub(crate) fn queue(&self, pending: u64, oldest_ms: u64, behind: bool) {
        *self.queue.lock() = (pending, oldest_ms);
        if behind {
            self.passes_behind.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `copies` in flight and one worker busy until the guard is
    /// dropped.
    pub(crate) fn start_delivery(&self, copies: usize) -> InFlight<'_> {
        self.in_flight.fetch_add(copies as u64, Ordering::Relaxed);
        self.workers_busy.fetch_add(1, Ordering::Relaxed);
        InFlight {
            stats: self,
            copies: copies as u64,
        }
    }

    pub(crate) fn ndr(&self) {
        self.ndr.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn delay_notice(&self) {
        self.delay_notices.fetch_add(1, Ordering::Relaxed);
    }

    /// What a pass found waiting: `waiting` deposits, and the reasons of
    /// the recipients retrying.
    pub(crate) fn pass_done<'a>(&self, waiting: u64, reasons: impl Iterator<Item = &'a str>) {
        self.passes.fetch_add(1, Ordering::Relaxed);
        let mut by = BTreeMap::new();
        for r in reasons {
            *by.entry(r.chars().take(REASON_CHARS).collect::<String>())
                .or_insert(0) += 1;
        }
        *self.waiting.lock() = (waiting, by);
    }

    /// The statistics as of `now` (by the router's clock).
    pub fn snapshot(&self, now: Timestamp) -> StatsSnapshot {
        let h = self.latency_ms.lock().clone();
        let (p50, p99) = if h.is_empty() {
            (0.0, 0.0)
        } else {
            (
                h.value_at_quantile(0.50) as f64,
                h.value_at_quantile(0.99) as f64,
            )
        };
        let sec = now.0.div_euclid(1_000_000);
        let per_min = self
            .per_second
            .lock()
            .iter()
            .filter(|(s, _)| *s > sec - 60)
            .map(|(_, n)| n)
            .sum();
        let (waiting, reasons) = self.waiting.lock().clone();
        let (queue_depth, oldest_pending_ms) = *self.queue.lock();
        StatsSnapshot {
            waiting,
            retrying: reasons.values().sum(),
            retry_reasons: reasons.into_iter().collect(),
            delivered: self.delivered.load(Ordering::Relaxed),
            delivered_per_min: per_min,
            latency_p50_ms: p50,
            latency_p99_ms: p99,
            ndr: self.ndr.load(Ordering::Relaxed),
            delay_notices: self.delay_notices.load(Ordering::Relaxed),
            passes: self.passes.load(Ordering::Relaxed),
            queue_depth,
            oldest_pending_ms,
            in_flight: self.in_flight.load(Ordering::Relaxed),
            workers_busy: self.workers_busy.load(Ordering::Relaxed),
            passes_behind: self.passes_behind.load(Ordering::Relaxed),
            phase_ms: Phase::ALL
                .iter()
                .map(|&p| {
                    (
                        p.name(),
                        self.phase_us[p as usize].load(Ordering::Relaxed) / 1000,
                    )
                })
                .collect(),
            step_ms: Step::ALL
                .iter()
                .map(|&s| {
                    (
                        s.name(),
                        self.step_us[s as usize].load(Ordering::Relaxed) / 1000,
                    )
                })
                .collect(),
        }
    }
}

/// One mail file's delivery in flight (see [`RouterStats::start_delivery`]).
pub(crate) struct InFlight<'a> {
    stats: &'a RouterStats,
    copies: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.stats
            .in_flight
            .fetch_sub(self.copies, Ordering::Relaxed);
        self.stats.workers_busy.fetch_sub(1, Ordering::Relaxed);
    }
}
