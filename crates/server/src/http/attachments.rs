//! Attachments stream both ways (see the module docs of `http`): an
//! upload's body is forwarded chunk by chunk to the job storing it, a
//! download is read a chunk at a time into the response body; a removal
//! is one update that drops the attachment.
//!
//! A download never answers 200 for content it cannot read whole:
//!
//! ```text
//!  open + read the first 256 KiB ──fails──▶ 500, JSON error, server log names db, document, object
//!        │ (content that fits: its crc32c checked too)
//!        ▼
//!  200 + Content-Length ─▶ chunk … chunk ──a read fails──▶ connection aborted
//!                                         (fewer bytes than Content-Length;
//!                                          the last chunk is sent only once
//!                                          the whole content's crc32c matched)
//! ```
//!
//! Verifying larger content whole before answering would read it twice.

use super::answer::{bad, json_response, ok, Answer, ApiError};
use super::extract::{body_failed, content_length, discard_rest, open_db, Call, Svc};
use super::stream::{stream_job, streamed, DOWNLOAD_QUEUE};
use crate::stats::Op;
use crate::upload::{Piece, UploadReader, UPLOAD_QUEUE};
use crate::ServerError;
use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use futures_util::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;

/// Bytes of an attachment read from storage per body chunk.
const DOWNLOAD_CHUNK: usize = 256 << 10;

pub(super) async fn put_attachment(State(s): Svc, c: Call, body: Body) -> Answer {
    c.query.allow(&[])?;
    let unid = c.unid()?;
    let name = c.param("name");
    if name.is_empty() {
        return Err(bad("an attachment needs a name"));
    }
    let size = content_length(&c.headers)?;
    let mime = match c.headers.get(header::CONTENT_TYPE) {
        None => "application/octet-stream".to_string(),
        Some(v) => v
            .to_str()
            .map_err(|_| bad("malformed Content-Type header"))?
            .to_string(),
    };
    let path = c.param("db");
    let (tx, rx) = mpsc::channel(UPLOAD_QUEUE);
    let job = c.run(&s, Op::PutAttachment, move |s, caller| {
        let db = open_db(s, caller, &path)?;
        let mut content = UploadReader::new(rx);
        s.put_attachment(caller, &db, unid, &name, &mime, size, &mut content)
    });
    tokio::pin!(job);
    let mut stream = body.into_data_stream();
    // The job may answer before the body ends (413, 404): stop feeding it.
    // A body that fails fails the job too; the answer says why it failed.
    let stored = tokio::select! {
        r = &mut job => r,
        fed = feed_upload(&mut stream, tx) => match (fed, job.await) {
            (Err(cut), Err(_)) => Err(cut),
            (_, stored) => stored,
        },
    };
    if stored.is_err() {
        discard_rest(&c.headers, stream);
    }
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"size": stored?}),
    ))
}

/// Forwards a request body to its job; ends without `End` if the body
/// fails (the client went away, or was too slow), so the job's reader
/// fails too, and returns the answer that failure calls for.
async fn feed_upload(stream: &mut BodyDataStream, tx: mpsc::Sender<Piece>) -> Result<(), ApiError> {
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(data) if data.is_empty() => {}
            Ok(data) => {
                if tx.send(Piece::Data(data)).await.is_err() {
                    return Ok(());
                }
            }
            Err(e) => {
                tracing::info!("HTTP upload aborted: {e}");
                return Err(body_failed(e));
            }
        }
    }
    let _ = tx.send(Piece::End).await;
    Ok(())
}

