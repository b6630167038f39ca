//! A request whose body the handler never read to its end.
//!
//! An answer can go out before the request body was read: a wrong method
//! (405), a refused caller, a bad path. hyper then cannot reuse the
//! connection (the unread bytes are still on it) and closes it once the
//! answer is written — but an answer without `Connection: close` tells
//! the client the connection stays open, so a client that pools
//! connections sends its next request onto a socket the server is
//! closing and sees an unexpected end of file. This layer watches the
//! request body and, when it was not read to its end, says so in the
//! answer: `Connection: close` (RFC 9112 §9.6).

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::{HeaderValue, CONNECTION};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Marks the answer `Connection: close` when the request body was left
/// unread.
pub(super) async fn close_if_unread(req: Request, next: Next) -> Response {
    if http_body::Body::is_end_stream(req.body()) {
        return next.run(req).await;
    }
    let ended = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let body = Body::new(Watched {
        inner: body,
        ended: ended.clone(),
    });
    let mut answer = next.run(Request::from_parts(parts, body)).await;
    if !ended.load(Ordering::Acquire) {
        answer
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}

/// A request body that records reaching its end.
struct Watched {
    inner: Body,
    ended: Arc<AtomicBool>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            self.ended.store(true, Ordering::Release);
        }
        ended
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
