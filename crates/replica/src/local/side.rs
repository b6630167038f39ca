//! One side of a pull over one nsf database: a machine plus the reads and
//! writes it asks for, with the packets left to whoever carries them.
//!
//! The local driver (`run.rs`) holds one of each and hands packets across
//! at once; a network driver holds one and carries its packets over a
//! connection (the server runs the other side). Either way the side does
//! the same work on its database, so the durability contract is stated
//! once, here and in `store.rs`: a write batch is acknowledged to the
//! puller only once its transaction is durable (I2, I27), and a history
//! entry is stored after the batches it covers (I26).
//!
//! ```text
//!   packets in ──▶ receive ──▶ machine ──actions──▶ run(db, send) ──▶ packets out
//!                                  ▲                    │ reads, writes, histories
//!                                  └──── answers ───────┘ (store.rs, on db)
//! ```
//!
//! Access rules are the caller's to give, as two checks: a source side
//! may be told which documents its peer may read ([`SourceSide::visible_only`]:
//! the others never travel, as if they did not exist), and a target side
//! which incoming documents its peer may write ([`TargetSide::writable_only`]:
//! the others are not written and count as refused). Without them
//! everything travels and everything is written (the local driver, the
//! embedded CLI) — except the ACL, which every target writes only for a
//! Manager (`acl_rule.rs`, `LocalOptions::acting_for`).

use super::acl_rule::ActingFor;
use super::body::{Content, NoteBody};
use super::net::{SourcePacket, TargetPacket};
use super::store::{self, Located};
use super::LocalOptions;
use crate::apply::{Outcome, WriteBatch, Written};
use crate::ids::{ContentKey, Opening, Peer};
use crate::msg::ErrorCode;
use crate::puller::{PullAction, PullConfig, PullPhase, PullReport, Puller};
use crate::source::{Source, SourceAction, SourceConfig, SourcePhase, SourceReport};
use crate::ReplicaError;
use nsf::{Database, Note, NsfResult, Seq, Timestamp, Unid};
use std::collections::{HashMap, HashSet, VecDeque};

/// Which documents a source's peer may read.
pub type ReadCheck = Box<dyn Fn(&Note) -> bool + Send + Sync>;
/// Whether a target's peer may write `incoming` over `held` (the version
/// here, if any).
pub type WriteCheck = Box<dyn Fn(&Note, Option<&Note>) -> bool + Send + Sync>;

/// Documents read and sent per step while streaming a Want: the packets
/// of one step go out before the next is read, so a network driver
/// streams a large page instead of reading all of it first.
const NOTES_PER_STEP: usize = 32;
/// ... or fewer, once their content reaches this many bytes.
const BYTES_PER_STEP: u64 = 4 << 20;
/// Summary pages whose documents' places a source keeps for reading them
/// (a window's worth and more); past that the oldest places are dropped,
/// and a document whose place is gone is found by its UNID as usual.
const LOCATED_PAGES: usize = 16;

/// The sending side over one database.
pub struct SourceSide {
    source: Source<nsf::Version, NoteBody>,
    visible: Option<ReadCheck>,
    selection: Option<(String, formula::Formula)>,
    skipped: Skipped,
    /// Where recent summaries found their documents (`store::Located`),
    /// at most [`LOCATED_PAGES`] pages of them: a hint, never trusted
    /// for more than where to look first.
    located: HashMap<Unid, Located>,
    page_size: usize,
    /// With [`SourceSide::pause_after`]: the document bytes one `run`
    /// reads before it hands back, and the rest of a Want left to read.
    pause_after: Option<u64>,
    reading: Option<Reading>,
}

/// The part of a Want not read yet, when the side paused in it.
struct Reading {
    upto: Seq,
    /// The documents left, in the order to send them.
    rest: VecDeque<Unid>,
    have: HashSet<ContentKey>,
}

/// Attachments that did not travel because the target held them (a
/// Want's `have`): how many, and their original bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Attachments sent as references.
    pub attachments: u64,
    /// Their original bytes.
    pub bytes: u64,
}

impl Skipped {
    fn add(&mut self, body: &NoteBody) {
        let (n, bytes) = body.held_content();
        self.attachments += n;
        self.bytes += bytes;
    }
}

