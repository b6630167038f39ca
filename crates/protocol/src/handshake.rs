//! The handshake: the client's Hello, the server's Welcome, and how the
//! two agree on a protocol version and a compression method.
//!
//! ```text
//!   client                                   server
//!     | -- Hello (magic, versions, name,        |
//!     |           compression, credentials) --> |  Authenticate event
//!     |                                         |  caller: accept / refuse
//!     | <-- Welcome (version, compression,      |
//!     |              session)                   |
//!     |     or Error, request id 0, closed ---- |
//! ```
//!
//! Why the bodies start with fixed little-endian fields rather than the
//! serde encoding the other messages use: the Hello is read before any
//! version is agreed, so its beginning (and the Welcome's, and the error
//! frame's) must mean the same thing to every version that will ever
//! exist. The fixed part carries everything version negotiation needs; the
//! rest is postcard-encoded, and trailing bytes after the fields this
//! version knows are ignored so a later version may append fields.
//! Compression methods travel as numeric codes and unknown codes are
//! skipped, for the same reason.
//!
//! The zstd level rides the same way: a client may append one byte after
//! its Hello's fields, the level (1 to 19) it asks the server to send
//! with, and it uses the same level itself; a server that knows the byte
//! appends the level it sends with after its Welcome's fields when one
//! was asked for and zstd is the method. A client
//! that asked for a level and reads no level back (a server from before
//! the byte) knows its wish was not heard, and can refuse (the client
//! library does).
//!
//! Version negotiation picks the highest version both ranges contain.
//! Compression picks the first method in the client's preference list that
//! the server enables; `off` is always acceptable, so a client that lists
//! nothing the server enables gets an uncompressed connection rather than
//! a refusal.

use crate::compress::{Compression, ZstdLevel};
use crate::error::ProtocolError;
use crate::frame::FrameType;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::RangeInclusive;

/// The five bytes every Hello starts with.
pub const MAGIC: &[u8; 5] = b"FOLIO";
/// The protocol versions this build speaks (the lowest, then the highest).
pub const SUPPORTED_VERSIONS: RangeInclusive<u16> = 1..=1;

/// A user name and password. `Debug` does not print the password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The server user's name.
    pub user: String,
    /// The password, checked by the server's caller.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The client's first frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The versions the client speaks.
    pub versions: RangeInclusive<u16>,
    /// The client program's name and version, for logs and statistics.
    pub client_name: String,
    /// The compression methods the client accepts, most preferred first.
    pub compression: Vec<Compression>,
    /// Who the client is; `None` asks for anonymous access.
    pub credentials: Option<Credentials>,
    /// The zstd level both sides send with if zstd is chosen; `None`
    /// leaves it to the server (the protocol's level 3).
    pub strong_level: Option<ZstdLevel>,
}

/// The postcard-encoded part of a Hello, after the fixed fields.
#[derive(Serialize, Deserialize)]
struct HelloTail {
    client_name: String,
    compression: Vec<u8>,
    credentials: Option<Credentials>,
}

/// Length of the Hello's fixed part: magic, lowest and highest version.
const HELLO_FIXED: usize = 5 + 2 + 2;

impl Hello {
    /// The Hello's body bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.versions.start().to_le_bytes());
        out.extend_from_slice(&self.versions.end().to_le_bytes());
        let tail = HelloTail {
            client_name: self.client_name.clone(),
            compression: self.compression.iter().map(|c| c.code()).collect(),
            credentials: self.credentials.clone(),
        };
        let mut out =
            postcard::to_extend(&tail, out).map_err(|e| ProtocolError::Misuse(e.to_string()))?;
        out.extend(self.strong_level.map(ZstdLevel::get));
        Ok(out)
    }

    /// A Hello from its body bytes. Unknown compression codes are skipped;
    /// a level byte outside 1 to 19 is refused
    /// ([`ProtocolError::CompressionLevel`]); bytes after it are ignored.
    pub fn decode(body: &[u8]) -> Result<Hello, ProtocolError> {
        if !body.starts_with(MAGIC) {
            return Err(ProtocolError::BadMagic);
        }
        let bad = |reason: String| ProtocolError::BadBody {
            frame: FrameType::Hello,
            reason,
        };
        let fixed = body
            .get(..HELLO_FIXED)
            .ok_or_else(|| bad("shorter than its fixed fields".into()))?;
        let min = u16::from_le_bytes([fixed[5], fixed[6]]);
        let max = u16::from_le_bytes([fixed[7], fixed[8]]);
        let (tail, rest): (HelloTail, _) =
            postcard::take_from_bytes(&body[HELLO_FIXED..]).map_err(|e| bad(e.to_string()))?;
        let strong_level = rest
            .first()
            .map(|&l| ZstdLevel::new(l.into()))
            .transpose()?;
        Ok(Hello {
            versions: min..=max,
            client_name: tail.client_name,
            compression: tail
                .compression
                .into_iter()
                .filter_map(Compression::from_code)
                .collect(),
            credentials: tail.credentials,
            strong_level,
        })
    }
}

