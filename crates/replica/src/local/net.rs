//! The wire form of the nsf drivers' packets: what a network driver puts
//! in a frame and takes out of one.
//!
//! The machines' messages are serde data, generic in the version and the
//! content; nsf's versions and note bodies are not serde types (and
//! should not be: their bytes are nsf's business), so they travel here as
//! plain mirrors — a version as (sequence number, sequence time µs,
//! digest), a note body as nsf's own note encoding (`nsf::encode_note`,
//! which every reader already validates) plus each attachment's name,
//! type and content — and the whole packet as postcard, the protocol's
//! body format. Content is the original bytes, or a compressed object's
//! zstd stream with the original's size, crc32c and SHA-256 (I47), which
//! the target's nsf checks by decoding before it stores anything.
//!
//! Decoding is the network's door into the machines, so it trusts
//! nothing: a packet must decode exactly (no trailing bytes), a note must
//! pass `nsf::decode_note`, and the UNID in its envelope must be the one
//! in its body. Anything else is [`ReplicaError::Malformed`] and none of
//! it reaches a machine. A packet to a target is decoded within
//! [`Limits`]: an attachment whose original size (claimed by a carried
//! stream, or carried as bytes) is above the receiver's attachment limit
//! is [`ReplicaError::AttachmentTooLarge`], refused before any stream is
//! decoded, so a small zstd stream claiming terabytes costs nothing
//! (design.md §11.7).
//!
//! Encoding borrows the attachments' bytes and writes the packet into
//! one buffer of its exact size; decoding borrows from the received
//! buffer and copies each attachment once. A packet then travels as
//! fragments ([`Fragmenter`], [`Reassembler`], `fragment.rs`).

use super::body::{Attachment, Content, NoteBody};
use crate::error::ReplicaError;
use crate::msg::{Entry, Envelope, Packet, Summary, ToSource, ToTarget};
use nsf::{CarriedContent, ContentHash, StoredForm, Timestamp, Unid};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use super::fragment::{
    FragmentFault, Fragmenter, Reassembler, FRAGMENT_BYTES, FRAGMENT_HEADER,
};

/// The attachment limit a receiver applies unless told otherwise: the
/// server's default `max_attachment_bytes` (2 GiB).
pub const DEFAULT_MAX_ATTACHMENT: u64 = 2 << 30;
/// Room in a packet beyond its attachments: the note's own encoding (at
/// most `nsf::MAX_NOTE_BYTES`) and the envelope (versions, names).
pub const NOTE_ROOM: u64 = nsf::MAX_NOTE_BYTES as u64 + (1 << 20);

/// What a receiver accepts from the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest original an attachment may claim or carry.
    pub attachment: u64,
    /// The largest packet a [`Reassembler`] gathers.
    pub packet: u64,
}

impl Limits {
    /// Attachments of at most `max_attachment` bytes, and packets of one
    /// such attachment plus [`NOTE_ROOM`].
    pub fn for_attachments(max_attachment: u64) -> Limits {
        Limits {
            attachment: max_attachment,
            packet: max_attachment.saturating_add(NOTE_ROOM),
        }
    }

    /// A reassembler within these limits.
    pub fn reassembler(&self) -> Reassembler {
        Reassembler::new(self.packet)
    }
}

impl Default for Limits {
    /// [`Limits::for_attachments`] of [`DEFAULT_MAX_ATTACHMENT`].
    fn default() -> Self {
        Limits::for_attachments(DEFAULT_MAX_ATTACHMENT)
    }
}

/// A packet from a target to an nsf source.
pub type SourcePacket = Packet<ToSource>;
/// A packet from an nsf source to a target.
pub type TargetPacket = Packet<ToTarget<nsf::Version, NoteBody>>;

#[derive(Serialize, Deserialize)]
struct NetVersion {
    seq: u32,
    seq_time: i64,
    digest: [u8; 32],
}

#[derive(Serialize, Deserialize)]
struct NetAttachment<'a> {
    name: String,
    mime: String,
    #[serde(borrow)]
    content: NetContent<'a>,
}

/// An attachment's content on the wire (borrowed: from the body being
/// sent, or from the packet being decoded).
#[derive(Serialize, Deserialize)]
enum NetContent<'a> {
    /// 0: the original bytes.
    Original(&'a [u8]),
    /// 1: a zstd stream of `size` original bytes whose crc32c and
    /// SHA-256 are given, as the source's store keeps it (I47).
    Zstd {
        size: u64,
        crc32c: u32,
        sha256: [u8; 32],
        stream: &'a [u8],
    },
    /// 2: a reference to content the target offered in its Want (the
    /// original's size, crc32c and SHA-256); no bytes.
    Held {
        size: u64,
        crc32c: u32,
        sha256: [u8; 32],
    },
}