impl SourceSide {
    /// A source over `db`, opening the session (a push) or answering (a
    /// pull), with summary pages of `page_size` entries.
    pub fn new(db: &Database, opening: Opening, page_size: u32) -> NsfResult<SourceSide> {
        let mut config = SourceConfig::new(peer(db)?, opening);
        config.page_size = page_size;
        Ok(SourceSide {
            source: Source::new(config, db.last_seq(), Timestamp::now()),
            visible: None,
            selection: None,
            skipped: Skipped::default(),
            located: HashMap::new(),
            page_size: page_size.max(1) as usize,
            pause_after: None,
            reading: None,
        })
    }

    /// Hands back from `run` once about `bytes` of documents were read
    /// and sent, the rest of the Want waiting for the next `run` (see
    /// [`SourceSide::is_reading`]). A network driver that sends a run's
    /// packets only after it returns (a push from a client) so holds
    /// about `bytes` of documents at once, not a whole page of them.
    /// Without it (the default) a run reads every document asked for,
    /// for drivers that send each packet as it comes.
    pub fn pause_after(mut self, bytes: u64) -> SourceSide {
        self.pause_after = Some(bytes.max(1));
        self
    }

    /// A Want is partly read: the next `run` goes on with it.
    pub fn is_reading(&self) -> bool {
        self.reading.is_some()
    }

    /// Sends only documents `check` lets the peer read; the others never
    /// appear in a summary or travel.
    pub fn visible_only(mut self, check: ReadCheck) -> SourceSide {
        self.visible = Some(check);
        self
    }

    /// Hands the machine a packet from the target.
    pub fn receive(&mut self, packet: SourcePacket) -> Result<(), ReplicaError> {
        self.source.receive(packet)
    }

    /// Carries out everything the machine asks for on `db`, handing each
    /// packet it sends to `send` as it comes; false if it asked nothing.
    pub fn run(&mut self, db: &Database, send: &mut dyn FnMut(TargetPacket)) -> bool {
        let mut did = false;
        if let Some(reading) = self.reading.take() {
            did = true;
            self.read_notes(db, reading, send);
            if self.reading.is_some() {
                return did;
            }
        }
        while let Some(action) = self.source.next_action() {
            did = true;
            match action {
                SourceAction::Send(packet) => send(packet),
                SourceAction::ReadChanges {
                    after,
                    limit,
                    selection,
                } => self.read_changes(db, after, limit, selection),
                SourceAction::ReadNotes { upto, unids, have } => {
                    let reading = Reading {
                        upto,
                        rest: unids.into(),
                        have: have.into_iter().collect(),
                    };
                    self.read_notes(db, reading, send);
                    if self.reading.is_some() {
                        return did;
                    }
                }
            }
        }
        did
    }

    /// The session is over (finished or failed).
    pub fn is_over(&self) -> bool {
        matches!(
            self.source.phase(),
            SourcePhase::Finished | SourcePhase::Failed
        )
    }

    /// Where the machine is.
    pub fn phase(&self) -> SourcePhase {
        self.source.phase()
    }

    /// Why the session failed.
    pub fn error(&self) -> Option<&ReplicaError> {
        self.source.error()
    }

    /// What was sent.
    pub fn report(&self) -> &SourceReport {
        self.source.report()
    }

