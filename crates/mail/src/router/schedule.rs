//! The router's settings and its backoff schedule.
//!
//! A recipient whose mail file cannot take a message now (it is missing,
//! failed, needs fixup, the log is full) waits, and is tried again after
//! 1, 5, 15, 30 and 60 minutes, then every hour: soon enough that a short
//! outage delays mail by minutes, sparse enough that a file that stays
//! broken costs one attempt an hour. The sender hears of it: a delay
//! notice once the message has waited `router.delay_notice_hours`
//! (default 4), a non-delivery report when it has waited
//! `router.expire_hours` (default 24), when the recipient is given up.
//!
//! `router.workers` (default 16) bounds how many mail files a pass
//! delivers into at once (`workers.rs`): enough that the copies of many
//! mail files share each fsync of the log, few enough that the router
//! cannot take every thread of a small machine. A pass hands mail files
//! to them for at most `deliver_for` (250 ms; what it did not reach
//! waits for the next pass, at once), since its deliveries count only
//! once it records them: this bounds how long a filed copy waits for its
//! record however slowly mail files open or commit.

use crate::{MailError, MailResult};
use std::time::Duration;

/// The waits before attempts 2, 3, …; the last repeats.
pub const BACKOFF: [Duration; 5] = [
    Duration::from_secs(60),
    Duration::from_secs(5 * 60),
    Duration::from_secs(15 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(60 * 60),
];

/// The wait after `attempts` failed attempts (at least 1).
pub fn backoff(attempts: u32) -> Duration {
    let i = (attempts.max(1) - 1) as usize;
    BACKOFF[i.min(BACKOFF.len() - 1)]
}

/// The router's settings (`[router]` in `folio.toml`), checked once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouterConfig {
    delay_notice_hours: u32,
    expire_hours: u32,
    workers: u32,
    deliver_for: Duration,
}

impl RouterConfig {
    pub const DEFAULT_DELAY_NOTICE_HOURS: u32 = 4;
    pub const DEFAULT_EXPIRE_HOURS: u32 = 24;
    /// Longest either may be: 30 days.
    pub const MAX_HOURS: u32 = 720;
    pub const DEFAULT_WORKERS: u32 = 16;
    /// Most mail files delivered into at once.
    pub const MAX_WORKERS: u32 = 256;
    pub const DEFAULT_DELIVER_FOR: Duration = Duration::from_millis(250);

    /// Both at least 1 hour and at most 30 days, the delay notice before
    /// the expiry.
    pub fn new(delay_notice_hours: u32, expire_hours: u32) -> MailResult<RouterConfig> {
        let range = 1..=Self::MAX_HOURS;
        for (key, v) in [
            ("router.delay_notice_hours", delay_notice_hours),
            ("router.expire_hours", expire_hours),
        ] {
            if !range.contains(&v) {
                return Err(MailError::Setting {
                    key: key.into(),
                    reason: format!("must be between 1 and {}", Self::MAX_HOURS),
                });
            }
        }
        if delay_notice_hours >= expire_hours {
            return Err(MailError::Setting {
                key: "router.delay_notice_hours".into(),
                reason: format!("must be less than router.expire_hours ({expire_hours})"),
            });
        }
        Ok(RouterConfig {
            delay_notice_hours,
            expire_hours,
            workers: Self::DEFAULT_WORKERS,
            deliver_for: Self::DEFAULT_DELIVER_FOR,
        })
    }

    /// These settings delivering into at most `workers` mail files at
    /// once (1 to [`Self::MAX_WORKERS`]; 1 delivers one file after
    /// another).
    pub fn with_workers(self, workers: u32) -> MailResult<RouterConfig> {
        if !(1..=Self::MAX_WORKERS).contains(&workers) {
            return Err(MailError::Setting {
                key: "router.workers".into(),
                reason: format!("must be between 1 and {}", Self::MAX_WORKERS),
            });
        }
        Ok(RouterConfig { workers, ..self })
    }

    /// Most mail files delivered into at once.
    pub fn workers(&self) -> usize {
        self.workers as usize
    }

    /// These settings handing mail files to the workers for `d` in a
    /// pass (each worker still takes one, so a pass of zero delivers into
    /// `workers` files: tests use it to cut passes short exactly).
    pub fn with_deliver_for(self, d: Duration) -> RouterConfig {
        RouterConfig {
            deliver_for: d,
            ..self
        }
    }

    /// How long a pass hands mail files to its workers.
    pub fn deliver_for(&self) -> Duration {
        self.deliver_for
    }

    /// How long a message waits before its sender gets a delay notice.
    pub fn delay_notice(&self) -> Duration {
        Duration::from_secs(u64::from(self.delay_notice_hours) * 3600)
    }

    /// How long a message waits before a recipient is given up.
    pub fn expire(&self) -> Duration {
        Duration::from_secs(u64::from(self.expire_hours) * 3600)
    }
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            delay_notice_hours: Self::DEFAULT_DELAY_NOTICE_HOURS,
            expire_hours: Self::DEFAULT_EXPIRE_HOURS,
            workers: Self::DEFAULT_WORKERS,
            deliver_for: Self::DEFAULT_DELIVER_FOR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_grows_then_stays_hourly() {
        let mins: Vec<u64> = (1..=7).map(|a| backoff(a).as_secs() / 60).collect();
        assert_eq!(mins, [1, 5, 15, 30, 60, 60, 60]);
        assert_eq!(backoff(0), backoff(1));
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(
            RouterConfig::default().expire(),
            Duration::from_secs(86_400)
        );
        assert!(RouterConfig::new(1, 2).is_ok());
        for (d, e, key) in [
            (0, 24, "router.delay_notice_hours"),
            (4, 721, "router.expire_hours"),
            (24, 24, "router.delay_notice_hours"),
        ] {
            match RouterConfig::new(d, e) {
                Err(MailError::Setting { key: k, .. }) => assert_eq!(k, key),
                other => panic!("expected a setting error for {d}/{e}, got {other:?}"),
            }
        }
        assert_eq!(RouterConfig::default().workers(), 16);
        assert_eq!(
            RouterConfig::default().with_workers(1).unwrap().workers(),
            1
        );
        for w in [0, RouterConfig::MAX_WORKERS + 1] {
            match RouterConfig::default().with_workers(w) {
                Err(MailError::Setting { key, .. }) => assert_eq!(key, "router.workers"),
                other => panic!("expected a setting error for {w} workers, got {other:?}"),
            }
        }
    }
}
