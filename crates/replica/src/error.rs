//! The crate's one error type.
//!
//! Two kinds of trouble reach a machine, and they end differently:
//!
//! * **From the peer** (a message out of order, a document nobody asked
//!   for, a page that goes backwards) or from the link (a gap, silence):
//!   the session is over. The machine moves to `Failed`, queues an
//!   [`crate::Failure`] for the peer where that still makes sense, and
//!   returns the error. Nothing the bad message carried is written, and
//!   the history never moves past what was durably written (I26), so the
//!   next session resumes from the last checkpoint.
//! * **From the driver** (an answer to a query it was never asked, a write
//!   acknowledgement for an unknown batch, a page of changes that is not
//!   the one requested): a bug in the caller. The call is refused with the
//!   error and changes nothing; the session goes on.

use crate::ids::{BatchId, Peer, QueryId, Role};
use crate::msg::ErrorCode;
use nsf::{Seq, Unid};

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    /// The peer is a copy of another database.
    #[error("{theirs} is not a replica of {ours}")]
    NotAReplica {
        /// This side.
        ours: Peer,
        /// The peer.
        theirs: Peer,
    },
    /// The peer is this very file.
    #[error("{0} cannot replicate with itself")]
    SameInstance(Peer),
    /// The peer's Hello claimed the wrong role.
    #[error("the peer says it is the {got:?}, but this side is the {ours:?}")]
    WrongRole {
        /// This side's role.
        ours: Role,
        /// What the peer claimed.
        got: Role,
    },
    /// A message arrived where the protocol does not allow it.
    #[error("unexpected {message} while {state}")]
    Unexpected {
        /// The message's name.
        message: &'static str,
        /// What the machine was doing.
        state: &'static str,
    },
    /// A message was lost or overtaken: its number is past the next one.
    #[error("message {got} arrived while message {expected} was expected (lost or reordered)")]
    Gap {
        /// The number expected next.
        expected: u32,
        /// The number that arrived.
        got: u32,
    },
    /// A summary page does not follow the previous one.
    #[error("summary page up to {} does not follow the previous page (up to {})", .upto.0, .after.0)]
    PageOrder {
        /// The previous page's end (or the checkpoint).
        after: Seq,
        /// The page's `upto`.
        upto: Seq,
    },
    /// A summary entry lies outside its page or out of order.
    #[error("summary entry {unid} at change {} is outside page ({}, {}] or out of order", .change.0, .after.0, .upto.0)]
    EntryOutOfPage {
        /// The document.
        unid: Unid,
        /// Its change number.
        change: Seq,
        /// The page's start (exclusive).
        after: Seq,
        /// The page's end.
        upto: Seq,
    },
    /// A summary page names a document twice.
    #[error("summary page up to {} names {unid} twice", .upto.0)]
    DuplicateEntry {
        /// The page.
        upto: Seq,
        /// The document.
        unid: Unid,
    },
    /// A summary page holds more entries than this side accepts.
    #[error("summary page up to {} has {len} entries, more than {max}", .upto.0)]
    PageTooLarge {
        /// The page.
        upto: Seq,
        /// Its entries.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The source sent more pages than the window allows.
    #[error("the source sent more than {window} unacknowledged pages")]
    WindowExceeded {
        /// The window.
        window: u16,
    },
    /// A document arrived that the target did not ask for (or twice).
    #[error("document {unid} was not wanted (or arrived twice)")]
    Unwanted {
        /// The document.
        unid: Unid,
    },
    /// A Want, Ack, Sent or Done names a page that is not the one due.
    #[error("{message} names page {}, which is not the page due", .upto.0)]
    WrongPage {
        /// The message's name.
        message: &'static str,
        /// The page it named.
        upto: Seq,
    },
    /// A Want names a document that is not in its page, or names one twice.
    #[error("Want for page {} names {unid}, which that page does not offer (or names it twice)", .upto.0)]
    NotOffered {
        /// The page.
        upto: Seq,
        /// The document.
        unid: Unid,
    },
    /// A document names content by reference that the target never
    /// offered.
    #[error("document {unid} names the content of attachment {attachment:?} by reference, but this side never offered it")]
    NotHeld {
        /// The document.
        unid: Unid,
        /// The attachment.
        attachment: String,
    },
    /// A Want offers more content keys than a source accepts.
    #[error("Want for page {} offers {len} content keys (at most {max})", .upto.0)]
    HaveTooLong {
        /// The page.
        upto: Seq,
        /// Keys offered.
        len: usize,
        /// The limit ([`crate::msg::MAX_HAVE`]).
        max: usize,
    },
    /// The request asked for something out of range.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The peer ended the session.
    #[error("the peer ended the session ({code:?}): {message}")]
    Remote {
        /// Its code.
        code: ErrorCode,
        /// Its message.
        message: String,
    },
    /// The driver reported a local failure, which ended the session.
    #[error("local failure ({code:?}): {message}")]
    Local {
        /// The code sent to the peer.
        code: ErrorCode,
        /// What the driver said.
        message: String,
    },
    /// Nothing came from the peer for longer than the idle timeout.
    #[error("no progress for {idle_micros} µs")]
    TimedOut {
        /// How long the session was idle.
        idle_micros: i64,
    },
    /// The connection went away.
    #[error("the connection was lost")]
    Disconnected,
    /// The session was cancelled by its driver.
    #[error("the session was cancelled")]
    Cancelled,
    /// The driver answered a query that is not outstanding.
    #[error("no local query {0:?} is outstanding")]
    UnknownQuery(QueryId),
    /// The driver acknowledged a batch that is not outstanding.
    #[error("no write batch {0:?} is outstanding")]
    UnknownBatch(BatchId),
    /// The driver answered with the wrong number of items.
    #[error("{what}: expected {expected} answers, got {got}")]
    AnswerMismatch {
        /// Which answer.
        what: &'static str,
        /// How many were asked for.
        expected: usize,
        /// How many came.
        got: usize,
    },
    /// The driver answered with something that was not asked for.
    #[error("driver answer does not match the request: {0}")]
    BadAnswer(String),
    /// A document carries an attachment whose original is larger than
    /// this side accepts (`local::net::Limits`): refused at the door,
    /// before any of it is decoded or written.
    #[error("document {unid}: attachment {name:?} claims {size} bytes, more than the limit of {max} (max_attachment_bytes)")]
    AttachmentTooLarge {
        /// The document.
        unid: Unid,
        /// The attachment's name.
        name: String,
        /// The original size it claims (or carries).
        size: u64,
        /// The limit.
        max: u64,
    },
    /// A packet announced (or grew) larger than this side accepts.
    #[error("a replication packet of {len} bytes is more than the limit of {max}")]
    PacketTooLarge {
        /// Its announced length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A sequence of fragments that does not make one packet
    /// (`local::net::Reassembler`); nothing of it is used.
    #[error("a bad replication fragment: {0}")]
    Fragment(crate::local::net::FragmentFault),
    /// Bytes from the network that are not a packet of the wire form
    /// (`local::net`); nothing of them is used.
    #[error("a malformed {what} packet: {reason}")]
    Malformed {
        /// Which direction's packet.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl ReplicaError {
    /// The code a peer is told when this error ends the session.
    pub fn code(&self) -> ErrorCode {
        match self {
            ReplicaError::NotAReplica { .. } => ErrorCode::NotAReplica,
            ReplicaError::SameInstance(_) => ErrorCode::SameInstance,
            ReplicaError::Remote { code, .. } | ReplicaError::Local { code, .. } => *code,
            ReplicaError::TimedOut { .. } => ErrorCode::TimedOut,
            ReplicaError::Cancelled => ErrorCode::Cancelled,
            _ => ErrorCode::Protocol,
        }
    }

    /// Whether the peer should be told: not when the peer ended the
    /// session, nor when there is no connection left to tell it on.
    pub(crate) fn tell_peer(&self) -> bool {
        !matches!(
            self,
            ReplicaError::Remote { .. } | ReplicaError::Disconnected
        )
    }
}
