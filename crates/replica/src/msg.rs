//! The messages two sides of a replication exchange: plain data, so the
//! protocol crate can carry them and tests can count their bytes.
//!
//! A session is one pull: documents flow from the source to the target.
//! Two-way replication is two sessions, one each way (they may share a
//! connection and run at the same time).
//!
//! ```text
//!   target                                        source
//!     Hello{peer, Target} ───────────────▶ (either side may speak first)
//!                        ◀─────────────── Hello{peer, Source, high}
//!     ChangesSince{since, selection, window} ▶
//!                        ◀─────────────── Summary{upto₁, entries}   ┐ up to `window`
//!                        ◀─────────────── Summary{upto₂, entries}   ┘ pages unacknowledged
//!     Want{upto₁, unids} ───────────────▶
//!                        ◀─────────────── Note, Note, … (smallest first), Sent{upto₁}
//!     (writes durable, history saved)
//!     Ack{upto₁} ───────────────────────▶  (opens the window by one page)
//!     …
//!     Done{uptoₙ} ──────────────────────▶  (after the page marked last)
//! ```
//!
//! Every message travels in a [`Packet`] naming its session and numbering
//! it from 0 in each direction, so a duplicate is recognised and dropped
//! and a gap (a lost or overtaken message) ends the session rather than
//! being papered over. Either side may end a session with an [`Failure`].

use crate::error::ReplicaError;
use crate::ids::{ContentKey, Peer, Role, SessionId};
use crate::wire;
use nsf::{Seq, Unid};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The longest selection formula a session carries, in bytes (the formula
/// language's own limit).
pub const MAX_SELECTION: usize = 64 * 1024;

/// The most content keys one Want may offer (2 MiB of keys): a source
/// refuses a Want with more.
pub const MAX_HAVE: usize = 65_536;

/// One message of one session, numbered in its direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Packet<M> {
    /// The session, chosen by the side that opened it.
    pub session: SessionId,
    /// 0 for the sender's first message of the session, then one more each.
    pub n: u32,
    /// The message.
    pub body: M,
}

/// The first message from each side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Which database is speaking.
    pub peer: Peer,
    /// Which way documents flow, for the sender.
    pub role: Role,
    /// The source's last change sequence number when it said Hello (a
    /// target sends 0). A target whose history claims more than this has a
    /// history from another life of that file and starts from 0.
    #[serde(with = "wire::seq")]
    pub high: Seq,
}

impl Hello {
    /// Checks this Hello from the peer against `me`, whose role is
    /// `my_role`: the other role, the same replica, another instance.
    pub(crate) fn check(&self, me: Peer, my_role: Role) -> Result<(), ReplicaError> {
        if self.role == my_role {
            return Err(ReplicaError::WrongRole {
                ours: my_role,
                got: self.role,
            });
        }
        if self.peer.replica != me.replica {
            return Err(ReplicaError::NotAReplica {
                ours: me,
                theirs: self.peer,
            });
        }
        if self.peer.instance == me.instance {
            return Err(ReplicaError::SameInstance(me));
        }
        Ok(())
    }
}

/// The target's request: every change after `since`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangesSince {
    /// The checkpoint from the target's history for this source (0: all).
    #[serde(with = "wire::seq")]
    pub since: Seq,
    /// A selection formula: only documents it selects travel (deletion
    /// stubs always do). `None` selects everything.
    pub selection: Option<String>,
    /// How many summary pages the source may have unacknowledged.
    pub window: u16,
}

/// One changed document in a summary page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry<V> {
    /// The document.
    #[serde(with = "wire::unid")]
    pub unid: Unid,
    /// The version the source holds.
    pub version: V,
    /// Its size in bytes (what streaming orders by, smallest first).
    pub size: u64,
    /// Whether it is a deletion stub.
    pub deleted: bool,
    /// Its position in the source's change sequence.
    #[serde(with = "wire::seq")]
    pub change: Seq,
}

/// A page of the source's changes, in change-sequence order.
///
/// The page covers the source's changes in (previous page's `upto`, `upto`]:
/// every document changed there and selected is in it, at its version when
/// the page was read. Documents the selection leaves out still move `upto`,
/// so a page may be empty and still advance the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary<V> {
    /// The change sequence number this page covers up to.
    #[serde(with = "wire::seq")]
    pub upto: Seq,
    /// No page follows: the source had no later change when it read this one.
    pub last: bool,
    /// The changed documents, by ascending change number.
    pub entries: Vec<Entry<V>>,
}

