//! Writing a batch of incoming documents, with the conflict documents it
//! calls for, through whatever store the driver has.
//!
//! The machines never write; they hand the driver a [`WriteBatch`]. The
//! driver opens one transaction on its database and calls
//! [`WriteBatch::apply`] with it: each document goes through
//! `put_foreign` (the higher version wins, §11.4), and the conflict rule
//! ([`crate::resolve`]) runs on what that put reports, so the write that
//! replaces or beats a concurrent version and the conflict document that
//! keeps the loser are in the same transaction (I27): no crash can lose the
//! loser in between. The driver then commits, and only once the commit is
//! durable reports the batch's results to the puller, which is what lets
//! the checkpoint move (I26).

use crate::conflict::{resolve, Applied, ConflictDoc};
use crate::ids::BatchId;
use crate::msg::Envelope;
use crate::version::Version;
use nsf::Unid;

/// A database as a write batch sees it: one open transaction.
pub trait ForeignStore<V, N> {
    /// The store's error; the driver reports it and the session ends.
    type Error;

    /// Writes a document made elsewhere under its own identity and
    /// version: stored if new, replacing what is held if the incoming
    /// version is higher, nothing if it is equal or lower.
    fn put_foreign(&mut self, note: &Envelope<V, N>) -> Result<Applied<V, N>, Self::Error>;

    /// Writes a conflict document: like `put_foreign` for a document with
    /// `doc.unid` and `doc.version` whose content is `doc.body` marked as a
    /// conflict (`$Conflict`) and a response to `doc.response_to` (`$Ref`).
    /// Equal or lower than what is held: nothing.
    fn put_conflict(&mut self, doc: &ConflictDoc<V, N>) -> Result<(), Self::Error>;
}

/// What happened to one incoming document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// New here, stored.
    Stored,
    /// Replaced a lower version.
    Replaced,
    /// Held already.
    AlreadyHave,
    /// A higher version is held.
    Lost,
    /// The driver's access check refused it (the writer may not change
    /// that document here); nothing was written for it.
    Refused,
}

/// The result for one incoming document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The document.
    pub unid: Unid,
    /// What the put did.
    pub outcome: Outcome,
    /// The conflict document written beside it, if any.
    pub conflict: Option<Unid>,
}

/// Documents to write in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteBatch<V, N> {
    /// Names the batch in the acknowledgement.
    pub id: BatchId,
    /// The documents, in the order they arrived.
    pub notes: Vec<Envelope<V, N>>,
}

impl<V: Version, N: Clone> WriteBatch<V, N> {
    /// Puts every document and the conflict documents the rule calls for,
    /// in order, into `store` (one transaction of the driver's). On an
    /// error the driver abandons the transaction: nothing of the batch may
    /// become durable.
    pub fn apply<S: ForeignStore<V, N>>(&self, store: &mut S) -> Result<Vec<Written>, S::Error> {
        let mut results = Vec::with_capacity(self.notes.len());
        for note in &self.notes {
            let applied = store.put_foreign(note)?;
            // I27: the loser's conflict document goes into the same
            // transaction as the put that decided it.
            let conflict = match resolve(note, &applied) {
                Some(doc) => {
                    store.put_conflict(&doc)?;
                    Some(doc.unid)
                }
                None => None,
            };
            let outcome = match applied {
                Applied::Stored => Outcome::Stored,
                Applied::AlreadyHave => Outcome::AlreadyHave,
                Applied::Replaced { .. } => Outcome::Replaced,
                Applied::Lost { .. } => Outcome::Lost,
            };
            results.push(Written {
                unid: note.unid,
                outcome,
                conflict,
            });
        }
        Ok(results)
    }
}