impl NetContent<'_> {
    /// The original size it carries or claims (a reference carries
    /// nothing to decode or copy: 0).
    fn original_len(&self) -> u64 {
        match self {
            NetContent::Original(b) => b.len() as u64,
            NetContent::Zstd { size, .. } => *size,
            NetContent::Held { .. } => 0,
        }
    }
}

fn content_out(c: &Content) -> NetContent<'_> {
    match c {
        Content::Original(b) => NetContent::Original(b),
        Content::Carried(c) => match c.form {
            StoredForm::Raw => NetContent::Original(&c.bytes),
            StoredForm::Zstd => NetContent::Zstd {
                size: c.size,
                crc32c: c.crc32c,
                sha256: c.hash.0,
                stream: &c.bytes,
            },
        },
        Content::Held { hash, size, crc32c } => NetContent::Held {
            size: *size,
            crc32c: *crc32c,
            sha256: hash.0,
        },
    }
}

fn content_in(c: NetContent<'_>) -> Content {
    match c {
        NetContent::Original(b) => Content::Original(Arc::new(b.to_vec())),
        NetContent::Zstd {
            size,
            crc32c,
            sha256,
            stream,
        } => Content::Carried(Arc::new(CarriedContent {
            form: StoredForm::Zstd,
            size,
            crc32c,
            hash: ContentHash(sha256),
            bytes: stream.to_vec(),
        })),
        NetContent::Held {
            size,
            crc32c,
            sha256,
        } => Content::Held {
            hash: ContentHash(sha256),
            size,
            crc32c,
        },
    }
}

#[derive(Serialize, Deserialize)]
struct NetBody<'a> {
    /// `nsf::encode_note` of the body (attachment items left out).
    note: &'a [u8],
    #[serde(borrow)]
    attachments: Vec<NetAttachment<'a>>,
}

fn version_out(v: &nsf::Version) -> NetVersion {
    NetVersion {
        seq: v.seq,
        seq_time: v.seq_time.0,
        digest: v.digest,
    }
}

fn version_in(v: NetVersion) -> nsf::Version {
    nsf::Version {
        seq: v.seq,
        seq_time: Timestamp(v.seq_time),
        digest: v.digest,
    }
}

fn note_out(b: &NoteBody) -> Result<Vec<u8>, ReplicaError> {
    nsf::encode_note(&b.to_note()).map_err(|e| ReplicaError::Local {
        code: crate::ErrorCode::Local,
        message: format!("document {} does not encode: {e}", b.oid.unid),
    })
}

fn body_out<'a>(b: &'a NoteBody, note: &'a [u8]) -> NetBody<'a> {
    NetBody {
        note,
        attachments: b
            .attachments
            .iter()
            .map(|a| NetAttachment {
                name: a.name.clone(),
                mime: a.mime.clone(),
                content: content_out(&a.content),
            })
            .collect(),
    }
}

/// Refuses a body whose attachments are larger than `limits` allow,
/// before any of it is copied or decoded (I48).
fn check_attachments(unid: Unid, b: &NetBody<'_>, limits: &Limits) -> Result<(), ReplicaError> {
    match b
        .attachments
        .iter()
        .find(|a| a.content.original_len() > limits.attachment)
    {
        None => Ok(()),
        Some(a) => Err(ReplicaError::AttachmentTooLarge {
            unid,
            name: a.name.clone(),
            size: a.content.original_len(),
            max: limits.attachment,
        }),
    }
}

fn body_in(b: NetBody<'_>) -> Result<NoteBody, String> {
    let note =
        nsf::decode_note(b.note).map_err(|e| format!("a document that does not decode: {e}"))?;
    if note.attachments().next().is_some() {
        return Err(format!(
            "document {} carries attachment items; attachments travel as content",
            note.oid.unid
        ));
    }
    Ok(NoteBody {
        oid: note.oid,
        created: note.created,
        modified: note.modified,
        deleted: note.deleted,
        items: note.items,
        attachments: b
            .attachments
            .into_iter()
            .map(|a| Attachment {
                name: a.name,
                mime: a.mime,
                content: content_in(a.content),
            })
            .collect(),
    })
}

/// The bytes of a packet to a source.
pub fn encode_to_source(p: &SourcePacket) -> Result<Vec<u8>, ReplicaError> {
    encode(p, "to-source")
}

/// A packet to a source from its bytes.
pub fn decode_to_source(b: &[u8]) -> Result<SourcePacket, ReplicaError> {
    decode(b, "to-source")
}

