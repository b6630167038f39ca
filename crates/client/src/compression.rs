//! Forcing a connection's network compression: `off`, `lz4`, `zstd`,
//! `zstd:N` (zstd at level N, 1 to 19, both ways), or `auto` (the
//! address decides, see `options.rs`).
//!
//! Why a level: the protocol's zstd level 3 suits links up to a LAN's
//! speed; on a 56 kbit/s line the CPU is idle and every byte costs
//! 0.14 ms, so level 19 is the better trade (docs/benchmarks.md
//! "replication" measures it). The level is asked for in the Hello and
//! the server echoes it (docs/protocol.md §4.1); a server that does not
//! echo it (one from before the level) is refused like a method it does
//! not enable, with [`ClientError::CompressionLevelRefused`].
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
use protocol::{Compression, ZstdLevel};
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
    /// zstd (the protocol's `strong`) at the server's level, or refuse
    /// to connect.
    Zstd,
    /// zstd at this level both ways, or refuse to connect.
    ZstdAt(ZstdLevel),
}

impl NetCompression {
    /// Every choice without a level, in the order the command line lists
    /// them.
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
            NetCompression::Zstd | NetCompression::ZstdAt(_) => Some(Compression::Strong),
        }
    }

    /// The zstd level this choice asks for, if it names one.
    pub fn level(self) -> Option<ZstdLevel> {
        match self {
            NetCompression::ZstdAt(l) => Some(l),
            _ => None,
        }
    }

    /// The method's name on the command line (`zstd` for `zstd:N`).
    pub fn name(self) -> &'static str {
        match self {
            NetCompression::Auto => "auto",
            NetCompression::Off => "off",
            NetCompression::Lz4 => "lz4",
            NetCompression::Zstd | NetCompression::ZstdAt(_) => "zstd",
        }
    }
}

/// The choice as the command line spells it (`zstd:19`).
impl fmt::Display for NetCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level() {
            Some(l) => write!(f, "{}:{}", self.name(), l.get()),
            None => f.write_str(self.name()),
        }
    }
}

impl FromStr for NetCompression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(n) = s.strip_prefix("zstd:") {
            let level = n
                .parse::<i64>()
                .map_err(|_| format!("{s:?}: the zstd level must be a number from 1 to 19"))?;
            return ZstdLevel::new(level)
                .map(NetCompression::ZstdAt)
                .map_err(|e| format!("{s:?}: {e}"));
        }
        NetCompression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a compression: use off, lz4, zstd, zstd:N or auto")
            })
    }
}

/// Refuses a handshake that settled on another method than the forced
/// one (`required`), or did not echo the zstd level asked for (`level`),
/// so a forced choice is never silently dropped.
pub(crate) fn check_negotiated(
    (required, level): (Option<Compression>, Option<ZstdLevel>),
    (negotiated, said): (Compression, Option<ZstdLevel>),
) -> Result<(), ClientError> {
    match required {
        Some(asked) if asked != negotiated => Err(ClientError::CompressionRefused {
            asked: asked.name(),
            got: negotiated.name(),
        }),
        _ => match level {
            Some(l) if said != Some(l) => Err(ClientError::CompressionLevelRefused {
                asked: l.get(),
                said: said.map(ZstdLevel::get),
            }),
            _ => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for c in NetCompression::ALL {
            assert_eq!(c.to_string().parse::<NetCompression>(), Ok(c));
        }
        let e = "gzip".parse::<NetCompression>().unwrap_err();
        assert!(e.contains("gzip") && e.contains("lz4"), "{e}");
    }

    #[test]
    fn zstd_with_a_level_parses_1_to_19_and_refuses_the_rest() {
        let c: NetCompression = "zstd:19".parse().unwrap();
        assert_eq!(c.forced(), Some(Compression::Strong));
        assert_eq!(c.level().map(ZstdLevel::get), Some(19));
        assert_eq!(c.to_string(), "zstd:19");
        assert_eq!(
            "zstd:1".parse::<NetCompression>().unwrap().to_string(),
            "zstd:1"
        );
        assert_eq!(NetCompression::Zstd.level(), None);
        for bad in ["zstd:0", "zstd:20", "zstd:-1"] {
            let e = bad.parse::<NetCompression>().unwrap_err();
            assert!(e.contains(bad) && e.contains("1 to 19"), "{e}");
        }
        let e = "zstd:max".parse::<NetCompression>().unwrap_err();
        assert!(e.contains("zstd:max") && e.contains("from 1 to 19"), "{e}");
    }

    #[test]
    fn a_forced_method_the_server_did_not_take_is_refused() {
        let got = |c| (c, None);
        assert!(check_negotiated((None, None), got(Compression::Off)).is_ok());
        assert!(check_negotiated((Some(Compression::Fast), None), got(Compression::Fast)).is_ok());
        let e =
            check_negotiated((Some(Compression::Strong), None), got(Compression::Off)).unwrap_err();
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

    #[test]
    fn a_level_the_server_did_not_echo_is_refused() {
        let l19 = ZstdLevel::new(19).unwrap();
        let asked = (Some(Compression::Strong), Some(l19));
        assert!(check_negotiated(asked, (Compression::Strong, Some(l19))).is_ok());
        let e = check_negotiated(asked, (Compression::Strong, None)).unwrap_err();
        assert!(
            matches!(
                e,
                ClientError::CompressionLevelRefused {
                    asked: 19,
                    said: None
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("level 19"), "{e}");
        let e =
            check_negotiated(asked, (Compression::Strong, Some(ZstdLevel::DEFAULT))).unwrap_err();
        assert!(e.to_string().contains("level 3"), "{e}");
    }
}
