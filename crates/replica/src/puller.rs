//! The target side of a session: the machine that pulls.
//!
//! Fed with the source's packets, the answers to its local queries and
//! the acknowledgements of its writes, it decides what to ask for and what
//! to write, and when the history may move. It does no I/O: everything it
//! wants done comes out of [`Puller::next_action`] as a [`PullAction`].
//!
//! Pages flow through it as a pipeline, in the source's change order:
//!
//! ```text
//!   Summary ─▶ Querying ──local answer──▶ Diffed ──Want sent (in page order)──▶ Receiving
//!     (empty page)          (nothing wanted) │                                     │ Notes, in batches
//!        └───────────────────────────────────┴──────────▶ Complete ◀── Sent + every batch durable
//!   the complete pages at the front: checkpoint = their last upto ─▶ SaveHistory, Ack (or Done)
//! ```
//!
//! Several pages (up to the window) are in the pipe at once, so the source
//! streams while the target writes; the checkpoint only ever moves over a
//! prefix of pages whose every write the driver acknowledged as durable
//! (I26). Documents the target already holds (same version, or one it
//! descends from) are never wanted, which is also why a resumed session
//! does not send again what an interrupted one already wrote.

use crate::apply::{Outcome, WriteBatch, Written};
use crate::conflict::{decide, Held};
use crate::error::ReplicaError;
use crate::history::{resume_point, History};
use crate::ids::{BatchId, ContentKey, Opening, Peer, QueryId, Role};
use crate::msg::{
    ChangesSince, Entry, Envelope, ErrorCode, Failure, Hello, Packet, Summary, ToSource, ToTarget,
    Want, MAX_HAVE,
};
use crate::session::{Admit, Out, Session};
use crate::version::Version;
use nsf::{Seq, Timestamp, Unid};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

/// How a puller runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullConfig {
    /// This database.
    pub me: Peer,
    /// Whether this side opens the session (a pull) or answers (a push).
    pub opening: Opening,
    /// Only documents this formula selects travel (`None`: all).
    pub selection: Option<String>,
    /// Summary pages the source may have unacknowledged (at least 1).
    pub window: u16,
    /// A write batch is handed over at this many documents…
    pub batch_notes: usize,
    /// …or this many bytes of content, or at the end of a page.
    pub batch_bytes: u64,
    /// The most entries a summary page may hold.
    pub max_page: usize,
    /// The session fails after this long without progress, in µs.
    pub idle_timeout_micros: i64,
}

impl PullConfig {
    /// The defaults: a window of 4 pages, batches of 256 documents or
    /// 4 MiB, pages up to 4096 entries, a 60 s idle timeout.
    pub fn new(me: Peer, opening: Opening) -> PullConfig {
        PullConfig {
            me,
            opening,
            selection: None,
            window: 4,
            batch_notes: 256,
            batch_bytes: 4 << 20,
            max_page: 4096,
            idle_timeout_micros: 60_000_000,
        }
    }
}

/// What a puller asks its driver to do, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum PullAction<V, N> {
    /// Send this packet to the source.
    Send(Packet<ToSource>),
    /// Look up these documents and answer with [`Puller::local_versions`]:
    /// for each, in order, the version held (or `None`).
    QueryLocal {
        /// Names the answer.
        query: QueryId,
        /// The documents.
        unids: Vec<Unid>,
    },
    /// Apply the batch in one transaction ([`WriteBatch::apply`]), commit
    /// it, and once the commit is durable report [`Puller::written`].
    Write(WriteBatch<V, N>),
    /// Store this history entry durably (replacing the one for the same
    /// peer and selection). Every write it covers was acknowledged before
    /// this action was queued (I26); the driver keeps the order.
    SaveHistory(History),
}

impl<V, N> From<Packet<ToSource>> for PullAction<V, N> {
    fn from(p: Packet<ToSource>) -> Self {
        PullAction::Send(p)
    }
}

/// Where a puller is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPhase {
    /// Exchanging Hellos.
    Greeting,
    /// Pages and documents flow.
    Streaming,
    /// The last page is written and recorded; Done was sent.
    Finished,
    /// The session ended with an error ([`Puller::error`]).
    Failed,
}

