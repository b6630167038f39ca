//! Identifiers that travel on the wire, as newtypes.
//!
//! The protocol crate depends on no other Folio crate (a client library
//! must not pull in the storage engine), so it has its own small id types;
//! the server maps them to `nsf`'s. Handles (`DbHandle`, `CollectionHandle`)
//! are numbers the server hands out per connection, so a request names an
//! open database in four bytes instead of repeating its path.

use serde::{Deserialize, Serialize};
use std::fmt;

#[cfg(test)]
use proptest_derive::Arbitrary;

/// Identifies one request on a connection; its responses carry the same id.
/// Chosen by the client; 0 is reserved for connection-level error frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u32);

impl RequestId {
    /// The id that connection-level error frames carry.
    pub const CONNECTION: RequestId = RequestId(0);
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifies an authenticated session; chosen by the server's caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A database opened on this connection (see `Request::OpenDatabase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct DbHandle(pub u32);

/// A view or folder opened on this connection (see `Request::OpenCollection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct CollectionHandle(pub u32);

/// A document's universal id: 128 bits, the same in every replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Unid(pub [u8; 16]);

impl fmt::Display for Unid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02X}"))
    }
}

/// A document's id local to one database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct NoteId(pub u32);

/// A position in a database's change sequence: "modified since" returns
/// the changes after it and a new cursor to continue from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Cursor(pub u64);

/// A point in time: microseconds since the Unix epoch, UTC (as in `nsf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct Timestamp(pub i64);
