//! Runs sessions between model replicas: the drivers, in miniature.
//!
//! A [`Cluster`] holds replicas of one database. [`Cluster::run`] drives
//! any number of sessions at once in lockstep: in each step the write
//! batches handed over in the step before become durable and are
//! acknowledged (a commit takes time; the machines go on meanwhile), every
//! machine's queued actions are carried out (local reads and history saves
//! on the model databases, packets onto the session's
//! [`Link`](super::net)), then every packet in flight is delivered. A step that delivers something on a
//! session is one *flight* of it, so two flights make a round trip. When
//! nothing is in flight and some machine still waits, the clock jumps past
//! the idle timeout, which is how a lost message ends a session here.

use super::model::{Body, ModelDb, ModelVersion};
use super::net::{Faults, InFlight, Link, Sent};
use crate::error::ReplicaError;
use crate::ids::{Opening, Peer, SessionId};
use crate::msg::ErrorCode;
use crate::puller::{PullAction, PullConfig, PullPhase, PullReport, Puller};
use crate::source::{Source, SourceAction, SourceConfig, SourcePhase, SourceReport};
use crate::WriteBatch;
use nsf::{DbInstanceId, ReplicaId, Timestamp};
use std::collections::VecDeque;

/// The replica id every model replica shares.
pub const MODEL_REPLICA: ReplicaId = ReplicaId(0x0F01_10DB);

/// The idle timeout the runner's machines use, in µs.
pub const IDLE_TIMEOUT: i64 = 30_000_000;

/// The most steps a run may take before it is called stuck.
const MAX_STEPS: u32 = 1_000_000;

/// One session to run: a pull from `source` into `target`.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The replica documents come from.
    pub source: usize,
    /// The replica they go to.
    pub target: usize,
    /// The source opens the session (a push) rather than the target.
    pub push: bool,
    /// The selection formula.
    pub selection: Option<String>,
    /// Entries per summary page.
    pub page_size: u32,
    /// Pages in flight.
    pub window: u16,
    /// Documents per write batch.
    pub batch_notes: usize,
    /// What goes wrong.
    pub faults: Faults,
}

impl Spec {
    /// A pull with the default settings and no faults.
    pub fn pull(source: usize, target: usize) -> Spec {
        Spec {
            source,
            target,
            push: false,
            selection: None,
            page_size: 500,
            window: 4,
            batch_notes: 256,
            faults: Faults::none(),
        }
    }

    /// The same, opened by the source.
    pub fn push(source: usize, target: usize) -> Spec {
        Spec {
            push: true,
            ..Spec::pull(source, target)
        }
    }

    /// With a selection formula.
    pub fn selection(mut self, formula: &str) -> Spec {
        self.selection = Some(formula.to_owned());
        self
    }

    /// With pages of `n` entries.
    pub fn page_size(mut self, n: u32) -> Spec {
        self.page_size = n;
        self
    }

    /// With a window of `n` pages.
    pub fn window(mut self, n: u16) -> Spec {
        self.window = n;
        self
    }

    /// With write batches of `n` documents.
    pub fn batch_notes(mut self, n: usize) -> Spec {
        self.batch_notes = n;
        self
    }

    /// With these faults.
    pub fn faults(mut self, faults: Faults) -> Spec {
        self.faults = faults;
        self
    }
}

/// How a session went.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The puller's end (Failed if it crashed).
    pub puller: PullPhase,
    /// Its error.
    pub puller_error: Option<ReplicaError>,
    /// What it did.
    pub pull: PullReport,
    /// The source's end (Failed if it crashed).
    pub source: SourcePhase,
    /// Its error.
    pub source_error: Option<ReplicaError>,
    /// What it sent.
    pub sent: SourceReport,
    /// Messages put on the wire.
    pub messages: u32,
    /// Their encoded bytes (postcard).
    pub bytes: u64,
    /// Delivery steps until the puller was over.
    pub flights: u32,
    /// Every message sent, in order.
    pub trace: Vec<Sent<ModelVersion, Body>>,
    /// Answers the machines refused (driver mistakes: should stay empty).
    pub driver_errors: Vec<ReplicaError>,
    /// Which side crashed.
    pub crashed: Option<&'static str>,
}