/// What a puller did, for the replicator's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Summary pages received.
    pub pages: u64,
    /// Documents offered in them.
    pub offered: u64,
    /// Documents wanted.
    pub wanted: u64,
    /// Documents received.
    pub received: u64,
    /// Their content bytes.
    pub received_bytes: u64,
    /// Write batches handed to the driver.
    pub batches: u64,
    /// Documents stored new.
    pub stored: u64,
    /// Documents that replaced a lower version.
    pub replaced: u64,
    /// Documents already held when written.
    pub already: u64,
    /// Documents that lost to a higher version held.
    pub lost: u64,
    /// Conflict documents written.
    pub conflicts: u64,
    /// Documents the driver's access check refused (not written).
    pub refused: u64,
    /// The history's checkpoint: every selected change of the source up
    /// to here is written.
    pub checkpoint: Seq,
}

/// One summary page on its way through the target.
#[derive(Debug)]
struct Page<V, N> {
    upto: Seq,
    last: bool,
    stage: Stage<V, N>,
}

#[derive(Debug)]
enum Stage<V, N> {
    /// Waiting for the local versions of its entries.
    Querying {
        query: QueryId,
        entries: Vec<Entry<V>>,
    },
    /// Decided; its Want waits for the pages before it.
    Diffed {
        wants: Vec<Unid>,
        have: Vec<ContentKey>,
    },
    /// Want sent; documents arrive and are written in batches.
    Receiving(Receiving<V, N>),
    /// Every wanted document that came is durably written.
    Complete,
}

#[derive(Debug)]
struct Receiving<V, N> {
    expected: HashSet<Unid>,
    buffer: Vec<Envelope<V, N>>,
    buffered_bytes: u64,
    pending: BTreeSet<BatchId>,
    /// The source's Sent arrived.
    ended: bool,
}

/// The session once both Hellos are known.
#[derive(Debug)]
struct Stream<V, N> {
    source: Peer,
    /// Last page written and recorded.
    checkpoint: Seq,
    /// Last page received.
    received_upto: Seq,
    last_received: bool,
    pages: VecDeque<Page<V, N>>,
}

#[derive(Debug)]
enum State<V, N> {
    Greeting { hello_sent: bool },
    Streaming(Stream<V, N>),
    Finished,
    Failed(ReplicaError),
}

/// The target side of one session.
#[derive(Debug)]
pub struct Puller<V, N> {
    config: PullConfig,
    histories: Vec<History>,
    out: Out<PullAction<V, N>>,
    state: State<V, N>,
    /// Outstanding batches: their page and size.
    batches: BTreeMap<BatchId, (Seq, usize)>,
    next_query: u64,
    next_batch: u64,
    report: PullReport,
}

impl<V: Version, N: Clone> Puller<V, N> {
    /// A puller for `config.me`, holding `histories` (all its entries;
    /// the one for the source it meets is picked after the Hellos). An
    /// initiating puller queues its Hello at once.
    pub fn new(mut config: PullConfig, histories: Vec<History>, now: Timestamp) -> Self {
        config.window = config.window.max(1);
        config.batch_notes = config.batch_notes.max(1);
        let session = Session::new(config.opening, config.idle_timeout_micros, now);
        let mut puller = Puller {
            out: Out::new(session),
            histories,
            state: State::Greeting { hello_sent: false },
            batches: BTreeMap::new(),
            next_query: 0,
            next_batch: 0,
            report: PullReport::default(),
            config,
        };
        if matches!(puller.config.opening, Opening::Initiate(_)) {
            puller.send_hello();
        }
        puller
    }

    /// The next thing for the driver to do.
    pub fn next_action(&mut self) -> Option<PullAction<V, N>> {
        self.out.pop()
    }

    /// Where the session is.
    pub fn phase(&self) -> PullPhase {
        match self.state {
            State::Greeting { .. } => PullPhase::Greeting,
            State::Streaming(_) => PullPhase::Streaming,
            State::Finished => PullPhase::Finished,
            State::Failed(_) => PullPhase::Failed,
        }
    }

    /// Why the session failed, once it has.
    pub fn error(&self) -> Option<&ReplicaError> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// What was done so far.
    pub fn report(&self) -> &PullReport {
        &self.report
    }

    /// A packet from the source. An error ends the session (and is
    /// returned); duplicates and other sessions' packets are ignored, and
    /// so is everything once the session is over.
    pub fn receive(&mut self, packet: Packet<ToTarget<V, N>>) -> Result<(), ReplicaError> {
        if self.is_over() {
            return Ok(());
        }
        match self.out.session.admit(packet.session, packet.n) {
            Ok(Admit::Ignore) => Ok(()),
            Ok(Admit::Next) => {
                let handled = self.handle(packet.body);
                handled.or_else(|e| self.fail(e))
            }
            Err(e) => self.fail(e),
        }
    }

