//! Lifecycle and request bookkeeping shared by both state machines.
//!
//! A connection's life is a [`Phase`]; each side also keeps a table of the
//! requests in flight, because pipelining means many are open at once and
//! their answers may come back in any order. An entry lives from the
//! request until it is both *answered* (its final `Response` or `Error`)
//! and, for an upload, *ended* (the client's `End`). Keeping the two
//! apart is what lets a server refuse an upload early: the refusal is the
//! answer, the chunks still in the pipe are dropped, and the id is free
//! again only once the `End` arrives, so the client can never reuse an id
//! the server still thinks is open.

use crate::error::ProtocolError;
use crate::frame::FrameType;
use crate::ids::RequestId;
use crate::message::Shape;
use std::collections::HashMap;

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the Hello (server) or the Welcome (client).
    Handshaking,
    /// Server only: the Hello arrived; waiting for the caller's
    /// `accept` or `refuse`.
    Authenticating,
    /// Requests and responses flow.
    Open,
    /// Nothing more is received or sent (an error frame may still be
    /// waiting in the output).
    Closed,
}

impl Phase {
    /// The phase in words, for errors.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Phase::Handshaking => "waiting for the handshake",
            Phase::Authenticating => "authenticating",
            Phase::Open => "open",
            Phase::Closed => "closed",
        }
    }
}

/// One request in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub(crate) shape: Shape,
    /// An upload whose `End` has not been seen (or sent) yet.
    pub(crate) uploading: bool,
    /// Its final `Response` or `Error` has been seen (or sent).
    pub(crate) answered: bool,
}

/// The requests in flight on one connection.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: HashMap<RequestId, Pending>,
}

impl InFlight {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn contains(&self, id: RequestId) -> bool {
        self.map.contains_key(&id)
    }

    /// Records a new request; a duplicate id is a protocol violation.
    pub(crate) fn open(&mut self, id: RequestId, shape: Shape) -> Result<(), ProtocolError> {
        if id == RequestId::CONNECTION {
            return Err(ProtocolError::ZeroRequestId);
        }
        if self.map.contains_key(&id) {
            return Err(ProtocolError::DuplicateRequestId(id));
        }
        self.map.insert(
            id,
            Pending {
                shape,
                uploading: shape == Shape::Upload,
                answered: false,
            },
        );
        Ok(())
    }

    /// The request `id` if it is in flight and `allowed` accepts it;
    /// `expected` names what was needed, for the error.
    pub(crate) fn check(
        &self,
        frame: FrameType,
        id: RequestId,
        expected: &'static str,
        allowed: impl Fn(&Pending) -> bool,
    ) -> Result<Pending, ProtocolError> {
        match self.map.get(&id) {
            Some(p) if allowed(p) => Ok(*p),
            _ => Err(ProtocolError::UnknownRequest {
                frame,
                id,
                expected,
            }),
        }
    }

    /// Marks `id` answered, forgetting it unless its upload is still open.
    pub(crate) fn answer(&mut self, id: RequestId) {
        self.update(id, |p| p.answered = true);
    }

    /// Marks `id`'s upload ended, forgetting it if it was answered.
    pub(crate) fn end_upload(&mut self, id: RequestId) {
        self.update(id, |p| p.uploading = false);
    }

    fn update(&mut self, id: RequestId, f: impl FnOnce(&mut Pending)) {
        if let Some(p) = self.map.get_mut(&id) {
            f(p);
            if p.answered && !p.uploading {
                self.map.remove(&id);
            }
        }
    }
}
