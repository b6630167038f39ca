//! One IMAP session as a state machine with no I/O: the driver feeds it
//! the bytes it reads ([`Session::receive`]) and does what [`Session::step`]
//! answers (write bytes, read more, start TLS, close). Like the SMTP
//! session (`mail::smtp`), it never touches a socket or a clock, so tests
//! script whole conversations, garbage and all, without one.
//!
//! Framing is imap-next's (`imap_next::server::Server`, over imap-codec):
//! it reads a command whole, literals included, asks for a synchronizing
//! literal with `+` only if it is within the limit, and drives the
//! AUTHENTICATE and IDLE exchanges. Why imap-next and not a parser of our
//! own, nor imap-codec alone: imap-codec is a complete, fuzzed RFC 3501 /
//! 9051 grammar with typed values for every command and response, so no
//! response here is spelled by hand and no quoting or literal rule is
//! ours to get wrong; imap-next adds exactly the part that is easy to get
//! wrong around it (when to send `+`, what to do with a literal over the
//! limit, the AUTHENTICATE and IDLE sub-protocols) and is itself sans-I/O.
//! Both are pre-1.0 (imap-next 0.3, imap-codec 2.0 alpha); their types
//! stay inside this crate.
//!
//! ```text
//!   NotAuthenticated ──LOGIN/AUTHENTICATE──▶ Authenticated ──SELECT/EXAMINE──▶ Selected
//!          │                                  ▲     │                     │ CLOSE/UNSELECT
//!          │                                  └─────┼─────────────────────┘
//!          └──────────────── LOGOUT, too many bad commands ──────────▶ Logout (BYE, close)
//! ```
//!
//! The selected mailbox is a [`Snapshot`]: sequence numbers are positions
//! in it, and it changes only where IMAP lets the client learn of the
//! change (NOOP, CHECK, IDLE, after EXPUNGE and APPEND), as EXPUNGE,
//! EXISTS and FETCH FLAGS responses. A message that joins the mailbox
//! with a UID below the highest one the session has seen (a document
//! put into a folder later) is shown from the next SELECT (I55).

use crate::limits::{SessionLimits, Transport};
use crate::store::{Accounts, Mailstore, MessageMeta, Snapshot, Transfer};
use crate::{auth, mailboxes, messages};
use imap_next::imap_types::auth::AuthMechanism;
use imap_next::imap_types::command::{Command, CommandBody};
use imap_next::imap_types::core::{Atom, Tag, Vec1};
use imap_next::imap_types::extensions::enable::CapabilityEnable;
use imap_next::imap_types::fetch::MessageDataItem;
use imap_next::imap_types::flag::{Flag, FlagFetch};
use imap_next::imap_types::response::{
    Capability, Code, CommandContinuationRequest, Data, Greeting, Status,
};
use imap_next::imap_types::ToStatic;
use imap_next::server::{Error as CodecError, Event, Options, ResponseHandle, Server};
use imap_next::{Interrupt, Io, State as _};
use std::num::NonZeroU32;
use std::sync::Arc;

/// What the driver does next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Write these bytes, then call `step` again.
    Write(Vec<u8>),
    /// Read more and [`Session::receive`] it.
    NeedInput,
    /// Everything is written: start TLS on the connection, then call
    /// [`Session::tls_started`] (STARTTLS).
    StartTls,
    /// Everything is written: close the connection.
    Close,
    /// Wait this long before calling `step` again (a refused sign-in:
    /// guessing passwords costs time), reading nothing meanwhile.
    Pause(std::time::Duration),
}

/// What a signed-in session can do beyond IMAP4rev1, exactly what is
/// implemented: IDLE (RFC 2177), UIDPLUS (RFC 4315), UNSELECT (RFC
/// 3691), SPECIAL-USE (RFC 6154), MOVE (RFC 6851), NAMESPACE (RFC 2342),
/// ENABLE (RFC 5161), CONDSTORE and QRESYNC (RFC 7162).
const AFTER_SIGN_IN: [&str; 9] = [
    "IDLE",
    "UIDPLUS",
    "UNSELECT",
    "SPECIAL-USE",
    "MOVE",
    "NAMESPACE",
    "ENABLE",
    "CONDSTORE",
    "QRESYNC",
];

