//! CouchDB's multipart bodies: a document with its attachments' content
//! as parts after it, as the CouchDB replicator reads and writes them.
//!
//! ```text
//!   multipart/related   --b  application/json  {doc, _attachments: {n: {follows: true, …}}}
//!                       --b  Content-Disposition: attachment; filename="n"   <content of n>
//!                       --b--
//!   multipart/mixed     one part per revision asked by open_revs: a document
//!                       without content to send as application/json, one
//!                       with as a nested multipart/related, a missing one as
//!                       application/json; error="true" {"missing": rev}
//! ```
//!
//! A request's multipart body is parsed by `multer` from memory (it was
//! read whole under the size limit); a part is matched to the attachment
//! its `filename` names, else to the next attachment that follows, in the
//! order of `_attachments`.

use super::call::Fail;
use couch::{AttIn, AttInfo, CouchError, CouchResult};
use serde_json::{Map, Value};

/// A fresh boundary.
pub(super) fn boundary() -> String {
    super::server::new_uuid()
}

/// The boundary of a `multipart/related` content type, if it is one.
pub(super) fn related_boundary(content_type: &str) -> Option<CouchResult<String>> {
    let m: mime::Mime = match content_type.parse() {
        Ok(m) => m,
        Err(_) => return None,
    };
    if m.type_() != mime::MULTIPART || m.subtype() != "related" {
        return None;
    }
    Some(
        m.get_param(mime::BOUNDARY)
            .map(|b| b.as_str().to_string())
            .filter(|b| !b.is_empty() && b.len() <= 70)
            .ok_or_else(|| CouchError::bad_request("multipart/related without a boundary")),
    )
}

/// A document and its attachments' content as one `multipart/related`
/// body (content type, bytes).
pub(super) fn related(doc: &Map<String, Value>, parts: &[(AttInfo, Vec<u8>)]) -> (String, Vec<u8>) {
    let b = boundary();
    let mut out = Vec::new();
    put_part(
        &mut out,
        &b,
        "Content-Type: application/json\r\n",
        Value::Object(doc.clone()).to_string().as_bytes(),
    );
    for (info, bytes) in parts {
        let head = format!(
            "Content-Disposition: attachment; filename=\"{}\"\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            quoted(&info.name),
            info.mime,
            bytes.len()
        );
        put_part(&mut out, &b, &head, bytes);
    }
    out.extend_from_slice(format!("--{b}--").as_bytes());
    (format!("multipart/related; boundary=\"{b}\""), out)
}

/// One revision of an `open_revs` answer.
pub(super) enum Revision {
    Found(Map<String, Value>, Vec<(AttInfo, Vec<u8>)>),
    Missing(String),
}

/// An `open_revs` answer as `multipart/mixed` (content type, bytes).
pub(super) fn mixed(revisions: &[Revision]) -> (String, Vec<u8>) {
    let b = boundary();
    let mut out = Vec::new();
    for r in revisions {
        match r {
            Revision::Found(doc, parts) if parts.is_empty() => put_part(
                &mut out,
                &b,
                "Content-Type: application/json\r\n",
                Value::Object(doc.clone()).to_string().as_bytes(),
            ),
            Revision::Found(doc, parts) => {
                let (ct, body) = related(doc, parts);
                put_part(&mut out, &b, &format!("Content-Type: {ct}\r\n"), &body);
            }
            Revision::Missing(rev) => put_part(
                &mut out,
                &b,
                "Content-Type: application/json; error=\"true\"\r\n",
                serde_json::json!({"missing": rev}).to_string().as_bytes(),
            ),
        }
    }
    out.extend_from_slice(format!("--{b}--").as_bytes());
    (format!("multipart/mixed; boundary=\"{b}\""), out)
}

