//! Runs one pull between two local files and reports it.
//!
//! Both machines run on the caller's thread in lockstep: a packet one
//! queues is handed to the other at once (in-process, nothing is lost or
//! reordered), and every read or write either asks for is carried out
//! before the next step (`store.rs`). A write batch is acknowledged only
//! once its transaction is durable, and a history entry stored only after
//! the batches it covers (I26), so a pull stopped anywhere — an I/O error,
//! a crash, the process killed — resumes from the stored checkpoint
//! without sending again what was written.

use super::body::NoteBody;
use super::store;
use crate::ids::{Opening, Peer, SessionId};
use crate::msg::ErrorCode;
use crate::puller::{PullAction, PullConfig, PullPhase, PullReport, Puller};
use crate::source::{Source, SourceAction, SourceConfig, SourcePhase, SourceReport};
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
}

impl Default for LocalOptions {
    /// Everything, pages of 500, a window of 4, batches of 256 documents.
    fn default() -> Self {
        LocalOptions {
            selection: None,
            page_size: 500,
            window: 4,
            batch_notes: 256,
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
    puller: Puller<nsf::Version, NoteBody>,
    source: Source<nsf::Version, NoteBody>,
    selection: Option<(String, formula::Formula)>,
    messages: u64,
}

impl<'a> Run<'a> {
    fn start(
        source_db: &'a Database,
        target_db: &'a Database,
        options: &LocalOptions,
    ) -> NsfResult<Run<'a>> {
        let now = Timestamp::now();
        let mut pull = PullConfig::new(peer(target_db)?, Opening::Initiate(SessionId(rand_id())));
        pull.selection = options.selection.clone();
        pull.window = options.window;
        pull.batch_notes = options.batch_notes;
        let mut send = SourceConfig::new(peer(source_db)?, Opening::Respond);
        send.page_size = options.page_size;
        let histories = store::load_histories(target_db)?;
        Ok(Run {
            source_db,
            target_db,
            puller: Puller::new(pull, histories, now),
            source: Source::new(send, source_db.last_seq(), now),
            selection: None,
            messages: 0,
        })
    }

    /// Carries out every queued action of both machines; false once the
    /// session is over (or nothing is left to do).
    fn step(&mut self) -> bool {
        let target_did = self.pump_target();
        let source_did = self.pump_source();
        let over = matches!(self.puller.phase(), PullPhase::Finished | PullPhase::Failed)
            && matches!(
                self.source.phase(),
                SourcePhase::Finished | SourcePhase::Failed
            );
        if !over && !target_did && !source_did {
            // Both wait with nothing in flight: in-process, that is a
            // machine bug; end the session rather than spin.
            self.puller.cancel();
            self.pump_target();
            return false;
        }
        !over
    }

    fn pump_target(&mut self) -> bool {
        let mut did = false;
        while let Some(action) = self.puller.next_action() {
            did = true;
            match action {
                PullAction::Send(packet) => {
                    self.messages += 1;
                    // A refused packet ends the source's session; its
                    // state says so.
                    let _ = self.source.receive(packet);
                }
                PullAction::QueryLocal { query, unids } => {
                    match store::held(self.target_db, &unids) {
                        Ok(held) => {
                            if let Err(e) = self.puller.local_versions(query, held) {
                                self.puller.fail_local(e.to_string());
                            }
                        }
                        Err(e) => self.puller.fail_local(local_message(self.target_db, e)),
                    }
                }
                PullAction::Write(batch) => match store::write_batch(self.target_db, &batch) {
                    Ok(results) => {
                        if let Err(e) = self.puller.written(batch.id, results) {
                            self.puller.fail_local(e.to_string());
                        }
                    }
                    Err(e) => self.puller.fail_local(local_message(self.target_db, e)),
                },
                PullAction::SaveHistory(entry) => {
                    if let Err(e) = store::save_history(self.target_db, &entry) {
                        self.puller.fail_local(local_message(self.target_db, e));
                    }
                }
            }
        }
        did
    }

    fn pump_source(&mut self) -> bool {
        let mut did = false;
        while let Some(action) = self.source.next_action() {
            did = true;
            match action {
                SourceAction::Send(packet) => {
                    self.messages += 1;
                    let _ = self.puller.receive(packet);
                }
                SourceAction::ReadChanges {
                    after,
                    limit,
                    selection,
                } => self.read_changes(after, limit, selection),
                SourceAction::ReadNotes { upto, unids } => {
                    match store::read_notes(self.source_db, &unids) {
                        Ok(notes) => {
                            if let Err(e) = self.source.notes_read(upto, notes, true) {
                                self.source.fail_local(ErrorCode::Local, e.to_string());
                            }
                        }
                        Err(e) => self
                            .source
                            .fail_local(ErrorCode::Local, local_message(self.source_db, e)),
                    }
                }
            }
        }
        did
    }

    fn read_changes(&mut self, after: nsf::Seq, limit: u32, selection: Option<String>) {
        let formula = match selection {
            None => None,
            Some(text) => match self.parsed(text) {
                Ok(f) => Some(f),
                Err(message) => {
                    self.source.fail_local(ErrorCode::BadSelection, message);
                    return;
                }
            },
        };
        let page = store::read_changes(
            self.source_db,
            after,
            limit,
            formula.as_ref(),
            Timestamp::now().0,
        );
        match page {
            Ok(page) => {
                if let Err(e) = self.source.changes_read(page) {
                    self.source.fail_local(ErrorCode::Local, e.to_string());
                }
            }
            Err(e) => self
                .source
                .fail_local(ErrorCode::Local, local_message(self.source_db, e)),
        }
    }

    /// The selection formula, parsed once per session.
    fn parsed(&mut self, text: String) -> Result<formula::Formula, String> {
        if let Some((cached, f)) = &self.selection {
            if *cached == text {
                return Ok(f.clone());
            }
        }
        let f = formula::Formula::parse(&text)
            .map_err(|e| format!("selection formula {text:?}: {e}"))?;
        self.selection = Some((text, f.clone()));
        Ok(f)
    }
}

fn peer(db: &Database) -> NsfResult<Peer> {
    let info = db.info()?;
    Ok(Peer {
        replica: info.replica_id,
        instance: info.instance_id,
    })
}

fn rand_id() -> u64 {
    Timestamp::now().0 as u64 ^ u64::from(std::process::id()).rotate_left(32)
}

fn local_message(db: &Database, e: nsf::NsfError) -> String {
    format!("{}: {e}", db.path())
}

fn local(db: &Database, e: nsf::NsfError) -> ReplicaError {
    ReplicaError::Local {
        code: ErrorCode::Local,
        message: local_message(db, e),
    }
}
