//! The Folio server: it puts the engine (`nsf`, `views`) on the network.
//!
//! ```text
//!   native.rs  tokio connection tasks driving protocol::ServerConnection ─┐
//!   http.rs    axum routes (JSON, streaming attachments) ─────────────────┤
//!                                                                         ▼
//!   service.rs one Service: every operation, with authentication, ACL checks
//!              and Reader/Author filtering, run on the worker pool
//!   auth.rs    server users (argon2 hashes) and tokens
//!   tls.rs     rustls configuration, self-signed certificates
//!   stats.rs   per-operation response-time histograms and counters
//! ```

mod error;

pub use error::{ServerError, ServerResult};
