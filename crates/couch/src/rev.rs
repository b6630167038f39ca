//! Revision ids: `N-hash`, where N is the version's sequence number and
//! the hash names the version (design.md §11.9).
//!
//! Every Folio version has exactly one revision id, the same on every
//! replica, so a client that read a version and edits it names exactly
//! that version, and an edit based on another version with the same
//! sequence number is a conflict, not an overwrite:
//!
//! ```text
//!   version that came through the CouchDB door   its $Rev item (gen = seq)
//!     - a client's own revision (new_edits=false)    as the client made it
//!     - an edit made here (new_edits=true)           N-hash(parent rev, deleted, body)
//!   any other version (native writes, a
//!   Folio peer's, a conflict document's loser)    seq-hash(seq_time, digest)
//! ```
//!
//! A version stored from a revision gets the sequence time
//! [`Rev::order_time`] (not a time: the first bytes of the hash), so the
//! same revision stored by two servers is the same Folio version, and two
//! revisions with one generation order in Folio as CouchDB orders them.

use nsf::{Timestamp, Version};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// Most ancestors a version keeps in `$Revs` (a client's longer history
/// is cut to the newest ones; CouchDB's `revs_limit` default is 1,000,
/// but a history is rarely longer than a few revisions, and every version
/// carries its own copy).
pub const MAX_ANCESTORS: usize = 100;

/// Longest hash part accepted.
const MAX_HASH: usize = 64;

/// A revision id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rev {
    /// The generation: 1 for a new document, +1 per edit.
    pub gen: u32,
    /// What names the version among those of its generation: ASCII
    /// letters, digits and `_`.
    pub hash: String,
}

impl fmt::Display for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.gen, self.hash)
    }
}

impl FromStr for Rev {
    type Err = String;

    /// `N-hash`: N a decimal number from 1 without leading zeros, the
    /// hash 1 to 64 ASCII letters, digits and `_` (CouchDB takes any
    /// text there; clients' made-up revisions such as `3-fake_rev` do).
    fn from_str(s: &str) -> Result<Rev, String> {
        let shown: String = s.chars().take(80).collect();
        let bad = |why: &str| format!("Invalid rev format {shown:?}: {why}");
        let (gen, hash) = s.split_once('-').ok_or_else(|| bad("expected N-hash"))?;
        if gen.is_empty() || !gen.bytes().all(|b| b.is_ascii_digit()) || gen.starts_with('0') {
            return Err(bad("the generation must be a number from 1"));
        }
        let gen: u32 = gen
            .parse()
            .map_err(|_| bad("the generation is too large"))?;
        if hash.is_empty() || hash.len() > MAX_HASH {
            return Err(bad("the hash must be 1 to 64 characters"));
        }
        if !hash.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(bad("the hash must be ASCII letters, digits and _"));
        }
        Ok(Rev {
            gen,
            hash: hash.to_string(),
        })
    }
}

impl PartialOrd for Rev {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rev {
    /// CouchDB's order: the generation, then the hash as a string.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.gen, self.hash.as_bytes()).cmp(&(other.gen, other.hash.as_bytes()))
    }
}

impl Rev {
    /// The revision id of a version that carries no `$Rev` of its own.
    pub fn of_version(v: &Version) -> Rev {
        let mut h = Sha256::new();
        h.update(b"folio rev v1\0");
        h.update(v.seq_time.0.to_le_bytes());
        h.update(v.digest);
        Rev {
            gen: v.seq,
            hash: hex(&h.finalize()[..16]),
        }
    }