fn put_part(out: &mut Vec<u8>, boundary: &str, head: &str, body: &[u8]) {
    out.extend_from_slice(format!("--{boundary}\r\n{head}\r\n").as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

/// A name inside a quoted header parameter (`"` and `\` escaped).
fn quoted(name: &str) -> String {
    name.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A `multipart/related` request: the document (its first part, JSON) and
/// the other parts with the file name each gives, in order.
pub(super) async fn parse_related(
    boundary: String,
    body: bytes::Bytes,
) -> Result<(Value, Vec<(Option<String>, Vec<u8>)>), Fail> {
    let bad = |e: multer::Error| {
        Fail(CouchError::bad_request(format!(
            "malformed multipart body: {e}"
        )))
    };
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut m = multer::Multipart::new(stream, boundary);
    let first = m
        .next_field()
        .await
        .map_err(bad)?
        .ok_or_else(|| CouchError::bad_request("multipart body without a document"))?;
    let doc_bytes = first.bytes().await.map_err(bad)?;
    let doc: Value = serde_json::from_slice(&doc_bytes)
        .map_err(|e| CouchError::bad_request(format!("invalid UTF-8 JSON: {e}")))?;
    let mut parts = Vec::new();
    while let Some(field) = m.next_field().await.map_err(bad)? {
        let name = field.file_name().map(str::to_string);
        parts.push((name, field.bytes().await.map_err(bad)?.to_vec()));
    }
    Ok((doc, parts))
}

/// Gives each attachment that follows the content of its part, checked
/// as inline content is; a part nobody follows, or an attachment no part
/// carries, refuses the request.
pub(super) fn fill_follows(
    atts: &mut [AttIn],
    parts: Vec<(Option<String>, Vec<u8>)>,
    max: u64,
) -> CouchResult<()> {
    let mut parts: Vec<Option<(Option<String>, Vec<u8>)>> = parts.into_iter().map(Some).collect();
    for a in atts.iter_mut() {
        let AttIn::Follows {
            name,
            mime,
            length,
            digest,
            revpos,
        } = a
        else {
            continue;
        };
        let at = parts
            .iter()
            .position(|p| {
                p.as_ref()
                    .is_some_and(|(n, _)| n.as_deref() == Some(name.as_str()))
            })
            .or_else(|| {
                parts
                    .iter()
                    .position(|p| p.as_ref().is_some_and(|(n, _)| n.is_none()))
            })
            .ok_or_else(|| {
                CouchError::bad_request(format!(
                    "attachment {name:?} follows, but the multipart body has no part for it"
                ))
            })?;
        let (_, bytes) = parts[at].take().expect("found above");
        couch::check_content(name, &bytes, digest.as_deref(), *length, max)?;
        *a = AttIn::Data {
            name: name.clone(),
            mime: mime.clone(),
            bytes,
            revpos: *revpos,
        };
    }
    if parts.iter().any(Option::is_some) {
        return Err(CouchError::bad_request(
            "the multipart body has a part no attachment follows",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Parsed = (Value, Vec<(Option<String>, Vec<u8>)>);

    fn parse(body: &[u8]) -> Result<Parsed, CouchError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        rt.block_on(parse_related(
            "bnd".into(),
            bytes::Bytes::copy_from_slice(body),
        ))
        .map_err(|f| f.0)
    }

    fn body(parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out =
            b"--bnd\r\nContent-Type: application/json\r\n\r\n{\"_id\":\"x\"}\r\n".to_vec();
        for (name, bytes) in parts {
            out.extend_from_slice(
                format!("--bnd\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"--bnd--");
        out
    }

    #[test]
    fn a_body_cut_anywhere_is_refused_never_read_short() {
        let content: Vec<u8> = (0..=255u8).cycle().take(3_000).collect();
        let whole = body(&[("a.bin", &content), ("b.txt", b"bee")]);
        let (doc, parts) = parse(&whole).unwrap();
        assert_eq!(doc["_id"], "x");
        assert_eq!(parts[0], (Some("a.bin".into()), content.clone()));
        for cut in 0..whole.len() {
            if let Ok((_, parts)) = parse(&whole[..cut]) {
                // Whatever is read whole must be whole (multer may accept
                // a body missing only its closing boundary's tail).
                assert!(
                    parts.len() == 2 && parts[0].1 == content && parts[1].1 == b"bee",
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn parts_pair_with_attachments_by_name_then_order() {
        let follows = |name: &str| AttIn::Follows {
            name: name.into(),
            mime: "x/y".into(),
            length: None,
            digest: None,
            revpos: None,
        };
        let mut atts = vec![follows("a"), follows("b")];
        let parts = vec![(Some("b".into()), b"B".to_vec()), (None, b"A".to_vec())];
        fill_follows(&mut atts, parts, 10).unwrap();
        assert!(matches!(&atts[0], AttIn::Data { bytes, .. } if bytes == b"A"));
        assert!(matches!(&atts[1], AttIn::Data { bytes, .. } if bytes == b"B"));
        let mut short = vec![follows("a"), follows("b")];
        assert_eq!(
            fill_follows(&mut short, vec![(None, b"A".to_vec())], 10)
                .unwrap_err()
                .status,
            400
        );
        let mut extra = vec![follows("a")];
        let two = vec![(None, b"A".to_vec()), (None, b"B".to_vec())];
        assert_eq!(fill_follows(&mut extra, two, 10).unwrap_err().status, 400);
        let mut big = vec![follows("a")];
        assert_eq!(
            fill_follows(&mut big, vec![(None, vec![0; 11])], 10)
                .unwrap_err()
                .status,
            413
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn any_bytes_are_parsed_or_refused(raw in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&raw);
            let mut framed = b"--bnd\r\n".to_vec();
            framed.extend_from_slice(&raw);
            let _ = parse(&framed);
        }
    }
}
