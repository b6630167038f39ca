//! IMAP on mail files: a person reads their mail file with any mail
//! program. This crate is the protocol and the mapping; the sockets, TLS
//! and the server's users are `server`'s (`server/src/imap/`).
//!
//! It sits above `mail` (a mailbox is a folder or view of the mail
//! template, a message's bytes are the original MIME the SMTP door kept)
//! and below `server`. docs/mail.md "IMAP" has the mapping table,
//! design.md §14 and I55 the UID rules.
//!
//! ```text
//!   session.rs    the sans-I/O state machine: bytes in, bytes out
//!   auth.rs       LOGIN, AUTHENTICATE PLAIN, the plaintext rule
//!   mailboxes.rs  LIST/LSUB, SELECT/EXAMINE, STATUS, CREATE/DELETE/RENAME, APPEND
//!   messages.rs   FETCH, STORE, SEARCH, EXPUNGE, COPY/MOVE (sequence numbers and UIDs)
//!   fetch.rs      one message's FETCH items
//!   mime.rs       sections, ENVELOPE, BODYSTRUCTURE from the message's bytes
//!   qresync.rs    QRESYNC: VANISHED (EARLIER) and the resync of a SELECT
//!   search.rs     SEARCH keys against a message
//!   seqset.rs     sequence sets over a snapshot, bounded by its size
//!   store.rs      the Mailstore and Accounts traits the session calls
//!   mailfile.rs   Mailstore over a mail file (nsf + views)
//!   copy.rs       COPY and MOVE on a mail file: copies filed in one commit
//!   limits.rs     SessionLimits and Transport
//! ```

mod auth;
mod copy;
mod error;
mod fetch;
mod limits;
mod mailboxes;
mod mailfile;
mod messages;
mod mime;
mod qresync;
mod search;
mod seqset;
mod session;
mod store;

pub use error::{ImapError, ImapResult};
pub use limits::{SessionLimits, Transport};
pub use mailfile::{MailFileStore, FLAGS_ITEM};
pub use session::{Session, Step};
pub use store::{
    Accounts, LoginRefused, MailboxInfo, Mailstore, MessageMeta, Snapshot, SpecialUse, Transfer,
};
