//! The source side of a session: the machine that answers.
//!
//! It reads its database's changes after the target's checkpoint in
//! pages, in change-sequence order, and sends each as a summary; it keeps
//! at most `window` pages unacknowledged, which bounds what is in flight
//! however large the database; for each Want it reads the wanted documents
//! and streams them smallest first, ending with Sent. It keeps nothing
//! between sessions: where to start is the target's history, so a source
//! restarted in the middle of a session loses nothing but the session.
//!
//! ```text
//!   ChangesSince ─▶ ReadChanges ─▶ Summary ─▶ … (while fewer than `window` unacknowledged)
//!   Want{upto}   ─▶ ReadNotes (smallest first) ─▶ Note … Note, Sent{upto}
//!   Ack{upto}    ─▶ pages up to `upto` leave the window ─▶ ReadChanges again
//!   Done         ─▶ Finished
//! ```
//!
//! What it reads, it reads through its driver ([`SourceAction`]); what a
//! page must contain is the driver's promise (§11.2): every change in the
//! page's range of a document the selection picks, stubs always, at the
//! version current when read.

use crate::error::ReplicaError;
use crate::ids::{ContentKey, Opening, Peer, Role};
use crate::msg::{
    ChangesSince, Envelope, ErrorCode, Failure, Hello, Packet, Summary, ToSource, ToTarget,
    MAX_HAVE, MAX_SELECTION,
};
use crate::session::{Admit, Out, Session};
use crate::version::Version;
use nsf::{Seq, Timestamp, Unid};
use std::collections::{HashMap, HashSet, VecDeque};

/// How a source runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceConfig {
    /// This database.
    pub me: Peer,
    /// Whether this side opens the session (a push) or answers (a pull).
    pub opening: Opening,
    /// The most entries per summary page.
    pub page_size: u32,
    /// The largest window granted, whatever the target asks.
    pub max_window: u16,
    /// The session fails after this long without progress, in µs.
    pub idle_timeout_micros: i64,
}

impl SourceConfig {
    /// The defaults: pages of 500 entries, a window of at most 8 pages, a
    /// 60 s idle timeout.
    pub fn new(me: Peer, opening: Opening) -> SourceConfig {
        SourceConfig {
            me,
            opening,
            page_size: 500,
            max_window: 8,
            idle_timeout_micros: 60_000_000,
        }
    }
}

/// What a source asks its driver to do, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceAction<V, N> {
    /// Send this packet to the target.
    Send(Packet<ToTarget<V, N>>),
    /// Read the next page of changes and answer with
    /// [`Source::changes_read`]: the documents changed after `after`
    /// that `selection` picks (stubs always), by ascending change
    /// number, at most `limit` of them, and how far the read got.
    ReadChanges {
        /// Exclusive start.
        after: Seq,
        /// The most entries.
        limit: u32,
        /// The selection formula (`None`: all).
        selection: Option<String>,
    },
    /// Read these documents, in this order (smallest first), and answer
    /// with [`Source::notes_read`]; documents gone meanwhile are left out.
    ReadNotes {
        /// The page they belong to.
        upto: Seq,
        /// The documents.
        unids: Vec<Unid>,
        /// Content the target says it holds: send it by reference.
        have: Vec<ContentKey>,
    },
}

impl<V, N> From<Packet<ToTarget<V, N>>> for SourceAction<V, N> {
    fn from(p: Packet<ToTarget<V, N>>) -> Self {
        SourceAction::Send(p)
    }
}

/// Where a source is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePhase {
    /// Exchanging Hellos and waiting for the request.
    Greeting,
    /// Pages and documents flow.
    Streaming,
    /// The target said Done.
    Finished,
    /// The session ended with an error ([`Source::error`]).
    Failed,
}

/// What a source did, for the replicator's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceReport {
    /// Summary pages sent.
    pub pages: u64,
    /// Entries in them.
    pub entries: u64,
    /// Documents sent.
    pub notes: u64,
    /// Their content bytes.
    pub note_bytes: u64,
}

/// A page sent and not yet acknowledged.
#[derive(Debug)]
struct SentPage {
    upto: Seq,
    last: bool,
    /// Size of each document offered, for ordering and checking Wants.
    sizes: HashMap<Unid, u64>,
    /// A Want for it came.
    wanted: bool,
    /// Its wanted documents were all sent (Sent).
    delivered: bool,
}

