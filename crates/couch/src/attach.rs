//! Attachments at the door: CouchDB's `_attachments` over Folio
//! attachments.
//!
//! A CouchDB attachment is a Folio attachment of the version (a `$FILE:`
//! item, its content in blob pages or the attachment store, so content
//! that is already held is stored once, design.md §2.9). What CouchDB
//! knows of an attachment that Folio does not — its `digest` (MD5 of the
//! content, base64, as CouchDB computes it) and `revpos` (the generation
//! that last changed it) — is kept in the item `$Atts`, a JSON object by
//! attachment name that also records the size and crc32c it was computed
//! for. An attachment whose entry does not match (one a native client
//! added or replaced) gets its digest computed from its content and
//! `revpos` = the version's generation.
//!
//! ```text
//!   write  _attachments {name: {data | stub | follows}}
//!            data    base64, checked (digest, length, size limit) -> new content
//!            stub    the content of the same name in the revision it
//!                    descends from (a reference, or a copy of a small one)
//!            follows the multipart part of the same name
//!          all staged before the write's transaction (nsf::stage_foreign),
//!          taken by the version that transaction stores (I60)
//!   read   stubs {content_type, digest, length, revpos, stub: true},
//!          or the content (attachments=true: base64, or multipart parts)
//! ```

use crate::error::{CouchError, CouchResult};
use crate::tree::Leaf;
use base64::Engine as _;
use md5::{Digest, Md5};
use nsf::{AttachmentRef, Database, Item, ItemValue, Note, COUCH_ITEMS};
use serde_json::{json, Map, Value};
use std::io::Read;

/// The type of an attachment that names none.
const DEFAULT_MIME: &str = "application/octet-stream";

/// One attachment of a document being written, as the client gave it.
#[derive(Clone, Debug)]
pub enum AttIn {
    /// New content (inline base64, a multipart part, a `PUT` of it).
    Data {
        name: String,
        mime: String,
        bytes: Vec<u8>,
        /// The generation that changed it, if the client says (a
        /// replicated revision's); otherwise the new revision's.
        revpos: Option<u32>,
    },
    /// Kept as it is in the revision this one descends from.
    Stub {
        name: String,
        digest: Option<String>,
    },
    /// Content that follows in a multipart body.
    Follows {
        name: String,
        mime: String,
        length: Option<u64>,
        digest: Option<String>,
        revpos: Option<u32>,
    },
}

impl AttIn {
    pub fn name(&self) -> &str {
        match self {
            AttIn::Data { name, .. } | AttIn::Stub { name, .. } | AttIn::Follows { name, .. } => {
                name
            }
        }
    }
}

/// What the door shows of a stored attachment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttInfo {
    pub name: String,
    pub mime: String,
    pub length: u64,
    pub digest: String,
    pub revpos: u32,
}

impl AttInfo {
    /// The stub CouchDB writes for it.
    pub fn stub(&self) -> Value {
        json!({
            "content_type": self.mime,
            "digest": self.digest,
            "length": self.length,
            "revpos": self.revpos,
            "stub": true,
        })
    }
}

/// CouchDB's digest of `bytes`: `md5-` and the MD5 in base64.
pub fn md5_digest(bytes: &[u8]) -> String {
    format!(
        "md5-{}",
        base64::engine::general_purpose::STANDARD.encode(Md5::digest(bytes))
    )
}

/// Checks an attachment name as Folio stores one (no `/`, `\`, control
/// characters, `.` or `..`; 1 to 200 bytes).
pub fn validate_att_name(name: &str) -> CouchResult<()> {
    nsf::validate_attachment_name(name).map_err(|e| CouchError::bad_request(e.to_string()))
}

/// Parses a document's `_attachments`. `max` is the largest content
/// accepted (413 above).
pub fn parse_attachments(v: &Value, max: u64) -> CouchResult<Vec<AttIn>> {
    let Value::Object(atts) = v else {
        return Err(CouchError::bad_request("_attachments must be an object"));
    };
    atts.iter()
        .map(|(name, a)| parse_one(name, a, max))
        .collect()
}