/// Refused sign-ins a session may make; the next one ends it.
const MAX_FAILED_LOGINS: u32 = 5;

/// A session's state (see the module docs).
pub(crate) enum State {
    NotAuthenticated,
    Authenticated(Box<dyn Mailstore>),
    Selected(Box<dyn Mailstore>, Selected),
    Logout,
}

/// The selected mailbox.
pub(crate) struct Selected {
    pub name: String,
    pub read_only: bool,
    pub snapshot: Snapshot,
}

/// One IMAP session (see the module docs).
pub struct Session {
    server: Server,
    pub(crate) state: State,
    pub(crate) accounts: Arc<dyn Accounts>,
    pub(crate) limits: SessionLimits,
    pub(crate) transport: Transport,
    bad_in_a_row: u32,
    /// The tag of an AUTHENTICATE waiting for its data.
    pub(crate) authenticating: Option<Tag<'static>>,
    /// The tag of the IDLE under way.
    idling: Option<Tag<'static>>,
    /// Close once this response is written.
    close_after: Option<ResponseHandle>,
    /// Start TLS once this response is written.
    tls_after: Option<ResponseHandle>,
    /// Refused sign-ins so far.
    failed_logins: u32,
    /// A pause owed before the next answer.
    pause: Option<std::time::Duration>,
    /// CONDSTORE is on (RFC 7162 §3.1: ENABLE, SELECT (CONDSTORE) or a
    /// command that uses it): every FETCH a flag change causes carries
    /// the message's MODSEQ.
    pub(crate) condstore: bool,
    /// QRESYNC is on (RFC 7162 §3.2.3: only by ENABLE): SELECT may
    /// resynchronise, UID FETCH may ask for VANISHED, and expunges are
    /// told as `* VANISHED` instead of `* n EXPUNGE`.
    pub(crate) qresync: bool,
}

impl Session {
    /// A new session: the greeting is the first thing `step` writes.
    pub fn new(
        accounts: Arc<dyn Accounts>,
        limits: SessionLimits,
        transport: Transport,
    ) -> Session {
        let mut s = Session {
            server: Server::new(options(&limits), greeting(&[])),
            state: State::NotAuthenticated,
            accounts,
            limits,
            transport,
            bad_in_a_row: 0,
            authenticating: None,
            idling: None,
            close_after: None,
            tls_after: None,
            failed_logins: 0,
            pause: None,
            condstore: false,
            qresync: false,
        };
        s.server = Server::new(options(&s.limits), greeting(&s.capabilities()));
        s
    }

    /// Bytes read from the client.
    pub fn receive(&mut self, bytes: &[u8]) {
        self.server.enqueue_input(bytes);
    }

    /// The session is in IDLE: the driver should call [`Session::refresh`]
    /// when the mailbox may have changed.
    pub fn idling(&self) -> bool {
        self.idling.is_some()
    }

    /// The signed-in store's change marker ([`Mailstore::change_marker`]),
    /// if a mailbox is selected.
    pub fn change_marker(&self) -> Option<u64> {
        match &self.state {
            State::Selected(store, _) => Some(store.change_marker()),
            _ => None,
        }
    }

    /// The session is waiting for a command with nothing under way (the
    /// driver may close it at shutdown with [`Session::shutdown`]).
    pub fn between_commands(&self) -> bool {
        self.authenticating.is_none() && self.close_after.is_none()
    }

    /// TLS is up (after [`Step::StartTls`]): the session starts over
    /// without a greeting, as RFC 9051 §6.2.1 says, forgetting anything
    /// the client sent before the handshake.
    pub fn tls_started(&mut self) {
        self.transport.tls = true;
        self.server = Server::new(options(&self.limits), greeting(&[]));
        // Drain the greeting the codec insists on writing.
        loop {
            match self.server.next() {
                Ok(Event::GreetingSent { .. }) => break,
                Err(Interrupt::Io(Io::Output(_))) => continue,
                _ => break,
            }
        }
    }

    /// The server is going away: BYE, then close.
    pub fn shutdown(&mut self, why: &str) {
        let bye = Status::bye(None, clean(why)).expect("clean text");
        self.close_after = Some(self.server.enqueue_status(bye));
        self.state = State::Logout;
    }

