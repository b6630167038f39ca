//! What one delivery attempt of a queue entry changes: each recipient's
//! state from the peer's answers, the attempt count, the next attempt
//! on the router's schedule, and the recipients given up once the entry
//! has waited `router.expire_hours`. Pure: the caller records the entry
//! afterwards (`queue::record`, one durable update).
//!
//! ```text
//!   pending ──250 to the DATA that carried it──▶ sent
//!      ├──4xx, no answer, connection lost──▶ pending, next = now + backoff
//!      └──5xx, or waited past expire_hours──▶ failed(reason) ─▶ DSN owed
//! ```

use super::config::OutboundConfig;
use super::queue::{Entry, OutState};
use nsf::Timestamp;
use std::time::Duration;

/// What one attempt made of one recipient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The peer accepted the message for it (250 to DATA).
    Sent,
    /// Try again later: a 4xx, or the peer could not be reached.
    Retry(String),
    /// Given up: a 5xx.
    Failed(String),
}

/// Applies `outcomes` (recipient index, outcome) of an attempt at `now`.
pub fn apply(
    entry: &mut Entry,
    outcomes: &[(usize, Outcome)],
    config: &OutboundConfig,
    expire: Duration,
    now: Timestamp,
) {
    entry.attempts = entry.attempts.saturating_add(1);
    for (i, outcome) in outcomes {
        let Some(state) = entry.states.get_mut(*i) else {
            continue;
        };
        match outcome {
            Outcome::Sent => {
                *state = OutState::Sent;
                entry.reasons[*i] = String::new();
            }
            Outcome::Retry(why) => entry.reasons[*i] = one_line(why),
            Outcome::Failed(why) => {
                *state = OutState::Failed;
                entry.reasons[*i] = one_line(why);
            }
        }
    }
    let waited = Duration::from_micros(now.0.saturating_sub(entry.queued.0).max(0) as u64);
    let expired = waited >= expire;
    for i in entry.pending() {
        if expired {
            let hours = expire.as_secs() / 3600;
            let why = format!("not delivered in {hours} hours: {}", entry.reasons[i]);
            entry.states[i] = OutState::Failed;
            entry.reasons[i] = one_line(&why);
        }
    }
    let wait = config.backoff(entry.attempts);
    entry.next = Timestamp(
        now.0
            .saturating_add(i64::try_from(wait.as_micros()).unwrap_or(i64::MAX)),
    );
}

/// A peer's text as one printable line of at most 500 bytes: it goes
/// into a document, a log line and a DSN header.
pub fn one_line(s: &str) -> String {
    let mut line: String = s
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    line.truncate(500);
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::Unid;

    fn entry(n: usize) -> Entry {
        Entry {
            unid: Unid([1; 16]),
            domain: "far.example".into(),
            sender: "alice@example.com".into(),
            recipients: (0..n).map(|i| format!("r{i}@far.example")).collect(),
            states: vec![OutState::Pending; n],
            reasons: vec![String::new(); n],
            attempts: 0,
            next: Timestamp(0),
            queued: Timestamp(0),
            return_to: "Alice".into(),
            message_id: "<x@folio>".into(),
            dsn_due: false,
            delay_noticed: false,
        }
    }

    #[test]
    fn answers_move_each_recipient() {
        let c = OutboundConfig::default();
        let mut e = entry(3);
        let now = Timestamp(1_000_000);
        let outcomes = [
            (0, Outcome::Sent),
            (1, Outcome::Retry("451 4.3.0 later\r\n".into())),
            (2, Outcome::Failed("550 5.1.1 no\nsuch user".into())),
        ];
        apply(&mut e, &outcomes, &c, Duration::from_secs(3600), now);
        assert_eq!(
            e.states,
            [OutState::Sent, OutState::Pending, OutState::Failed]
        );
        assert_eq!(e.reasons[1], "451 4.3.0 later");
        assert_eq!(e.reasons[2], "550 5.1.1 no such user");
        assert_eq!(e.attempts, 1);
        assert_eq!(
            e.next,
            Timestamp(now.0 + 60_000_000),
            "the router's first wait"
        );
        // Past the expiry, what still waits is given up.
        let later = Timestamp(3_600_000_001);
        apply(
            &mut e,
            &[(1, Outcome::Retry("451 again".into()))],
            &c,
            Duration::from_secs(3600),
            later,
        );
        assert_eq!(e.states[1], OutState::Failed);
        assert_eq!(e.reasons[1], "not delivered in 1 hours: 451 again");
    }
}
