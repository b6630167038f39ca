//! The protocol's one error type, and the numeric codes error frames carry.
//!
//! Two different things are called "error" on a connection, and they are
//! kept apart on purpose:
//!
//! * [`ProtocolError`] is what *this* side found wrong with the byte stream
//!   or with how the caller drove the state machine: a frame too large, a
//!   body that does not decode, a request before the handshake. Every
//!   variant that comes from the peer's bytes is fatal to the connection:
//!   the state machine queues an error frame for the peer, moves to
//!   `Closed`, and returns the error so the driver can log it and close
//!   the socket once the frame is written.
//! * [`ErrorCode`] is the number an error frame carries. Most error frames
//!   answer one request ("not found", "save conflict") and leave the
//!   connection open; the codes are the vocabulary both sides share, and
//!   they follow the HTTP status numbers where one exists so the HTTP API
//!   can map them one to one.
//!
//! `ProtocolError` is `Clone` (it holds no I/O error: this crate does no
//! I/O), so a poisoned decoder can keep answering with the error that
//! poisoned it.

use crate::frame::FrameType;
use crate::ids::RequestId;

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A frame's length field is above the connection's maximum frame size.
    /// Detected from the 4-byte length alone, before the body is buffered.
    #[error("frame of {length} bytes exceeds the maximum frame size of {max} bytes")]
    FrameTooLarge {
        /// The length field (or the size of a frame this side tried to build).
        length: u64,
        /// The configured maximum.
        max: u32,
    },
    /// A frame's length field is smaller than the frame header.
    #[error("frame length {length} is shorter than the {header}-byte frame header")]
    FrameTooShort {
        /// The length field.
        length: u32,
        /// The header size the length must at least cover.
        header: u32,
    },
    /// The frame type byte names no known frame type.
    #[error("unknown frame type 0x{0:02x}")]
    UnknownFrameType(u8),
    /// Flag bits that this protocol version does not define were set.
    #[error("reserved frame flag bits set: 0x{0:02x}")]
    ReservedFlags(u8),
    /// A frame body could not be decoded as the message its type announces.
    #[error("malformed {frame} body: {reason}")]
    BadBody {
        /// The frame type whose body was bad.
        frame: FrameType,
        /// What the decoder found.
        reason: String,
    },
    /// A zstd level outside 1 to 19 (asked for in a Hello, or given to
    /// [`crate::ZstdLevel::new`]).
    #[error("zstd compression level {level}: expected 1 to 19")]
    CompressionLevel {
        /// The level given.
        level: i64,
    },
    /// A compressed body could not be decompressed.
    #[error("cannot decompress a {method} body: {reason}")]
    Decompress {
        /// The connection's compression method.
        method: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// A compressed body announced (or produced) more bytes than a frame
    /// may hold: a decompression bomb, refused before allocating.
    #[error("compressed body expands to {claimed} bytes, above the {max}-byte limit")]
    DecompressedTooLarge {
        /// The size the body claimed or produced.
        claimed: u64,
        /// The largest body a frame may carry.
        max: u32,
    },
    /// A frame had the compressed flag on a connection (or frame type)
    /// where compression is not in use.
    #[error("compressed {0} frame, but compression is not in use for it")]
    UnexpectedCompression(FrameType),
    /// The Hello did not start with the protocol's magic bytes.
    #[error("not a Folio client: the Hello does not start with the magic \"FOLIO\"")]
    BadMagic,
    /// Client and server share no protocol version.
    #[error("no common protocol version: client speaks {client_min}..={client_max}, server speaks {server_min}..={server_max}")]
    NoCommonVersion {
        /// Lowest version the client speaks.
        client_min: u16,
        /// Highest version the client speaks.
        client_max: u16,
        /// Lowest version the server speaks.
        server_min: u16,
        /// Highest version the server speaks.
        server_max: u16,
    },
    /// The server answered with a version or compression the client never
    /// offered.
    #[error("server chose {what}, which the client did not offer")]
    BadChoice {
        /// What was chosen.
        what: String,
    },
    /// A frame arrived that the connection's state does not allow, such as
    /// a request before the handshake.
    #[error("{frame} frame not allowed while {state}")]
    UnexpectedFrame {
        /// The frame's type.
        frame: FrameType,
        /// The connection state, in words.
        state: &'static str,
    },
    /// A request id that is already in flight was used again.
    #[error("request id {0} is already in flight")]
    DuplicateRequestId(RequestId),
    /// A frame referred to a request that is not in flight (or not in the
    /// phase the frame needs, such as a chunk for a request that is not an
    /// upload).
    #[error("{frame} frame for request {id}, which is not {expected}")]
    UnknownRequest {
        /// The frame's type.
        frame: FrameType,
        /// The request id it carried.
        id: RequestId,
        /// What the request would have had to be.
        expected: &'static str,
    },
    /// Request id 0 is reserved for connection-level error frames.
    #[error("request id 0 is reserved for connection-level errors")]
    ZeroRequestId,
    /// The peer closed the connection with an error frame.
    #[error("the peer closed the connection: {code}: {message}")]
    Remote {
        /// The error frame's code.
        code: ErrorCode,
        /// The error frame's message.
        message: String,
    },
    /// The connection is closed; nothing more can be received or sent.
    #[error("the connection is closed")]
    Closed,
    /// The caller drove the state machine wrongly (answered an
    /// authentication nobody asked for, responded to an unknown request).
    /// Not the peer's fault, so it does not close the connection.
    #[error("misuse of the connection: {0}")]
    Misuse(String),
}

