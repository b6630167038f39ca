//! File descriptors: raising the process limit at start-up and fitting the
//! connection limits under it.
//!
//! Every connection is a descriptor, and so is every database file, log
//! extent, temporary sort run and certificate the engine opens. If
//! connections could take them all, a flood of idle clients would make
//! the next database open or log extent fail with "too many open files":
//! a network problem turned into a storage one. So the limits of both
//! listeners, plus the few refused connections being closed politely,
//! must fit under the soft `RLIMIT_NOFILE` with a reserve left over:
//!
//! ```text
//!   soft limit ─┬─ reserve: a quarter of the limit, at least 256 (engine files)
//!               ├─ refusals being closed (REFUSING per listener)
//!               └─ max_connections + http_max_connections
//! ```
//!
//! At start-up the soft limit is raised to the hard limit (the usual
//! 1,024 soft limit is a relic; the hard limit is what the administrator
//! granted). Limits that still do not fit are lowered in proportion, with
//! a warning naming the figures, rather than refusing to start: a server
//! that serves fewer clients is more use than one that does not start,
//! and the warning says how to get the configured figures back. Only a
//! limit too small to serve at all is an error.
//!
//! What the listeners leave is the engine's (`engine_descriptors`): with
//! no `max_open_databases` set, `folio serve` sizes the open-database
//! cache to it (`nsf::EngineConfig::open_databases_within`), so a hard
//! limit of 20,000 holds about 4,000 open databases at rest instead of a
//! fixed 1,000 that makes the cache churn under a few thousand users.

use crate::listener::REFUSING;
use crate::{ServerError, ServerResult, ServerSettings};

/// Descriptors kept for the engine whatever the limit.
pub(crate) const MIN_RESERVE: u64 = 256;

/// The process's descriptor limits, after `raise_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limit {
    /// The soft limit before start-up raised it.
    pub before: u64,
    /// The soft limit now in force.
    pub soft: u64,
    /// The hard limit (the ceiling of the soft one).
    pub hard: u64,
}

/// The soft limit the process started with, kept by the first
/// `raise_limit` (`folio serve` sizes its cache before the server fits its
/// listeners, and both raise): every later report names the real origin.
static STARTED_WITH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the figures.
/// A failure leaves the limit as it was (and is logged): the budget is
/// then fitted under what there is. Raising again changes nothing.
pub(crate) fn raise_limit() -> ServerResult<Limit> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(ServerError::Internal(format!(
            "cannot read the descriptor limit: {}",
            std::io::Error::last_os_error()
        )));
    }
    let before = *STARTED_WITH.get_or_init(|| rl.rlim_cur);
    let hard = rl.rlim_max;
    if rl.rlim_cur < rl.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: rl.rlim_max,
            rlim_max: rl.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            tracing::warn!(
                "cannot raise the descriptor limit from {before} to {hard}: {}",
                std::io::Error::last_os_error()
            );
            return Ok(Limit {
                before,
                soft: rl.rlim_cur,
                hard,
            });
        }
    }
    Ok(Limit {
        before,
        soft: hard.max(rl.rlim_cur),
        hard,
    })
}

/// Connection limits that fit under a descriptor limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fit {
    pub native: usize,
    /// `None` when the HTTP listener is off.
    pub http: Option<usize>,
    /// Descriptors kept for the engine.
    pub reserve: u64,
    /// Whether the configured limits had to be lowered.
    pub lowered: bool,
    /// What no connection or refusal of these listeners can take: the
    /// reserve and whatever the limits leave beside it.
    pub left: u64,
}

/// The descriptors kept for the engine under a soft limit of `soft`.
pub(crate) fn reserve(soft: u64) -> u64 {
    (soft / 4).max(MIN_RESERVE)
}

