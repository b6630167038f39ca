//! CORS, so PouchDB in a browser page of another origin can sync with the
//! door: only the origins `[couchdb] cors_origins` lists (none by
//! default, so no page of another origin may read an answer), with
//! credentials (a page signs in with Basic or the session cookie), the
//! methods and request headers CouchDB's clients send, and the response
//! headers they read exposed.
//!
//! ```text
//!   OPTIONS + Origin listed + Access-Control-Request-Method
//!       -> 200, Allow-Origin: <origin>, Allow-Credentials, Allow-Methods,
//!          Allow-Headers, Max-Age            (answered here, no handler)
//!   any request + Origin listed
//!       -> the handler's answer + Allow-Origin, Allow-Credentials,
//!          Expose-Headers, Vary: Origin
//!   Origin not listed -> no CORS header: the browser withholds the answer
//! ```
//!
//! `"*"` lets every origin in, each answered with its own name (a
//! wildcard cannot carry credentials). The session cookie stays
//! `SameSite=Strict`, so a listed page on another site signs in with
//! Basic credentials; a page on the same site may use the cookie.

use axum::http::{header, HeaderName, HeaderValue, Method};
use std::time::Duration;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// The layer for `origins` (none: a layer that adds nothing).
pub(super) fn layer(origins: &[String]) -> CorsLayer {
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::mirror_request()
    } else {
        let list: Vec<HeaderValue> = origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        AllowOrigin::list(list)
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_credentials(true)
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers([
            header::ACCEPT,
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ORIGIN,
            header::REFERER,
            header::IF_MATCH,
            HeaderName::from_static("x-requested-with"),
            HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([
            header::CONTENT_TYPE,
            header::CACHE_CONTROL,
            header::ETAG,
            header::SERVER,
            HeaderName::from_static("content-md5"),
        ])
        .max_age(PREFLIGHT_MAX_AGE)
        .vary([header::ORIGIN])
}