/// The Want being read: its page and the documents not yet sent.
#[derive(Debug)]
struct Reading {
    upto: Seq,
    unsent: HashSet<Unid>,
}

#[derive(Debug)]
struct Stream {
    selection: Option<String>,
    window: u16,
    /// Where the next page of changes starts (exclusive).
    next_after: Seq,
    /// A ReadChanges is outstanding.
    reading_changes: bool,
    /// The page marked last was read.
    all_read: bool,
    sent: VecDeque<SentPage>,
    /// The last page a Want came for.
    last_want: Option<Seq>,
    /// Wants waiting for their ReadNotes, in order.
    wants: VecDeque<(Seq, Vec<Unid>, Vec<ContentKey>)>,
    reading_notes: Option<Reading>,
}

#[derive(Debug)]
enum State {
    Greeting {
        hello_sent: bool,
        target: Option<Peer>,
    },
    Streaming(Stream),
    Finished,
    Failed(ReplicaError),
}

/// The source side of one session.
#[derive(Debug)]
pub struct Source<V, N> {
    config: SourceConfig,
    /// The last change number when the session started, for the Hello.
    high: Seq,
    out: Out<SourceAction<V, N>>,
    state: State,
    report: SourceReport,
}

impl<V: Version, N: Clone> Source<V, N> {
    /// A source for `config.me`, whose last change number is `high`. An
    /// initiating source queues its Hello at once.
    pub fn new(mut config: SourceConfig, high: Seq, now: Timestamp) -> Self {
        config.page_size = config.page_size.max(1);
        config.max_window = config.max_window.max(1);
        let session = Session::new(config.opening, config.idle_timeout_micros, now);
        let mut source = Source {
            high,
            out: Out::new(session),
            state: State::Greeting {
                hello_sent: false,
                target: None,
            },
            report: SourceReport::default(),
            config,
        };
        if matches!(source.config.opening, Opening::Initiate(_)) {
            source.send_hello();
        }
        source
    }

    /// The next thing for the driver to do.
    pub fn next_action(&mut self) -> Option<SourceAction<V, N>> {
        self.out.pop()
    }

    /// Where the session is.
    pub fn phase(&self) -> SourcePhase {
        match self.state {
            State::Greeting { .. } => SourcePhase::Greeting,
            State::Streaming(_) => SourcePhase::Streaming,
            State::Finished => SourcePhase::Finished,
            State::Failed(_) => SourcePhase::Failed,
        }
    }

    /// Why the session failed, once it has.
    pub fn error(&self) -> Option<&ReplicaError> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// What was sent so far.
    pub fn report(&self) -> &SourceReport {
        &self.report
    }

