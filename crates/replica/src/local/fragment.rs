//! Packets larger than a frame, cut into fragments on the way out and
//! put back together on the way in (design.md §11.7, docs/protocol.md
//! §5.3.1).
//!
//! A replication packet holds a whole document, attachments included, so
//! it can be far larger than a native frame (16 MiB by default). Every
//! packet therefore travels as one or more *fragments*, each at most
//! [`FRAGMENT_BYTES`] of packet plus a small header, each its own
//! `ReplicationPacket` item or `Replicate.packets` entry:
//!
//! ```text
//!   whole  0x00 | packet                     a packet of ≤ FRAGMENT_BYTES
//!   first  0x01 | total (u64 LE) | bytes     the total announced up front
//!   more   0x02 | bytes                      (≥ 1 byte)
//!   last   0x03 | bytes                      (≥ 1 byte) ends exactly at total
//! ```
//!
//! The fragments of one packet follow each other with nothing between
//! them (one session's packets travel in order on one connection). The
//! receiver ([`Reassembler`]) trusts nothing: a first fragment announcing
//! more than its limit is refused before anything is kept, so a peer
//! cannot make it hold more than the limit; a continuation with no first
//! fragment, a new packet before the last one ended, bytes past the
//! announced total or a last fragment short of it are
//! [`ReplicaError::Fragment`]; a refusal drops whatever was gathered.
//! Both ends are sans-I/O: bytes in, bytes out.
//!
//! Copies: the sender encodes a packet into one buffer and cuts
//! fragments from it one at a time as they are sent
//! ([`Fragmenter`]); the receiver gathers into one buffer, reserved as
//! it fills (never beyond the announced total), and decodes from it.

use crate::error::ReplicaError;
use std::fmt;

/// The most packet bytes in one fragment (256 KiB, a download's chunk):
/// small enough that a request of many fits a frame, that a slow link
/// shows progress and that the server's queue of answers per connection
/// (64) holds at most 16 MiB of them; large enough that the header and
/// the item cost nothing.
pub const FRAGMENT_BYTES: usize = 256 << 10;
/// The longest fragment header (a first fragment's kind and total).
pub const FRAGMENT_HEADER: usize = 9;

const WHOLE: u8 = 0;
const FIRST: u8 = 1;
const MORE: u8 = 2;
const LAST: u8 = 3;

/// What gathering starts with before it reserves as it fills.
const FIRST_RESERVE: u64 = 32 * FRAGMENT_BYTES as u64;

/// Why a sequence of fragments does not make a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentFault {
    /// A fragment with no bytes at all, or a continuation with no data.
    Empty,
    /// A kind byte that is none of whole, first, more, last.
    UnknownKind(u8),
    /// A first fragment too short to hold its total.
    ShortHeader,
    /// A first fragment whose total its own bytes already reach (such a
    /// packet travels whole).
    NotFragmented,
    /// A continuation with no first fragment before it (out of order).
    NoFirst,
    /// A new packet began before the last one's fragments ended.
    Interleaved,
    /// More bytes than the first fragment announced.
    Overrun {
        /// The announced total.
        total: u64,
    },
    /// The packet ended (a last fragment, or the session) short of its
    /// announced total.
    Truncated {
        /// Bytes gathered.
        got: u64,
        /// The announced total.
        total: u64,
    },
}

impl fmt::Display for FragmentFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FragmentFault::Empty => write!(f, "an empty fragment"),
            FragmentFault::UnknownKind(k) => write!(f, "unknown fragment kind {k}"),
            FragmentFault::ShortHeader => write!(f, "a first fragment without its total"),
            FragmentFault::NotFragmented => {
                write!(f, "a first fragment that holds its whole packet")
            }
            FragmentFault::NoFirst => write!(f, "a continuation with no first fragment"),
            FragmentFault::Interleaved => {
                write!(f, "a new packet before the previous one's last fragment")
            }
            FragmentFault::Overrun { total } => {
                write!(f, "more bytes than the {total} announced")
            }
            FragmentFault::Truncated { got, total } => {
                write!(f, "ended after {got} of the {total} bytes announced")
            }
        }
    }
}

/// The fragments of one packet, cut as they are taken.
#[derive(Debug)]
pub struct Fragmenter {
    packet: Vec<u8>,
    /// Packet bytes already cut into fragments.
    cut: usize,
    /// Whether the (single or last) fragment went.
    done: bool,
}