    /// Runs the session until it needs the driver (see [`Step`]).
    pub fn step(&mut self) -> Step {
        loop {
            if let Some(p) = self.pause.take() {
                return Step::Pause(p);
            }
            match self.server.next() {
                Ok(Event::GreetingSent { .. }) => {}
                Ok(Event::ResponseSent { handle, .. }) => {
                    if self.close_after == Some(handle) {
                        return Step::Close;
                    }
                    if self.tls_after == Some(handle) {
                        self.tls_after = None;
                        return Step::StartTls;
                    }
                }
                Ok(Event::CommandReceived { command }) => self.command(command),
                Ok(Event::CommandAuthenticateReceived {
                    command_authenticate,
                }) => auth::authenticate(self, command_authenticate),
                Ok(Event::AuthenticateDataReceived { authenticate_data }) => {
                    auth::authenticate_data(self, authenticate_data)
                }
                Ok(Event::IdleCommandReceived { tag }) => self.idle(tag),
                Ok(Event::IdleDoneReceived) => {
                    if let Some(tag) = self.idling.take() {
                        self.ok(tag, None, "IDLE done");
                    }
                }
                Err(Interrupt::Io(Io::Output(bytes))) => return Step::Write(bytes),
                Err(Interrupt::Io(Io::NeedMoreInput)) => {
                    if matches!(self.state, State::Logout) && self.close_after.is_none() {
                        return Step::Close;
                    }
                    return Step::NeedInput;
                }
                Err(Interrupt::Error(e)) => self.codec_error(e),
            }
        }
    }

    /// Brings the selected mailbox up to date and tells the client what
    /// changed (EXPUNGE, EXISTS, FETCH FLAGS). Called on NOOP, CHECK, and
    /// by the driver during IDLE.
    pub fn refresh(&mut self) {
        let State::Selected(store, sel) = &mut self.state else {
            return;
        };
        let Ok(new) = store.snapshot(&sel.name) else {
            return;
        };
        for d in changes(&mut sel.snapshot, new, self.condstore, self.qresync) {
            self.server.enqueue_data(d);
        }
    }

    fn command(&mut self, cmd: Command<'static>) {
        let tag = cmd.tag;
        let authenticated = !matches!(self.state, State::NotAuthenticated | State::Logout);
        let selected = matches!(self.state, State::Selected(..));
        match cmd.body {
            CommandBody::Capability => {
                let caps = self.capabilities();
                self.data(Data::Capability(vec1(caps)));
                self.ok(tag, None, "CAPABILITY done");
            }
            CommandBody::Noop | CommandBody::Check => {
                self.refresh();
                self.ok(tag, None, "done");
            }
            CommandBody::Logout => {
                let bye = Status::bye(None, "Folio IMAP says goodbye").expect("text");
                self.server.enqueue_status(bye);
                let done = Status::ok(Some(tag), None, "LOGOUT done").expect("text");
                self.close_after = Some(self.server.enqueue_status(done));
                self.state = State::Logout;
            }
            CommandBody::StartTLS => self.starttls(tag),
            CommandBody::Login { username, password } => auth::login(self, tag, username, password),
            _ if !authenticated => self.bad(tag, "sign in first (LOGIN or AUTHENTICATE)"),
            CommandBody::Select {
                mailbox,
                parameters,
            } => mailboxes::select(self, tag, mailbox, false, parameters),
            CommandBody::Examine {
                mailbox,
                parameters,
            } => mailboxes::select(self, tag, mailbox, true, parameters),
            CommandBody::List {
                reference,
                mailbox_wildcard,
            } => mailboxes::list(self, tag, reference, mailbox_wildcard, false),
            CommandBody::Lsub {
                reference,
                mailbox_wildcard,
            } => mailboxes::list(self, tag, reference, mailbox_wildcard, true),
            CommandBody::Status {
                mailbox,
                item_names,
            } => mailboxes::status(self, tag, mailbox, &item_names),
            CommandBody::Create { mailbox } => mailboxes::create(self, tag, mailbox),
            CommandBody::Rename { from, to } => mailboxes::rename(self, tag, from, to),
            CommandBody::Namespace => mailboxes::namespace(self, tag),
            CommandBody::Enable { capabilities } => self.enable(tag, capabilities),
            CommandBody::Delete { mailbox } => mailboxes::delete(self, tag, mailbox),
            CommandBody::Subscribe { .. } | CommandBody::Unsubscribe { .. } => {
                // Every mailbox is subscribed: LSUB answers what LIST does.
                self.ok(tag, None, "done (every mailbox is subscribed)")
            }
            CommandBody::Append {
                mailbox,
                flags,
                date,
                message,
            } => mailboxes::append(self, tag, mailbox, flags, date, message),
            _ if !selected => self.bad(tag, "select a mailbox first"),
            CommandBody::Close => messages::close(self, tag, true),
            CommandBody::Unselect => messages::close(self, tag, false),
            CommandBody::Expunge => messages::expunge(self, tag, None),
            CommandBody::ExpungeUid { sequence_set } => {
                messages::expunge(self, tag, Some(sequence_set))
            }
            CommandBody::Fetch {
                sequence_set,
                macro_or_item_names,
                uid,
                modifiers,
            } => messages::fetch(
                self,
                tag,
                &sequence_set,
                macro_or_item_names,
                uid,
                modifiers,
            ),
            CommandBody::Store {
                sequence_set,
                kind,
                response,
                flags,
                uid,
                modifiers,
            } => messages::store(
                self,
                tag,
                &sequence_set,
                (kind, response, flags),
                uid,
                modifiers,
            ),
            CommandBody::Search {
                charset,
                criteria,
                uid,
            } => messages::search(self, tag, charset, criteria, uid),
            CommandBody::Copy {
                sequence_set,
                mailbox,
                uid,
            } => messages::transfer(self, tag, &sequence_set, mailbox, uid, Transfer::Copy),
            CommandBody::Move {
                sequence_set,
                mailbox,
                uid,
            } => messages::transfer(self, tag, &sequence_set, mailbox, uid, Transfer::Move),
            _ => self.bad(tag, "command not supported by Folio"),
        }
    }