fn parse_one(name: &str, a: &Value, max: u64) -> CouchResult<AttIn> {
    validate_att_name(name)?;
    let bad = |why: &str| CouchError::bad_request(format!("attachment {name:?}: {why}"));
    let Value::Object(a) = a else {
        return Err(bad("must be an object"));
    };
    let mime = match a.get("content_type") {
        None | Some(Value::Null) => DEFAULT_MIME.to_string(),
        Some(Value::String(m)) if !m.is_empty() && !m.chars().any(char::is_control) => m.clone(),
        Some(_) => return Err(bad("content_type must be a non-empty string")),
    };
    let digest = match a.get("digest") {
        None => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => return Err(bad("digest must be a string")),
    };
    let length = match a.get("length") {
        None => None,
        Some(l) => Some(l.as_u64().ok_or_else(|| bad("length must be a number"))?),
    };
    let revpos = match a.get("revpos") {
        None => None,
        Some(r) => Some(
            r.as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or_else(|| bad("revpos must be a revision number"))?,
        ),
    };
    let flag = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
    if let Some(data) = a.get("data") {
        let Value::String(data) = data else {
            return Err(bad("data must be a base64 string"));
        };
        if (data.len() as u64 / 4).saturating_mul(3) > max.saturating_add(3) {
            return Err(too_large(name, max));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| bad(&format!("data is not base64: {e}")))?;
        check_content(name, &bytes, digest.as_deref(), length, max)?;
        return Ok(AttIn::Data {
            name: name.to_string(),
            mime,
            bytes,
            revpos,
        });
    }
    if flag("stub") {
        return Ok(AttIn::Stub {
            name: name.to_string(),
            digest,
        });
    }
    if flag("follows") {
        if length.is_some_and(|l| l > max) {
            return Err(too_large(name, max));
        }
        return Ok(AttIn::Follows {
            name: name.to_string(),
            mime,
            length,
            digest,
            revpos,
        });
    }
    Err(bad("needs data, stub or follows"))
}

fn too_large(name: &str, max: u64) -> CouchError {
    CouchError::too_large(format!(
        "attachment {name:?} is above the limit of {max} bytes"
    ))
}

/// Checks content against what the client said of it: the size limit,
/// its `length` and its `digest` (an MD5 one; a digest of another kind
/// cannot be checked and is refused).
pub fn check_content(
    name: &str,
    bytes: &[u8],
    digest: Option<&str>,
    length: Option<u64>,
    max: u64,
) -> CouchResult<()> {
    if bytes.len() as u64 > max {
        return Err(too_large(name, max));
    }
    if let Some(l) = length.filter(|l| *l != bytes.len() as u64) {
        return Err(CouchError::bad_request(format!(
            "attachment {name:?}: length {l} but {} bytes of content",
            bytes.len()
        )));
    }
    match digest {
        None => Ok(()),
        Some(d) if !d.starts_with("md5-") => Err(CouchError::bad_request(format!(
            "attachment {name:?}: digest {d:?} is not an md5- digest"
        ))),
        Some(d) if d != md5_digest(bytes) => Err(CouchError::bad_request(format!(
            "attachment {name:?}: digest {d:?} does not match its content"
        ))),
        Some(_) => Ok(()),
    }
}

/// The `$Atts` entries of a note: name → (digest, revpos, size, crc32c).
fn recorded(note: &Note) -> Map<String, Value> {
    match note.item(COUCH_ITEMS[4]).map(|i| &i.value) {
        Some(ItemValue::Text(t)) => match serde_json::from_str(t) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
        _ => Map::new(),
    }
}

/// The recorded digest and revpos of `a`, if its entry is for this content.
fn recorded_for(entries: &Map<String, Value>, a: &AttachmentRef) -> Option<(String, u32)> {
    let e = entries.get(&a.name)?;
    let same = e.get("length").and_then(Value::as_u64) == Some(a.size)
        && e.get("crc32c").and_then(Value::as_u64) == Some(u64::from(a.crc32c));
    let digest = e.get("digest")?.as_str()?.to_string();
    let revpos = u32::try_from(e.get("revpos")?.as_u64()?).ok()?;
    same.then_some((digest, revpos))
}

/// The `$Atts` item for attachments `(aref, digest, revpos)`.
pub(crate) fn atts_item(atts: &[(AttachmentRef, String, u32)]) -> Option<Item> {
    if atts.is_empty() {
        return None;
    }
    let entries: Map<String, Value> = atts
        .iter()
        .map(|(a, digest, revpos)| {
            (
                a.name.clone(),
                json!({"digest": digest, "revpos": revpos, "length": a.size, "crc32c": a.crc32c}),
            )
        })
        .collect();
    Some(Item {
        name: COUCH_ITEMS[4].into(),
        value: ItemValue::Text(Value::Object(entries).to_string()),
    })
}

