//! One inbound SMTP connection, as a state machine with no I/O.
//!
//! ```text
//!             EHLO/HELO              MAIL                 DATA (≥ 1 recipient)
//!   fresh ──────────────▶ greeted ───────────▶ transaction ─────────────────▶ Data
//!                          ▲  ▲  RSET, EHLO, HELO  │  ▲                       │ CRLF.CRLF
//!                          │  └────────────────────┘  └─ RCPT ⇄ AwaitingVerdict ▼
//!                          └─────── 250 / 451 / 452 / 552 / 554 ◀─────── AwaitingStore
//!   STARTTLS (no transaction) ─▶ 220 ─▶ AwaitingTls ─▶ tls_started ─▶ fresh
//!   AUTH (submission) ─▶ [334 ⇄ Auth] ─▶ AwaitingAuth ─▶ 235 signed in | 535 | 454
//!   QUIT, too many errors, timeout ─▶ Closed
//! ```
//!
//! (The greeting and the transaction are fields; `Mode` is what the
//! session is doing with its input.)
//!
//! The driver feeds whatever it reads to [`Session::input`] and performs
//! the [`Action`]s it pulls with [`Session::next_action`]. Input is
//! processed strictly in order, one command at a time, so pipelined
//! commands (RFC 2920) get their replies in order, and a command that
//! needs the driver (RCPT's directory lookup, storing a message, the TLS
//! handshake) pauses the session: bytes that arrive meanwhile wait in its
//! buffer. The replies do not depend on how the input was split into
//! reads; a property test holds the session to that.
//!
//! Line ends: a command line must end in CRLF; one ending in a bare LF
//! gets 500 and is not executed. A message with a bare CR or LF is read
//! to its CRLF.CRLF and refused with 554 (see `data.rs`). This is RFC
//! 5321 §2.3.8 read strictly, and it leaves no room for a line end this
//! server and another would read differently.
//!
//! Submission (`AuthPolicy::Required`, RFC 6409) is the same machine
//! with a sign-in in front: `MAIL`, `RCPT` and `DATA` get 530 until
//! `AUTH` succeeded, and `MAIL FROM` must name one of the signed-in
//! person's addresses (553 otherwise). `AUTH` is offered only over TLS
//! unless the policy allows cleartext; the third refused sign-in ends
//! the session.
//!
//! Nothing here keeps time: [`Session::waiting_for`] says what the
//! session waits for, and the driver calls [`Session::timed_out`] when
//! its own limit passes.

use super::action::{
    Action, AuthFailure, Delivery, DeliveryId, Envelope, Identity, StoreFailure, Verdict, Waiting,
};
use super::address::{Mailbox, Recipient};
use super::auth::{self, Exchange};
use super::command::{self, BodyType, Command, CommandError};
use super::data::{DataEnd, DataReceiver};
use super::limits::{AuthPolicy, SessionLimits};
use super::reply::{text, Reply};
use crate::{MailError, MailResult};
use std::collections::VecDeque;

/// Where the session is in its lifecycle.
enum Mode {
    /// Reading command lines.
    Command,
    /// Reading a message after 354.
    Data(DataReceiver),
    /// Asked the driver about this recipient.
    AwaitingVerdict(Recipient),
    /// Asked the driver to store a message.
    AwaitingStore,
    /// Said 220 to STARTTLS; the driver runs the handshake.
    AwaitingTls,
    /// Said 334 to AUTH: the next line is the client's response.
    Auth(Exchange),
    /// Asked the driver to check credentials.
    AwaitingAuth,
    /// After QUIT, 421, or a timeout. Input is ignored.
    Closed,
}

/// The client's greeting, forgotten at STARTTLS.
struct Hello {
    domain: String,
    esmtp: bool,
}

/// A mail transaction, from MAIL to the end of DATA or RSET.
struct Transaction {
    sender: Option<Mailbox>,
    body: BodyType,
    declared_size: Option<u64>,
    recipients: Vec<Recipient>,
}

