//! The `folio` crate's one error type.
//!
//! A failed command prints one line, `folio: <message>`, and exits
//! non-zero; the variant says what kind of failure it was, so code (and
//! tests) can tell a typo from a missing document from a refused sign-in
//! without reading the text.
//!
//! The two stores the commands run over classify their failures the same
//! way: an embedded command's [`ServerError`] (the server's own
//! `Service`, run in-process) and a networked command's answer from the
//! server (a [`ClientError::Server`] with the same code) both go through
//! [`FolioError::answer`], so the same mistake is the same variant with the
//! same message whichever way the command ran.
//!
//! ```text
//!   ServerError ──code()──┐
//!                         ├─▶ answer(code, message) ─▶ BadInput | NotFound | Access | Conflict | Busy | Internal
//!   ClientError::Server ──┘
//! ```

use protocol::ErrorCode;
use server::ServerError;
use std::path::PathBuf;

/// Result of the `folio` crate's operations.
pub type FolioResult<T> = Result<T, FolioError>;

/// Everything a `folio` command can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FolioError {
    /// The command line asks for what cannot be done: an option the
    /// command would ignore, an argument out of range.
    #[error("{0}")]
    Usage(String),
    /// The command works on the data directory's files, and was given
    /// `--server`.
    #[error(
        "{command} works on the data directory itself: run it on the server machine \
         without --server (with the server stopped)"
    )]
    NeedsDataDirectory {
        /// The command, as typed (`db check`).
        command: &'static str,
    },
    /// The command has no server side yet (`mail send` until the server
    /// has a send door).
    #[error("{command} is not yet supported over --server: run it on the data directory (without --server, with the server stopped)")]
    NotYetOverServer {
        /// The command, as typed (`mail send`).
        command: &'static str,
    },
    /// The command asks a running server, and was run on a data directory.
    #[error("{command} asks a running server: give --server HOST:PORT")]
    NeedsServer {
        /// The command, as typed (`show stats`).
        command: &'static str,
    },
    /// The input was refused: malformed JSON, a bad UNID, formula, view
    /// definition, database path or access-control list, something above
    /// a size limit.
    #[error("{0}")]
    BadInput(String),
    /// No such database, document, attachment or view (or one the caller
    /// may not see: the two are not told apart).
    #[error("{0}")]
    NotFound(String),
    /// Credentials missing or wrong, or the access-control list does not
    /// allow the operation.
    #[error("{0}")]
    Access(String),
    /// A save conflict, or something of that name already exists.
    #[error("{0}")]
    Conflict(String),
    /// The server cannot take the request now (its log is full, it is
    /// shutting down, it is at its connection limit; the message says
    /// which); retry.
    #[error("{0}")]
    Busy(String),
    /// The settings (`folio.toml`, `FOLIO__` variables) are invalid.
    #[error("{0}")]
    Settings(String),
    /// Another process has the data directory open.
    #[error("data directory {} is in use by another Folio process", .0.display())]
    DataDirectoryInUse(PathBuf),
    /// A file or stream of the command's own (standard input and output,
    /// a file to attach, the data directory itself) failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The engine failed: opening the data directory, checking a
    /// database, closing.
    #[error(transparent)]
    Engine(#[from] nsf::NsfError),
    /// The transaction log could not be read (`dump log`: a bad control
    /// file, a corrupt record naming its LSN).
    #[error(transparent)]
    Log(#[from] translog::LogError),
    /// The views layer failed (listing or rebuilding views, closing).
    #[error(transparent)]
    Views(#[from] views::ViewError),
    /// The store failed for a reason of its own (a server's 500, or the
    /// same fault met embedded).
    #[error("{0}")]
    Internal(String),
    /// The server could not be reached or signed in to.
    #[error("{addr}: {source}")]
    Connect {
        /// The address given with `--server`.
        addr: String,
        /// Why.
        #[source]
        source: client::ClientError,
    },
    /// The connection to the server failed after it was made (closed,
    /// protocol error, an answer of the wrong kind).
    #[error(transparent)]
    Client(client::ClientError),
    /// Fixup repaired a database but could not keep everything (the
    /// report printed before says what).
    #[error("{0}")]
    DataLost(String),
    /// A load workload or the crash-test child failed (they report
    /// their failures as text).
    #[error("{0}")]
    Workload(String),
    /// A state file of the server's own (the replication schedule's,
    /// `peerrepl/state.rs`) cannot be read or does not decode; the
    /// message names the file and what is wrong.
    #[error("{0}")]
    StateFile(String),
}

impl FolioError {
    /// The failure a store answered with `code`, explained by `message`
    /// (see the module docs).
    pub fn answer(code: ErrorCode, message: String) -> FolioError {
        match code {
            ErrorCode::BadRequest | ErrorCode::TooLarge => FolioError::BadInput(message),
            ErrorCode::Unauthenticated | ErrorCode::Forbidden => FolioError::Access(message),
            ErrorCode::NotFound => FolioError::NotFound(message),
            ErrorCode::SaveConflict => FolioError::Conflict(message),
            ErrorCode::Busy => FolioError::Busy(message),
            ErrorCode::ServerError
            | ErrorCode::ProtocolViolation
            | ErrorCode::UnsupportedVersion
            | ErrorCode::Other(_) => FolioError::Internal(message),
        }
    }

    /// A failed read or write of `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> FolioError {
        FolioError::Io {
            what: what.into(),
            source,
        }
    }
}

impl From<ServerError> for FolioError {
    fn from(e: ServerError) -> FolioError {
        FolioError::answer(e.code(), e.to_string())
    }
}

impl From<mail::MailError> for FolioError {
    fn from(e: mail::MailError) -> FolioError {
        use mail::MailError as M;
        match e {
            M::View(e) => FolioError::Views(e),
            M::Nsf(e) => FolioError::Engine(e),
            M::UnknownPerson(_) => FolioError::NotFound(e.to_string()),
            M::NameTaken { .. } | M::MailFileExists { .. } => FolioError::Conflict(e.to_string()),
            M::ForgedSender { .. } => FolioError::Access(e.to_string()),
            M::Setting { .. } => FolioError::Settings(e.to_string()),
            M::BadStored { .. } => FolioError::Internal(e.to_string()),
            _ => FolioError::BadInput(e.to_string()),
        }
    }
}

impl From<client::ClientError> for FolioError {
    fn from(e: client::ClientError) -> FolioError {
        match e {
            client::ClientError::Server { code, message } => FolioError::answer(code, message),
            e => FolioError::Client(e),
        }
    }
}

/// The load tools and the crash-test child still report failures as
/// text; this lets them call the functions they share with the commands
/// (settings, the data directory, connecting) unchanged.
impl From<FolioError> for String {
    fn from(e: FolioError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal met embedded (the service's own error) and the same
    /// refusal answered by a server are the same variant and message.
    #[test]
    fn a_refusal_is_the_same_embedded_and_over_the_network() {
        let refusals = [
            ServerError::BadRequest("bad formula".into()),
            ServerError::TooLarge("too big".into()),
            ServerError::Unauthenticated("sign in".into()),
            ServerError::Forbidden("not yours".into()),
            ServerError::NotFound("no document".into()),
            ServerError::SaveConflict("save conflict".into()),
            ServerError::Busy(server::Busy::LogFull),
            ServerError::Busy(server::Busy::ShuttingDown),
            ServerError::Internal("broken".into()),
        ];
        for e in refusals {
            let over_network = client::ClientError::Server {
                code: e.code(),
                message: e.to_string(),
            };
            let (embedded, remote) = (FolioError::from(e), FolioError::from(over_network));
            assert_eq!(embedded.to_string(), remote.to_string());
            assert_eq!(
                std::mem::discriminant(&embedded),
                std::mem::discriminant(&remote)
            );
        }
        assert!(matches!(
            FolioError::from(ServerError::NotFound("x".into())),
            FolioError::NotFound(m) if m == "x"
        ));
        assert!(matches!(
            FolioError::from(ServerError::Forbidden("x".into())),
            FolioError::Access(_)
        ));
        assert!(matches!(
            FolioError::from(ServerError::SaveConflict("x".into())),
            FolioError::Conflict(_)
        ));
    }

    #[test]
    fn a_broken_connection_is_not_mistaken_for_a_refusal() {
        let e = FolioError::from(client::ClientError::Closed {
            reason: "reset".into(),
        });
        assert!(matches!(e, FolioError::Client(_)), "{e:?}");
    }
}
