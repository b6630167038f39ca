//! Forcing a connection's network compression: `off`, `lz4`, `zstd`, or
//! `auto` (the address decides, see `options.rs`).
//!
//! Why a choice beyond the address rule: a measurement through a proxy on
//! loopback (a simulated slow link) must compress, and one comparing
//! methods must get exactly the method it names. A forced method is
//! offered alone, and the handshake's answer is checked: a server that
//! does not enable it answers `Off` (the protocol's fallback), which
//! [`check_negotiated`] turns into [`ClientError::CompressionRefused`]
//! rather than a silently uncompressed connection. Honoured or refused,
//! never ignored.

use crate::error::ClientError;
use protocol::Compression;
use std::fmt;
use std::str::FromStr;

/// Which network compression a connection uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NetCompression {
    /// Chosen by the address: off on loopback, zstd then LZ4 elsewhere;
    /// the server may settle on any method offered, or off.
    #[default]
    Auto,
    /// No compression.
    Off,
    /// LZ4 (the protocol's `fast`), or refuse to connect.
    Lz4,
    /// zstd (the protocol's `strong`), or refuse to connect.
    Zstd,
}

impl NetCompression {
    /// Every choice, in the order the command line lists them.
    pub const ALL: [NetCompression; 4] = [
        NetCompression::Off,
        NetCompression::Lz4,
        NetCompression::Zstd,
        NetCompression::Auto,
    ];

    /// The protocol method this choice forces; `None` for `Auto`.
    pub fn forced(self) -> Option<Compression> {
        match self {
            NetCompression::Auto => None,
            NetCompression::Off => Some(Compression::Off),
            NetCompression::Lz4 => Some(Compression::Fast),
            NetCompression::Zstd => Some(Compression::Strong),
        }
    }

    /// The choice's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            NetCompression::Auto => "auto",
            NetCompression::Off => "off",
            NetCompression::Lz4 => "lz4",
            NetCompression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for NetCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NetCompression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NetCompression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("{s:?} is not a compression: use off, lz4, zstd or auto"))
    }
}

/// Refuses a handshake that settled on another method than the forced
/// one (`required`), so a forced choice is never silently dropped.
pub(crate) fn check_negotiated(
    required: Option<Compression>,
    negotiated: Compression,
) -> Result<(), ClientError> {
    match required {
        Some(asked) if asked != negotiated => Err(ClientError::CompressionRefused {
            asked: asked.name(),
            got: negotiated.name(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for c in NetCompression::ALL {
            assert_eq!(c.name().parse::<NetCompression>(), Ok(c));
        }
        let e = "gzip".parse::<NetCompression>().unwrap_err();
        assert!(e.contains("gzip") && e.contains("lz4"), "{e}");
    }

    #[test]
    fn a_forced_method_the_server_did_not_take_is_refused() {
        assert!(check_negotiated(None, Compression::Off).is_ok());
        assert!(check_negotiated(Some(Compression::Fast), Compression::Fast).is_ok());
        let e = check_negotiated(Some(Compression::Strong), Compression::Off).unwrap_err();
        assert!(
            matches!(
                e,
                ClientError::CompressionRefused {
                    asked: "strong",
                    got: "off"
                }
            ),
            "{e}"
        );
    }
}