/// An inbound SMTP session (RFC 5321 server side, with SIZE, 8BITMIME,
/// PIPELINING and optionally STARTTLS).
pub struct Session {
    server_name: String,
    limits: SessionLimits,
    mode: Mode,
    hello: Option<Hello>,
    tls: bool,
    transaction: Option<Transaction>,
    /// Received bytes not yet consumed: a partial command line, or
    /// pipelined input waiting while the session is paused, or (while
    /// awaiting TLS) bytes sent in the clear after STARTTLS.
    pending: Vec<u8>,
    /// Skipping the rest of a command line already answered as too long.
    skipping_long_line: bool,
    bad_commands: u32,
    /// Who signed in with AUTH (submission); forgotten at STARTTLS.
    identity: Option<Identity>,
    /// Sign-ins refused so far; the third ends the session.
    auth_failures: u32,
    actions: VecDeque<Action>,
}

/// Refused sign-ins after which a session is closed (each costs the
/// server an argon2 hash, and the driver answers each after a pause).
const MAX_AUTH_FAILURES: u32 = 3;

impl Session {
    /// A session for a newly accepted connection; the 220 greeting is
    /// queued. `server_name` (this host's name, as in the greeting and
    /// EHLO reply) must be printable ASCII without spaces.
    pub fn new(server_name: &str, limits: SessionLimits) -> MailResult<Session> {
        limits.validate()?;
        let printable = server_name.bytes().all(|b| b.is_ascii_graphic());
        if server_name.is_empty() || server_name.len() > 255 || !printable {
            return Err(MailError::SmtpSetting(format!(
                "server name {server_name:?} must be 1 to 255 printable ASCII characters without spaces"
            )));
        }
        let mut session = Session {
            server_name: server_name.to_string(),
            limits,
            mode: Mode::Command,
            hello: None,
            tls: false,
            transaction: None,
            pending: Vec::new(),
            skipping_long_line: false,
            bad_commands: 0,
            identity: None,
            auth_failures: 0,
            actions: VecDeque::new(),
        };
        session.reply(Reply::new(220, format!("{server_name} ESMTP Folio ready")));
        Ok(session)
    }

    /// Feeds bytes received from the client. While the session waits on
    /// the driver (a verdict, a store, a handshake) bytes are only
    /// buffered, so the driver should not read the socket then
    /// ([`Session::waiting_for`]); that keeps the buffer to one read.
    pub fn input(&mut self, bytes: &[u8]) {
        if matches!(self.mode, Mode::Closed) {
            return;
        }
        self.pending.extend_from_slice(bytes);
        self.run();
    }