/// The attachments of a leaf as the door shows them, by name.
pub fn attachment_infos(db: &Database, leaf: &Leaf) -> CouchResult<Vec<AttInfo>> {
    if leaf.deleted() {
        return Ok(Vec::new());
    }
    let entries = recorded(&leaf.note);
    let mut out: Vec<AttInfo> = leaf
        .note
        .attachments()
        .map(|a| {
            let (digest, revpos) = match recorded_for(&entries, a) {
                Some(r) => r,
                None => (
                    md5_digest(&read_content(db, &leaf.note, &a.name)?),
                    leaf.rev.gen,
                ),
            };
            Ok(AttInfo {
                name: a.name.clone(),
                mime: a.mime.clone(),
                length: a.size,
                digest,
                revpos,
            })
        })
        .collect::<CouchResult<_>>()?;
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The digest and revpos of the attachment `a` of `note` (`gen` its
/// generation), computing the digest when `$Atts` has none for it.
pub(crate) fn info_of(
    db: &Database,
    note: &Note,
    a: &AttachmentRef,
    gen: u32,
) -> CouchResult<(String, u32)> {
    match recorded_for(&recorded(note), a) {
        Some(r) => Ok(r),
        None => Ok((md5_digest(&read_content(db, note, &a.name)?), gen)),
    }
}

/// The whole content of the attachment `name` of the version `note`; a
/// note that changed since it was read is the attachment's absence (404).
pub fn read_content(db: &Database, note: &Note, name: &str) -> CouchResult<Vec<u8>> {
    let gone = || CouchError::not_found(format!("Document is missing attachment {name}"));
    let want = note
        .attachments()
        .find(|a| a.name == name)
        .ok_or_else(gone)?;
    let mut r = match db.open_attachment(note.oid.unid, name) {
        Ok(r) => r,
        Err(nsf::NsfError::NoSuchDocument { .. } | nsf::NsfError::NoSuchAttachment { .. }) => {
            return Err(gone())
        }
        Err(e) => return Err(e.into()),
    };
    let got = r.attachment();
    if (got.size, got.crc32c) != (want.size, want.crc32c) {
        return Err(gone());
    }
    let mut bytes = Vec::with_capacity(want.size as usize);
    r.read_to_end(&mut bytes)
        .map_err(|e| CouchError::internal(format!("attachment {name:?} cannot be read: {e}")))?;
    Ok(bytes)
}

/// Attachments whose content follows a document, with that content.
pub type Parts = Vec<(AttInfo, Vec<u8>)>;

/// How a document's attachments are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttMode {
    /// Stubs only.
    Stubs,
    /// Content inline, base64 (`attachments=true`).
    Inline,
    /// Content as multipart parts after the document (`follows: true`).
    Follows,
}

/// One leaf's body with its `_attachments` shown as `mode` asks, and the
/// attachments whose content follows (in the order of `_attachments`).
/// With `atts_since`, an attachment not changed after the newest of those
/// revisions the leaf descends from stays a stub.
pub fn leaf_body(
    db: &Database,
    leaf: &Leaf,
    id: &str,
    revs: bool,
    mode: AttMode,
    atts_since: &[crate::Rev],
) -> CouchResult<(Map<String, Value>, Parts)> {
    let mut body = leaf.to_json(id, revs);
    let infos = attachment_infos(db, leaf)?;
    let mut parts = Vec::new();
    if infos.is_empty() {
        return Ok((body, parts));
    }
    let known = atts_since
        .iter()
        .filter(|r| leaf.knows(r))
        .map(|r| r.gen)
        .max()
        .unwrap_or(0);
    let mut atts = Map::new();
    for info in infos {
        let mut v = info.stub();
        if mode != AttMode::Stubs && info.revpos > known {
            let bytes = read_content(db, &leaf.note, &info.name)?;
            let o = v.as_object_mut().expect("a stub is an object");
            o.remove("stub");
            match mode {
                AttMode::Inline => {
                    o.insert(
                        "data".into(),
                        json!(base64::engine::general_purpose::STANDARD.encode(&bytes)),
                    );
                }
                _ => {
                    o.insert("follows".into(), json!(true));
                    parts.push((info.clone(), bytes));
                }
            }
        }
        atts.insert(info.name.clone(), v);
    }
    body.insert("_attachments".into(), Value::Object(atts));
    Ok((body, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_couchdbs() {
        // CouchDB's digest of "Hello, world!" (md5 6cd3556deb0da54bca060b4c39479839).
        assert_eq!(md5_digest(b"Hello, world!"), "md5-bNNVbesNpUvKBgtMOUeYOQ==");
    }

    #[test]
    fn inline_data_is_checked() {
        let att = |a: Value| parse_attachments(&json!({"a.txt": a}), 10);
        let ok = att(json!({"content_type": "text/plain", "data": "aGk="})).unwrap();
        assert!(matches!(&ok[0], AttIn::Data { bytes, .. } if bytes == b"hi"));
        let e = |a: Value| att(a).unwrap_err();
        assert_eq!(e(json!({"data": "not base64!"})).status, 400);
        assert_eq!(e(json!({"data": "aGk=", "digest": "md5-AAAA"})).status, 400);
        assert_eq!(e(json!({"data": "aGk=", "length": 3})).status, 400);
        assert_eq!(e(json!({"data": "aGVsbG8gd29ybGQ="})).status, 413);
        assert_eq!(e(json!({"content_type": "x"})).status, 400);
        let digest = md5_digest(b"hi");
        assert!(att(json!({"data": "aGk=", "digest": digest})).is_ok());
        for name in ["..", "a/b", "", "a\nb"] {
            assert_eq!(
                parse_attachments(&json!({name: {"data": "aGk="}}), 10)
                    .unwrap_err()
                    .status,
                400,
                "{name:?}"
            );
        }
    }
}
