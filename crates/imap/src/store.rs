//! What the session asks of the mail behind it: the narrow face between
//! the IMAP state machine and a person's mail file.
//!
//! The session (`session.rs`) knows IMAP and nothing of databases; a
//! [`Mailstore`] knows a mail file and nothing of IMAP's wire. Keeping the
//! two apart lets the session be driven in tests by a model store (a
//! `BTreeMap`) and lets the server hand the session whatever store the
//! signed-in user is allowed to see (`mailfile.rs` for a mail file). An
//! [`Accounts`] checks credentials and opens the user's store: the server
//! implements it with its own users (argon2 passwords and tokens, the
//! same as HTTP), so IMAP has no accounts of its own.
//!
//! Every call blocks (it reads or writes the database): the driver runs
//! the session where blocking is allowed.

use crate::ImapResult;

/// A mailbox's special use (RFC 6154).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialUse {
    Drafts,
    Sent,
    Trash,
    All,
}

impl SpecialUse {
    /// The LIST attribute, without its backslash.
    pub fn attribute(self) -> &'static str {
        match self {
            SpecialUse::Drafts => "Drafts",
            SpecialUse::Sent => "Sent",
            SpecialUse::Trash => "Trash",
            SpecialUse::All => "All",
        }
    }
}

/// One mailbox as LIST shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailboxInfo {
    /// Its IMAP name (`INBOX` for the Inbox).
    pub name: String,
    pub special: Option<SpecialUse>,
    /// A view's members follow its selection: messages cannot be added
    /// to it by APPEND or COPY.
    pub computed: bool,
}

/// One message of a mailbox, as a snapshot holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageMeta {
    pub uid: u32,
    /// System flags with their backslash (`\Seen`), then keywords.
    pub flags: Vec<String>,
    /// When the message arrived here, µs since 1970.
    pub internal_date: i64,
    /// The size of the message as FETCH serves it, in bytes.
    pub size: u32,
    /// Its mod-sequence (RFC 7162 MODSEQ): the document's change sequence
    /// in the mail file, which every change of it (flags included) moves
    /// up. Never 0.
    pub modseq: u64,
}

/// A mailbox at one moment: its messages in UID order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub uid_validity: u32,
    /// Greater than every UID the mailbox has had or will get next
    /// (design.md I55).
    pub uid_next: u32,
    /// At least every message's `modseq` (RFC 7162 HIGHESTMODSEQ): the
    /// mail file's change sequence, read before the messages were.
    pub highest_modseq: u64,
    pub messages: Vec<MessageMeta>,
}

/// What COPY and MOVE do to the messages they take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// The originals stay where they are.
    Copy,
    /// The originals leave the source mailbox, in the same commit that
    /// stores the copies (RFC 6851).
    Move,
}

/// A person's mail as the session sees it (see the module docs). Names
/// are IMAP names; unknown ones are [`crate::ImapError::NoMailbox`].
pub trait Mailstore: Send {
    /// Every mailbox, the Inbox first.
    fn list(&self) -> ImapResult<Vec<MailboxInfo>>;
    /// The mailbox's messages the user may read (`$Readers` hides the
    /// others from every count and search).
    fn snapshot(&self, mailbox: &str) -> ImapResult<Snapshot>;
    /// The message's bytes as served (RFC 5322): as received for mail
    /// that came by SMTP.
    fn message(&self, mailbox: &str, uid: u32) -> ImapResult<Vec<u8>>;
    /// Replaces the message's flags (`\Recent` is never stored) and
    /// answers its new mod-sequence; with `unchanged_since`, only if the
    /// message's mod-sequence is not above it (RFC 7162 UNCHANGEDSINCE),
    /// answering `None` (and changing nothing) if it is.
    fn set_flags(
        &self,
        mailbox: &str,
        uid: u32,
        flags: &[String],
        unchanged_since: Option<u64>,
    ) -> ImapResult<Option<u64>>;
    /// Deletes the messages (a deletion stub each, so replicas and other
    /// sessions see it); durable when this returns.
    fn expunge(&self, mailbox: &str, uids: &[u32]) -> ImapResult<()>;
    /// UIDs below `uid_next` that may have left `mailbox` after the
    /// mod-sequence `since` (RFC 7162 QRESYNC, `VANISHED (EARLIER)`),
    /// ascending: at least every one that did. It may name UIDs the
    /// mailbox never held or holds now; the session leaves out those it
    /// holds, and a client ignores the ones it never had.
    fn vanished_since(&self, mailbox: &str, since: u64, uid_next: u32) -> ImapResult<Vec<u32>>;
    /// Stores a new message in the mailbox; durable when this returns.
    /// Answers its UID. `date` is its INTERNALDATE (µs since 1970) if the
    /// client gave one, else now.
    fn append(
        &self,
        mailbox: &str,
        flags: &[String],
        date: Option<i64>,
        message: &[u8],
    ) -> ImapResult<u32>;
    /// Copies the messages `uids` of `from` into `to` (or moves them),
    /// durable when this returns, all of them or none. Answers the
    /// copies' UIDs in the order of `uids`: new UIDs of `to`, above every
    /// UID it has had (RFC 4315 COPYUID).
    fn transfer(&self, from: &str, uids: &[u32], to: &str, how: Transfer) -> ImapResult<Vec<u32>>;
    /// Makes a user folder.
    fn create(&self, mailbox: &str) -> ImapResult<()>;
    /// Removes a user folder (its messages stay in the mail file).
    fn delete(&self, mailbox: &str) -> ImapResult<()>;
    /// Renames a user folder, and the folders below it in the hierarchy
    /// (`from/...`), in one commit.
    fn rename(&self, from: &str, to: &str) -> ImapResult<()>;
    /// A number that changes whenever anything in the store may have
    /// (the database's change sequence), cheap enough to read often: an
    /// idling session looks again only when it moved.
    fn change_marker(&self) -> u64;
}

/// Why a sign-in was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginRefused {
    /// Wrong user or password: one answer for both, so names cannot be
    /// probed.
    BadCredentials,
    /// The user exists but has no mail file here.
    NoMailFile,
    /// The server could not check now.
    Unavailable(String),
}

/// Checks credentials and opens the user's store (see the module docs).
pub trait Accounts: Send + Sync {
    fn login(&self, user: &str, password: &str) -> Result<Box<dyn Mailstore>, LoginRefused>;
}