impl<V> Summary<V> {
    /// Checks that this page may follow a page (or checkpoint) ending at
    /// `after`: it moves forward (an empty last page may stay put), holds
    /// at most `max` entries, each inside (`after`, `upto`], by strictly
    /// ascending change number, each document once.
    pub(crate) fn check(&self, after: Seq, max: usize) -> Result<(), ReplicaError> {
        if self.entries.len() > max {
            return Err(ReplicaError::PageTooLarge {
                upto: self.upto,
                len: self.entries.len(),
                max,
            });
        }
        let stays_put = self.upto == after && self.last && self.entries.is_empty();
        if self.upto <= after && !stays_put {
            return Err(ReplicaError::PageOrder {
                after,
                upto: self.upto,
            });
        }
        let mut previous = after;
        let mut seen = HashSet::with_capacity(self.entries.len());
        for e in &self.entries {
            if e.change <= previous || e.change > self.upto {
                return Err(ReplicaError::EntryOutOfPage {
                    unid: e.unid,
                    change: e.change,
                    after,
                    upto: self.upto,
                });
            }
            previous = e.change;
            if !seen.insert(e.unid) {
                return Err(ReplicaError::DuplicateEntry {
                    upto: self.upto,
                    unid: e.unid,
                });
            }
        }
        Ok(())
    }
}

/// The documents of one summary page the target wants. A page whose
/// documents the target already holds gets no Want at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Want {
    /// The page (its `upto`).
    #[serde(with = "wire::seq")]
    pub upto: Seq,
    /// The documents, each at most once.
    #[serde(with = "wire::unids")]
    pub unids: Vec<Unid>,
    /// Content the target holds in the versions these documents would
    /// replace: the source may send it by reference ([`ContentKey`]).
    pub have: Vec<ContentKey>,
}

/// A document on its way: what the machines read of it, and its content,
/// which they carry without looking inside (`N`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope<V, N> {
    /// The document.
    #[serde(with = "wire::unid")]
    pub unid: Unid,
    /// Its version.
    pub version: V,
    /// Whether it is a deletion stub.
    pub deleted: bool,
    /// The versions it was made from, oldest first, as far as it keeps
    /// them: the target's conflict check asks whether what it holds is
    /// among them.
    pub revisions: Vec<V>,
    /// Its size in bytes.
    pub size: u64,
    /// The content, opaque to replication.
    pub body: N,
}

/// Why a side ended a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// A message broke the protocol (order, numbering, content).
    Protocol,
    /// The two databases are not replicas of each other.
    NotAReplica,
    /// A database was asked to replicate with itself.
    SameInstance,
    /// The selection formula was refused.
    BadSelection,
    /// A local read or write failed on the sender's side.
    Local,
    /// The sender waited too long for the peer.
    TimedOut,
    /// The sender was told to stop.
    Cancelled,
}

/// The last message of a failed session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What happened, for the peer's log.
    pub message: String,
}

/// Messages from the target to the source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToSource {
    /// The target's Hello.
    Hello(Hello),
    /// The request, once both Hellos are known.
    ChangesSince(ChangesSince),
    /// The documents of one page the target wants.
    Want(Want),
    /// Every page up to `upto` is written and recorded in the history:
    /// the source may send one more page per page acknowledged.
    Ack {
        /// The checkpoint.
        #[serde(with = "wire::seq")]
        upto: Seq,
    },
    /// The page marked last is written and recorded: the session is over.
    Done {
        /// The final checkpoint.
        #[serde(with = "wire::seq")]
        upto: Seq,
    },
    /// The target ends the session.
    Error(Failure),
}

/// Messages from the source to the target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToTarget<V, N> {
    /// The source's Hello.
    Hello(Hello),
    /// A page of changes.
    Summary(Summary<V>),
    /// A wanted document.
    Note(Envelope<V, N>),
    /// Every document of the Want for page `upto` that still exists was
    /// sent.
    Sent {
        /// The page.
        #[serde(with = "wire::seq")]
        upto: Seq,
    },
    /// The source ends the session.
    Error(Failure),
}

impl ToSource {
    /// The message's name, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            ToSource::Hello(_) => "Hello",
            ToSource::ChangesSince(_) => "ChangesSince",
            ToSource::Want(_) => "Want",
            ToSource::Ack { .. } => "Ack",
            ToSource::Done { .. } => "Done",
            ToSource::Error(_) => "Error",
        }
    }
}

impl<V, N> ToTarget<V, N> {
    /// The message's name, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            ToTarget::Hello(_) => "Hello",
            ToTarget::Summary(_) => "Summary",
            ToTarget::Note(_) => "Note",
            ToTarget::Sent { .. } => "Sent",
            ToTarget::Error(_) => "Error",
        }
    }
}
