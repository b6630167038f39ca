//! The server crate's one error type.
//!
//! Every failure a client can cause or see maps to one protocol
//! [`ErrorCode`] (and so to one HTTP status): the native driver and the
//! HTTP API answer the same mistake the same way. The engine's errors
//! (`nsf`, `views`, `mail`) are mapped onto it here, once, for every
//! operation.

use nsf::NsfError;
use protocol::ErrorCode;
use views::ViewError;

/// Result of server operations.
pub type ServerResult<T> = Result<T, ServerError>;

/// Everything that can go wrong in the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The request's arguments are malformed (bad JSON, formula, path, id).
    #[error("{0}")]
    BadRequest(String),
    /// Missing or wrong credentials.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is known but the ACL does not allow the operation.
    #[error("{0}")]
    Forbidden(String),
    /// No such database, document, attachment, view or handle.
    #[error("{0}")]
    NotFound(String),
    /// The update was based on an older sequence than the current one.
    #[error("{0}")]
    SaveConflict(String),
    /// Something is larger than the server allows.
    #[error("{0}")]
    TooLarge(String),
    /// The server cannot take the request now, for the reason named;
    /// retrying later may succeed (503).
    #[error("{0}")]
    Busy(Busy),
    /// A server user already exists.
    #[error("user {0:?} already exists")]
    UserExists(String),
    /// No such server user.
    #[error("no user {0:?}")]
    NoSuchUser(String),
    /// A settings value is wrong.
    #[error("invalid setting {key}: {reason}")]
    Setting {
        /// The setting's key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// TLS setup failed (certificate or key unreadable or invalid).
    #[error("TLS: {0}")]
    Tls(String),
    /// A file of the server's own (users, certificates) could not be used.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The server failed for a reason of its own.
    #[error("{0}")]
    Internal(String),
}

impl ServerError {
    /// The protocol error code (and HTTP status) for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ServerError::BadRequest(_) | ServerError::Setting { .. } => ErrorCode::BadRequest,
            ServerError::Unauthenticated(_) => ErrorCode::Unauthenticated,
            ServerError::Forbidden(_) => ErrorCode::Forbidden,
            ServerError::NotFound(_) | ServerError::NoSuchUser(_) => ErrorCode::NotFound,
            ServerError::SaveConflict(_) | ServerError::UserExists(_) => ErrorCode::SaveConflict,
            ServerError::TooLarge(_) => ErrorCode::TooLarge,
            ServerError::Busy(_) => ErrorCode::Busy,
            ServerError::Tls(_) | ServerError::File { .. } | ServerError::Internal(_) => {
                ErrorCode::ServerError
            }
        }
    }
}

/// What keeps the server from taking a request now. Each is answered
/// 503 (HTTP with `Retry-After`), and each answer says which it is: a
/// client told "busy" should know whether to wait for a checkpoint, for
/// a restart, or for a free connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Busy {
    /// The transaction log is full until a checkpoint frees space
    /// (`nsf::NsfError::LogFull`, from `translog::LogError::Full`):
    /// writes are refused, reads go on.
    #[error(
        "the transaction log is full; writes are refused until a checkpoint frees \
         space (reads go on); retry shortly"
    )]
    LogFull,
    /// Archive style: the transaction log is full of extents waiting to
    /// be archived (`nsf::NsfError::LogArchiveNeeded`); writes are refused
    /// at once until `folio archive` runs, reads go on.
    #[error(
        "the transaction log is full: {waiting_extents} extent(s) wait to be archived; writes \
         are refused until an administrator runs `folio archive` (reads go on)"
    )]
    LogArchiveNeeded {
        /// Completed extents not yet archived.
        waiting_extents: u64,
    },
    /// The server is shutting down: its engine writes and opens nothing
    /// more (`nsf::NsfError::EngineClosed`, from
    /// `translog::LogError::ShutDown`), and connections are closed.
    #[error("the server is shutting down; nothing more is written; retry once it is back")]
    ShuttingDown,
    /// The native listener is at its connection limit.
    #[error("the server is at its limit of {max} connections; try again later")]
    NativeConnections {
        /// The limit (`max_connections`).
        max: usize,
    },
    /// The HTTP listener is at its connection limit.
    #[error("the server is at its limit of {max} HTTP connections; try again later")]
    HttpConnections {
        /// The limit (`http_max_connections`).
        max: usize,
    },
}