/// The bytes of a packet to a target, in one buffer of their size.
pub fn encode_to_target(p: &TargetPacket) -> Result<Vec<u8>, ReplicaError> {
    let note = match &p.body {
        ToTarget::Note(n) => note_out(&n.body)?,
        _ => Vec::new(),
    };
    let body = match &p.body {
        ToTarget::Hello(h) => ToTarget::Hello(h.clone()),
        ToTarget::Summary(s) => ToTarget::Summary(Summary {
            upto: s.upto,
            last: s.last,
            entries: s
                .entries
                .iter()
                .map(|e| Entry {
                    unid: e.unid,
                    version: version_out(&e.version),
                    size: e.size,
                    deleted: e.deleted,
                    change: e.change,
                })
                .collect(),
        }),
        ToTarget::Note(n) => ToTarget::Note(Envelope {
            unid: n.unid,
            version: version_out(&n.version),
            deleted: n.deleted,
            revisions: n.revisions.iter().map(version_out).collect(),
            size: n.size,
            body: body_out(&n.body, &note),
        }),
        ToTarget::Sent { upto } => ToTarget::Sent { upto: *upto },
        ToTarget::Error(f) => ToTarget::Error(f.clone()),
    };
    let packet: Packet<ToTarget<NetVersion, NetBody>> = Packet {
        session: p.session,
        n: p.n,
        body,
    };
    encode(&packet, "to-target")
}

/// A packet to a target from its bytes, within `limits` (module docs):
/// an attachment above the limit is refused before anything is decoded.
pub fn decode_to_target(b: &[u8], limits: &Limits) -> Result<TargetPacket, ReplicaError> {
    let p: Packet<ToTarget<NetVersion, NetBody>> = decode(b, "to-target")?;
    let bad = |reason: String| ReplicaError::Malformed {
        what: "to-target",
        reason,
    };
    let body = match p.body {
        ToTarget::Hello(h) => ToTarget::Hello(h),
        ToTarget::Summary(s) => ToTarget::Summary(Summary {
            upto: s.upto,
            last: s.last,
            entries: s
                .entries
                .into_iter()
                .map(|e| Entry {
                    unid: e.unid,
                    version: version_in(e.version),
                    size: e.size,
                    deleted: e.deleted,
                    change: e.change,
                })
                .collect(),
        }),
        ToTarget::Note(n) => {
            check_attachments(n.unid, &n.body, limits)?;
            let body = body_in(n.body).map_err(bad)?;
            if body.oid.unid != n.unid || body.deleted != n.deleted {
                return Err(bad(format!(
                    "the envelope of document {} holds document {} (or another deletion state)",
                    n.unid, body.oid.unid
                )));
            }
            ToTarget::Note(Envelope {
                unid: n.unid,
                version: version_in(n.version),
                deleted: n.deleted,
                revisions: n.revisions.into_iter().map(version_in).collect(),
                size: n.size,
                body,
            })
        }
        ToTarget::Sent { upto } => ToTarget::Sent { upto },
        ToTarget::Error(f) => ToTarget::Error(f),
    };
    Ok(Packet {
        session: p.session,
        n: p.n,
        body,
    })
}

/// `v` in one buffer of its exact size (plus the byte a whole fragment's
/// kind takes, `fragment.rs`), so a large document is not copied as the
/// buffer grows.
fn encode<T: Serialize>(v: &T, what: &'static str) -> Result<Vec<u8>, ReplicaError> {
    let failed = |e: postcard::Error| ReplicaError::Malformed {
        what,
        reason: format!("does not encode: {e}"),
    };
    let len = postcard::experimental::serialized_size(v).map_err(failed)?;
    postcard::to_extend(v, Vec::with_capacity(len + 1)).map_err(failed)
}