    /// ENABLE (RFC 5161): CONDSTORE and QRESYNC (which brings CONDSTORE
    /// with it, RFC 7162 §3.2.3) can be enabled; `* ENABLED` names those
    /// asked for, and nothing else. Only before a mailbox is selected.
    fn enable(&mut self, tag: Tag<'static>, asked: Vec1<CapabilityEnable<'static>>) {
        if matches!(self.state, State::Selected(..)) {
            return self.bad(tag, "ENABLE only before selecting a mailbox");
        }
        let mut enabled = Vec::new();
        if asked
            .as_ref()
            .iter()
            .any(|c| matches!(c, CapabilityEnable::CondStore))
        {
            self.condstore = true;
            enabled.push(CapabilityEnable::CondStore);
        }
        if asked
            .as_ref()
            .iter()
            .any(|c| c.to_string().eq_ignore_ascii_case("QRESYNC"))
        {
            self.condstore = true;
            self.qresync = true;
            enabled.push(CapabilityEnable::from(
                Atom::try_from("QRESYNC").expect("an atom"),
            ));
        }
        self.data(Data::Enabled {
            capabilities: enabled,
        });
        self.ok(tag, None, "ENABLE done");
    }

    fn starttls(&mut self, tag: Tag<'static>) {
        if self.transport.tls || !self.transport.starttls {
            return self.bad(tag, "STARTTLS is not offered on this connection");
        }
        if !matches!(self.state, State::NotAuthenticated) {
            return self.bad(tag, "STARTTLS only before signing in");
        }
        let done = Status::ok(Some(tag), None, "begin TLS negotiation now").expect("text");
        self.tls_after = Some(self.server.enqueue_status(done));
    }

    fn idle(&mut self, tag: Tag<'static>) {
        if matches!(self.state, State::NotAuthenticated | State::Logout) {
            let no = Status::bad(Some(tag), None, "sign in first").expect("text");
            let _ = self.server.idle_reject(no);
            return;
        }
        let go = CommandContinuationRequest::basic(None, "idling").expect("text");
        if self.server.idle_accept(go).is_ok() {
            self.idling = Some(tag);
        }
    }

