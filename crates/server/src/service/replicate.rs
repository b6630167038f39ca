//! The server's side of a replication session, and the change feed's
//! wait.
//!
//! A client replicating with the server runs one machine of a pull on its
//! own file and the server runs the other on the database here
//! (`replica::local::{SourceSide, TargetSide}`: the same store work as
//! the local driver, so the same durability contract — a write batch is
//! acknowledged only once its transaction is durable, a history entry is
//! stored after the batches it covers, I26, I27). The door (the native
//! protocol's `Replicate`) carries the packets; this file decides who may
//! open which side and what may travel:
//!
//! ```text
//!   pull (server is the source)   Reader; only documents the caller may
//!                                 read appear in a summary or travel
//!   push (server is the target)   Author; each incoming document is
//!                                 written only if the caller may create
//!                                 it, or edit (delete) what is held —
//!                                 Author rules for $Authors, Designer for
//!                                 design notes, Manager for the ACL note;
//!                                 the others are left alone (refused)
//! ```
//!
//! Packets travel as fragments (`net::Fragmenter`, at most
//! `net::FRAGMENT_BYTES` each, so a document of any size fits the frame
//! limit); the session gathers incoming ones (`net::Reassembler`) within
//! the server's `max_attachment_bytes` plus room for the note, and a
//! pushed document whose attachment claims more than that limit is
//! refused before any of it is decoded or written (413, naming the
//! document, the attachment and the limit), which ends the session.
//!
//! The change feed's wait (`Service::changes_after`) answers at once when
//! something the caller may read changed after the cursor, else waits for
//! the database's next commit (`nsf::Database::next_change`) until its
//! deadline; changes the caller may not read move the cursor but never
//! wake it.

use super::access::{bad, denied};
use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{Access, AccessLevel, Database, Note};
use protocol::{Cursor, Document, ReplicaDirection};
use replica::local::net::{self, Fragmenter, Limits, Reassembler};
use replica::local::{LocalOptions, SourceSide, TargetSide};
use replica::Opening;
use std::sync::Arc;
use std::time::Duration;

/// Entries per summary page the server's source sends.
const PAGE_SIZE: u32 = 500;

/// The server's side of one replication session.
pub struct ReplicaSession {
    direction: ReplicaDirection,
    side: Side,
    /// What the caller may send.
    limits: Limits,
    /// The caller's packet being gathered from its fragments.
    inbound: Reassembler,
}

enum Side {
    Source(SourceSide),
    Target(TargetSide),
}

impl ReplicaSession {
    /// The way documents flow, for the caller.
    pub fn direction(&self) -> ReplicaDirection {
        self.direction
    }

    /// The connection that carried it is gone.
    pub fn connection_lost(&mut self) {
        match &mut self.side {
            Side::Source(s) => s.connection_lost(),
            Side::Target(t) => t.connection_lost(),
        }
    }
}

impl Service {
    /// Opens the server's side of a session on `db` for `caller`, after
    /// the access check for `direction` (module docs).
    pub fn open_replication(
        &self,
        caller: &Caller,
        db: &Database,
        direction: ReplicaDirection,
    ) -> ServerResult<ReplicaSession> {
        let limits = Limits::for_attachments(self.limits.max_attachment_bytes);
        let side = match direction {
            ReplicaDirection::Pull => {
                let access = self.require(caller, db, AccessLevel::Reader)?;
                let side = SourceSide::new(db, Opening::Respond, PAGE_SIZE).map_err(nsf_err)?;
                Side::Source(side.visible_only(Box::new(move |n: &Note| access.can_read(n))))
            }
            ReplicaDirection::Push => {
                let access = self.require(caller, db, AccessLevel::Author)?;
                let side = TargetSide::new(db, Opening::Respond, &LocalOptions::default())
                    .map_err(nsf_err)?;
                Side::Target(side.writable_only(Box::new(move |incoming, held| {
                    may_write(&access, incoming, held)
                })))
            }
        };
        Ok(ReplicaSession {
            direction,
            side,
            limits,
            inbound: limits.reassembler(),
        })
    }