    /// The next action for the driver, in order.
    pub fn next_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// What the session is waiting for.
    pub fn waiting_for(&self) -> Waiting {
        match self.mode {
            Mode::Command => Waiting::Command,
            Mode::Data(_) => Waiting::MessageData,
            Mode::AwaitingVerdict(_) => Waiting::RecipientVerdict,
            Mode::AwaitingStore => Waiting::StoreResult,
            Mode::AwaitingTls => Waiting::TlsHandshake,
            Mode::Auth(_) => Waiting::AuthResponse,
            Mode::AwaitingAuth => Waiting::AuthResult,
            Mode::Closed => Waiting::Closed,
        }
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.mode, Mode::Closed)
    }

    /// The driver's answer to [`Action::VerifyRecipient`]; processing of
    /// buffered input resumes.
    pub fn recipient_verdict(&mut self, verdict: Verdict) -> MailResult<()> {
        let Mode::AwaitingVerdict(recipient) = std::mem::replace(&mut self.mode, Mode::Command)
        else {
            return self.not_waiting("a recipient verdict");
        };
        let reply = match verdict {
            Verdict::Accept => {
                if let Some(transaction) = &mut self.transaction {
                    transaction.recipients.push(recipient);
                }
                Reply::new(250, text::RECIPIENT_OK)
            }
            Verdict::NoSuchUser => Reply::new(550, text::NO_SUCH_USER),
            Verdict::NoRelay => Reply::new(550, text::NO_RELAY),
            Verdict::TryLater => Reply::new(450, text::TRY_LATER),
        };
        self.reply(reply);
        self.run();
        Ok(())
    }

    /// The driver's answer to [`Action::Store`]: `Ok` only once the
    /// message is durable. Processing of buffered input resumes.
    pub fn stored(&mut self, result: Result<DeliveryId, StoreFailure>) -> MailResult<()> {
        if !matches!(self.mode, Mode::AwaitingStore) {
            return self.not_waiting("a store result");
        }
        self.mode = Mode::Command;
        let reply = match result {
            Ok(id) => Reply::new(250, format!("OK queued as {id}")),
            Err(StoreFailure::Transient) => Reply::new(451, text::LOCAL_ERROR),
            Err(StoreFailure::InsufficientStorage) => Reply::new(452, text::NO_STORAGE),
            Err(StoreFailure::ExceedsStorage) => Reply::new(552, text::STORAGE_EXCEEDED),
            Err(StoreFailure::Rejected) => Reply::new(554, text::REFUSED),
        };
        self.reply(reply);
        self.run();
        Ok(())
    }

    /// The driver's answer to [`Action::Authenticate`]. Processing of
    /// buffered input resumes.
    pub fn authenticated(&mut self, result: Result<Identity, AuthFailure>) -> MailResult<()> {
        if !matches!(self.mode, Mode::AwaitingAuth) {
            return self.not_waiting("an authentication result");
        }
        self.mode = Mode::Command;
        match result {
            Ok(identity) => {
                self.identity = Some(identity);
                self.reply(Reply::new(235, text::AUTH_OK));
            }
            Err(AuthFailure::Unavailable) => self.reply(Reply::new(454, text::AUTH_UNAVAILABLE)),
            Err(failure) => {
                let why = match failure {
                    AuthFailure::NoSender => text::AUTH_NO_SENDER,
                    _ => text::AUTH_FAILED,
                };
                self.reply(Reply::new(535, why));
                self.auth_failures += 1;
                if self.auth_failures >= MAX_AUTH_FAILURES {
                    self.reply(Reply::new(421, text::AUTH_TOO_MANY));
                    self.close();
                    return Ok(());
                }
            }
        }
        self.run();
        Ok(())
    }

    /// Sign-ins refused so far in this session (the driver pauses before
    /// answering the next, longer each time).
    pub fn auth_failures(&self) -> u32 {
        self.auth_failures
    }

    /// A session on a connection that is TLS from its first byte (RFC
    /// 8314 implicit TLS, `submissions_listen`): as [`Session::new`], but
    /// already over TLS, so STARTTLS is not offered and a sign-in is
    /// taken at once. The driver writes the greeting after the handshake.
    pub fn new_over_tls(server_name: &str, limits: SessionLimits) -> MailResult<Session> {
        let mut s = Session::new(server_name, limits)?;
        s.tls = true;
        Ok(s)
    }

    /// The driver finished the TLS handshake after [`Action::StartTls`].
    /// The session forgets the greeting and any transaction (RFC 3207
    /// §4.2). Bytes that reached the session after the STARTTLS line were
    /// sent in the clear and could have been injected by anyone on the
    /// path (CVE-2011-0411): they are discarded, and the session answers
    /// 421 and closes rather than act on them.
    pub fn tls_started(&mut self) -> MailResult<()> {
        if !matches!(self.mode, Mode::AwaitingTls) {
            return self.not_waiting("a TLS handshake");
        }
        self.mode = Mode::Command;
        if !self.pending.is_empty() {
            let name = &self.server_name;
            let reply = Reply::new(
                421,
                format!("{name} Commands were pipelined after STARTTLS, closing connection"),
            );
            self.reply(reply);
            self.close();
            return Ok(());
        }
        self.tls = true;
        self.hello = None;
        self.transaction = None;
        self.identity = None;
        Ok(())
    }

    /// The driver's time limit for [`Session::waiting_for`] passed: 421
    /// and close. Nothing of an unfinished message is stored.
    pub fn timed_out(&mut self) {
        if self.is_closed() {
            return;
        }
        let reply = Reply::new(
            421,
            format!("{} Timeout, closing connection", self.server_name),
        );
        self.reply(reply);
        self.close();
    }

    fn not_waiting(&self, what: &'static str) -> MailResult<()> {
        Err(MailError::SmtpNotWaiting(what))
    }

    /// Consumes pending input until it runs out or the session pauses.
    fn run(&mut self) {
        let mut input = std::mem::take(&mut self.pending);
        let mut used = 0;
        while used < input.len() {
            let rest = &input[used..];
            let step = match &mut self.mode {
                Mode::Command | Mode::Auth(_) => self.command_input(rest),
                Mode::Data(receiver) => {
                    let (step, end) = receiver.feed(rest);
                    if let Some(end) = end {
                        self.end_of_data(end);
                    }
                    step
                }
                Mode::Closed => {
                    used = input.len();
                    break;
                }
                Mode::AwaitingVerdict(_)
                | Mode::AwaitingStore
                | Mode::AwaitingTls
                | Mode::AwaitingAuth => break,
            };
            if step == 0 {
                // An incomplete command line: wait for more input.
                break;
            }
            used += step;
        }
        input.drain(..used);
        self.pending = input;
    }

    /// Takes at most one command line from `input`; returns the bytes
    /// consumed (0 when the line is not complete yet).
    fn command_input(&mut self, input: &[u8]) -> usize {
        let max = self.limits.max_line_length;
        let newline = input.iter().position(|&b| b == b'\n');
        if self.skipping_long_line {
            return match newline {
                Some(at) => {
                    self.skipping_long_line = false;
                    at + 1
                }
                None => input.len(),
            };
        }
        match newline {
            // The line, LF included, is longer than the limit.
            Some(at) if at >= max => {
                self.reply(Reply::new(500, text::LINE_TOO_LONG));
                at + 1
            }
            Some(at) => {
                match input[..at].strip_suffix(b"\r") {
                    Some(line) if matches!(self.mode, Mode::Auth(_)) => self.auth_response(line),
                    Some(line) => self.command(line),
                    None => self.reply(Reply::new(500, text::BARE_LF_COMMAND)),
                }
                at + 1
            }
            // No LF within the limit: too long, whatever follows.
            None if input.len() >= max => {
                self.reply(Reply::new(500, text::LINE_TOO_LONG));
                self.skipping_long_line = true;
                input.len()
            }
            None => 0,
        }
    }

    fn command(&mut self, line: &[u8]) {
        match command::parse(line) {
            Ok(command) => self.execute(command),
            Err(CommandError::Unrecognized) => self.reply(Reply::new(500, text::UNRECOGNIZED)),
            Err(CommandError::Syntax(why)) => {
                self.reply(Reply::new(501, format!("Syntax error in arguments: {why}")))
            }
            Err(CommandError::UnknownParameter) => {
                self.reply(Reply::new(555, text::UNKNOWN_PARAMETER))
            }
        }
    }

    fn execute(&mut self, command: Command) {
        match command {
            Command::Ehlo(domain) => self.hello(domain, true),
            Command::Helo(domain) => self.hello(domain, false),
            Command::Mail { sender, size, body } => self.mail(sender, size, body),
            Command::Rcpt(recipient) => self.rcpt(recipient),
            Command::Data => self.data(),
            Command::Rset => {
                self.transaction = None;
                self.reply(Reply::new(250, text::RESET));
            }
            Command::Noop => self.reply(Reply::new(250, text::OK)),
            Command::Quit => {
                let name = &self.server_name;
                self.reply(Reply::new(221, format!("{name} closing connection")));
                self.close();
            }
            Command::StartTls => self.starttls(),
            Command::Vrfy => self.reply(Reply::new(252, text::CANNOT_VRFY)),
            Command::Expn => self.reply(Reply::new(502, text::NOT_IMPLEMENTED)),
            Command::Help => self.reply(Reply::new(214, text::HELP)),
            Command::Auth { mechanism, initial } => self.auth(&mechanism, initial.as_deref()),
        }
    }

    /// AUTH (RFC 4954 §4): submission only, once, after EHLO, outside a
    /// transaction, and over TLS unless the policy allows cleartext.
    fn auth(&mut self, mechanism: &str, initial: Option<&str>) {
        let AuthPolicy::Required { cleartext } = self.limits.auth else {
            return self.reply(Reply::new(500, text::UNRECOGNIZED));
        };
        if self.hello.is_none() {
            return self.reply(Reply::new(503, text::NEED_HELLO));
        }
        if self.identity.is_some() {
            return self.reply(Reply::new(503, text::AUTH_ALREADY));
        }
        if self.transaction.is_some() {
            return self.reply(Reply::new(503, text::IN_TRANSACTION));
        }
        if !(self.tls || cleartext) {
            return self.reply(Reply::new(538, text::AUTH_NEEDS_TLS));
        }
        self.auth_step(auth::start(mechanism, initial));
    }

    fn auth_response(&mut self, line: &[u8]) {
        let Mode::Auth(exchange) = std::mem::replace(&mut self.mode, Mode::Command) else {
            return;
        };
        self.auth_step(auth::respond(exchange, line));
    }

    fn auth_step(&mut self, next: auth::Next) {
        match next {
            auth::Next::Ask(exchange, challenge) => {
                self.reply(Reply::new(334, challenge));
                self.mode = Mode::Auth(exchange);
            }
            auth::Next::Check(credentials) => {
                self.mode = Mode::AwaitingAuth;
                self.actions.push_back(Action::Authenticate(credentials));
            }
            auth::Next::Refuse(reply) => self.reply(reply),
        }
    }

    /// EHLO or HELO: a new greeting ends any transaction (RFC 5321
    /// §4.1.4).
    fn hello(&mut self, domain: String, esmtp: bool) {
        self.transaction = None;
        self.hello = Some(Hello { domain, esmtp });
        let name = self.server_name.clone();
        if !esmtp {
            return self.reply(Reply::new(250, name));
        }
        let mut lines = vec![
            name,
            "PIPELINING".to_string(),
            format!("SIZE {}", self.limits.max_message_size),
            "8BITMIME".to_string(),
        ];
        if self.limits.starttls && !self.tls {
            lines.push("STARTTLS".to_string());
        }
        if let AuthPolicy::Required { cleartext } = self.limits.auth {
            if (self.tls || cleartext) && self.identity.is_none() {
                lines.push("AUTH PLAIN LOGIN".to_string());
            }
        }
        self.reply(Reply::multiline(250, lines));
    }

    fn mail(&mut self, sender: Option<Mailbox>, size: Option<u64>, body: BodyType) {
        if self.hello.is_none() {
            return self.reply(Reply::new(503, text::NEED_HELLO));
        }
        if self.transaction.is_some() {
            return self.reply(Reply::new(503, text::NESTED_MAIL));
        }
        if self.needs_auth() {
            return self.reply(Reply::new(530, text::AUTH_REQUIRED));
        }
        if let Some(identity) = &self.identity {
            // RFC 6409 §6.1: the envelope sender is the signed-in user's.
            if !sender.as_ref().is_some_and(|s| identity.may_send_as(s)) {
                return self.reply(Reply::new(553, text::NOT_YOUR_ADDRESS));
            }
        }
        if size.is_some_and(|size| size > self.limits.max_message_size) {
            return self.reply(Reply::new(552, text::MESSAGE_TOO_BIG));
        }
        self.transaction = Some(Transaction {
            sender,
            body,
            declared_size: size,
            recipients: Vec::new(),
        });
        self.reply(Reply::new(250, text::SENDER_OK));
    }

    /// Submission before a sign-in: 530 to anything that would start
    /// or carry a transaction.
    fn needs_auth(&self) -> bool {
        matches!(self.limits.auth, AuthPolicy::Required { .. }) && self.identity.is_none()
    }

    fn rcpt(&mut self, recipient: Recipient) {
        if self.needs_auth() {
            return self.reply(Reply::new(530, text::AUTH_REQUIRED));
        }
        let Some(transaction) = &self.transaction else {
            return self.reply(Reply::new(503, text::NEED_MAIL));
        };
        if transaction.recipients.len() >= self.limits.max_recipients {
            return self.reply(Reply::new(452, text::TOO_MANY_RECIPIENTS));
        }
        self.mode = Mode::AwaitingVerdict(recipient.clone());
        self.actions.push_back(Action::VerifyRecipient(recipient));
    }

    fn data(&mut self) {
        if self.needs_auth() {
            return self.reply(Reply::new(530, text::AUTH_REQUIRED));
        }
        let Some(transaction) = &self.transaction else {
            return self.reply(Reply::new(503, text::NEED_MAIL));
        };
        if transaction.recipients.is_empty() {
            return self.reply(Reply::new(554, text::NO_VALID_RECIPIENTS));
        }
        self.reply(Reply::new(354, text::START_DATA));
        self.mode = Mode::Data(DataReceiver::new(self.limits.max_message_size));
    }

    /// After the final dot the transaction is over, whatever happens to
    /// the message (RFC 5321 §4.1.1.4).
    fn end_of_data(&mut self, end: DataEnd) {
        self.mode = Mode::Command;
        let transaction = self.transaction.take();
        match end {
            DataEnd::TooBig => self.reply(Reply::new(552, text::MESSAGE_TOO_BIG)),
            DataEnd::BareNewline => self.reply(Reply::new(554, text::BARE_LF_DATA)),
            DataEnd::Complete(data) => {
                let (Some(transaction), Some(hello)) = (transaction, &self.hello) else {
                    // DATA is accepted only in a transaction, which needs
                    // a greeting; nothing to store otherwise.
                    return self.reply(Reply::new(503, text::NEED_MAIL));
                };
                let envelope = Envelope {
                    client_domain: hello.domain.clone(),
                    esmtp: hello.esmtp,
                    tls: self.tls,
                    sender: transaction.sender,
                    recipients: transaction.recipients,
                    body: transaction.body,
                    declared_size: transaction.declared_size,
                    authenticated: self.identity.clone(),
                };
                self.mode = Mode::AwaitingStore;
                self.actions
                    .push_back(Action::Store(Delivery { envelope, data }));
            }
        }
    }

    fn starttls(&mut self) {
        if !self.limits.starttls {
            return self.reply(Reply::new(502, text::NOT_IMPLEMENTED));
        }
        if self.tls {
            return self.reply(Reply::new(503, text::TLS_ACTIVE));
        }
        if self.transaction.is_some() {
            return self.reply(Reply::new(503, text::IN_TRANSACTION));
        }
        self.reply(Reply::new(220, text::READY_FOR_TLS));
        self.mode = Mode::AwaitingTls;
        self.actions.push_back(Action::StartTls);
    }

    /// Queues a reply, joining it to a write already at the end of the
    /// queue, and closes after too many bad commands.
    fn reply(&mut self, reply: Reply) {
        match self.actions.back_mut() {
            Some(Action::Write(bytes)) => reply.write_to(bytes),
            _ => {
                let mut bytes = Vec::new();
                reply.write_to(&mut bytes);
                self.actions.push_back(Action::Write(bytes));
            }
        }
        if reply.is_bad_command() {
            self.bad_commands += 1;
            if self.bad_commands >= self.limits.max_bad_commands {
                let name = &self.server_name;
                let reply = Reply::new(421, format!("{name} Too many errors, closing connection"));
                self.reply(reply);
                self.close();
            }
        }
    }

    fn close(&mut self) {
        self.mode = Mode::Closed;
        self.transaction = None;
        self.pending.clear();
        self.actions.push_back(Action::Close);
    }
}