    /// The answer to [`PullAction::QueryLocal`]: what is held of each
    /// document asked about, in the order asked. A query that is not
    /// outstanding, or an answer of the wrong length, is refused and
    /// changes nothing.
    pub fn local_versions(
        &mut self,
        query: QueryId,
        held: Vec<Option<Held<V>>>,
    ) -> Result<(), ReplicaError> {
        let State::Streaming(stream) = &mut self.state else {
            return self.late_answer(ReplicaError::UnknownQuery(query));
        };
        let Some(page) = stream
            .pages
            .iter_mut()
            .find(|p| matches!(&p.stage, Stage::Querying { query: q, .. } if *q == query))
        else {
            return Err(ReplicaError::UnknownQuery(query));
        };
        let Stage::Querying { entries, .. } = &page.stage else {
            return Err(ReplicaError::UnknownQuery(query));
        };
        if entries.len() != held.len() {
            return Err(ReplicaError::AnswerMismatch {
                what: "local versions",
                expected: entries.len(),
                got: held.len(),
            });
        }
        let mut wants = Vec::new();
        let mut have = BTreeSet::new();
        for (entry, held) in entries.iter().zip(&held) {
            if decide(entry, held.as_ref()).wanted() {
                wants.push(entry.unid);
                have.extend(held.iter().flat_map(|h| h.have.iter().copied()));
            }
        }
        // A hostile or broken driver answer must not make a Want the
        // source refuses: the keys are an offer, so drop the excess.
        let have: Vec<ContentKey> = have.into_iter().take(MAX_HAVE).collect();
        self.report.wanted += wants.len() as u64;
        page.stage = Stage::Diffed { wants, have };
        self.out.session.progress();
        self.advance();
        Ok(())
    }

    /// The acknowledgement of [`PullAction::Write`]: the batch is durable,
    /// with these results (one per document, in order). A batch that is
    /// not outstanding, or results of the wrong length, are refused and
    /// change nothing.
    pub fn written(&mut self, batch: BatchId, results: Vec<Written>) -> Result<(), ReplicaError> {
        if !matches!(self.state, State::Streaming(_)) {
            return self.late_answer(ReplicaError::UnknownBatch(batch));
        }
        let Some(&(upto, len)) = self.batches.get(&batch) else {
            return Err(ReplicaError::UnknownBatch(batch));
        };
        if results.len() != len {
            return Err(ReplicaError::AnswerMismatch {
                what: "write results",
                expected: len,
                got: results.len(),
            });
        }
        self.batches.remove(&batch);
        self.tally(&results);
        if let State::Streaming(stream) = &mut self.state {
            let page = stream.pages.iter_mut().find(|p| p.upto == upto);
            if let Some(page) = page {
                if let Stage::Receiving(r) = &mut page.stage {
                    r.pending.remove(&batch);
                    if r.ended && r.pending.is_empty() {
                        page.stage = Stage::Complete;
                    }
                }
            }
        }
        self.out.session.progress();
        self.advance();
        Ok(())
    }

    /// A local query or write failed: the session ends, the source is
    /// told, and the history stays where it was.
    pub fn fail_local(&mut self, message: impl Into<String>) {
        if !self.is_over() {
            let _ = self.fail(ReplicaError::Local {
                code: ErrorCode::Local,
                message: message.into(),
            });
        }
    }

    /// The driver found what arrived broken in a way only it can see
    /// (content named by reference that was never offered): the session
    /// ends, the source is told, and the history stays where it was.
    pub fn refuse(&mut self, e: ReplicaError) {
        if !self.is_over() {
            let _ = self.fail(e);
        }
    }

    /// The driver stops the session; the source is told.
    pub fn cancel(&mut self) {
        if !self.is_over() {
            let _ = self.fail(ReplicaError::Cancelled);
        }
    }

    /// The connection is gone: the session ends without a word.
    pub fn connection_lost(&mut self) {
        if !self.is_over() {
            let _ = self.fail(ReplicaError::Disconnected);
        }
    }

    /// The driver's clock. A session idle for the timeout fails.
    pub fn tick(&mut self, now: Timestamp) {
        if let Some(idle) = self.out.session.tick(now) {
            if !self.is_over() {
                let _ = self.fail(ReplicaError::TimedOut { idle_micros: idle });
            }
        }
    }

    fn is_over(&self) -> bool {
        matches!(self.state, State::Finished | State::Failed(_))
    }