    /// A packet from the target. An error ends the session (and is
    /// returned); duplicates and other sessions' packets are ignored, and
    /// so is everything once the session is over.
    pub fn receive(&mut self, packet: Packet<ToSource>) -> Result<(), ReplicaError> {
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

    /// The answer to [`SourceAction::ReadChanges`]. A page that does not
    /// follow the one before, holds more than the limit or comes unasked
    /// is refused and changes nothing.
    pub fn changes_read(&mut self, page: Summary<V>) -> Result<(), ReplicaError> {
        let State::Streaming(stream) = &mut self.state else {
            return self.late_answer("a page of changes");
        };
        if !stream.reading_changes {
            return Err(ReplicaError::BadAnswer(
                "a page of changes nobody asked for".into(),
            ));
        }
        page.check(stream.next_after, self.config.page_size as usize)
            .map_err(|e| ReplicaError::BadAnswer(e.to_string()))?;
        stream.reading_changes = false;
        stream.next_after = page.upto;
        stream.all_read = page.last;
        stream.sent.push_back(SentPage {
            upto: page.upto,
            last: page.last,
            sizes: page.entries.iter().map(|e| (e.unid, e.size)).collect(),
            wanted: false,
            delivered: false,
        });
        self.report.pages += 1;
        self.report.entries += page.entries.len() as u64;
        self.out.send(ToTarget::Summary(page));
        self.out.session.progress();
        self.read_more();
        Ok(())
    }

    /// The answer (or part of it) to [`SourceAction::ReadNotes`]: these
    /// documents, in the order asked, leaving out those gone. `complete`
    /// says the read is over. A document not asked for is refused and
    /// changes nothing.
    pub fn notes_read(
        &mut self,
        upto: Seq,
        notes: Vec<Envelope<V, N>>,
        complete: bool,
    ) -> Result<(), ReplicaError> {
        let State::Streaming(stream) = &mut self.state else {
            return self.late_answer("documents");
        };
        let Some(reading) = stream.reading_notes.as_mut().filter(|r| r.upto == upto) else {
            return Err(ReplicaError::BadAnswer(format!(
                "documents for page {}, which is not being read",
                upto.0
            )));
        };
        let mut asked = HashSet::with_capacity(notes.len());
        for note in &notes {
            if !reading.unsent.contains(&note.unid) || !asked.insert(note.unid) {
                return Err(ReplicaError::BadAnswer(format!(
                    "document {} was not asked for (or came twice)",
                    note.unid
                )));
            }
        }
        for note in notes {
            reading.unsent.remove(&note.unid);
            self.report.notes += 1;
            self.report.note_bytes = self.report.note_bytes.saturating_add(note.size);
            self.out.send(ToTarget::Note(note));
        }
        if complete {
            stream.reading_notes = None;
            if let Some(page) = stream.sent.iter_mut().find(|p| p.upto == upto) {
                page.delivered = true;
            }
            self.out.send(ToTarget::Sent { upto });
            self.read_wanted();
        }
        self.out.session.progress();
        Ok(())
    }

    /// A local read failed (or the selection formula was refused, with
    /// `code` [`ErrorCode::BadSelection`]): the session ends and the target
    /// is told.
    pub fn fail_local(&mut self, code: ErrorCode, message: impl Into<String>) {
        if !self.is_over() {
            let _ = self.fail(ReplicaError::Local {
                code,
                message: message.into(),
            });
        }
    }

    /// The driver stops the session; the target is told.
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

    fn late_answer(&self, what: &str) -> Result<(), ReplicaError> {
        if self.is_over() {
            Ok(())
        } else {
            Err(ReplicaError::BadAnswer(format!(
                "{what} before the request"
            )))
        }
    }

    fn fail(&mut self, e: ReplicaError) -> Result<(), ReplicaError> {
        if e.tell_peer() {
            self.out.send(ToTarget::Error(Failure {
                code: e.code(),
                message: e.to_string(),
            }));
        }
        self.state = State::Failed(e.clone());
        Err(e)
    }

    fn send_hello(&mut self) {
        self.out.send(ToTarget::Hello(Hello {
            peer: self.config.me,
            role: Role::Source,
            high: self.high,
        }));
        if let State::Greeting { hello_sent, .. } = &mut self.state {
            *hello_sent = true;
        }
    }

    fn unexpected(&self, message: &'static str) -> ReplicaError {
        let state = match self.state {
            State::Greeting { .. } => "greeting",
            State::Streaming(_) => "streaming",
            State::Finished => "finished",
            State::Failed(_) => "failed",
        };
        ReplicaError::Unexpected { message, state }
    }

    fn handle(&mut self, body: ToSource) -> Result<(), ReplicaError> {
        match body {
            ToSource::Error(f) => Err(ReplicaError::Remote {
                code: f.code,
                message: f.message,
            }),
            ToSource::Hello(hello) => self.on_hello(hello),
            ToSource::ChangesSince(request) => self.on_request(request),
            ToSource::Want(want) => self.on_want(want.upto, want.unids, want.have),
            ToSource::Ack { upto } => self.on_ack(upto),
            ToSource::Done { upto } => self.on_done(upto),
        }
    }

    fn on_hello(&mut self, hello: Hello) -> Result<(), ReplicaError> {
        let State::Greeting {
            hello_sent,
            target: None,
        } = self.state
        else {
            return Err(self.unexpected("Hello"));
        };
        hello.check(self.config.me, Role::Source)?;
        if !hello_sent {
            self.send_hello();
        }
        self.state = State::Greeting {
            hello_sent: true,
            target: Some(hello.peer),
        };
        Ok(())
    }

    fn on_request(&mut self, request: ChangesSince) -> Result<(), ReplicaError> {
        if !matches!(
            self.state,
            State::Greeting {
                target: Some(_),
                ..
            }
        ) {
            return Err(self.unexpected("ChangesSince"));
        }
        if request.window == 0 {
            return Err(ReplicaError::BadRequest("a window of 0 pages".into()));
        }
        if let Some(len) = request.selection.as_ref().map(String::len) {
            if len > MAX_SELECTION {
                return Err(ReplicaError::BadRequest(format!(
                    "a selection formula of {len} bytes, more than {MAX_SELECTION}"
                )));
            }
        }
        self.state = State::Streaming(Stream {
            selection: request.selection,
            window: request.window.min(self.config.max_window),
            next_after: request.since,
            reading_changes: false,
            all_read: false,
            sent: VecDeque::new(),
            last_want: None,
            wants: VecDeque::new(),
            reading_notes: None,
        });
        self.read_more();
        Ok(())
    }

    fn on_want(
        &mut self,
        upto: Seq,
        unids: Vec<Unid>,
        have: Vec<ContentKey>,
    ) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Want");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        let wrong_page = ReplicaError::WrongPage {
            message: "Want",
            upto,
        };
        if stream.last_want.is_some_and(|last| upto <= last) {
            return Err(wrong_page);
        }
        let Some(page) = stream.sent.iter_mut().find(|p| p.upto == upto) else {
            return Err(wrong_page);
        };
        if have.len() > MAX_HAVE {
            return Err(ReplicaError::HaveTooLong {
                upto,
                len: have.len(),
                max: MAX_HAVE,
            });
        }
        let mut seen = HashSet::with_capacity(unids.len());
        let mut sized = Vec::with_capacity(unids.len());
        for unid in unids {
            match page.sizes.get(&unid) {
                Some(&size) if seen.insert(unid) => sized.push((size, unid)),
                _ => return Err(ReplicaError::NotOffered { upto, unid }),
            }
        }
        // Smallest first: many small documents arrive before one large
        // one holds the link.
        sized.sort_unstable();
        page.wanted = true;
        stream.last_want = Some(upto);
        stream
            .wants
            .push_back((upto, sized.into_iter().map(|(_, u)| u).collect(), have));
        self.read_wanted();
        Ok(())
    }

    fn on_ack(&mut self, upto: Seq) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Ack");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        acknowledge(stream, upto, "Ack")?;
        self.read_more();
        Ok(())
    }

    fn on_done(&mut self, upto: Seq) -> Result<(), ReplicaError> {
        let unexpected = self.unexpected("Done");
        let State::Streaming(stream) = &mut self.state else {
            return Err(unexpected);
        };
        let is_last = stream.sent.back().is_some_and(|p| p.last && p.upto == upto);
        if !is_last {
            return Err(ReplicaError::WrongPage {
                message: "Done",
                upto,
            });
        }
        acknowledge(stream, upto, "Done")?;
        self.state = State::Finished;
        Ok(())
    }

    /// Reads the next page of changes if the window has room.
    fn read_more(&mut self) {
        let State::Streaming(stream) = &mut self.state else {
            return;
        };
        if stream.reading_changes
            || stream.all_read
            || stream.sent.len() >= usize::from(stream.window)
        {
            return;
        }
        stream.reading_changes = true;
        self.out.push(SourceAction::ReadChanges {
            after: stream.next_after,
            limit: self.config.page_size,
            selection: stream.selection.clone(),
        });
    }

    /// Starts reading the next Want's documents, one Want at a time.
    fn read_wanted(&mut self) {
        let State::Streaming(stream) = &mut self.state else {
            return;
        };
        if stream.reading_notes.is_some() {
            return;
        }
        if let Some((upto, unids, have)) = stream.wants.pop_front() {
            stream.reading_notes = Some(Reading {
                upto,
                unsent: unids.iter().copied().collect(),
            });
            self.out.push(SourceAction::ReadNotes { upto, unids, have });
        }
    }
}

/// Takes the pages up to `upto` out of the window. `upto` must be a page
/// sent, and every page it covers that was wanted must be delivered.
fn acknowledge(stream: &mut Stream, upto: Seq, message: &'static str) -> Result<(), ReplicaError> {
    let Some(end) = stream.sent.iter().position(|p| p.upto == upto) else {
        return Err(ReplicaError::WrongPage { message, upto });
    };
    if stream
        .sent
        .iter()
        .take(end + 1)
        .any(|p| p.wanted && !p.delivered)
    {
        return Err(ReplicaError::WrongPage { message, upto });
    }
    stream.sent.drain(..=end);
    Ok(())
}
