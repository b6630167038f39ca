//! Runs one pull between two local files and reports it.
//!
//! Both sides (`side.rs`) run on the caller's thread in lockstep: a
//! packet one sends is handed to the other at once (in-process, nothing
//! is lost or reordered), and every read or write either asks for is
//! carried out before the next step (`store.rs`). A write batch is acknowledged only
//! once its transaction is durable, and a history entry stored only after
//! the batches it covers (I26), so a pull stopped anywhere — an I/O error,
//! a crash, the process killed — resumes from the stored checkpoint
//! without sending again what was written.

use super::acl_rule::ActingFor;
use super::side::{SourceSide, TargetSide};
use crate::ids::{Opening, SessionId};
use crate::msg::ErrorCode;
use crate::puller::{PullPhase, PullReport};
use crate::source::SourceReport;
use crate::ReplicaError;
use nsf::{Database, NsfResult, Timestamp};
use std::time::{Duration, Instant};

/// How a local pull runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalOptions {
    /// Only documents this formula selects travel (stubs always do).
    pub selection: Option<String>,
    /// Entries per summary page.
    pub page_size: u32,
    /// Pages in flight.
    pub window: u16,
    /// Documents per write batch (one transaction each).
    pub batch_notes: usize,
    /// For whom the target writes, for the ACL rule (`acl_rule.rs`):
    /// an incoming ACL is written only if this is a Manager there.
    pub acting_for: ActingFor,
    /// What a network driver's target accepts from the network
    /// (`net::Limits`: attachments, packets); the local driver hands
    /// bodies across without a wire form and does not need it.
    pub limits: super::net::Limits,
}

impl Default for LocalOptions {
    /// Everything, pages of 500, a window of 4, batches of 500 documents
    /// (a page of 500 is one transaction and one log sync on the target,
    /// not two), acting for the administrator, the default network
    /// limits.
    fn default() -> Self {
        LocalOptions {
            selection: None,
            page_size: 500,
            window: 4,
            batch_notes: 500,
            acting_for: ActingFor::Administrator,
            limits: super::net::Limits::default(),
        }
    }
}

/// What a local pull did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalReport {
    /// The target's side: documents received, written, conflicts made,
    /// the checkpoint reached.
    pub pull: PullReport,
    /// The source's side: pages and documents sent.
    pub sent: SourceReport,
    /// Attachments the target held already, which travelled as
    /// references.
    pub skipped: super::Skipped,
    /// Messages exchanged.
    pub messages: u64,
    /// Wall-clock time taken.
    pub elapsed: Duration,
}

impl LocalReport {
    /// Documents received by the target.
    pub fn documents(&self) -> u64 {
        self.pull.received
    }

    /// Their content bytes.
    pub fn bytes(&self) -> u64 {
        self.pull.received_bytes
    }

    /// Conflict documents made.
    pub fn conflicts(&self) -> u64 {
        self.pull.conflicts
    }
}

/// A pull that did not finish, and what it did before it stopped.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct LocalFailure {
    /// Why it stopped.
    pub error: ReplicaError,
    /// What was done (the history holds the checkpoint reached).
    pub report: LocalReport,
}

/// Pulls from `source` into `target` (two replicas: the same replica id),
/// writing through `target`'s log in batches (I27) and keeping the
/// history in `target` (I26, I30).
pub fn pull(
    source: &Database,
    target: &Database,
    options: &LocalOptions,
) -> Result<LocalReport, Box<LocalFailure>> {
    let started = Instant::now();
    let mut run = Run::start(source, target, options).map_err(|e| {
        Box::new(LocalFailure {
            error: local(target, e),
            report: LocalReport::default(),
        })
    })?;
    while run.step() {}
    let report = LocalReport {
        pull: run.puller.report().clone(),
        sent: run.source.report().clone(),
        skipped: run.puller.skipped(),
        messages: run.messages,
        elapsed: started.elapsed(),
    };
    if run.puller.phase() == PullPhase::Finished {
        return Ok(report);
    }
    let error = run
        .puller
        .error()
        .or(run.source.error())
        .cloned()
        .unwrap_or(ReplicaError::Cancelled);
    Err(Box::new(LocalFailure { error, report }))
}

struct Run<'a> {
    source_db: &'a Database,
    target_db: &'a Database,
    puller: TargetSide,
    source: SourceSide,
    messages: u64,
}

impl<'a> Run<'a> {
    fn start(
        source_db: &'a Database,
        target_db: &'a Database,
        options: &LocalOptions,
    ) -> NsfResult<Run<'a>> {
        let opening = Opening::Initiate(SessionId(rand_id()));
        Ok(Run {
            source_db,
            target_db,
            puller: TargetSide::new(target_db, opening, options)?,
            source: SourceSide::new(source_db, Opening::Respond, options.page_size)?,
            messages: 0,
        })
    }

    /// Carries out every queued action of both sides, handing packets
    /// across at once; false once the session is over (or nothing is
    /// left to do).
    fn step(&mut self) -> bool {
        let mut to_source = Vec::new();
        let target_did = self.puller.run(self.target_db, &mut |p| to_source.push(p));
        self.messages += to_source.len() as u64;
        for packet in to_source {
            // A refused packet ends the source's session; its state says so.
            let _ = self.source.receive(packet);
        }
        let mut to_target = Vec::new();
        let source_did = self.source.run(self.source_db, &mut |p| to_target.push(p));
        self.messages += to_target.len() as u64;
        for packet in to_target {
            let _ = self.puller.receive(packet);
        }
        let over = self.puller.is_over() && self.source.is_over();
        if !over && !target_did && !source_did {
            // Both wait with nothing in flight: in-process, that is a
            // machine bug; end the session rather than spin.
            self.puller.cancel();
            let mut to_source = Vec::new();
            self.puller.run(self.target_db, &mut |p| to_source.push(p));
            return false;
        }
        !over
    }
}

fn rand_id() -> u64 {
    Timestamp::now().0 as u64 ^ u64::from(std::process::id()).rotate_left(32)
}

fn local(db: &Database, e: nsf::NsfError) -> ReplicaError {
    ReplicaError::Local {
        code: ErrorCode::Local,
        message: format!("{}: {e}", db.path()),
    }
}