    /// An answer after the session ended is expected (a write the driver
    /// finished anyway) and ignored; before streaming it is a mistake.
    fn late_answer(&self, e: ReplicaError) -> Result<(), ReplicaError> {
        if self.is_over() {
            Ok(())
        } else {
            Err(e)
        }
    }

    fn fail(&mut self, e: ReplicaError) -> Result<(), ReplicaError> {
        if e.tell_peer() {
            self.out.send(ToSource::Error(Failure {
                code: e.code(),
                message: e.to_string(),
            }));
        }
        self.batches.clear();
        self.state = State::Failed(e.clone());
        Err(e)
    }

    fn send_hello(&mut self) {
        self.out.send(ToSource::Hello(Hello {
            peer: self.config.me,
            role: Role::Target,
            high: Seq(0),
        }));
        if let State::Greeting { hello_sent } = &mut self.state {
            *hello_sent = true;
        }
    }

    fn handle(&mut self, body: ToTarget<V, N>) -> Result<(), ReplicaError> {
        match body {
            ToTarget::Error(f) => Err(ReplicaError::Remote {
                code: f.code,
                message: f.message,
            }),
            ToTarget::Hello(hello) => self.on_hello(hello),
            ToTarget::Summary(page) => self.on_summary(page),
            ToTarget::Note(note) => self.on_note(note),
            ToTarget::Sent { upto } => self.on_sent(upto),
        }
    }

