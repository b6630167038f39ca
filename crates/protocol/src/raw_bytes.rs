//! Byte strings in message bodies, written and read as one slice.
//!
//! serde sees a `Vec<u8>` as a sequence of `u8`, so postcard writes and
//! reads it one element at a time (a bounds check and a push per byte).
//! Replication packets are most of the bytes a replication moves — a
//! kilobyte document is a thousand such steps on each side — so their
//! fields go through serde's byte-string calls instead. postcard encodes a
//! byte string exactly as it encodes a sequence of `u8` (a varint length,
//! then the bytes), so the wire format does not change: a peer of either
//! kind reads the other's bodies (`tests` below pins that).

use serde::de::{Deserializer, Error, SeqAccess, Visitor};
use serde::ser::Serializer;
use std::fmt;

/// `#[serde(with = "raw_bytes")]` for a `Vec<u8>`.
pub(crate) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

/// `#[serde(with = "raw_bytes")]` for a `Vec<u8>`.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_byte_buf(BytesVisitor)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    /// Formats that have no byte strings (JSON) give a sequence.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(b) = seq.next_element()? {
            out.push(b);
        }
        Ok(out)
    }
}

/// `#[serde(with = "raw_bytes::list")]` for a `Vec<Vec<u8>>`.
pub(crate) mod list {
    use super::BytesVisitor;
    use serde::de::{Deserializer, SeqAccess, Visitor};
    use serde::ser::{SerializeSeq, Serializer};
    use std::fmt;

    pub(crate) fn serialize<S: Serializer>(list: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(list.len()))?;
        for bytes in list {
            seq.serialize_element(&Raw(bytes))?;
        }
        seq.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        d.deserialize_seq(ListVisitor)
    }

    struct Raw<'a>(&'a [u8]);

    impl serde::Serialize for Raw<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    struct Owned(Vec<u8>);

    impl<'de> serde::Deserialize<'de> for Owned {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Owned, D::Error> {
            d.deserialize_byte_buf(BytesVisitor).map(Owned)
        }
    }

    struct ListVisitor;

    impl<'de> Visitor<'de> for ListVisitor {
        type Value = Vec<Vec<u8>>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of byte strings")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Vec<u8>>, A::Error> {
            // A lying length must not make us allocate: cap the hint.
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(Owned(b)) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct AsSeq {
        one: Vec<u8>,
        many: Vec<Vec<u8>>,
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct AsBytes {
        #[serde(with = "super")]
        one: Vec<u8>,
        #[serde(with = "super::list")]
        many: Vec<Vec<u8>>,
    }

    fn sample(n: usize) -> (AsSeq, AsBytes) {
        let one: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        let many = vec![one.clone(), Vec::new(), vec![0xff; 300]];
        (
            AsSeq {
                one: one.clone(),
                many: many.clone(),
            },
            AsBytes { one, many },
        )
    }

    #[test]
    fn the_encoding_is_the_sequence_encoding() {
        for n in [0, 1, 127, 128, 1024, 70_000] {
            let (seq, bytes) = sample(n);
            let a = postcard::to_allocvec(&seq).unwrap();
            let b = postcard::to_allocvec(&bytes).unwrap();
            assert_eq!(a, b, "{n} bytes");
            let back: AsBytes = postcard::from_bytes(&a).unwrap();
            assert_eq!(back, bytes);
            let old: AsSeq = postcard::from_bytes(&b).unwrap();
            assert_eq!(old, seq);
        }
    }

    #[test]
    fn a_length_past_the_end_is_an_error() {
        let (_, bytes) = sample(100);
        let body = postcard::to_allocvec(&bytes).unwrap();
        for cut in 0..body.len() {
            assert!(
                postcard::from_bytes::<AsBytes>(&body[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        // A list claiming a billion entries in a few bytes.
        let lying = [0, 0x80, 0x94, 0xeb, 0xdc, 0x03, 1, 9];
        assert!(postcard::from_bytes::<AsBytes>(&lying).is_err());
    }
}
