//! The Rust client library for Folio's native protocol, async
//! ([`Client`]) and blocking ([`blocking::Client`]).
//!
//! ```text
//!   Client (Clone) ─┐   commands      ┌──────────────── connection task ───────────────┐
//!   Client (Clone) ─┼──────────────▶  │ ClientConnection (protocol crate, no I/O)      │ ◀─▶ TCP / TLS
//!   blocking::Client┘  ◀── answers ── │ routes answers to callers by request id        │
//!                      (per call)     └────────────────────────────────────────────────┘
//! ```
//!
//! **One connection, shared.** A `Client` is a handle to one connection,
//! and cloning it is cheap: every task (or, with the blocking client,
//! every thread) that holds a clone sends its requests down the same
//! socket. A connection costs the server a session, a slot in its
//! connection table and a TLS handshake; an application needs one, not
//! one per task.
//!
//! **Pipelining.** A call does not wait for the calls before it. The
//! protocol tags every request with an id and the server may answer in any
//! order (its worker pool runs requests in parallel), so fifty tasks
//! reading fifty documents put fifty requests on the wire back to back and
//! each gets its own answer as soon as the server has it: the connection's
//! throughput is not one round trip per request.
//!
//! **One owner of the socket.** A background task (`driver.rs`) owns the
//! socket and the sans-I/O state machine [`protocol::ClientConnection`].
//! Callers talk to it through channels, never through a lock around the
//! socket, and it reads and writes at the same time, so a large upload
//! never deadlocks against a server that is busy answering.
//!
//! **Backpressure.** Attachments are streamed both ways in chunks, and the
//! connection holds only a bounded amount of them: an upload reads its
//! next chunk only when the previous one is queued, and a download whose
//! writer falls behind makes the connection stop reading, so TCP slows the
//! server. Details, and the one deliberate exception (search hits), are in
//! `driver.rs`.
//!
//! **Failure.** When the connection ends, for whatever reason, every call
//! pending at that moment and every later call fails with
//! [`ClientError::Closed`] carrying the reason; nothing hangs. A request
//! the server refuses fails alone with [`ClientError::Server`] and the
//! connection goes on. Reconnecting is the application's decision.
//!
//! ```no_run
//! # async fn example() -> Result<(), client::ClientError> {
//! use client::{Client, ClientOptions, DocRef};
//!
//! let client = Client::connect(ClientOptions::new("127.0.0.1:1352").with_credentials("alice", "pw")).await?;
//! let (db, _info) = client.open_database("mail/alice.fdb").await?;
//! let meta = client.create_document(db, r#"{"Subject":"Hello"}"#).await?;
//! let doc = client.read_document(db, DocRef::Unid(meta.unid)).await?;
//! match client.update_document(db, meta.unid, Some(doc.meta.seq_num), false, r#"{"Subject":"Hi"}"#).await {
//!     Err(e) if e.is_conflict() => { /* someone else saved first: re-read and retry */ }
//!     other => { other?; }
//! }
//! # Ok(()) }
//! ```
//!
//! The protocol types a caller needs are re-exported here, so users of
//! this crate need not depend on `protocol`.

#![warn(missing_docs)]

mod attachments;
pub mod blocking;
mod client;
mod compression;
mod driver;
mod error;
mod lifecycle;
mod mailadmin;
mod mailsend;
mod meeting;
mod options;
mod replication;
mod requests;
mod search;
mod transport;

pub use attachments::{AttachmentInfo, DOWNLOAD_QUEUE, UPLOAD_CHUNK};
pub use client::Client;
pub use compression::NetCompression;
pub use error::ClientError;
pub use lifecycle::DatabaseCopied;
pub use mailsend::MailSent;
pub use options::{ClientOptions, TlsOptions, DEFAULT_ADDR, DEFAULT_CONNECT_TIMEOUT};
pub use requests::{Access, CollectionInfo, CollectionUpdate};
pub use search::SearchHits;

pub use protocol::{
    CollectionHandle, Compression, Cursor, DatabaseInfo, DatabaseSummary, DbHandle, DocRef,
    Document, ErrorCode, Found, MailAdminAnswer, MailAdminRequest, MailFile, MailFileFate,
    MailUser, MeetingAnswer, MeetingInfo, MeetingRequest, NoteId, NoteMeta, ProtocolError,
    ReadFlags, ReplicaDirection, Request, Response, Row, SessionId, Start, StatValue, Statistic,
    Timestamp, Unid, Value, DEFAULT_MAX_FRAME_SIZE,
};