    fn state_name(&self) -> &'static str {
        match self.state {
            State::Greeting { .. } => "greeting",
            State::Streaming(_) => "streaming",
            State::Finished => "finished",
            State::Failed(_) => "failed",
        }
    }

    fn unexpected(&self, message: &'static str) -> ReplicaError {
        ReplicaError::Unexpected {
            message,
            state: self.state_name(),
        }
    }

    fn on_hello(&mut self, hello: Hello) -> Result<(), ReplicaError> {
        let State::Greeting { hello_sent } = self.state else {
            return Err(self.unexpected("Hello"));
        };
        hello.check(self.config.me, Role::Target)?;
        if !hello_sent {
            self.send_hello();
        }
        let selection = self.config.selection.clone();
        let since = resume_point(
            &self.histories,
            hello.peer,
            selection.as_deref(),
            hello.high,
        );
        self.out.send(ToSource::ChangesSince(ChangesSince {
            since,
            selection,
            window: self.config.window,
        }));
        self.report.checkpoint = since;
        self.state = State::Streaming(Stream {
            source: hello.peer,
            checkpoint: since,
            received_upto: since,
            last_received: false,
            pages: VecDeque::new(),
        });
        Ok(())
    }

    fn on_summary(&mut self, page: Summary<V>) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Summary");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        if stream.last_received {
            return Err(unexpected);
        }
        if stream.pages.len() >= usize::from(self.config.window) {
            return Err(ReplicaError::WindowExceeded {
                window: self.config.window,
            });
        }
        page.check(stream.received_upto, self.config.max_page)?;
        self.report.pages += 1;
        self.report.offered += page.entries.len() as u64;
        stream.received_upto = page.upto;
        stream.last_received = page.last;
        let stage = if page.entries.is_empty() {
            Stage::Complete
        } else {
            let query = QueryId(self.next_query);
            self.next_query += 1;
            let unids = page.entries.iter().map(|e| e.unid).collect();
            self.out.push(PullAction::QueryLocal { query, unids });
            Stage::Querying {
                query,
                entries: page.entries,
            }
        };
        stream.pages.push_back(Page {
            upto: page.upto,
            last: page.last,
            stage,
        });
        self.advance();
        Ok(())
    }

    fn on_note(&mut self, note: Envelope<V, N>) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Note");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        let Some(page) = receiving_page(&mut stream.pages) else {
            return Err(unexpected);
        };
        let upto = page.upto;
        let Stage::Receiving(r) = &mut page.stage else {
            return Err(unexpected);
        };
        if !r.expected.remove(&note.unid) {
            return Err(ReplicaError::Unwanted { unid: note.unid });
        }
        self.report.received += 1;
        self.report.received_bytes = self.report.received_bytes.saturating_add(note.size);
        r.buffered_bytes = r.buffered_bytes.saturating_add(note.size);
        r.buffer.push(note);
        // I48: a document of batch_bytes or more closes its batch, so it
        // is written (and survives a cut) on its own as it arrives.
        if r.buffer.len() >= self.config.batch_notes || r.buffered_bytes >= self.config.batch_bytes
        {
            let batch = flush(r, &mut self.next_batch);
            self.hand_over(batch, upto);
        }
        Ok(())
    }

    fn on_sent(&mut self, upto: Seq) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Sent");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        let Some(page) = receiving_page(&mut stream.pages) else {
            return Err(unexpected);
        };
        if page.upto != upto {
            return Err(ReplicaError::WrongPage {
                message: "Sent",
                upto,
            });
        }
        let Stage::Receiving(r) = &mut page.stage else {
            return Err(unexpected);
        };
        r.ended = true;
        // Wanted documents that did not come were deleted and purged, or
        // changed again, after the page was read: a later change (this
        // session's or the next) covers them.
        let batch = (!r.buffer.is_empty()).then(|| flush(r, &mut self.next_batch));
        if r.pending.is_empty() {
            page.stage = Stage::Complete;
        }
        if let Some(batch) = batch {
            self.hand_over(batch, upto);
        }
        self.advance();
        Ok(())
    }

    fn hand_over(&mut self, batch: WriteBatch<V, N>, upto: Seq) {
        self.batches.insert(batch.id, (upto, batch.notes.len()));
        self.report.batches += 1;
        self.out.push(PullAction::Write(batch));
    }

    fn tally(&mut self, results: &[Written]) {
        for w in results {
            match w.outcome {
                Outcome::Stored => self.report.stored += 1,
                Outcome::Replaced => self.report.replaced += 1,
                Outcome::AlreadyHave => self.report.already += 1,
                Outcome::Lost => self.report.lost += 1,
                Outcome::Refused => self.report.refused += 1,
            }
            if w.conflict.is_some() {
                self.report.conflicts += 1;
            }
        }
    }

    /// Sends the Wants that are due (in page order), then moves the
    /// checkpoint over the complete pages at the front.
    fn advance(&mut self) {
        let State::Streaming(stream) = &mut self.state else {
            return;
        };
        for page in stream.pages.iter_mut() {
            match &mut page.stage {
                Stage::Querying { .. } => break,
                Stage::Diffed { wants, .. } if wants.is_empty() => page.stage = Stage::Complete,
                Stage::Diffed { wants, have } => {
                    let unids = std::mem::take(wants);
                    let have = std::mem::take(have);
                    page.stage = Stage::Receiving(Receiving {
                        expected: unids.iter().copied().collect(),
                        buffer: Vec::new(),
                        buffered_bytes: 0,
                        pending: BTreeSet::new(),
                        ended: false,
                    });
                    self.out.send(ToSource::Want(Want {
                        upto: page.upto,
                        unids,
                        have,
                    }));
                }
                Stage::Receiving(_) | Stage::Complete => {}
            }
        }
        let mut moved = false;
        let mut finished = false;
        while let Some(page) = stream.pages.front() {
            if !matches!(page.stage, Stage::Complete) {
                break;
            }
            stream.checkpoint = page.upto;
            finished = page.last;
            moved = true;
            stream.pages.pop_front();
        }
        if !moved {
            return;
        }
        let upto = stream.checkpoint;
        // I26: every page up to `upto` is complete, i.e. each of its
        // batches was acknowledged durable, before the history names it.
        debug_assert!(self.batches.values().all(|(page, _)| *page > upto));
        self.out.push(PullAction::SaveHistory(History {
            peer: stream.source,
            selection: self.config.selection.clone(),
            seen_upto: upto,
            at: self.out.session.now(),
        }));
        self.report.checkpoint = upto;
        if finished {
            self.out.send(ToSource::Done { upto });
            self.state = State::Finished;
        } else {
            self.out.send(ToSource::Ack { upto });
        }
    }
}

/// The page whose documents are arriving: the first whose Want was sent
/// and whose Sent has not come (the source answers Wants in order).
fn receiving_page<V, N>(pages: &mut VecDeque<Page<V, N>>) -> Option<&mut Page<V, N>> {
    pages
        .iter_mut()
        .find(|p| matches!(&p.stage, Stage::Receiving(r) if !r.ended))
}

/// Takes the buffered documents as the next batch, now pending.
fn flush<V, N>(r: &mut Receiving<V, N>, next_batch: &mut u64) -> WriteBatch<V, N> {
    let id = BatchId(*next_batch);
    *next_batch += 1;
    r.pending.insert(id);
    r.buffered_bytes = 0;
    WriteBatch {
        id,
        notes: std::mem::take(&mut r.buffer),
    }
}