impl Fragmenter {
    /// The fragments of `packet`.
    pub fn new(packet: Vec<u8>) -> Fragmenter {
        Fragmenter {
            packet,
            cut: 0,
            done: false,
        }
    }

    /// The length of the next fragment, if any.
    pub fn next_len(&self) -> Option<usize> {
        if self.done {
            return None;
        }
        let len = self.packet.len();
        Some(if len <= FRAGMENT_BYTES {
            1 + len
        } else if self.cut == 0 {
            FRAGMENT_HEADER + FRAGMENT_BYTES
        } else {
            1 + (len - self.cut).min(FRAGMENT_BYTES)
        })
    }
}

impl Iterator for Fragmenter {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let len = self.packet.len();
        if len <= FRAGMENT_BYTES {
            self.done = true;
            let mut whole = std::mem::take(&mut self.packet);
            whole.insert(0, WHOLE);
            return Some(whole);
        }
        let end = (self.cut + FRAGMENT_BYTES).min(len);
        let mut out = Vec::with_capacity(FRAGMENT_HEADER + end - self.cut);
        if self.cut == 0 {
            out.push(FIRST);
            out.extend_from_slice(&(len as u64).to_le_bytes());
        } else if end == len {
            out.push(LAST);
        } else {
            out.push(MORE);
        }
        out.extend_from_slice(&self.packet[self.cut..end]);
        self.cut = end;
        if end == len {
            self.done = true;
            self.packet = Vec::new();
        }
        Some(out)
    }
}

/// Puts packets back together from their fragments, refusing any packet
/// over its limit.
#[derive(Debug)]
pub struct Reassembler {
    max: u64,
    partial: Option<Partial>,
}

#[derive(Debug)]
struct Partial {
    total: u64,
    bytes: Vec<u8>,
}

impl Reassembler {
    /// A reassembler of packets of at most `max_packet` bytes.
    pub fn new(max_packet: u64) -> Reassembler {
        Reassembler {
            max: max_packet,
            partial: None,
        }
    }

    /// Takes the next fragment: the packet it completes, if any. A
    /// refused fragment drops what was gathered.
    pub fn push(&mut self, fragment: Vec<u8>) -> Result<Option<Vec<u8>>, ReplicaError> {
        let r = self.take(fragment);
        if r.is_err() {
            self.partial = None;
        }
        r
    }

    /// Whether a packet is partly gathered.
    pub fn is_gathering(&self) -> bool {
        self.partial.is_some()
    }

    /// Checks that no packet was left half gathered (at the end of a
    /// session).
    pub fn finish(&self) -> Result<(), ReplicaError> {
        match &self.partial {
            None => Ok(()),
            Some(p) => Err(fault(FragmentFault::Truncated {
                got: p.bytes.len() as u64,
                total: p.total,
            })),
        }
    }

    fn take(&mut self, mut fragment: Vec<u8>) -> Result<Option<Vec<u8>>, ReplicaError> {
        let Some(&kind) = fragment.first() else {
            return Err(fault(FragmentFault::Empty));
        };
        match kind {
            WHOLE => {
                if self.partial.is_some() {
                    return Err(fault(FragmentFault::Interleaved));
                }
                self.check_size(fragment.len() as u64 - 1)?;
                fragment.remove(0);
                Ok(Some(fragment))
            }
            FIRST => {
                if self.partial.is_some() {
                    return Err(fault(FragmentFault::Interleaved));
                }
                let total = fragment
                    .get(1..FRAGMENT_HEADER)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or(fault(FragmentFault::ShortHeader))?;
                // I48: refused before anything is kept.
                self.check_size(total)?;
                let data = &fragment[FRAGMENT_HEADER..];
                if data.is_empty() {
                    return Err(fault(FragmentFault::Empty));
                }
                if data.len() as u64 >= total {
                    return Err(fault(FragmentFault::NotFragmented));
                }
                // Reserved as it fills, never past the total, so an
                // announcement alone costs at most FIRST_RESERVE.
                let mut bytes = Vec::with_capacity(total.min(FIRST_RESERVE) as usize);
                bytes.extend_from_slice(data);
                self.partial = Some(Partial { total, bytes });
                Ok(None)
            }
            MORE | LAST => {
                let Some(p) = &mut self.partial else {
                    return Err(fault(FragmentFault::NoFirst));
                };
                let data = &fragment[1..];
                if data.is_empty() {
                    return Err(fault(FragmentFault::Empty));
                }
                let got = (p.bytes.len() + data.len()) as u64;
                if got > p.total || (kind == MORE && got == p.total) {
                    return Err(fault(FragmentFault::Overrun { total: p.total }));
                }
                if kind == LAST && got < p.total {
                    return Err(fault(FragmentFault::Truncated {
                        got,
                        total: p.total,
                    }));
                }
                p.reserve(data.len());
                p.bytes.extend_from_slice(data);
                if kind == MORE {
                    return Ok(None);
                }
                Ok(self.partial.take().map(|p| p.bytes))
            }
            other => Err(fault(FragmentFault::UnknownKind(other))),
        }
    }

