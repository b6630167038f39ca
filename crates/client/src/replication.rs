//! Replication sessions and the change feed, as the native protocol
//! carries them.
//!
//! The client library does not run replication itself (that is the
//! `replica` crate's machines, driven from above: `folio replicate
//! --server`); it carries a session's packets, opaque bytes here, one
//! step at a time: [`Client::replicate`] sends the caller's packets and
//! hands over the server's, in order, as they stream in, so the caller
//! can write documents while the server is still reading the next ones.
//! [`Client::wait_changes`] is one turn of the change feed.
//!
//! [`Client::traffic`] counts the bytes the connection moved, which is
//! what a replication reports as "bytes on the wire".

use crate::client::Client;
use crate::driver::{Command, Delivery, Route};
use crate::error::ClientError;
use protocol::{Cursor, DbHandle, Document, ReplicaDirection, Request, Response};
use tokio::sync::mpsc;

impl Client {
    /// One step of replication session `session` on `db`: sends
    /// `packets`, calls `on_packet` with each packet of the server's side
    /// in order as it arrives, and returns whether the server's side of
    /// the session is over.
    pub async fn replicate(
        &self,
        db: DbHandle,
        session: u64,
        direction: ReplicaDirection,
        packets: Vec<Vec<u8>>,
        mut on_packet: impl FnMut(Vec<u8>),
    ) -> Result<bool, ClientError> {
        let request = Request::Replicate {
            db,
            session,
            direction,
            packets,
        };
        let (tx, mut items) = mpsc::unbounded_channel();
        self.submit(Command::Request {
            request,
            route: Route::Items(tx),
            started: None,
        })?;
        loop {
            let Some(delivery) = items.recv().await else {
                return Err(self.closed_error());
            };
            match delivery {
                Delivery::Item(Response::ReplicationPacket(bytes)) => on_packet(bytes),
                Delivery::Item(other) => {
                    return Err(ClientError::unexpected("ReplicationPacket", &other))
                }
                Delivery::Chunk(_) => {
                    return Err(ClientError::UnexpectedResponse(
                        "attachment bytes in a replication".into(),
                    ))
                }
                Delivery::Final(answer) => {
                    return match answer? {
                        Response::Replicated { over } => Ok(over),
                        other => Err(ClientError::unexpected("Replicated", &other)),
                    }
                }
            }
        }
    }

    /// One turn of the change feed: the documents changed after `since`
    /// that the caller may read, waiting up to `timeout_ms` for one if
    /// there is none yet; with the cursor to ask from next and whether
    /// more are waiting. An empty answer means the wait ran out.
    pub async fn wait_changes(
        &self,
        db: DbHandle,
        since: Cursor,
        limit: u32,
        timeout_ms: u32,
    ) -> Result<(Vec<Document>, Cursor, bool), ClientError> {
        let request = Request::WaitChanges {
            db,
            since,
            limit,
            timeout_ms,
        };
        match self.request(request).await? {
            Response::Changes { docs, next, more } => Ok((docs, next, more)),
            other => Err(ClientError::unexpected("Changes", &other)),
        }
    }

    /// Asks the server to replicate one of its databases with a peer
    /// server (`ReplicatePeer`, server administrators only); answers once
    /// every pull is durable on its target.
    pub async fn replicate_peer(
        &self,
        request: protocol::PeerReplication,
    ) -> Result<protocol::PeerReplicated, ClientError> {
        match self.request(Request::ReplicatePeer(request)).await? {
            Response::PeerReplicated(r) => Ok(r),
            other => Err(ClientError::unexpected("PeerReplicated", &other)),
        }
    }

    /// Bytes this connection wrote and read since its handshake, as they
    /// travel (framed and compressed).
    pub fn traffic(&self) -> (u64, u64) {
        self.shared().traffic()
    }
}
