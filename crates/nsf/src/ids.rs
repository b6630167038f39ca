//! Identifiers of databases and documents.
//!
//! A note id is local to one file; a UNID is the same in every replica; the
//! originator id (UNID + sequence number + sequence time) is bumped on every
//! edit and is what replication compares. Change sequences order changes
//! within one database and drive "modified since".

use std::fmt;
use std::str::FromStr;

/// Local id of a note within one database file (never 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NoteId(pub u32);

impl fmt::Display for NoteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Universal id of a document: 128 bits, the same in every replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unid(pub [u8; 16]);

impl Unid {
    pub fn random() -> Unid {
        Unid(rand::random())
    }
}

impl fmt::Display for Unid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

/// Error for a malformed UNID string.
#[derive(Debug, thiserror::Error)]
#[error("invalid UNID {0:?}: expected 32 hexadecimal digits")]
pub struct BadUnid(pub String);

impl FromStr for Unid {
    type Err = BadUnid;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadUnid(s.chars().take(64).collect());
        if s.len() != 32 || !s.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Unid(out))
    }
}

/// Random 64-bit id shared by all replicas of a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplicaId(pub u64);

/// Identity of one database file; changes when the file's identity changes
/// (restore, copy-style compact, a fixup that rebuilt it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DbInstanceId(pub u64);

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", self.0)
    }
}

impl fmt::Display for DbInstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", self.0)
    }
}

/// Ids and times serialise as the text the user sees: ids as their 16 hex
/// digits, times as RFC 3339.
macro_rules! serialize_as_text {
    ($t:ty, $f:expr) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$f(self))
            }
        }
    };
}
serialize_as_text!(ReplicaId, ReplicaId::to_string);
serialize_as_text!(DbInstanceId, DbInstanceId::to_string);
serialize_as_text!(Timestamp, |t: &Timestamp| t.to_rfc3339());
serialize_as_text!(Unid, Unid::to_string);

/// ... and deserialise from that same text, refusing anything else.
macro_rules! deserialize_from_text {
    ($t:ty, $what:expr, $parse:expr) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "{:?} is not {}",
                        text.chars().take(64).collect::<String>(),
                        $what
                    ))
                })
            }
        }
    };
}
deserialize_from_text!(ReplicaId, "a replica id (16 hex digits)", |s: &str| {
    hex_u64(s).map(ReplicaId)
});
deserialize_from_text!(DbInstanceId, "an instance id (16 hex digits)", |s: &str| {
    hex_u64(s).map(DbInstanceId)
});
deserialize_from_text!(Timestamp, "an RFC 3339 time", Timestamp::parse_rfc3339);
deserialize_from_text!(Unid, "a UNID (32 hex digits)", |s: &str| s.parse().ok());

/// Exactly 16 hex digits, as ids are displayed.
fn hex_u64(s: &str) -> Option<u64> {
    (s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

/// Position in a database's change sequence (0 = before any change).
/// Serialised as its number.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Seq(pub u64);

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A point in time: microseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn now() -> Timestamp {
        Timestamp(chrono::Utc::now().timestamp_micros())
    }

    /// RFC 3339 with microseconds, e.g. `2026-11-21T10:00:00.000000Z`;
    /// a time outside the years 0000–9999 that RFC 3339 can spell (only
    /// from damaged or hostile input) is `@MICROSus`. Every value round-trips
    /// through [`Timestamp::parse_rfc3339`]: no time ever reads back as
    /// another.
    pub fn to_rfc3339(self) -> String {
        use chrono::Datelike;
        match chrono::DateTime::from_timestamp_micros(self.0) {
            // RFC 3339 has four-digit years only.
            Some(t) if (0..=9999).contains(&t.year()) => {
                t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            }
            _ => format!("@{}us", self.0),
        }
    }

    pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
        if let Some(micros) = s.strip_prefix('@').and_then(|r| r.strip_suffix("us")) {
            return micros.parse().ok().map(Timestamp);
        }
        chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| Timestamp(t.timestamp_micros()))
    }
}

/// The originator id: which edit of which document this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OriginatorId {
    pub unid: Unid,
    /// Bumped on every edit (starts at 1).
    pub seq_num: u32,
    /// When the edit with `seq_num` was made.
    pub seq_time: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unid_round_trips_and_rejects_garbage() {
        let u = Unid::random();
        assert_eq!(u.to_string().parse::<Unid>().unwrap(), u);
        assert!("xyz".parse::<Unid>().is_err());
        assert!("ZZ".repeat(16).parse::<Unid>().is_err());
        assert!("é".repeat(16).parse::<Unid>().is_err());
    }

    #[test]
    fn ids_deserialise_from_the_text_they_serialise_as() {
        let u = Unid::random();
        let json = serde_json::to_string(&u).unwrap();
        assert_eq!(serde_json::from_str::<Unid>(&json).unwrap(), u);
        let r = ReplicaId(0x0123_4567_89AB_CDEF);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, "\"0123456789ABCDEF\"");
        assert_eq!(serde_json::from_str::<ReplicaId>(&json).unwrap(), r);
        let i = DbInstanceId(7);
        let json = serde_json::to_string(&i).unwrap();
        assert_eq!(serde_json::from_str::<DbInstanceId>(&json).unwrap(), i);
        let t = Timestamp(1_700_000_000_123_456);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        assert_eq!(serde_json::to_string(&Seq(42)).unwrap(), "42");
        assert_eq!(serde_json::from_str::<Seq>("42").unwrap(), Seq(42));
        assert_eq!(Seq(42).to_string(), "42");
        for bad in [
            "\"12\"",
            "\"+123456789ABCDEF\"",
            "\"0123456789ABCDEFG\"",
            "5",
        ] {
            assert!(serde_json::from_str::<ReplicaId>(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }

    #[test]
    fn timestamps_round_trip() {
        let t = Timestamp(1_700_000_000_123_456);
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Some(t));
        assert_eq!(Timestamp::parse_rfc3339("not a date"), None);
        assert_eq!(Timestamp::parse_rfc3339("@12xus"), None);
    }

    proptest::proptest! {
        #[test]
        fn every_timestamp_round_trips(micros: i64) {
            let t = Timestamp(micros);
            proptest::prop_assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Some(t));
        }
    }
}