pub(super) async fn get_attachment(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&[])?;
    let unid = c.unid()?;
    let (path, name) = (c.param("db"), c.param("name"));
    let (tx, rx) = mpsc::channel(DOWNLOAD_QUEUE);
    stream_job(&s, &c, Op::GetAttachment, tx, move |s, caller, out| {
        let db = open_db(s, caller, &path)?;
        let unreadable = |what: &str, e: &dyn std::fmt::Display| {
            tracing::error!(db = %path, unid = %unid, attachment = %name, object = %what, error = %e,
                "an attachment cannot be read");
            ServerError::Internal(format!(
                "{path}: document {unid}: attachment {name:?} ({what}) cannot be read: {e}"
            ))
        };
        let mut r = s
            .open_attachment(caller, &db, unid, &name)
            .map_err(|e| match e {
                ServerError::Internal(_) => unreadable("its content", &e),
                e => e,
            })?;
        let a = r.attachment().clone();
        let what = content_name(&a);
        // The first chunk is read, and checked, before the answer starts:
        // content that fits in it (its crc32c included, checked by the
        // read that ends it) fails as an error answer, never as a 200.
        let mut buf = vec![0u8; DOWNLOAD_CHUNK];
        let mut n = nsf::read_full(&mut r, &mut buf).map_err(|e| unreadable(&what, &e))?;
        out.start(a.mime.clone(), Some(a.size))?;
        while n > 0 {
            out.data(Bytes::copy_from_slice(&buf[..n]))?;
            // A later chunk that fails aborts the connection (`late`):
            // the client has fewer bytes than `Content-Length`, and the
            // last bytes are never sent before the whole content's
            // crc32c matched.
            n = nsf::read_full(&mut r, &mut buf).map_err(|e| unreadable(&what, &e))?;
        }
        Ok(())
    });
    let name = c.param("name");
    let mut r = streamed(rx, |e| Err(std::io::Error::other(e.to_string()))).await?;
    download_only(r.headers_mut(), &name);
    Ok(r)
}

/// The policy on every attachment download: nothing in it may run.
const ATTACHMENT_CSP: &str = "sandbox; default-src 'none'";

/// Makes an attachment a download, never a page of this origin: its
/// MIME type and content are whatever the uploader said, and a `text/html`
/// one opened in a browser at this address would run as this origin,
/// with the signed-in console's cookie (docs/http.md, "Attachments").
/// So it is `Content-Disposition: attachment` (saved, not shown), its
/// type is not sniffed, and were it shown anyway, a sandboxing policy
/// stops any script or form in it.
fn download_only(h: &mut axum::http::HeaderMap, name: &str) {
    use axum::http::HeaderValue;
    // The ASCII fallback: no quote, backslash or control character can
    // end the quoted string or the header.
    let plain: String = name
        .chars()
        .map(|ch| match ch {
            ' '..='~' if ch != '"' && ch != '\\' => ch,
            _ => '_',
        })
        .collect();
    let encoded = super::answer::encode_segment(name);
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(ATTACHMENT_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// Where an attachment's content is, for the server log: its attachment
/// store object, or its blob pages.
fn content_name(a: &nsf::AttachmentRef) -> String {
    match &a.stored {
        Some(c) => format!("attachment store object {}", c.hash),
        None => {
            let runs: Vec<String> = a
                .extents
                .iter()
                .map(|(first, count)| format!("{first}..{}", first + count))
                .collect();
            format!("blob pages {}", runs.join(","))
        }
    }
}

/// `DELETE /db/{db}/docs/{unid}/attachments/{name}[?seq=N]`: removes the
/// attachment as an update that drops it (the right to edit the
/// document); 404 naming a missing attachment, 409 for a stale `seq`.
pub(super) async fn delete_attachment(State(s): Svc, c: Call) -> Answer {
    c.query.allow(&["seq"])?;
    let unid = c.unid()?;
    let based_on = c.query.number::<u32>("seq")?;
    let (path, name) = (c.param("db"), c.param("name"));
    let meta = c
        .run(&s, Op::PutAttachment, move |s, caller| {
            let db = open_db(s, caller, &path)?;
            s.remove_attachment(caller, &db, unid, &name, based_on)
        })
        .await?;
    Ok(ok(super::documents::meta_json(&meta)))
}