    fn codec_error(&mut self, e: CodecError) {
        let (bytes, why) = match e {
            // imap-next has answered the literal's tag already.
            CodecError::LiteralTooLong { .. } => return self.count_bad(),
            CodecError::CommandTooLong { discarded_bytes } => (
                discarded_bytes,
                format!("command over {} bytes", self.limits.max_command_bytes),
            ),
            CodecError::MalformedMessage { discarded_bytes } => {
                (discarded_bytes, "unknown command or bad syntax".to_string())
            }
            CodecError::ExpectedCrlfGotLf { discarded_bytes } => {
                (discarded_bytes, "lines must end with CRLF".to_string())
            }
        };
        if let Some(tag) = self.authenticating.take() {
            let bad = Status::bad(Some(tag), None, "AUTHENTICATE aborted: bad data").expect("text");
            let _ = self.server.authenticate_finish(bad);
            return self.count_bad();
        }
        let tag = tag_of(bytes.declassify());
        self.bad_status(tag, &why);
    }

    /// The capabilities in this state (RFC 9051 §7.2.2).
    pub(crate) fn capabilities(&self) -> Vec<Capability<'static>> {
        let mut c = vec![Capability::Imap4Rev1];
        if matches!(self.state, State::NotAuthenticated) {
            if self.transport.starttls && !self.transport.tls {
                c.push(Capability::StartTls);
            }
            if self.transport.may_send_passwords(&self.limits) {
                c.push(Capability::Auth(AuthMechanism::Plain));
            } else {
                c.push(Capability::LoginDisabled);
            }
        } else {
            c.extend(AFTER_SIGN_IN.iter().copied().map(atom_capability));
        }
        c
    }

    // ---- responses ----

    pub(crate) fn enqueue_status(&mut self, st: Status<'static>) {
        self.server.enqueue_status(st);
    }

    pub(crate) fn data(&mut self, d: Data<'static>) {
        self.server.enqueue_data(d);
    }

    pub(crate) fn ok(&mut self, tag: Tag<'static>, code: Option<Code<'static>>, text: &str) {
        self.bad_in_a_row = 0;
        let s = Status::ok(Some(tag), code, clean(text)).expect("clean text");
        self.server.enqueue_status(s);
    }

    pub(crate) fn no(&mut self, tag: Tag<'static>, code: Option<Code<'static>>, text: &str) {
        self.bad_in_a_row = 0;
        let s = Status::no(Some(tag), code, clean(text)).expect("clean text");
        self.server.enqueue_status(s);
    }

    pub(crate) fn bad(&mut self, tag: Tag<'static>, text: &str) {
        self.bad_status(Some(tag), text);
    }

    fn bad_status(&mut self, tag: Option<Tag<'static>>, text: &str) {
        let s = Status::bad(tag, None, clean(text)).expect("clean text");
        self.server.enqueue_status(s);
        self.count_bad();
    }

    fn count_bad(&mut self) {
        self.bad_in_a_row += 1;
        if self.bad_in_a_row >= self.limits.max_bad_commands {
            self.shutdown("too many bad commands");
        }
    }

    /// A sign-in was refused: the answer waits a second per refusal so
    /// far (at most five), and the fifth ends the session.
    pub(crate) fn login_refused(&mut self) {
        self.failed_logins += 1;
        self.pause = Some(std::time::Duration::from_secs(u64::from(
            self.failed_logins.min(MAX_FAILED_LOGINS),
        )));
    }

    /// After a refusal's answer: the fifth ends the session.
    pub(crate) fn end_if_refused_too_often(&mut self) {
        if self.failed_logins >= MAX_FAILED_LOGINS {
            self.shutdown("too many refused sign-ins");
        }
    }

    pub(crate) fn finish_authenticate(&mut self, status: Status<'static>) {
        let _ = self.server.authenticate_finish(status);
    }

    pub(crate) fn continue_authenticate(&mut self) {
        let _ = self
            .server
            .authenticate_continue(CommandContinuationRequest::base64(Vec::new()));
    }
}

/// The codec's options from the session's limits.
fn options(limits: &SessionLimits) -> Options {
    let mut o = Options::default();
    o.max_literal_size = limits.max_literal_bytes;
    o.max_command_size = limits
        .max_command_bytes
        .max(limits.max_literal_bytes.saturating_add(64 << 10));
    let _ = o.set_literal_reject_text(format!(
        "literal over {} bytes refused",
        limits.max_literal_bytes
    ));
    let _ = o.set_literal_accept_text("go ahead".into());
    o
}

