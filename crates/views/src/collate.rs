//! Collation keys and entry summaries.
//!
//! An index entry's B+tree key is the concatenation of its sorted column
//! values, each encoded so that comparing the bytes compares the values,
//! followed by the note id (4 bytes, big-endian) to make keys unique. The
//! encoding of one column value is *prefix-free*, which is what lets a
//! descending column simply invert its bytes and still sort correctly,
//! and lets "find by key" be a range scan over a byte prefix.
//!
//! ```text
//!   value   := element* 0x00
//!   element := 0x10                       error value
//!            | 0x20 f64-order(8)          number
//!            | 0x30 i64-order(8)          date-time (µs)
//!            | 0x40 escaped-utf8 0x00 0x01 text (0x00 → 0x00 0xFF)
//! ```
//!
//! Text compares by Unicode code point after lowercasing, unless the
//! column is case-sensitive; only its first [`KEY_TEXT_CHARS`] characters
//! take part. The entry's value (its *summary*) holds the document's UNID
//! and every column's value, so reading a page of a view never loads a
//! document.

use formula::Value;
use nsf::{NoteId, Unid};

/// Characters of a text value that take part in collation.
pub const KEY_TEXT_CHARS: usize = 128;
/// Bytes of a text element kept in a summary.
pub const SUMMARY_TEXT_BYTES: usize = 256;
/// Largest summary (leaves room for the key in a B+tree entry).
pub const MAX_SUMMARY: usize = 960;

const END: u8 = 0x00;
const T_ERROR: u8 = 0x10;
const T_NUMBER: u8 = 0x20;
const T_DATETIME: u8 = 0x30;
const T_TEXT: u8 = 0x40;

/// Appends the collation encoding of `v` (ascending) to `out`.
pub fn encode_value(out: &mut Vec<u8>, v: &Value, case_sensitive: bool) {
    match v {
        Value::Text(list) => {
            for s in list {
                out.push(T_TEXT);
                encode_text(out, s, case_sensitive, false);
            }
        }
        Value::Number(list) => {
            for n in list {
                out.push(T_NUMBER);
                out.extend_from_slice(&f64_order(*n).to_be_bytes());
            }
        }
        Value::DateTime(list) => {
            for t in list {
                out.push(T_DATETIME);
                out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes());
            }
        }
        Value::Error(_) => out.push(T_ERROR),
    }
    out.push(END);
}

fn encode_text(out: &mut Vec<u8>, s: &str, case_sensitive: bool, prefix_only: bool) {
    fn push(out: &mut Vec<u8>, c: char) {
        let mut b = [0u8; 4];
        for &byte in c.encode_utf8(&mut b).as_bytes() {
            out.push(byte);
            if byte == 0 {
                out.push(0xFF);
            }
        }
    }
    for c in s.chars().take(KEY_TEXT_CHARS) {
        if c.is_ascii() {
            // Fast path: one byte, lowered in place.
            let b = if case_sensitive {
                c as u8
            } else {
                (c as u8).to_ascii_lowercase()
            };
            out.push(b);
            if b == 0 {
                out.push(0xFF);
            }
        } else if case_sensitive {
            push(out, c);
        } else {
            c.to_lowercase().for_each(|l| push(out, l));
        }
    }
    if !prefix_only {
        out.extend_from_slice(&[0x00, 0x01]);
    }
}

fn f64_order(n: f64) -> u64 {
    let n = if n == 0.0 { 0.0 } else { n }; // -0 sorts with +0
    let bits = n.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Inverts `out[from..]`, turning an ascending encoding into a descending one.
pub fn invert_from(out: &mut [u8], from: usize) {
    for b in &mut out[from..] {
        *b = !*b;
    }
}

/// The byte prefix shared by every key whose first sorted column equals
/// (`prefix == false`) or starts with (`prefix == true`) `key`. A key
/// that reads as a number or an RFC 3339 date-time matches those values;
/// anything else matches text.
pub fn search_prefix(key: &str, case_sensitive: bool, desc: bool, prefix: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let number = key.trim().parse::<f64>().ok().filter(|n| n.is_finite());
    if let Some(n) = number {
        out.push(T_NUMBER);
        out.extend_from_slice(&f64_order(n).to_be_bytes());
    } else if let Some(t) = nsf::Timestamp::parse_rfc3339(key.trim()) {
        out.push(T_DATETIME);
        out.extend_from_slice(&((t.0 as u64) ^ (1 << 63)).to_be_bytes());
    } else {
        out.push(T_TEXT);
        encode_text(&mut out, key, case_sensitive, prefix);
    }
    if !prefix {
        out.push(END);
    }
    if desc {
        invert_from(&mut out, 0);
    }
    out
}

/// The note id at the end of an index key.
pub fn key_note_id(key: &[u8]) -> Option<NoteId> {
    let tail: [u8; 4] = key.get(key.len().checked_sub(4)?..)?.try_into().ok()?;
    Some(NoteId(u32::from_be_bytes(tail)))
}

// ------------------------------------------------------------- summaries

/// Encodes an entry's summary: UNID, then each column value.
pub fn encode_summary(unid: Unid, columns: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&unid.0);
    out.push(columns.len() as u8);
    for v in columns {
        let budget = MAX_SUMMARY.saturating_sub(out.len());
        encode_summary_value(&mut out, v, budget);
    }
    out
}