/// The server's answer to an accepted Hello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    /// The version the connection speaks from now on.
    pub version: u16,
    /// The compression method both sides use from now on.
    pub compression: Compression,
    /// The session the server's caller created for this connection.
    pub session: crate::ids::SessionId,
    /// The server's name and version, for logs.
    pub server_name: String,
    /// The zstd level the server sends with, when zstd is the method and
    /// the server says (`None` from a server before the level byte).
    pub strong_level: Option<ZstdLevel>,
}

/// Length of the Welcome's fixed part: version, compression, session id.
const WELCOME_FIXED: usize = 2 + 1 + 8;

impl Welcome {
    /// The Welcome's body bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut out = Vec::with_capacity(32);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.compression.code());
        out.extend_from_slice(&self.session.0.to_le_bytes());
        let mut out = postcard::to_extend(&self.server_name, out)
            .map_err(|e| ProtocolError::Misuse(e.to_string()))?;
        out.extend(self.strong_level.map(ZstdLevel::get));
        Ok(out)
    }

    /// A Welcome from its body bytes; a level byte outside 1 to 19 is
    /// refused; bytes after it are ignored.
    pub fn decode(body: &[u8]) -> Result<Welcome, ProtocolError> {
        let bad = |reason: String| ProtocolError::BadBody {
            frame: FrameType::Welcome,
            reason,
        };
        let Some((fixed, rest)) = body.split_first_chunk::<WELCOME_FIXED>() else {
            return Err(bad("shorter than its fixed fields".into()));
        };
        let version = u16::from_le_bytes([fixed[0], fixed[1]]);
        let compression = Compression::from_code(fixed[2])
            .ok_or_else(|| bad(format!("unknown compression code {}", fixed[2])))?;
        let mut session = [0u8; 8];
        session.copy_from_slice(&fixed[3..]);
        let (server_name, rest): (String, _) =
            postcard::take_from_bytes(rest).map_err(|e| bad(e.to_string()))?;
        let strong_level = rest
            .first()
            .map(|&l| ZstdLevel::new(l.into()))
            .transpose()?;
        Ok(Welcome {
            version,
            compression,
            session: crate::ids::SessionId(u64::from_le_bytes(session)),
            server_name,
            strong_level,
        })
    }
}

/// The highest version in both ranges, or the error naming both.
pub fn negotiate_version(
    client: &RangeInclusive<u16>,
    server: &RangeInclusive<u16>,
) -> Result<u16, ProtocolError> {
    let high = (*client.end()).min(*server.end());
    let low = (*client.start()).max(*server.start());
    if high >= low {
        Ok(high)
    } else {
        Err(ProtocolError::NoCommonVersion {
            client_min: *client.start(),
            client_max: *client.end(),
            server_min: *server.start(),
            server_max: *server.end(),
        })
    }
}