fn greeting(caps: &[Capability<'static>]) -> Greeting<'static> {
    let code = (!caps.is_empty()).then(|| Code::Capability(vec1(caps.to_vec())));
    Greeting::ok(code, "Folio IMAP ready").expect("text")
}

pub(crate) fn vec1<T>(v: Vec<T>) -> Vec1<T> {
    Vec1::try_from(v).unwrap_or_else(|_| unreachable!("a non-empty list"))
}

fn atom_capability(name: &'static str) -> Capability<'static> {
    Capability::from(Atom::try_from(name).expect("an atom"))
}

/// Text a status line can carry: one line, printable, not empty.
pub(crate) fn clean(text: &str) -> String {
    let t: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let t = t.trim();
    if t.is_empty() {
        "done".into()
    } else {
        t.into()
    }
}

/// The tag a line that could not be read started with, if it has one.
fn tag_of(bytes: &[u8]) -> Option<Tag<'static>> {
    let first = bytes.split(|b| *b == b' ').next()?;
    Tag::try_from(first.to_vec()).ok()
}

/// What a client holding `old` must hear to hold `new` (see the module
/// docs); `old` becomes what the client then holds.
/// With QRESYNC on, expunges are one `* VANISHED uids` (RFC 7162
/// §3.2.10) instead of an EXPUNGE each.
fn changes(
    old: &mut Snapshot,
    new: Snapshot,
    condstore: bool,
    qresync: bool,
) -> Vec<Data<'static>> {
    let mut out = Vec::new();
    let kept: std::collections::HashMap<u32, &MessageMeta> =
        new.messages.iter().map(|m| (m.uid, m)).collect();
    // Expunged, highest sequence number first so no number shifts
    // under the client.
    let mut gone = Vec::new();
    for i in (0..old.messages.len()).rev() {
        if !kept.contains_key(&old.messages[i].uid) {
            gone.push(old.messages.remove(i).uid);
            if !qresync {
                out.push(Data::Expunge(nonzero(i as u32 + 1)));
            }
        }
    }
    gone.reverse();
    if let Some(known_uids) = crate::seqset::of_uids(&gone).filter(|_| qresync) {
        out.push(Data::Vanished {
            earlier: false,
            known_uids,
        });
    }
    for (i, m) in old.messages.iter_mut().enumerate() {
        let now = kept[&m.uid];
        let moved = now.modseq != m.modseq;
        m.modseq = now.modseq;
        if now.flags != m.flags {
            m.flags = now.flags.clone();
            out.push(flags_data(i, m, true, condstore));
        } else if moved && condstore {
            // Changed, flags and all as they were: RFC 7162 §3.2 still
            // tells a CONDSTORE client the new MODSEQ.
            out.push(flags_data(i, m, true, condstore));
        }
    }
    let last = old.messages.last().map_or(0, |m| m.uid);
    let arrived: Vec<MessageMeta> = new
        .messages
        .iter()
        .filter(|m| m.uid > last)
        .cloned()
        .collect();
    if !arrived.is_empty() {
        old.messages.extend(arrived);
        out.push(Data::Exists(old.messages.len() as u32));
    }
    old.uid_next = old.uid_next.max(new.uid_next);
    old.highest_modseq = old.highest_modseq.max(new.highest_modseq);
    out
}

/// `* n FETCH (FLAGS (...) [UID u] [MODSEQ (m)])` for the message at
/// index `i`.
pub(crate) fn flags_data(
    i: usize,
    m: &MessageMeta,
    with_uid: bool,
    with_modseq: bool,
) -> Data<'static> {
    let mut items = vec![MessageDataItem::Flags(flag_fetch(&m.flags))];
    if with_uid {
        items.push(MessageDataItem::Uid(nonzero(m.uid)));
    }
    if with_modseq {
        items.push(MessageDataItem::ModSeq(nonzero64(m.modseq)));
    }
    Data::Fetch {
        seq: nonzero(i as u32 + 1),
        items: vec1(items),
    }
}

pub(crate) fn flag_fetch(flags: &[String]) -> Vec<FlagFetch<'static>> {
    flags
        .iter()
        .filter_map(|f| Flag::try_from(f.as_str()).ok().map(|f| f.to_static()))
        .map(FlagFetch::Flag)
        .collect()
}

pub(crate) fn nonzero64(n: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(n).unwrap_or(std::num::NonZeroU64::MIN)
}

pub(crate) fn nonzero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}