fn encode_summary_value(out: &mut Vec<u8>, v: &Value, budget: usize) {
    let start = out.len();
    let (tag, n) = match v {
        Value::Text(l) => (T_TEXT, l.len()),
        Value::Number(l) => (T_NUMBER, l.len()),
        Value::DateTime(l) => (T_DATETIME, l.len()),
        Value::Error(_) => (T_ERROR, 0),
    };
    out.push(tag);
    out.extend_from_slice(&0u16.to_le_bytes());
    let mut kept = 0u16;
    for i in 0..n.min(u16::MAX as usize) {
        let before = out.len();
        match v {
            Value::Text(l) => {
                let s = truncate(&l[i], SUMMARY_TEXT_BYTES);
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Value::Number(l) => out.extend_from_slice(&l[i].to_le_bytes()),
            Value::DateTime(l) => out.extend_from_slice(&l[i].to_le_bytes()),
            Value::Error(_) => {}
        }
        if out.len() - start > budget {
            out.truncate(before);
            break;
        }
        kept += 1;
    }
    out[start + 1..start + 3].copy_from_slice(&kept.to_le_bytes());
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Decodes a summary; `None` if it is malformed.
pub fn decode_summary(b: &[u8]) -> Option<(Unid, Vec<Value>)> {
    let unid = Unid(b.get(..16)?.try_into().ok()?);
    let n = *b.get(16)? as usize;
    let mut at = 17;
    let mut cols = Vec::with_capacity(n);
    let take = |at: &mut usize, k: usize| -> Option<&[u8]> {
        let s = b.get(*at..*at + k)?;
        *at += k;
        Some(s)
    };
    for _ in 0..n {
        let tag = take(&mut at, 1)?[0];
        let count = u16::from_le_bytes(take(&mut at, 2)?.try_into().ok()?) as usize;
        let v = match tag {
            T_TEXT => {
                let mut l = Vec::with_capacity(count);
                for _ in 0..count {
                    let len = u16::from_le_bytes(take(&mut at, 2)?.try_into().ok()?) as usize;
                    l.push(std::str::from_utf8(take(&mut at, len)?).ok()?.to_string());
                }
                Value::Text(l)
            }
            T_NUMBER => Value::Number(
                (0..count)
                    .map(|_| Some(f64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?)))
                    .collect::<Option<_>>()?,
            ),
            T_DATETIME => Value::DateTime(
                (0..count)
                    .map(|_| Some(i64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?)))
                    .collect::<Option<_>>()?,
            ),
            T_ERROR => Value::Error(String::new()),
            _ => return None,
        };
        cols.push(v);
    }
    Some((unid, cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(v: &Value, desc: bool) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(&mut out, v, false);
        if desc {
            invert_from(&mut out, 0);
        }
        out
    }

    fn cmp_values(a: &Value, b: &Value) -> std::cmp::Ordering {
        // The reference order: element by element, kind rank then value.
        fn elems(v: &Value) -> Vec<(u8, f64, String)> {
            match v {
                Value::Text(l) => l
                    .iter()
                    .map(|s| {
                        (
                            4,
                            0.0,
                            s.chars()
                                .take(KEY_TEXT_CHARS)
                                .collect::<String>()
                                .to_lowercase(),
                        )
                    })
                    .collect(),
                Value::Number(l) => l.iter().map(|n| (2, *n, String::new())).collect(),
                Value::DateTime(l) => l.iter().map(|t| (3, *t as f64, String::new())).collect(),
                Value::Error(_) => vec![(1, 0.0, String::new())],
            }
        }
        let (ea, eb) = (elems(a), elems(b));
        for (x, y) in ea.iter().zip(&eb) {
            let o =
                x.0.cmp(&y.0)
                    .then(x.1.partial_cmp(&y.1).unwrap())
                    .then_with(|| x.2.cmp(&y.2));
            if o.is_ne() {
                return o;
            }
        }
        ea.len().cmp(&eb.len())
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            proptest::collection::vec("[a-cA-C\u{0}é]{0,4}", 0..3).prop_map(Value::Text),
            proptest::collection::vec(-1e6f64..1e6, 0..3).prop_map(Value::Number),
            proptest::collection::vec(-1_000_000i64..1_000_000, 0..3)
                .prop_map(|l| Value::DateTime(l.into_iter().map(|t| t * 1000).collect())),
        ]
    }

    proptest! {
        #[test]
        fn byte_order_is_value_order(a in value(), b in value()) {
            let want = cmp_values(&a, &b);
            prop_assert_eq!(enc(&a, false).cmp(&enc(&b, false)), want);
            prop_assert_eq!(enc(&a, true).cmp(&enc(&b, true)), want.reverse());
        }

        #[test]
        fn summaries_round_trip(cols in proptest::collection::vec(value(), 0..5)) {
            let unid = Unid([7; 16]);
            let (u, back) = decode_summary(&encode_summary(unid, &cols)).unwrap();
            prop_assert_eq!(u, unid);
            prop_assert_eq!(back, cols);
        }

        #[test]
        fn decoding_garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode_summary(&b);
        }
    }

    #[test]
    fn search_prefixes_match_exactly_or_by_prefix() {
        let key = |s: &str| enc(&Value::text(s), false);
        let exact = search_prefix("Ab", false, false, false);
        assert!(key("ab").starts_with(&exact));
        assert!(!key("abc").starts_with(&exact));
        let pre = search_prefix("Ab", false, false, true);
        assert!(key("abc").starts_with(&pre) && key("AB").starts_with(&pre));
        assert!(!key("b").starts_with(&pre));
        let d = search_prefix("ab", false, true, true);
        assert!(enc(&Value::text("abz"), true).starts_with(&d));
    }

    #[test]
    fn long_summaries_are_truncated_not_rejected() {
        let big = Value::Text(vec!["x".repeat(1000); 20]);
        let s = encode_summary(Unid([1; 16]), &[big.clone(), big]);
        assert!(s.len() <= MAX_SUMMARY + 16);
        assert!(decode_summary(&s).is_some());
    }
}