/// Maps the document layer's errors onto the server's.
pub(crate) fn nsf_err(e: NsfError) -> ServerError {
    use NsfError as E;
    let msg = e.to_string();
    match e {
        E::NoSuchDatabase(_)
        | E::DatabaseDeleted(_)
        | E::NoSuchDocument { .. }
        | E::Deleted { .. }
        | E::NoSuchAttachment { .. } => ServerError::NotFound(msg),
        E::SaveConflict { .. } | E::DatabaseExists(_) => ServerError::SaveConflict(msg),
        E::LogFull => ServerError::Busy(Busy::LogFull),
        E::LogArchiveNeeded { waiting_extents } => {
            ServerError::Busy(Busy::LogArchiveNeeded { waiting_extents })
        }
        // Retrying cannot help: 413, not 503.
        E::TransactionTooLarge { .. } => ServerError::TooLarge(msg),
        E::EngineClosed => ServerError::Busy(Busy::ShuttingDown),
        E::Codec(nsf::CodecError::TooLarge { .. })
        | E::Codec(nsf::CodecError::TooManyItems { .. }) => ServerError::TooLarge(msg),
        E::Json(nsf::JsonError::Invalid(nsf::CodecError::TooLarge { .. })) => {
            ServerError::TooLarge(msg)
        }
        E::BadPath { .. }
        | E::AclNote { .. }
        | E::ViewDesignNote { .. }
        | E::SameFile { .. }
        | E::Codec(_)
        | E::Json(_)
        | E::Invalid(_)
        | E::Setting { .. }
        | E::BadBackup { .. }
        | E::InstanceMismatch { .. }
        | E::RestoreUnreachable { .. } => ServerError::BadRequest(msg),
        _ => ServerError::Internal(msg),
    }
}

/// Maps the views layer's errors onto the server's.
pub(crate) fn view_err(e: ViewError) -> ServerError {
    match e {
        ViewError::Nsf(e) => nsf_err(e),
        e @ ViewError::NoSuchView { .. } => ServerError::NotFound(e.to_string()),
        e @ (ViewError::Formula { .. }
        | ViewError::NotAFolder { .. }
        | ViewError::BadDefinition(_)
        | ViewError::NotSorted { .. }
        | ViewError::ViewExists { .. }) => ServerError::BadRequest(e.to_string()),
        e => ServerError::Internal(e.to_string()),
    }
}

/// Maps the mail layer's errors onto the server's. The message is the
/// mail layer's own, so an embedded command and a server say the same.
pub(crate) fn mail_err(e: mail::MailError) -> ServerError {
    use mail::MailError as M;
    let msg = e.to_string();
    match e {
        M::Nsf(e) => nsf_err(e),
        M::View(e) => view_err(e),
        M::UnknownPerson(_) => ServerError::NotFound(msg),
        M::NameTaken { .. } | M::MailFileExists { .. } => ServerError::SaveConflict(msg),
        M::TooLarge { .. } => ServerError::TooLarge(msg),
        M::ForgedSender { .. } => ServerError::Forbidden(msg),
        M::Setting { key, reason } => ServerError::Setting { key, reason },
        M::BadStored { .. } => ServerError::Internal(msg),
        _ => ServerError::BadRequest(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason to refuse for now is a 503 that names itself; only a
    /// full log says the log is full.
    #[test]
    fn busy_answers_name_what_is_busy() {
        let cases = [
            (nsf_err(NsfError::LogFull), "transaction log is full"),
            (
                nsf_err(NsfError::LogArchiveNeeded { waiting_extents: 3 }),
                "log is full: 3 extent(s) wait to be archived",
            ),
            (nsf_err(NsfError::EngineClosed), "shutting down"),
            (
                ServerError::Busy(Busy::NativeConnections { max: 7 }),
                "limit of 7 connections",
            ),
            (
                ServerError::Busy(Busy::HttpConnections { max: 7 }),
                "limit of 7 HTTP connections",
            ),
        ];
        for (e, says) in cases {
            assert_eq!(e.code(), ErrorCode::Busy, "{e}");
            let text = e.to_string();
            assert!(text.contains(says), "{text}");
            let blames_the_log = text.contains("log");
            assert_eq!(blames_the_log, says.contains("log"), "{text}");
        }
        let shutdown = nsf_err(NsfError::EngineClosed);
        assert!(matches!(shutdown, ServerError::Busy(Busy::ShuttingDown)));
        let in_a_view = view_err(ViewError::Nsf(NsfError::EngineClosed));
        assert!(matches!(in_a_view, ServerError::Busy(Busy::ShuttingDown)));
    }
}