    fn check_size(&self, len: u64) -> Result<(), ReplicaError> {
        if len > self.max {
            return Err(ReplicaError::PacketTooLarge { len, max: self.max });
        }
        Ok(())
    }
}

impl Partial {
    /// Room for `more` bytes: doubling, but never past the total.
    fn reserve(&mut self, more: usize) {
        let need = self.bytes.len() + more;
        if need <= self.bytes.capacity() {
            return;
        }
        let total = usize::try_from(self.total).unwrap_or(usize::MAX);
        let want = need.max(self.bytes.capacity().saturating_mul(2)).min(total);
        self.bytes.reserve_exact(want - self.bytes.len());
    }
}

fn fault(f: FragmentFault) -> ReplicaError {
    ReplicaError::Fragment(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cut(packet: &[u8]) -> Vec<Vec<u8>> {
        let f = Fragmenter::new(packet.to_vec());
        let mut lens = Vec::new();
        let mut out = Vec::new();
        let mut f = f;
        while let Some(len) = f.next_len() {
            lens.push(len);
            out.push(f.next().unwrap());
        }
        assert!(f.next().is_none());
        assert_eq!(lens, out.iter().map(Vec::len).collect::<Vec<_>>());
        out
    }

    fn big(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    fn refused(r: &mut Reassembler, frags: Vec<Vec<u8>>) -> ReplicaError {
        let mut last = None;
        for f in frags {
            match r.push(f) {
                Ok(_) => {}
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        let e = last.expect("the sequence was refused");
        assert!(!r.is_gathering(), "a refusal drops what was gathered");
        e
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn packets_of_any_size_round_trip(
            sizes in proptest::collection::vec(
                prop_oneof![0usize..64, FRAGMENT_BYTES - 2..FRAGMENT_BYTES + 2, 0usize..3 * FRAGMENT_BYTES + 7],
                1..4,
            )
        ) {
            let mut r = Reassembler::new(4 * FRAGMENT_BYTES as u64);
            for size in sizes {
                let packet = big(size);
                let frags = cut(&packet);
                prop_assert!(frags.iter().all(|f| f.len() <= FRAGMENT_BYTES + FRAGMENT_HEADER));
                prop_assert_eq!(frags.len(), size.div_ceil(FRAGMENT_BYTES).max(1));
                let n = frags.len();
                let mut got = None;
                for (i, f) in frags.into_iter().enumerate() {
                    let out = r.push(f).unwrap();
                    prop_assert_eq!(out.is_some(), i + 1 == n);
                    got = got.or(out);
                }
                prop_assert_eq!(got.unwrap(), packet);
                r.finish().unwrap();
            }
        }
    }

    #[test]
    fn a_packet_above_the_limit_is_refused_at_its_first_fragment() {
        let limit = 2 * FRAGMENT_BYTES as u64;
        let mut r = Reassembler::new(limit);
        let mut frags = cut(&big(3 * FRAGMENT_BYTES)).into_iter();
        assert_eq!(
            r.push(frags.next().unwrap()),
            Err(ReplicaError::PacketTooLarge {
                len: 3 * FRAGMENT_BYTES as u64,
                max: limit,
            })
        );
        assert!(!r.is_gathering());
        // A forged announcement costs nothing either.
        let mut forged = vec![FIRST];
        forged.extend_from_slice(&u64::MAX.to_le_bytes());
        forged.push(1);
        assert!(matches!(
            r.push(forged),
            Err(ReplicaError::PacketTooLarge { len: u64::MAX, .. })
        ));
        let mut small = Reassembler::new(10);
        assert!(matches!(
            small.push(cut(&big(11)).remove(0)),
            Err(ReplicaError::PacketTooLarge { len: 11, max: 10 })
        ));
    }

    #[test]
    fn fragments_out_of_order_are_refused() {
        let frags = cut(&big(3 * FRAGMENT_BYTES));
        let mut r = Reassembler::new(u64::MAX);
        assert_eq!(
            refused(&mut r, vec![frags[1].clone()]),
            ReplicaError::Fragment(FragmentFault::NoFirst)
        );
        assert_eq!(
            refused(&mut r, vec![frags[2].clone()]),
            ReplicaError::Fragment(FragmentFault::NoFirst)
        );
        // The last before the middle: short of the total.
        assert_eq!(
            refused(&mut r, vec![frags[0].clone(), frags[2].clone()]),
            ReplicaError::Fragment(FragmentFault::Truncated {
                got: 2 * FRAGMENT_BYTES as u64,
                total: 3 * FRAGMENT_BYTES as u64,
            })
        );
        // A middle fragment twice runs past the total.
        let e = refused(
            &mut r,
            vec![frags[0].clone(), frags[1].clone(), frags[1].clone()],
        );
        assert_eq!(
            e,
            ReplicaError::Fragment(FragmentFault::Overrun {
                total: 3 * FRAGMENT_BYTES as u64
            })
        );
    }

    #[test]
    fn a_packet_interleaved_with_another_is_refused() {
        let a = cut(&big(2 * FRAGMENT_BYTES + 1));
        let b = cut(&big(5));
        let mut r = Reassembler::new(u64::MAX);
        assert_eq!(
            refused(&mut r, vec![a[0].clone(), b[0].clone()]),
            ReplicaError::Fragment(FragmentFault::Interleaved)
        );
        assert_eq!(
            refused(&mut r, vec![a[0].clone(), a[0].clone()]),
            ReplicaError::Fragment(FragmentFault::Interleaved)
        );
        // After a refusal the next packet starts clean.
        assert_eq!(r.push(b[0].clone()).unwrap(), Some(big(5)));
    }

    #[test]
    fn a_packet_cut_short_is_refused() {
        let frags = cut(&big(2 * FRAGMENT_BYTES + 1));
        let mut r = Reassembler::new(u64::MAX);
        assert_eq!(r.push(frags[0].clone()).unwrap(), None);
        assert!(r.is_gathering());
        assert_eq!(
            r.finish(),
            Err(ReplicaError::Fragment(FragmentFault::Truncated {
                got: FRAGMENT_BYTES as u64,
                total: 2 * FRAGMENT_BYTES as u64 + 1,
            }))
        );
        // A more fragment that reaches the total should have been last.
        let mut more = frags[1].clone();
        more.extend_from_slice(&frags[2][1..]);
        assert_eq!(
            refused(&mut r, vec![more]),
            ReplicaError::Fragment(FragmentFault::Overrun {
                total: 2 * FRAGMENT_BYTES as u64 + 1
            })
        );
    }

    #[test]
    fn malformed_fragments_are_refused() {
        let mut r = Reassembler::new(u64::MAX);
        let cases: Vec<(Vec<u8>, FragmentFault)> = vec![
            (vec![], FragmentFault::Empty),
            (vec![7, 1, 2], FragmentFault::UnknownKind(7)),
            (vec![FIRST, 1, 2, 3], FragmentFault::ShortHeader),
            (
                [&[FIRST][..], &5u64.to_le_bytes()].concat(),
                FragmentFault::Empty,
            ),
            (
                [&[FIRST][..], &3u64.to_le_bytes(), &[1, 2, 3]].concat(),
                FragmentFault::NotFragmented,
            ),
        ];
        for (frag, want) in cases {
            assert_eq!(refused(&mut r, vec![frag]), ReplicaError::Fragment(want));
        }
        let first = [&[FIRST][..], &5u64.to_le_bytes(), &[1, 2]].concat();
        assert_eq!(
            refused(&mut r, vec![first, vec![MORE]]),
            ReplicaError::Fragment(FragmentFault::Empty)
        );
    }

    #[test]
    fn gathering_never_reserves_past_the_total() {
        let len = 20 * FRAGMENT_BYTES + 3;
        let mut r = Reassembler::new(u64::MAX);
        let mut out = None;
        for f in cut(&big(len)) {
            out = r.push(f).unwrap().or(out);
        }
        let out = out.unwrap();
        assert_eq!(out.len(), len);
        assert_eq!(out.capacity(), len);
    }
}
