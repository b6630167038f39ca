//! What monitoring reads: `GET /metrics` (Prometheus) and
//! `GET /_stats/history` (the last hour, second by second, for the
//! console's charts).
//!
//! Both tell a good deal about the server (load, databases open, users
//! connected), so they are not for every signed-in user as `GET /stats`
//! is: a server administrator may read them, and so may the users named
//! in `http_metrics_users` (a monitoring account, typically with an API
//! token). Anyone else signed in is refused with 403; an anonymous caller
//! is asked to sign in (401), as everywhere in the API.

use super::answer::{ok, Answer};
use super::extract::{Call, Svc};
use crate::service::Caller;
use crate::stats::Op;
use crate::{ServerError, ServerResult};
use axum::extract::{Extension, State};
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;

/// Who may read the metrics and the history besides administrators
/// (`http_metrics_users`; names compared ignoring case, as sign-in does).
#[derive(Clone, Debug, Default)]
pub(super) struct Observers(Arc<Vec<String>>);

impl Observers {
    pub(super) fn new(users: &[String]) -> Observers {
        Observers(Arc::new(users.iter().map(|u| u.to_lowercase()).collect()))
    }

    fn check(&self, caller: &Caller, what: &str) -> ServerResult<()> {
        if caller.admin {
            return Ok(());
        }
        match &caller.user {
            None => Err(ServerError::Unauthenticated(format!(
                "{what} is for administrators and the users named in http_metrics_users; sign in"
            ))),
            Some(u) if self.0.contains(&u.to_lowercase()) => Ok(()),
            Some(u) => Err(ServerError::Forbidden(format!(
                "{what} is for administrators and the users named in http_metrics_users, \
                 which do not include {u:?}"
            ))),
        }
    }
}

pub(super) async fn metrics(
    State(s): Svc,
    Extension(observers): Extension<Observers>,
    c: Call,
) -> Answer {
    c.query.allow(&[])?;
    let text = c
        .run(&s, Op::Admin, move |s, caller| {
            observers.check(caller, "/metrics")?;
            let stats = s.statistics(caller)?;
            let backups = s.backup_figures();
            Ok(crate::metrics::render(
                &stats,
                &s.stats().response_histograms(),
                backups.as_deref(),
            ))
        })
        .await?;
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response())
}

pub(super) async fn history(
    State(s): Svc,
    Extension(observers): Extension<Observers>,
    c: Call,
) -> Answer {
    c.query.allow(&["since"])?;
    let since: u64 = c.query.number("since")?.unwrap_or(0);
    let columns = c
        .run(&s, Op::Admin, move |s, caller| {
            observers.check(caller, "/_stats/history")?;
            Ok(s.stats().history().to_json(since))
        })
        .await?;
    Ok(ok(columns))
}