/// The client's most preferred method that the server enables, else `Off`.
pub fn negotiate_compression(client: &[Compression], server: &[Compression]) -> Compression {
    client
        .iter()
        .copied()
        .find(|c| *c == Compression::Off || server.contains(c))
        .unwrap_or(Compression::Off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use proptest::prelude::*;

    fn hello() -> Hello {
        Hello {
            versions: 1..=3,
            client_name: "folio-cli 0.1".into(),
            compression: vec![Compression::Strong, Compression::Fast],
            credentials: Some(Credentials {
                user: "alice".into(),
                password: "secret".into(),
            }),
            strong_level: None,
        }
    }

    #[test]
    fn hello_layout_starts_with_magic_and_versions() {
        let b = hello().encode().unwrap();
        assert_eq!(&b[..9], b"FOLIO\x01\x00\x03\x00");
        // postcard: name (varint length + UTF-8), codes, Some(user, password).
        let mut tail = vec![13u8];
        tail.extend_from_slice(b"folio-cli 0.1");
        tail.extend_from_slice(&[2, 2, 1, 1, 5]);
        tail.extend_from_slice(b"alice");
        tail.push(6);
        tail.extend_from_slice(b"secret");
        assert_eq!(&b[9..], &tail[..]);
        assert_eq!(Hello::decode(&b).unwrap(), hello());
    }

    #[test]
    fn a_later_versions_hello_still_decodes() {
        let mut b = hello().encode().unwrap();
        // Unknown compression code 9 and a field appended after the
        // level byte are skipped.
        let codes_at = 9 + 1 + 13;
        b[codes_at] = 3;
        b.insert(codes_at + 1, 9);
        b.push(7);
        b.extend_from_slice(b"future field");
        let h = Hello::decode(&b).unwrap();
        assert_eq!(h.compression, vec![Compression::Strong, Compression::Fast]);
        assert_eq!(h.credentials, hello().credentials);
        assert_eq!(h.strong_level, Some(ZstdLevel::new(7).unwrap()));
    }

    #[test]
    fn a_level_outside_1_to_19_is_refused_and_none_is_the_servers_choice() {
        let plain = hello().encode().unwrap();
        assert_eq!(Hello::decode(&plain).unwrap().strong_level, None);
        let asked = Hello {
            strong_level: Some(ZstdLevel::new(19).unwrap()),
            ..hello()
        };
        let b = asked.encode().unwrap();
        assert_eq!(b.len(), plain.len() + 1);
        assert_eq!(b[b.len() - 1], 19);
        assert_eq!(Hello::decode(&b).unwrap(), asked);
        for bad in [0u8, 20, 255] {
            let mut b = plain.clone();
            b.push(bad);
            assert_eq!(
                Hello::decode(&b),
                Err(ProtocolError::CompressionLevel { level: bad.into() })
            );
        }
        let e = ZstdLevel::new(22).unwrap_err();
        assert_eq!(e.to_string(), "zstd compression level 22: expected 1 to 19");
    }

    #[test]
    fn bad_magic_and_short_hellos_are_refused() {
        assert_eq!(
            Hello::decode(b"HELLO\x01\x00\x01\x00"),
            Err(ProtocolError::BadMagic)
        );
        assert!(matches!(
            Hello::decode(b"FOLIO\x01"),
            Err(ProtocolError::BadBody { .. })
        ));
    }

    #[test]
    fn the_password_is_not_printed() {
        let s = format!("{:?}", hello());
        assert!(s.contains("alice") && !s.contains("secret"), "{s}");
    }

    #[test]
    fn welcome_layout() {
        let w = Welcome {
            version: 1,
            compression: Compression::Fast,
            session: SessionId(0x0102_0304_0506_0708),
            server_name: "folio".into(),
            strong_level: None,
        };
        let b = w.encode().unwrap();
        assert_eq!(b, b"\x01\x00\x01\x08\x07\x06\x05\x04\x03\x02\x01\x05folio");
        assert_eq!(Welcome::decode(&b).unwrap(), w);
        assert!(Welcome::decode(&b[..10]).is_err());
    }

    #[test]
    fn versions_pick_the_highest_common_one() {
        assert_eq!(negotiate_version(&(1..=3), &(2..=5)), Ok(3));
        assert_eq!(negotiate_version(&(1..=1), &(1..=1)), Ok(1));
        assert_eq!(
            negotiate_version(&(4..=6), &(1..=3)),
            Err(ProtocolError::NoCommonVersion {
                client_min: 4,
                client_max: 6,
                server_min: 1,
                server_max: 3
            })
        );
        // An empty (inverted) client range has nothing in common.
        let (lo, hi) = (3, 2);
        assert!(negotiate_version(&(lo..=hi), &(1..=5)).is_err());
    }

    #[test]
    fn compression_follows_the_clients_preference_among_enabled_methods() {
        use Compression::*;
        assert_eq!(
            negotiate_compression(&[Strong, Fast], &[Fast, Strong]),
            Strong
        );
        assert_eq!(negotiate_compression(&[Strong, Fast], &[Fast]), Fast);
        assert_eq!(negotiate_compression(&[Strong], &[Fast]), Off);
        assert_eq!(negotiate_compression(&[Off, Fast], &[Fast]), Off);
        assert_eq!(negotiate_compression(&[], &[Fast]), Off);
    }

    proptest! {
        #[test]
        fn hellos_round_trip(
            lo in any::<u16>(), hi in any::<u16>(), name in ".*",
            codes in proptest::collection::vec(0u8..3, 0..4),
            creds in proptest::option::of((".*", ".*")),
            level in proptest::option::of(1i64..=19),
        ) {
            let h = Hello {
                versions: lo..=hi,
                client_name: name,
                compression: codes.into_iter().filter_map(Compression::from_code).collect(),
                credentials: creds.map(|(user, password)| Credentials { user, password }),
                strong_level: level.map(|l| ZstdLevel::new(l).unwrap()),
            };
            prop_assert_eq!(Hello::decode(&h.encode().unwrap()).unwrap(), h);
        }

        #[test]
        fn welcomes_round_trip(
            v in any::<u16>(), c in 0u8..3, s in any::<u64>(), name in ".*",
            level in proptest::option::of(1i64..=19),
        ) {
            let w = Welcome {
                version: v,
                compression: Compression::from_code(c).unwrap(),
                session: SessionId(s),
                server_name: name,
                strong_level: level.map(|l| ZstdLevel::new(l).unwrap()),
            };
            prop_assert_eq!(Welcome::decode(&w.encode().unwrap()).unwrap(), w);
        }

        #[test]
        fn hello_and_welcome_decoders_never_panic(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Hello::decode(&body);
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&body);
            let _ = Hello::decode(&with_magic);
            let _ = Welcome::decode(&body);
        }
    }
}