impl ProtocolError {
    /// The code an error frame reporting this error carries.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProtocolError::FrameTooLarge { .. } | ProtocolError::DecompressedTooLarge { .. } => {
                ErrorCode::TooLarge
            }
            ProtocolError::NoCommonVersion { .. } => ErrorCode::UnsupportedVersion,
            ProtocolError::Remote { code, .. } => *code,
            ProtocolError::Misuse(_) => ErrorCode::ServerError,
            _ => ErrorCode::ProtocolViolation,
        }
    }
}

/// The numeric code of an error frame (a `u16` on the wire).
///
/// Codes below 1000 are HTTP status numbers with the same meaning; codes
/// from 1000 are protocol-level. An unknown code decodes as
/// [`ErrorCode::Other`], so a newer peer's codes never break an older one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 400: the request is malformed or its arguments are invalid.
    BadRequest,
    /// 401: credentials are missing or wrong.
    Unauthenticated,
    /// 403: the user may not do this.
    Forbidden,
    /// 404: no such database, document, attachment, view or handle.
    NotFound,
    /// 409: the update was based on an older version of the document.
    SaveConflict,
    /// 413: a frame, document, attachment or result is too large.
    TooLarge,
    /// 500: the server failed for a reason of its own.
    ServerError,
    /// 503: the server cannot take the request now; retry later. The
    /// message says why: the transaction log is full (writes wait for a
    /// checkpoint, reads go on), the server is shutting down, or it is at
    /// its connection limit.
    Busy,
    /// 1000: the peer broke the protocol; the connection closes.
    ProtocolViolation,
    /// 1001: no protocol version in common; the connection closes.
    UnsupportedVersion,
    /// Any other code, kept as received.
    Other(u16),
}

impl ErrorCode {
    /// The code's number on the wire.
    pub fn as_u16(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::SaveConflict => 409,
            ErrorCode::TooLarge => 413,
            ErrorCode::ServerError => 500,
            ErrorCode::Busy => 503,
            ErrorCode::ProtocolViolation => 1000,
            ErrorCode::UnsupportedVersion => 1001,
            ErrorCode::Other(n) => n,
        }
    }

    /// The code for a number read from the wire.
    pub fn from_u16(n: u16) -> ErrorCode {
        match n {
            400 => ErrorCode::BadRequest,
            401 => ErrorCode::Unauthenticated,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            409 => ErrorCode::SaveConflict,
            413 => ErrorCode::TooLarge,
            500 => ErrorCode::ServerError,
            503 => ErrorCode::Busy,
            1000 => ErrorCode::ProtocolViolation,
            1001 => ErrorCode::UnsupportedVersion,
            n => ErrorCode::Other(n),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            ErrorCode::BadRequest => "bad request",
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not found",
            ErrorCode::SaveConflict => "save conflict",
            ErrorCode::TooLarge => "too large",
            ErrorCode::ServerError => "server error",
            ErrorCode::Busy => "busy",
            ErrorCode::ProtocolViolation => "protocol violation",
            ErrorCode::UnsupportedVersion => "unsupported protocol version",
            ErrorCode::Other(_) => "error",
        };
        write!(f, "{} ({name})", self.as_u16())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 503 is more than a full log (a server shutting down, a full
    /// listener): the code's name claims no cause; the message names it.
    #[test]
    fn busy_names_no_cause() {
        assert_eq!(ErrorCode::Busy.to_string(), "503 (busy)");
    }

    #[test]
    fn codes_round_trip_through_their_numbers() {
        for n in 0..=u16::MAX {
            assert_eq!(ErrorCode::from_u16(n).as_u16(), n);
        }
    }
}
