//! Folio's native protocol, with no I/O of its own ("sans-I/O").
//!
//! This crate turns bytes into meaning and back, and nothing else: it
//! never touches a socket, a thread, a clock or an async runtime. The
//! `server` crate's connection tasks and the `client` library drive it,
//! feeding it the bytes they read and writing the bytes it queues. Being
//! pure is what makes it testable to the last byte (split reads, merged
//! reads, hostile input) and fuzzable, and it must never panic on any
//! input: a malformed stream closes the connection with an error frame
//! and a typed [`ProtocolError`].
//!
//! Layers, bottom up (docs/protocol.md specifies each byte):
//!
//! ```text
//!   ServerConnection / ClientConnection   state machines: handshake, rules, request ids
//!     message    Request / Response / Failure bodies (postcard, JSON documents)
//!       raw_bytes  replication packets as byte strings (one copy, not a step per byte)
//!       mailadmin  the mail user administration request and answer
//!       meeting    the calendar's requests and answers
//!       mailfiles  files sent with a message, as one upload
//!     handshake  Hello / Welcome, version and compression negotiation
//!     wire       per-connection frame decoder + output buffer + compression
//!       compress   off / fast (LZ4) / strong (zstd), bomb-proof decompression
//!       frame      length-prefixed frames, streaming FrameDecoder
//! ```

#![warn(missing_docs)]

mod client;
mod compress;
mod error;
mod frame;
mod handshake;
mod ids;
mod mailadmin;
mod mailfiles;
mod meeting;
mod message;
mod peer;
mod raw_bytes;
mod server;
mod state;
mod wire;

pub use client::{ClientConfig, ClientConnection, ClientEvent};
pub use compress::{
    BodyCodec, Compression, ZstdLevel, DEFAULT_COMPRESSION_THRESHOLD, STRONG_LEVEL,
};
pub use error::{ErrorCode, ProtocolError};
pub use frame::{
    Flags, Frame, FrameDecoder, FrameType, DEFAULT_MAX_FRAME_SIZE, HEADER_LEN, LENGTH_LEN,
    MIN_MAX_FRAME_SIZE,
};
pub use handshake::{
    negotiate_compression, negotiate_version, Credentials, Hello, Welcome, MAGIC,
    SUPPORTED_VERSIONS,
};
pub use ids::{CollectionHandle, Cursor, DbHandle, NoteId, RequestId, SessionId, Timestamp, Unid};
pub use mailadmin::{MailAdminAnswer, MailAdminRequest, MailFileFate, MailUser};
pub use mailfiles::MailFile;
pub use meeting::{MeetingAnswer, MeetingInfo, MeetingRequest};
pub use message::{
    ArchiveSummary, BackupSummary, CompactSummary, DatabaseInfo, DatabaseSummary, DocRef, Document,
    Failure, Found, NoteMeta, ReadFlags, ReplicaDirection, Request, Response, Row, Shape, Start,
    StatValue, Statistic, Value, MAX_ERROR_MESSAGE,
};
pub use peer::{PeerDirection, PeerPull, PeerReplicated, PeerReplication};
pub use server::{ServerConfig, ServerConnection, ServerEvent};
pub use state::Phase;

#[cfg(test)]
mod robustness;
#[cfg(test)]
mod testkit;