impl RunResult {
    /// Both sides finished.
    pub fn finished(&self) -> bool {
        self.puller == PullPhase::Finished && self.source == SourcePhase::Finished
    }
}

/// A session being run.
struct Running {
    spec: Spec,
    puller: Option<Puller<ModelVersion, Body>>,
    source: Option<Source<ModelVersion, Body>>,
    link: Link<ModelVersion, Body>,
    /// Write batches handed over and not yet durable.
    writing: VecDeque<WriteBatch<ModelVersion, Body>>,
    target_actions: u32,
    source_actions: u32,
    told_cut: bool,
    flights: u32,
    pull_at_crash: Option<PullReport>,
    sent_at_crash: Option<SourceReport>,
    driver_errors: Vec<ReplicaError>,
}

impl Running {
    /// Counts one local action of the target, crashing it instead if the
    /// faults say so: the puller and every write not yet applied are lost.
    fn crash_target(&mut self) -> bool {
        if self.link.faults().crash_target_after != Some(self.target_actions) {
            self.target_actions += 1;
            return false;
        }
        self.pull_at_crash = self.puller.as_ref().map(|p| p.report().clone());
        self.puller = None;
        self.writing.clear();
        self.link.cut = true;
        true
    }

    fn over(&self) -> bool {
        let puller_over = self
            .puller
            .as_ref()
            .is_none_or(|p| matches!(p.phase(), PullPhase::Finished | PullPhase::Failed));
        let source_over = self
            .source
            .as_ref()
            .is_none_or(|s| matches!(s.phase(), SourcePhase::Finished | SourcePhase::Failed));
        puller_over && source_over && self.writing.is_empty()
    }

    fn tick(&mut self, now: i64) {
        if let Some(p) = self.puller.as_mut() {
            p.tick(Timestamp(now));
        }
        if let Some(s) = self.source.as_mut() {
            s.tick(Timestamp(now));
        }
    }

    fn result(self) -> RunResult {
        let crashed = match (self.puller.is_none(), self.source.is_none()) {
            (true, _) => Some("target"),
            (_, true) => Some("source"),
            _ => None,
        };
        RunResult {
            puller: self
                .puller
                .as_ref()
                .map_or(PullPhase::Failed, |p| p.phase()),
            puller_error: self.puller.as_ref().and_then(|p| p.error().cloned()),
            pull: self
                .puller
                .as_ref()
                .map(|p| p.report().clone())
                .or(self.pull_at_crash)
                .unwrap_or_default(),
            source: self
                .source
                .as_ref()
                .map_or(SourcePhase::Failed, |s| s.phase()),
            source_error: self.source.as_ref().and_then(|s| s.error().cloned()),
            sent: self
                .source
                .as_ref()
                .map(|s| s.report().clone())
                .or(self.sent_at_crash)
                .unwrap_or_default(),
            messages: self.link.messages,
            bytes: self.link.bytes,
            flights: self.flights,
            trace: self.link.trace,
            driver_errors: self.driver_errors,
            crashed,
        }
    }
}

/// Replicas of one database, and the sessions between them.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The replicas, instance ids 1, 2, …
    pub dbs: Vec<ModelDb>,
    next_session: u64,
    now: i64,
}

impl Cluster {
    /// `n` empty replicas.
    pub fn new(n: usize) -> Cluster {
        Cluster {
            dbs: (1..=n as u64)
                .map(|i| {
                    ModelDb::new(Peer {
                        replica: MODEL_REPLICA,
                        instance: DbInstanceId(i),
                    })
                })
                .collect(),
            next_session: 1,
            now: 1_000_000,
        }
    }

    /// The runner's clock, in µs.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Pulls from `source` into `target` with the default settings.
    pub fn replicate(&mut self, source: usize, target: usize) -> RunResult {
        self.run_one(Spec::pull(source, target))
    }

