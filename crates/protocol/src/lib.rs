//! Folio's native protocol, with no I/O of its own ("sans-I/O").
//!
//! This crate turns bytes into meaning and back, and nothing else: it
//! never touches a socket, a thread, a clock or an async runtime. The
//! `server` crate's connection tasks and the `client` library drive it,
//! feeding it the bytes they read and writing the bytes it queues. Being
//! pure is what makes it testable to the last byte (split reads, merged
//! reads, hostile input) and fuzzable, and it must never panic on any
//! input: a malformed stream is a typed [`ProtocolError`].

mod compress;
mod error;
mod frame;
mod handshake;
mod ids;
mod message;

pub use compress::{BodyCodec, Compression, DEFAULT_COMPRESSION_THRESHOLD, STRONG_LEVEL};
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
pub use message::{
    DatabaseInfo, DatabaseSummary, DocRef, Document, Failure, Found, NoteMeta, ReadFlags, Request,
    Response, Row, Shape, Start, StatValue, Statistic, Value, MAX_ERROR_MESSAGE,
};
