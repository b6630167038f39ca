//! Descriptors for the server the tool starts: enough for the open-database
//! cache at its ceiling, whatever the number of users.
//!
//! A mail user keeps their mail file open from the first step of the
//! script to the last, but a client handle does not pin the database
//! instance (design.md I54: a handle holds a weak reference and reopens
//! through the cache when its instance was closed). So the server's
//! descriptors are bounded by the cache, not by the users: at most
//! `max_open_databases` instances at rest, and up to four times that
//! (I19's ceiling) while the closer catches up, beside the mail boxes,
//! the connections and the log.
//!
//! ```text
//!   needed = 4 × max_open_databases + mail boxes
//!          + connections + RESERVE (log extents, directory, listeners, …)
//! ```
//!
//! The server raises its soft limit to the hard one at start-up
//! (`server::descriptors`), and with no `max_open_databases` set it sizes
//! the cache from what that leaves (I19), so nothing needs raising then.
//! A limit set (`FOLIO__MAX_OPEN_DATABASES`) is one the descriptors must
//! hold: a child inherits its parent's limits, so the tool raises its own
//! to `needed` before it starts the server (the hard one only where the
//! process is allowed to). Where the system
//! will not, the run goes on with a warning naming the figures; the
//! server's open descriptors are sampled through the run (`open_fds` in
//! `result.json`), so a run that hit the limit shows it, as errors.

/// Descriptors kept beyond the mail files and connections: the log's
/// extents, the directory, listeners and the server's own files.
pub const RESERVE: u64 = 512;

/// The open-database cache's ceiling as a multiple of its limit (I19).
pub const CEILING: u64 = nsf::CACHE_CEILING as u64;

/// The descriptors a server needs with this cache limit, mail boxes and
/// connections; the number of users does not count (I54).
pub fn needed(mailboxes: u32, max_open_databases: usize, connections: usize) -> u64 {
    CEILING * max_open_databases as u64 + u64::from(mailboxes) + connections as u64 + RESERVE
}

/// The `RLIMIT_NOFILE` limits to set for `needed` descriptors given the
/// current `(soft, hard)`: `None` when the current ones suffice.
pub fn raised(current: (u64, u64), needed: u64) -> Option<(u64, u64)> {
    let (soft, hard) = current;
    (soft < needed).then(|| (needed, hard.max(needed)))
}

/// Raises this process's descriptor limits (inherited by the server it
/// starts) to `needed`. Returns a warning with the figures when the
/// system will not; an error only when the limit cannot be read.
pub fn ensure(needed: u64) -> Result<Option<String>, String> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(format!(
            "cannot read the descriptor limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    let Some((soft, hard)) = raised((rl.rlim_cur, rl.rlim_max), needed) else {
        return Ok(None);
    };
    let new = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads one rlimit struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
        return Ok(None);
    }
    Ok(Some(format!(
        "warning: the server may need up to {needed} file descriptors (the open-database \
         cache at its ceiling, plus mail boxes, connections and log) but the limit is {} (hard {}) and raising it failed: \
         {}; running anyway (its open descriptors are sampled)",
        rl.rlim_cur,
        rl.rlim_max,
        std::io::Error::last_os_error()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_ceiling_counts_beside_boxes_and_connections() {
        assert_eq!(needed(10, 1_000, 64), 4_000 + 10 + 64 + RESERVE);
        assert_eq!(needed(1, 64, 1), 256 + 1 + 1 + RESERVE);
    }

    #[test]
    fn limits_are_raised_only_when_short() {
        assert_eq!(raised((20_000, 20_000), 5_000), None);
        assert_eq!(raised((20_000, 20_000), 20_000), None);
        assert_eq!(raised((1_024, 20_000), 5_000), Some((5_000, 20_000)));
        assert_eq!(raised((20_000, 20_000), 23_098), Some((23_098, 23_098)));
    }

    #[test]
    fn a_limit_already_high_enough_is_left_alone() {
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) }, 0);
        assert_eq!(ensure(rl.rlim_cur.min(64)), Ok(None));
        let mut after = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as above.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut after) };
        assert_eq!((after.rlim_cur, after.rlim_max), (rl.rlim_cur, rl.rlim_max));
    }
}