    /// Pulls each way between `a` and `b`, both sessions at once.
    pub fn two_way(&mut self, a: usize, b: usize) -> (RunResult, RunResult) {
        let mut results = self.run(vec![Spec::pull(a, b), Spec::pull(b, a)]);
        let second = results.pop();
        let first = results.pop();
        match (first, second) {
            (Some(first), Some(second)) => (first, second),
            _ => unreachable!("two sessions give two results"),
        }
    }

    /// Runs one session.
    pub fn run_one(&mut self, spec: Spec) -> RunResult {
        match self.run(vec![spec]).pop() {
            Some(result) => result,
            None => unreachable!("one session gives one result"),
        }
    }

    /// Pulls over every ordered pair, round after round, until a round
    /// changes no replica; returns the rounds run (at most `max_rounds`),
    /// or the first pull that did not finish.
    pub fn sync_all(&mut self, max_rounds: usize) -> Result<usize, Box<RunResult>> {
        for round in 1..=max_rounds {
            let before: Vec<_> = self.dbs.iter().map(ModelDb::last_change).collect();
            for a in 0..self.dbs.len() {
                for b in 0..self.dbs.len() {
                    if a == b {
                        continue;
                    }
                    let result = self.replicate(a, b);
                    if !result.finished() {
                        return Err(Box::new(result));
                    }
                }
            }
            let after: Vec<_> = self.dbs.iter().map(ModelDb::last_change).collect();
            if before == after {
                return Ok(round);
            }
        }
        Ok(max_rounds)
    }

    /// Whether every replica holds the same documents and stubs.
    pub fn converged(&self) -> bool {
        let first = self.dbs.first().map(ModelDb::docs);
        self.dbs.iter().all(|db| Some(db.docs()) == first)
    }

    /// Runs the sessions together until all are over.
    pub fn run(&mut self, specs: Vec<Spec>) -> Vec<RunResult> {
        let mut sessions: Vec<Running> = specs.into_iter().map(|s| self.start(s)).collect();
        for _ in 0..MAX_STEPS {
            for s in sessions.iter_mut() {
                self.finish_writes(s);
                self.pump(s);
                if s.link.cut && !s.told_cut {
                    s.told_cut = true;
                    if let Some(p) = s.puller.as_mut() {
                        p.connection_lost();
                    }
                    if let Some(src) = s.source.as_mut() {
                        src.connection_lost();
                    }
                    self.pump(s);
                }
            }
            let busy = sessions
                .iter()
                .any(|s| s.link.has_ready() || !s.writing.is_empty());
            if !busy {
                let mut released = false;
                for s in sessions.iter_mut() {
                    released |= s.link.release_held();
                }
                if released {
                    continue;
                }
                if sessions.iter().all(Running::over) {
                    break;
                }
                self.now += IDLE_TIMEOUT + 1;
                let now = self.now;
                sessions.iter_mut().for_each(|s| s.tick(now));
                continue;
            }
            self.now += 1_000;
            for s in sessions.iter_mut() {
                deliver(s);
                let now = self.now;
                s.tick(now);
            }
        }
        sessions.into_iter().map(Running::result).collect()
    }

    fn start(&mut self, spec: Spec) -> Running {
        let id = SessionId(self.next_session);
        self.next_session += 1;
        let (target_opening, source_opening) = if spec.push {
            (Opening::Respond, Opening::Initiate(id))
        } else {
            (Opening::Initiate(id), Opening::Respond)
        };
        let target = &self.dbs[spec.target];
        let source = &self.dbs[spec.source];
        let mut pull = PullConfig::new(target.peer(), target_opening);
        pull.selection = spec.selection.clone();
        pull.window = spec.window;
        pull.batch_notes = spec.batch_notes;
        pull.idle_timeout_micros = IDLE_TIMEOUT;
        let mut send = SourceConfig::new(source.peer(), source_opening);
        send.page_size = spec.page_size;
        send.idle_timeout_micros = IDLE_TIMEOUT;
        let now = Timestamp(self.now);
        Running {
            puller: Some(Puller::new(pull, target.histories().to_vec(), now)),
            source: Some(Source::new(send, source.last_change(), now)),
            link: Link::new(spec.faults.clone()),
            writing: VecDeque::new(),
            spec,
            target_actions: 0,
            source_actions: 0,
            told_cut: false,
            flights: 0,
            pull_at_crash: None,
            sent_at_crash: None,
            driver_errors: Vec::new(),
        }
    }