/// Fits the configured connection limits under the soft limit `soft`,
/// lowering both in proportion if they do not fit. `http` is the
/// connections of all `http_doors` listeners that serve with the HTTP
/// settings together; each door, and the native one, has its own
/// refusals.
pub(crate) fn fit(
    soft: u64,
    native: usize,
    http: Option<usize>,
    http_doors: usize,
) -> ServerResult<Fit> {
    let reserve = reserve(soft);
    let http_doors = if http.is_some() { http_doors.max(1) } else { 0 };
    let listeners = 1 + http_doors as u64;
    let wanted = native as u64 + http.unwrap_or(0) as u64;
    let room = soft
        .saturating_sub(reserve)
        .saturating_sub(listeners * REFUSING as u64);
    if room < listeners {
        return Err(ServerError::Setting {
            key: "max_connections".into(),
            reason: format!(
                "the descriptor limit of {soft} leaves no room for connections next to the \
                 {reserve} kept for database and log files; raise it (ulimit -n) to at least {}",
                reserve + listeners * (REFUSING as u64 + 64)
            ),
        });
    }
    let (native, http, lowered) = if wanted <= room {
        (native, http, false)
    } else {
        let scaled = |n: usize| ((n as u128 * room as u128 / wanted as u128) as usize).max(1);
        (scaled(native), http.map(scaled), true)
    };
    let taken = native as u64 + http.unwrap_or(0) as u64 + listeners * REFUSING as u64;
    Ok(Fit {
        native,
        http,
        reserve,
        lowered,
        left: soft.saturating_sub(taken),
    })
}

/// Raises the process's descriptor limit and lowers the connection limits
/// if they would not leave the engine its reserve (above). The mail
/// listeners' connections (and their refusals) are set aside first: each
/// SMTP or submission listener's lowered to an eighth of what is left if
/// it would take more, each IMAP listener's to a quarter. Returns
/// the descriptors left for the engine: what no connection or refusal
/// can take. `report` logs the figures and every lowering (the server's
/// own fit at start-up); without it the fit is only computed.
pub(crate) fn fit_settings(settings: &mut ServerSettings, report: bool) -> ServerResult<u64> {
    let mut limit = raise_limit()?;
    for (smtp, key) in [
        (&mut settings.smtp, "smtp.max_connections"),
        (&mut settings.submission, "submission.max_connections"),
        (
            &mut settings.submissions,
            "submission.max_connections (submissions_listen)",
        ),
    ] {
        let Some(smtp) = smtp else { continue };
        set_aside(
            &mut limit.soft,
            &mut smtp.max_connections,
            8,
            "SMTP connections",
            key,
            report,
        );
    }
    for (imap, key) in [
        (&mut settings.imap, "imap.max_connections"),
        (&mut settings.imaps, "imap.max_connections (imaps_listen)"),
    ] {
        let Some(imap) = imap else { continue };
        set_aside(
            &mut limit.soft,
            &mut imap.max_connections,
            4,
            "IMAP sessions",
            key,
            report,
        );
    }
    // The CouchDB listener serves with the HTTP settings: its
    // connections count as a second HTTP listener's.
    let http_doors = usize::from(settings.http_listen.is_some())
        + usize::from(settings.couchdb_listen.is_some());
    let http = (http_doors > 0).then(|| settings.http.max_connections * http_doors);
    let fit = fit(
        limit.soft,
        settings.native.max_connections,
        http,
        http_doors,
    )?;
    if report {
        tracing::info!(
            "descriptor limit {} (was {}, hard limit {}); {} kept for database and log files",
            limit.soft,
            limit.before,
            limit.hard,
            fit.reserve
        );
    }
    if report && fit.lowered {
        tracing::warn!(
            "the descriptor limit of {} cannot hold max_connections = {} and \
             http_max_connections = {} next to the {} descriptors kept for database and log \
             files: serving at most {} native and {} HTTP connections; raise the hard limit \
             (ulimit -Hn, LimitNOFILE) to get the configured figures",
            limit.soft,
            settings.native.max_connections,
            http.unwrap_or(0),
            fit.reserve,
            fit.native,
            fit.http.unwrap_or(0),
        );
    }
    settings.native.max_connections = fit.native;
    if let Some(n) = fit.http {
        settings.http.max_connections = (n / http_doors.max(1)).max(1);
    }
    Ok(fit.left)
}