    /// The revision an edit made at this door gets: the next generation
    /// after `parent`, hashed over the parent, the deleted flag and the
    /// body (canonical JSON: keys sorted), so the same edit of the same
    /// revision gets the same id wherever it is made, as in CouchDB.
    pub fn of_edit(parent: Option<&Rev>, deleted: bool, body: &serde_json::Value) -> Rev {
        let mut h = Sha256::new();
        h.update(b"folio edit v1\0");
        if let Some(p) = parent {
            h.update(p.to_string().as_bytes());
        }
        h.update([0, u8::from(deleted)]);
        h.update(serde_json::to_vec(body).unwrap_or_default());
        Rev {
            gen: parent.map_or(1, |p| p.gen.saturating_add(1)),
            hash: hex(&h.finalize()[..16]),
        }
    }

    /// The sequence time of a version stored from this revision: the
    /// hash's first six bytes, big-endian, as microseconds (so at most
    /// 2^48 µs, before 1979: never a time a local edit gets).
    pub fn order_time(&self) -> Timestamp {
        let mut b = [0u8; 8];
        for (i, c) in self.hash.bytes().take(6).enumerate() {
            b[2 + i] = c;
        }
        Timestamp(i64::from_be_bytes(b))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_what_clients_send_and_refuses_the_rest() {
        let r: Rev = "12-a1b2".parse().unwrap();
        assert_eq!((r.gen, r.hash.as_str()), (12, "a1b2"));
        assert_eq!(r.to_string(), "12-a1b2");
        let made_up: Rev = "3-totally_fake_rev".parse().unwrap();
        assert_eq!(made_up.hash, "totally_fake_rev");
        for bad in [
            "",
            "1",
            "-abc",
            "0-abc",
            "01-abc",
            "1-",
            "x-abc",
            "1-ab c",
            "1-ab-c",
            "99999999999-a",
            "+1-a",
            "1-é",
        ] {
            assert!(bad.parse::<Rev>().is_err(), "{bad:?}");
        }
        assert!(format!("1-{}", "a".repeat(65)).parse::<Rev>().is_err());
    }

    #[test]
    fn orders_as_couchdb_does() {
        let a: Rev = "2-b".parse().unwrap();
        let b: Rev = "2-c".parse().unwrap();
        let c: Rev = "10-a".parse().unwrap();
        assert!(a < b && b < c, "generation first, then the hash as text");
        assert!(a.order_time() < b.order_time());
        assert!(c.order_time().0 < 1 << 48);
    }

    #[test]
    fn an_edit_names_parent_and_content() {
        let p: Rev = "1-a".parse().unwrap();
        let body = serde_json::json!({"x": 1});
        let e = Rev::of_edit(Some(&p), false, &body);
        assert_eq!(e.gen, 2);
        assert_eq!(e, Rev::of_edit(Some(&p), false, &body), "deterministic");
        let q: Rev = "1-b".parse().unwrap();
        assert_ne!(e, Rev::of_edit(Some(&q), false, &body));
        assert_ne!(e, Rev::of_edit(Some(&p), true, &body));
        assert_ne!(
            e,
            Rev::of_edit(Some(&p), false, &serde_json::json!({"x": 2}))
        );
        assert_eq!(Rev::of_edit(None, false, &body).gen, 1);
    }

    #[test]
    fn a_version_has_one_id() {
        let v = Version {
            seq: 3,
            seq_time: Timestamp(5),
            digest: [7; 32],
        };
        let r = Rev::of_version(&v);
        assert_eq!(r.gen, 3);
        assert_eq!(r.hash.len(), 32);
        let mut later = v;
        later.seq_time = Timestamp(6);
        assert_ne!(
            r,
            Rev::of_version(&later),
            "same seq and content, another version"
        );
    }

    proptest! {
        /// The parser never panics, and what it accepts prints back as given.
        #[test]
        fn parse_never_panics(s in ".{0,90}") {
            if let Ok(r) = s.parse::<Rev>() {
                prop_assert_eq!(r.to_string(), s);
            }
        }

        #[test]
        fn printed_revisions_parse_back(gen in 1u32.., hash in "[a-zA-Z0-9]{1,64}") {
            let r = Rev { gen, hash };
            prop_assert_eq!(r.to_string().parse::<Rev>().unwrap(), r);
        }
    }
}