    /// Carries out every queued action of both machines, until none is left.
    fn pump(&mut self, s: &mut Running) {
        loop {
            let target_did = self.pump_target(s);
            let source_did = self.pump_source(s);
            if !target_did && !source_did {
                return;
            }
        }
    }

    fn pump_target(&mut self, s: &mut Running) -> bool {
        let db = &mut self.dbs[s.spec.target];
        let mut did = false;
        while let Some(action) = s.puller.as_mut().and_then(|p| p.next_action()) {
            did = true;
            let query = match action {
                PullAction::Send(packet) => {
                    s.link.send_to_source(packet);
                    continue;
                }
                PullAction::Write(batch) => {
                    s.writing.push_back(batch);
                    continue;
                }
                _ if s.crash_target() => return true,
                PullAction::SaveHistory(entry) => {
                    db.save_history(entry);
                    continue;
                }
                PullAction::QueryLocal { query, unids } => (query, db.held(&unids)),
            };
            if let Some(puller) = s.puller.as_mut() {
                if let Err(e) = puller.local_versions(query.0, query.1) {
                    s.driver_errors.push(e);
                }
            }
        }
        did
    }

    /// Completes the write batches handed over in an earlier step (the
    /// model's commits are durable when applied), and acknowledges them.
    fn finish_writes(&mut self, s: &mut Running) {
        while let Some(batch) = s.writing.pop_front() {
            if s.crash_target() {
                return;
            }
            let results = match batch.apply(&mut self.dbs[s.spec.target]) {
                Ok(results) => results,
                Err(never) => match never {},
            };
            if let Some(puller) = s.puller.as_mut() {
                if let Err(e) = puller.written(batch.id, results) {
                    s.driver_errors.push(e);
                }
            }
        }
    }

    fn pump_source(&mut self, s: &mut Running) -> bool {
        let Some(source) = s.source.as_mut() else {
            return false;
        };
        let db = &self.dbs[s.spec.source];
        let mut did = false;
        while let Some(action) = source.next_action() {
            did = true;
            if let SourceAction::Send(packet) = action {
                s.link.send_to_target(packet);
                continue;
            }
            if s.link.faults().crash_source_after == Some(s.source_actions) {
                s.sent_at_crash = Some(source.report().clone());
                s.source = None;
                s.link.cut = true;
                return true;
            }
            s.source_actions += 1;
            let answered = match action {
                SourceAction::Send(_) => Ok(()),
                SourceAction::ReadChanges {
                    after,
                    limit,
                    selection,
                } => match selection.as_deref().map(formula::Formula::parse) {
                    Some(Err(e)) => {
                        source.fail_local(ErrorCode::BadSelection, e.to_string());
                        Ok(())
                    }
                    Some(Ok(f)) => {
                        let ctx = formula::EvalContext { now: self.now };
                        source.changes_read(db.changes_after(after, limit, |b| f.selects(b, &ctx)))
                    }
                    None => source.changes_read(db.changes_after(after, limit, |_| true)),
                },
                SourceAction::ReadNotes { upto, unids, .. } => {
                    source.notes_read(upto, db.envelopes(&unids), true)
                }
            };
            if let Err(e) = answered {
                s.driver_errors.push(e);
            }
        }
        did
    }
}

/// Delivers everything in flight on one session's link.
fn deliver(s: &mut Running) {
    let InFlight {
        to_source,
        to_target,
    } = s.link.take();
    let puller_over = s
        .puller
        .as_ref()
        .is_none_or(|p| matches!(p.phase(), PullPhase::Finished | PullPhase::Failed));
    if !puller_over && (!to_source.is_empty() || !to_target.is_empty()) {
        s.flights += 1;
    }
    for packet in to_source {
        if let Some(source) = s.source.as_mut() {
            let _ = source.receive(packet);
        }
    }
    for packet in to_target {
        if let Some(puller) = s.puller.as_mut() {
            let _ = puller.receive(packet);
        }
    }
}
