//! The administrator's console: a single-page app served from the
//! binary at `/_console/` (on unless `console = false`).
//!
//! The page, its script and its style sheet are compiled in with
//! `include_str!` (`crates/server/console/`): nothing is fetched from
//! another site, so the console works offline and on loopback, and the
//! binary is the whole deployment. There is no server-side logic here:
//! the page signs in with `POST /_session?cookie=true` and then calls the
//! documented API like any client, so it can show and do only what the
//! API lets the signed-in user see and do.
//!
//! Every answer here carries a Content-Security-Policy that allows
//! script, style and connections from this origin only and no inline
//! script or style at all, so even a value the page failed to escape
//! could not run; the page itself builds its DOM with `textContent`,
//! never HTML strings. It may not be framed (clickjacking).

use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

/// The policy on every console answer (see the module docs).
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

const INDEX: &str = include_str!("../../console/index.html");
const APP_JS: &str = include_str!("../../console/app.js");
const APP_CSS: &str = include_str!("../../console/app.css");

/// `/_console` → `/_console/` (the page's relative asset links need it).
pub(super) async fn redirect() -> Redirect {
    Redirect::permanent("/_console/")
}

pub(super) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

pub(super) async fn file(Path(name): Path<String>) -> Response {
    match name.as_str() {
        "app.js" => asset("text/javascript; charset=utf-8", APP_JS),
        "app.css" => asset("text/css; charset=utf-8", APP_CSS),
        _ => with_policy(
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "no such console file",
            )
                .into_response(),
        ),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    with_policy(
        (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
    )
}

fn with_policy(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// A request from the console's page (it sends `X-Folio-Console`) gets
/// its 401 without `WWW-Authenticate`: a browser answers that header with
/// its own Basic-authentication dialog, over the page's sign-in form.
pub(super) async fn no_browser_prompt(req: Request, next: Next) -> Response {
    let from_console = req.headers().contains_key("x-folio-console");
    let mut r = next.run(req).await;
    if from_console {
        r.headers_mut().remove(header::WWW_AUTHENTICATE);
    }
    r
}