fn decode<'a, T: Deserialize<'a>>(b: &'a [u8], what: &'static str) -> Result<T, ReplicaError> {
    let bad = |reason: String| ReplicaError::Malformed { what, reason };
    let (v, rest) = postcard::take_from_bytes(b).map_err(|e| bad(e.to_string()))?;
    if !rest.is_empty() {
        return Err(bad(format!("{} bytes after the packet", rest.len())));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use nsf::{Item, ItemValue, OriginatorId, Unid};

    fn note_packet() -> TargetPacket {
        let unid = Unid([7; 16]);
        let version = nsf::Version {
            seq: 3,
            seq_time: Timestamp(1_700_000_000_000_000),
            digest: [9; 32],
        };
        Packet {
            session: SessionId(42),
            n: 5,
            body: ToTarget::Note(Envelope {
                unid,
                version,
                deleted: false,
                revisions: vec![version],
                size: 10,
                body: NoteBody {
                    oid: OriginatorId {
                        unid,
                        seq_num: 3,
                        seq_time: Timestamp(1_700_000_000_000_000),
                    },
                    created: Timestamp(1_600_000_000_000_000),
                    modified: Timestamp(1_700_000_000_000_000),
                    deleted: false,
                    items: vec![Item {
                        name: "Subject".into(),
                        value: ItemValue::Text("hi".into()),
                    }],
                    attachments: vec![Attachment {
                        name: "a.bin".into(),
                        mime: "application/octet-stream".into(),
                        content: Content::Original(Arc::new((0..=255u8).collect())),
                    }],
                },
            }),
        }
    }

    #[test]
    fn a_note_packet_round_trips() {
        let p = note_packet();
        let b = encode_to_target(&p).unwrap();
        assert_eq!(decode_to_target(&b, &Limits::default()).unwrap(), p);
    }

    #[test]
    fn a_carried_stream_round_trips_in_its_stored_size() {
        let original = b"compressible text, again and again. ".repeat(400);
        let stream = zstd::bulk::compress(&original, 3).unwrap();
        let carried = CarriedContent {
            form: StoredForm::Zstd,
            size: original.len() as u64,
            crc32c: 5,
            hash: ContentHash([6; 32]),
            bytes: stream.clone(),
        };
        let mut p = note_packet();
        if let ToTarget::Note(n) = &mut p.body {
            n.body.attachments[0].content = Content::Carried(Arc::new(carried));
        }
        let b = encode_to_target(&p).unwrap();
        assert!(b.len() < stream.len() + 300, "{} bytes", b.len());
        assert!(b.len() < original.len() / 10, "{} bytes", b.len());
        assert_eq!(decode_to_target(&b, &Limits::default()).unwrap(), p);
    }

    #[test]
    fn truncated_or_padded_packets_are_malformed() {
        let b = encode_to_target(&note_packet()).unwrap();
        for cut in [0, 1, b.len() / 2, b.len() - 1] {
            assert!(matches!(
                decode_to_target(&b[..cut], &Limits::default()),
                Err(ReplicaError::Malformed { .. })
            ));
        }
        let mut padded = b.clone();
        padded.push(0);
        assert!(decode_to_target(&padded, &Limits::default()).is_err());
        assert!(decode_to_source(&b).is_err());
    }

    #[test]
    fn an_envelope_naming_another_document_is_refused() {
        let mut p = note_packet();
        if let ToTarget::Note(n) = &mut p.body {
            n.unid = Unid([8; 16]);
        }
        let b = encode_to_target(&p).unwrap();
        assert!(matches!(
            decode_to_target(&b, &Limits::default()),
            Err(ReplicaError::Malformed { .. })
        ));
    }

    fn with_content(content: Content) -> TargetPacket {
        let mut p = note_packet();
        if let ToTarget::Note(n) = &mut p.body {
            n.body.attachments[0].content = content;
        }
        p
    }

    #[test]
    fn a_stream_claiming_more_than_the_limit_is_refused_before_decoding() {
        // A few bytes that are not even zstd, claiming a terabyte: the
        // claim alone is refused, so nothing is ever decoded.
        let bomb = CarriedContent {
            form: StoredForm::Zstd,
            size: 1 << 40,
            crc32c: 0,
            hash: ContentHash([0; 32]),
            bytes: b"not a stream".to_vec(),
        };
        let b = encode_to_target(&with_content(Content::Carried(Arc::new(bomb)))).unwrap();
        assert_eq!(
            decode_to_target(&b, &Limits::for_attachments(1 << 20)),
            Err(ReplicaError::AttachmentTooLarge {
                unid: Unid([7; 16]),
                name: "a.bin".into(),
                size: 1 << 40,
                max: 1 << 20,
            })
        );
        // Original bytes above the limit likewise; at the limit they pass.
        let b =
            encode_to_target(&with_content(Content::Original(Arc::new(vec![1; 1001])))).unwrap();
        let e = decode_to_target(&b, &Limits::for_attachments(1000)).unwrap_err();
        assert!(
            matches!(
                e,
                ReplicaError::AttachmentTooLarge {
                    size: 1001,
                    max: 1000,
                    ..
                }
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(text.contains("a.bin") && text.contains("1000"), "{text}");
        assert!(decode_to_target(&b, &Limits::for_attachments(1001)).is_ok());
    }

    #[test]
    fn a_large_packet_is_encoded_into_a_buffer_of_its_size() {
        let p = with_content(Content::Original(Arc::new(vec![3; 3 << 20])));
        let b = encode_to_target(&p).unwrap();
        assert!(
            b.capacity() <= b.len() + 1,
            "{} for {}",
            b.capacity(),
            b.len()
        );
        let mut r = Limits::default().reassembler();
        let mut whole = None;
        for f in Fragmenter::new(b) {
            assert!(f.len() <= FRAGMENT_BYTES + FRAGMENT_HEADER);
            whole = r.push(f).unwrap().or(whole);
        }
        assert_eq!(
            decode_to_target(&whole.unwrap(), &Limits::default()).unwrap(),
            p
        );
    }
}
