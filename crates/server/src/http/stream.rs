//! Answers a job feeds as it goes (a download, a search's hits): the job
//! runs on the worker pool and hands its pieces over a bounded channel
//! into the response body. A failure before the first piece is an
//! ordinary error answer; one after it is the caller's to report in-band.

use super::answer::Answer;
use super::extract::{as_caller, Call};
use crate::service::{Caller, Service};
use crate::stats::Op;
use crate::{ServerError, ServerResult};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Chunks waiting to be written to the client, per streamed response.
pub(super) const DOWNLOAD_QUEUE: usize = 8;

/// What a streaming job sends to the response it feeds.
pub(super) enum Feed {
    /// The response may start: its content type and length, if known.
    Start {
        mime: String,
        size: Option<u64>,
    },
    Data(Bytes),
    Failed(ServerError),
}

/// A streaming job's side of the channel.
pub(super) struct Out {
    tx: mpsc::Sender<Feed>,
    pub(super) started: bool,
}

impl Out {
    pub(super) fn send(&self, f: Feed) -> ServerResult<()> {
        self.tx
            .blocking_send(f)
            .map_err(|_| ServerError::Internal("the client went away".into()))
    }

    pub(super) fn start(&mut self, mime: String, size: Option<u64>) -> ServerResult<()> {
        self.started = true;
        self.send(Feed::Start { mime, size })
    }

    pub(super) fn data(&self, data: Bytes) -> ServerResult<()> {
        self.send(Feed::Data(data))
    }
}

/// Runs a streaming job on the worker pool; its time (to the last byte
/// handed over) is recorded under `op`. A failure is sent on as `Failed`.
pub(super) fn stream_job<F>(s: &Arc<Service>, c: &Call, op: Op, tx: mpsc::Sender<Feed>, job: F)
where
    F: FnOnce(&Service, &Caller, &mut Out) -> ServerResult<()> + Send + 'static,
{
    let (s, credentials) = (s.clone(), c.credentials.clone());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut out = Out { tx, started: false };
        let r = as_caller(&s, &credentials, |s, caller| job(s, caller, &mut out));
        s.stats().record(op, started.elapsed(), r.is_ok());
        if let Err(e) = r {
            let _ = out.send(Feed::Failed(e));
        }
    });
}

/// The response a streaming job feeds: an error answer if it fails before
/// starting; otherwise its data as the body, with a failure after the
/// start turned into a last body item by `late`.
pub(super) async fn streamed(
    mut rx: mpsc::Receiver<Feed>,
    late: fn(ServerError) -> Result<Bytes, std::io::Error>,
) -> Answer {
    let (mime, size) = match rx.recv().await {
        Some(Feed::Start { mime, size }) => (mime, size),
        Some(Feed::Failed(e)) => return Err(e.into()),
        Some(Feed::Data(_)) | None => {
            return Err(
                ServerError::Internal("a streamed answer ended before it began".into()).into(),
            )
        }
    };
    let body = futures_util::stream::unfold(rx, move |mut rx| async move {
        let item = match rx.recv().await? {
            Feed::Data(b) => Ok(b),
            Feed::Failed(e) => late(e),
            Feed::Start { .. } => Ok(Bytes::new()),
        };
        Some((item, rx))
    });
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    let mime = HeaderValue::from_str(&mime)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_TYPE, mime);
    if let Some(n) = size {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    Ok(r)
}