    /// Attachments sent as references to content the target held.
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }

    /// The connection is gone: the session ends.
    pub fn connection_lost(&mut self) {
        self.source.connection_lost();
    }

    fn read_changes(&mut self, db: &Database, after: Seq, limit: u32, selection: Option<String>) {
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
        if self.located.len() >= LOCATED_PAGES * self.page_size {
            self.located.clear();
        }
        let visible = |n: &Note| self.visible.as_ref().is_none_or(|check| check(n));
        let located = &mut self.located;
        let page = store::read_changes(
            db,
            after,
            limit,
            formula.as_ref(),
            Timestamp::now().0,
            &visible,
            &mut |unid, at| {
                located.insert(unid, at);
            },
        );
        match page {
            Ok(page) => {
                if let Err(e) = self.source.changes_read(page) {
                    self.source.fail_local(ErrorCode::Local, e.to_string());
                }
            }
            Err(e) => self
                .source
                .fail_local(ErrorCode::Local, local_message(db, e)),
        }
    }

    /// Reads and sends the wanted documents a step at a time, the
    /// packets of each step going out before the next is read; with
    /// `pause_after`, keeps the rest for the next `run` once that many
    /// bytes went out.
    fn read_notes(
        &mut self,
        db: &Database,
        mut reading: Reading,
        send: &mut dyn FnMut(TargetPacket),
    ) {
        let upto = reading.upto;
        let step_bytes = self
            .pause_after
            .map_or(BYTES_PER_STEP, |p| p.min(BYTES_PER_STEP));
        let mut this_run = 0u64;
        loop {
            let mut notes = Vec::new();
            let mut bytes = 0u64;
            while let Some(&unid) = reading.rest.front() {
                if notes.len() >= NOTES_PER_STEP || bytes >= step_bytes {
                    break;
                }
                reading.rest.pop_front();
                let visible = |n: &Note| self.visible.as_ref().is_none_or(|check| check(n));
                let at = self.located.remove(&unid);
                match store::read_note(db, unid, at, &visible, &reading.have) {
                    Ok(found) => {
                        bytes += found.as_ref().map_or(0, |n| n.size);
                        found.iter().for_each(|n| self.skipped.add(&n.body));
                        notes.extend(found);
                    }
                    Err(e) => {
                        self.source
                            .fail_local(ErrorCode::Local, local_message(db, e));
                        return;
                    }
                }
            }
            this_run += bytes;
            let complete = reading.rest.is_empty();
            if let Err(e) = self.source.notes_read(upto, notes, complete) {
                self.source.fail_local(ErrorCode::Local, e.to_string());
                return;
            }
            if complete {
                return;
            }
            // Out with this step's documents before reading the next.
            while let Some(action) = self.source.next_action() {
                match action {
                    SourceAction::Send(packet) => send(packet),
                    other => {
                        self.source.fail_local(
                            ErrorCode::Local,
                            format!("the source asked for {other:?} while sending a page"),
                        );
                        return;
                    }
                }
            }
            if self.pause_after.is_some_and(|limit| this_run >= limit) {
                self.reading = Some(reading);
                return;
            }
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

/// The receiving side over one database: it keeps the history.
pub struct TargetSide {
    puller: Puller<nsf::Version, NoteBody>,
    writable: Option<WriteCheck>,
    acting_for: ActingFor,
    /// Content offered in this session's Wants: the only content an
    /// incoming document may name by reference.
    offered: HashSet<ContentKey>,
    skipped: Skipped,
}

impl TargetSide {
    /// A target over `db`, opening the session (a pull) or answering (a
    /// push), with `options`' selection, window and batch size.
    pub fn new(db: &Database, opening: Opening, options: &LocalOptions) -> NsfResult<TargetSide> {
        let mut config = PullConfig::new(peer(db)?, opening);
        config.selection = options.selection.clone();
        config.window = options.window;
        config.batch_notes = options.batch_notes;
        let histories = store::load_histories(db)?;
        Ok(TargetSide {
            puller: Puller::new(config, histories, Timestamp::now()),
            writable: None,
            acting_for: options.acting_for.clone(),
            offered: HashSet::new(),
            skipped: Skipped::default(),
        })
    }

    /// Writes only documents `check` lets the peer write; the others are
    /// left as they are here and reported as [`Outcome::Refused`].
    pub fn writable_only(mut self, check: WriteCheck) -> TargetSide {
        self.writable = Some(check);
        self
    }

    /// Hands the machine a packet from the source.
    pub fn receive(&mut self, packet: TargetPacket) -> Result<(), ReplicaError> {
        self.puller.receive(packet)
    }

    /// Carries out everything the machine asks for on `db` (queries,
    /// durable write batches, histories after them), handing each packet
    /// it sends to `send`; false if it asked nothing.
    pub fn run(&mut self, db: &Database, send: &mut dyn FnMut(SourcePacket)) -> bool {
        let mut did = false;
        while let Some(action) = self.puller.next_action() {
            did = true;
            match action {
                PullAction::Send(packet) => send(packet),
                PullAction::QueryLocal { query, unids } => match self.held(db, &unids) {
                    Ok(held) => {
                        if let Err(e) = self.puller.local_versions(query, held) {
                            self.puller.fail_local(e.to_string());
                        }
                    }
                    Err(e) => self.puller.fail_local(local_message(db, e)),
                },
                PullAction::Write(batch) => {
                    if let Err(e) = self.check_references(&batch) {
                        self.puller.refuse(e);
                        continue;
                    }
                    match self.write(db, &batch) {
                        Ok(results) => {
                            batch.notes.iter().for_each(|n| self.skipped.add(&n.body));
                            if let Err(e) = self.puller.written(batch.id, results) {
                                self.puller.fail_local(e.to_string());
                            }
                        }
                        Err(e) => self.puller.fail_local(local_message(db, e)),
                    }
                }
                PullAction::SaveHistory(entry) => {
                    // I26: every batch this entry covers was acknowledged
                    // durable above, before the puller queued it.
                    if let Err(e) = store::save_history(db, &entry) {
                        self.puller.fail_local(local_message(db, e));
                    }
                }
            }
        }
        did
    }

    /// The session is over (finished or failed).
    pub fn is_over(&self) -> bool {
        matches!(self.puller.phase(), PullPhase::Finished | PullPhase::Failed)
    }

    /// Where the machine is.
    pub fn phase(&self) -> PullPhase {
        self.puller.phase()
    }

    /// Why the session failed.
    pub fn error(&self) -> Option<&ReplicaError> {
        self.puller.error()
    }

    /// What was received and written.
    pub fn report(&self) -> &PullReport {
        self.puller.report()
    }

    /// Attachments received as references to content held here.
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }

    /// What is held of `unids`, offering the content of a version held
    /// only where the peer may write over it (so may have it), and
    /// remembering what was offered.
    fn held(
        &mut self,
        db: &Database,
        unids: &[Unid],
    ) -> NsfResult<Vec<Option<crate::Held<nsf::Version>>>> {
        let writable = &self.writable;
        let offer = |n: &Note| writable.as_ref().is_none_or(|check| check(n, Some(n)));
        let held = store::held(db, unids, &offer)?;
        for h in held.iter().flatten() {
            self.offered.extend(h.have.iter().copied());
        }
        Ok(held)
    }

    /// Refuses a batch naming content by reference that this side did
    /// not offer (a peer may not link to content it was never shown).
    fn check_references(
        &self,
        batch: &WriteBatch<nsf::Version, NoteBody>,
    ) -> Result<(), ReplicaError> {
        for note in &batch.notes {
            for a in &note.body.attachments {
                if let Content::Held { hash, .. } = &a.content {
                    if !self.offered.contains(&ContentKey(hash.0)) {
                        return Err(ReplicaError::NotHeld {
                            unid: note.unid,
                            attachment: a.name.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The connection is gone: the session ends, the history stays at
    /// the last checkpoint.
    pub fn connection_lost(&mut self) {
        self.puller.connection_lost();
    }

    /// Ends the session (the source is told).
    pub fn cancel(&mut self) {
        self.puller.cancel();
    }

    /// Writes the documents the ACL rule (`acl_rule.rs`) and the write
    /// check allow in one durable transaction (I27); the refused ones are
    /// reported, in place.
    fn write(
        &self,
        db: &Database,
        batch: &WriteBatch<nsf::Version, NoteBody>,
    ) -> NsfResult<Vec<Written>> {
        let acl = db.acl_unid();
        let acl_ok =
            !batch.notes.iter().any(|n| n.unid == acl) || self.acting_for.may_replace_acl(db)?;
        if acl_ok && self.writable.is_none() {
            return store::write_batch(db, batch);
        }
        let mut allowed = Vec::with_capacity(batch.notes.len());
        let mut refused = Vec::new();
        for note in &batch.notes {
            let ok = if note.unid == acl && !acl_ok {
                false
            } else if let Some(check) = &self.writable {
                let held = db.get_with_revisions(note.unid)?.map(|(n, _)| n);
                check(&note.body.to_note(), held.as_ref())
            } else {
                true
            };
            if ok {
                allowed.push(note.clone());
            } else {
                refused.push(note.unid);
            }
        }
        if refused.is_empty() {
            return store::write_batch(db, batch);
        }
        let written = store::write_batch(
            db,
            &WriteBatch {
                id: batch.id,
                notes: allowed,
            },
        )?;
        let mut written = written.into_iter();
        Ok(batch
            .notes
            .iter()
            .filter_map(|n| {
                if refused.contains(&n.unid) {
                    Some(Written {
                        unid: n.unid,
                        outcome: Outcome::Refused,
                        conflict: None,
                    })
                } else {
                    written.next()
                }
            })
            .collect())
    }
}

fn peer(db: &Database) -> NsfResult<Peer> {
    let info = db.info()?;
    Ok(Peer {
        replica: info.replica_id,
        instance: info.instance_id,
    })
}

fn local_message(db: &Database, e: nsf::NsfError) -> String {
    format!("{}: {e}", db.path())
}