    /// One step of `session` on `db`: takes the caller's `packets`
    /// (fragments, gathered into packets), does what they call for, and
    /// hands every fragment of every packet the server's side sends to
    /// `send` (which may fail: the connection is gone). Returns whether
    /// the session is over. A fragment or packet that does not decode
    /// ends it (400), an attachment above the limit too (413).
    pub fn replicate_step(
        &self,
        session: &mut ReplicaSession,
        db: &Database,
        packets: Vec<Vec<u8>>,
        send: &mut dyn FnMut(Vec<u8>) -> ServerResult<()>,
    ) -> ServerResult<bool> {
        let mut failed: Option<ServerError> = None;
        let mut forward = |bytes: Result<Vec<u8>, replica::ReplicaError>| {
            if failed.is_some() {
                return;
            }
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => {
                    failed = Some(ServerError::Internal(format!("a replication packet: {e}")));
                    return;
                }
            };
            for fragment in Fragmenter::new(bytes) {
                if let Err(e) = send(fragment) {
                    failed = Some(e);
                    return;
                }
            }
        };
        let limits = session.limits;
        let mut whole = Vec::new();
        for fragment in packets {
            match session.inbound.push(fragment) {
                Ok(Some(packet)) => whole.push(packet),
                Ok(None) => {}
                Err(e) => return Err(refused(e)),
            }
        }
        let over = match &mut session.side {
            Side::Source(source) => {
                for bytes in whole {
                    let packet = net::decode_to_source(&bytes).map_err(refused)?;
                    // A packet the machine refuses ends its session; it
                    // tells the caller itself.
                    let _ = source.receive(packet);
                }
                source.run(db, &mut |p| forward(net::encode_to_target(&p)));
                source.is_over()
            }
            Side::Target(target) => {
                for bytes in whole {
                    let packet = net::decode_to_target(&bytes, &limits).map_err(refused)?;
                    let _ = target.receive(packet);
                }
                target.run(db, &mut |p| forward(net::encode_to_source(&p)));
                target.is_over()
            }
        };
        match failed {
            Some(e) => {
                session.connection_lost();
                Err(e)
            }
            None => Ok(over),
        }
    }

    /// The changes after `since` the caller may read (as
    /// `modified_since`, on the blocking pool); if none, waits for
    /// commits until `timeout` has passed or `stop` resolves, and answers
    /// with what came (maybe nothing, with the cursor moved past changes
    /// the caller may not see).
    pub async fn changes_after(
        self: &Arc<Self>,
        caller: &Arc<Caller>,
        db: &Arc<Database>,
        since: Cursor,
        limit: u32,
        timeout: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) -> ServerResult<(Vec<Document>, Cursor, bool)> {
        let deadline = tokio::time::Instant::now() + timeout;
        tokio::pin!(stop);
        let mut since = since;
        loop {
            let (service, c, d) = (self.clone(), caller.clone(), db.clone());
            let (docs, next, more) =
                tokio::task::spawn_blocking(move || service.modified_since(&c, &d, since, limit))
                    .await
                    .map_err(|e| ServerError::Internal(format!("the change feed's read: {e}")))??;
            if !docs.is_empty() || more {
                return Ok((docs, next, more));
            }
            since = next;
            tokio::select! {
                r = tokio::time::timeout_at(deadline, db.next_change(nsf::Seq(since.0))) => match r {
                    Ok(r) => { r.map_err(nsf_err)?; }
                    Err(_) => return Ok((docs, since, false)),
                },
                () = &mut stop => return Ok((docs, since, false)),
            }
        }
    }

    /// Refuses a change feed to a caller below Reader (before waiting).
    pub fn require_reader(&self, caller: &Caller, db: &Database) -> ServerResult<()> {
        if self.access(caller, db)?.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        Ok(())
    }
}

/// What the caller sent that cannot be taken: too large (413), or not
/// the wire form (400).
fn refused(e: replica::ReplicaError) -> ServerError {
    match e {
        replica::ReplicaError::AttachmentTooLarge { .. }
        | replica::ReplicaError::PacketTooLarge { .. } => ServerError::TooLarge(e.to_string()),
        e => bad(e.to_string()),
    }
}

/// Whether `access` may write `incoming` over `held` (module docs).
pub(super) fn may_write(access: &Access, incoming: &Note, held: Option<&Note>) -> bool {
    match held {
        None => access.can_create() && (incoming.deleted || access.can_edit(incoming)),
        Some(h) if incoming.deleted => access.can_delete(h),
        Some(h) => access.can_edit(h) && access.can_edit(incoming),
    }
}