/// Sets a mail listener's connections (and its refusals) aside from the
/// soft limit `soft`, lowering `max_connections` to a `share_of`-th of it
/// if it would take more.
fn set_aside(
    soft: &mut u64,
    max_connections: &mut usize,
    share_of: u64,
    what: &str,
    key: &str,
    report: bool,
) {
    let share = (*soft / share_of).saturating_sub(REFUSING as u64);
    if *max_connections as u64 > share {
        if report {
            tracing::warn!(
                "the descriptor limit of {soft} leaves room for {} {what}, not {key} = \
                 {max_connections}",
                share.max(1),
            );
        }
        *max_connections = share.max(1) as usize;
    }
    *soft = soft.saturating_sub(*max_connections as u64 + REFUSING as u64 + 1);
}

/// The descriptors the engine may use beside every listener's connections
/// at their limits, once the server has fitted `settings` under the
/// process's limit (raised to the hard one here, as `run` does): what
/// sizes the open-database cache when no `max_open_databases` is set.
pub fn engine_descriptors(settings: &ServerSettings) -> ServerResult<u64> {
    fit_settings(&mut settings.clone(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_that_fit_are_kept() {
        let f = fit(1 << 20, 2_000, Some(1_000), 1).unwrap();
        assert_eq!((f.native, f.http, f.lowered), (2_000, Some(1_000), false));
        assert_eq!(f.reserve, 1 << 18);
        let f = fit(20_000, 6_000, Some(6_000), 1).unwrap();
        assert_eq!((f.native, f.http, f.reserve), (6_000, Some(6_000), 5_000));
    }

    #[test]
    fn limits_that_do_not_fit_are_lowered_in_proportion() {
        let f = fit(1_024, 2_000, Some(1_000), 1).unwrap();
        assert!(f.lowered);
        assert_eq!(f.reserve, MIN_RESERVE);
        // 640 left for connections, shared 2:1 as configured.
        assert_eq!(1_024 - MIN_RESERVE - 2 * REFUSING as u64, 640);
        assert_eq!((f.native, f.http), (426, Some(213)));
        let f = fit(1_024, 5_000, None, 0).unwrap();
        assert_eq!(f.native as u64, 1_024 - MIN_RESERVE - REFUSING as u64);
    }

    #[test]
    fn every_door_keeps_its_refusals_and_the_rest_is_left() {
        // Native plus two HTTP-style doors (HTTP and CouchDB).
        let f = fit(20_000, 1_000, Some(2_000), 2).unwrap();
        assert!(!f.lowered);
        assert_eq!(f.left, 20_000 - 1_000 - 2_000 - 3 * REFUSING as u64);
        let one = fit(20_000, 1_000, Some(2_000), 1).unwrap();
        assert_eq!(one.left, f.left + REFUSING as u64);
        // Lowered limits leave the reserve and the refusals, no more.
        let f = fit(1_024, 5_000, Some(5_000), 2).unwrap();
        assert!(f.lowered);
        let taken = (f.native + f.http.unwrap()) as u64 + 3 * REFUSING as u64;
        assert_eq!(f.left, 1_024 - taken);
        assert!(f.left >= f.reserve);
    }

    #[test]
    fn raising_twice_reports_the_limit_the_process_started_with() {
        let first = raise_limit().unwrap();
        let again = raise_limit().unwrap();
        assert_eq!(again, first);
        assert!(first.soft >= first.before);
    }

    #[test]
    fn a_limit_with_no_room_for_connections_is_an_error() {
        let e = fit(300, 10, Some(10), 1).unwrap_err().to_string();
        assert!(e.contains("ulimit -n") && e.contains("300"), "{e}");
    }

    #[test]
    fn the_reserve_is_a_quarter_with_a_floor() {
        assert_eq!(reserve(1_000), MIN_RESERVE);
        assert_eq!(reserve(4_096), 1_024);
    }
}
