//! A scripted driver: what the server's listener will do, minus sockets.
//!
//! It feeds bytes, performs every action the session queues, answers
//! recipient lookups from a fixed directory and stores messages in a
//! vector (or fails as told), and keeps the transcript of replies.

use mail::smtp::{
    Action, AuthFailure, AuthPolicy, Credentials, Delivery, DeliveryId, Identity, Recipient,
    Session, SessionLimits, StoreFailure, Verdict,
};

/// The directory: local users at example.com (those of the RFC examples
/// too), one whose lookup fails for now, and one domain this server does
/// not deliver for.
pub fn verdict(recipient: &Recipient) -> Verdict {
    match recipient {
        Recipient::Postmaster => Verdict::Accept,
        Recipient::Mailbox(m) if m.domain().eq_ignore_ascii_case("other.org") => Verdict::NoRelay,
        Recipient::Mailbox(m) => match m.to_string().to_ascii_lowercase().as_str() {
            "alice@example.com"
            | "bob@example.com"
            | "postmaster@example.com"
            | "jones@example.com"
            | "brown@example.com"
            | "ned@example.com"
            | "dan@example.com"
            | "kvc@example.com" => Verdict::Accept,
            "later@example.com" => Verdict::TryLater,
            _ => Verdict::NoSuchUser,
        },
    }
}

pub struct Driver {
    pub session: Session,
    /// Every byte written to the client.
    pub written: Vec<u8>,
    /// Where the last `send` started reading `written`.
    seen: usize,
    pub stored: Vec<Delivery>,
    pub asked: Vec<Recipient>,
    pub closed: bool,
    pub handshakes: usize,
    /// What the store answers.
    pub store_result: Result<&'static str, StoreFailure>,
    /// When false, the driver leaves Store and VerifyRecipient unanswered
    /// (as a slow directory or disk would), for the caller to answer.
    pub answer: bool,
    pub held_store: Option<Delivery>,
    pub held_rcpt: Option<Recipient>,
    /// What the session wrote before any input.
    pub greeting: String,
}

pub fn limits() -> SessionLimits {
    SessionLimits {
        max_message_size: 1000,
        max_recipients: 100,
        max_line_length: 512,
        max_bad_commands: 5,
        starttls: true,
        auth: AuthPolicy::Off,
    }
}

/// The user store of submission: `alice` with password `pw` is the
/// person Alice, who owns `alice@example.com`; `broken` cannot be
/// checked now; anyone else is refused.
pub fn sign_in(c: &Credentials) -> Result<Identity, AuthFailure> {
    match (c.user.as_str(), c.password.as_str()) {
        ("alice", "pw") => Ok(Identity {
            user: "alice".into(),
            person: "Alice".into(),
            addresses: vec!["alice@example.com".into()],
        }),
        ("broken", _) => Err(AuthFailure::Unavailable),
        _ => Err(AuthFailure::BadCredentials),
    }
}

impl Driver {
    pub fn new(limits: SessionLimits) -> Driver {
        let session = Session::new("mx.example.com", limits).expect("valid settings");
        let mut driver = Driver {
            session,
            written: Vec::new(),
            seen: 0,
            stored: Vec::new(),
            asked: Vec::new(),
            closed: false,
            handshakes: 0,
            store_result: Ok("Q1"),
            answer: true,
            held_store: None,
            held_rcpt: None,
            greeting: String::new(),
        };
        driver.drain();
        driver.greeting = driver.output();
        driver
    }

    /// A driver past the greeting and EHLO.
    pub fn greeted() -> Driver {
        let mut driver = Driver::new(limits());
        driver.send("EHLO client.example.org\r\n");
        driver
    }

    /// Feeds `input`, performs the actions, and returns what was written
    /// since the last call.
    pub fn send(&mut self, input: impl AsRef<[u8]>) -> String {
        self.session.input(input.as_ref());
        self.drain();
        self.output()
    }

    /// What was written since the last call.
    pub fn output(&mut self) -> String {
        let new = String::from_utf8_lossy(&self.written[self.seen..]).into_owned();
        self.seen = self.written.len();
        new
    }

    pub fn drain(&mut self) {
        while let Some(action) = self.session.next_action() {
            assert!(!self.closed, "action after Close: {action:?}");
            match action {
                Action::Write(bytes) => self.written.extend_from_slice(&bytes),
                Action::VerifyRecipient(recipient) => {
                    self.asked.push(recipient.clone());
                    if self.answer {
                        self.session.recipient_verdict(verdict(&recipient)).unwrap();
                    } else {
                        self.held_rcpt = Some(recipient);
                    }
                }
                Action::Store(delivery) => {
                    if self.answer {
                        self.store(delivery);
                    } else {
                        self.held_store = Some(delivery);
                    }
                }
                Action::StartTls => {
                    self.handshakes += 1;
                    self.session.tls_started().unwrap();
                }
                Action::Authenticate(credentials) => {
                    self.session.authenticated(sign_in(&credentials)).unwrap();
                }
                Action::Close => self.closed = true,
            }
        }
    }

    /// Stores (or fails to store) as `store_result` says, and answers.
    pub fn store(&mut self, delivery: Delivery) {
        let result = match self.store_result {
            Ok(id) => {
                self.stored.push(delivery);
                Ok(DeliveryId::new(format!("{id}-{}", self.stored.len())).unwrap())
            }
            Err(failure) => Err(failure),
        };
        self.session.stored(result).unwrap();
    }
}

/// The reply codes in a transcript, one per reply (the last line of a
/// multi-line reply).
pub fn codes(transcript: &str) -> Vec<u16> {
    transcript
        .split("\r\n")
        .filter(|line| line.len() >= 4 && line.as_bytes()[3] == b' ')
        .map(|line| line[..3].parse().expect("a reply code"))
        .collect()
}
