//! The outbound task (`outbound`): hands each due queue entry to its
//! route, records what the peer said, files the DSN a final failure
//! owes.
//!
//! ```text
//!   loop: [blocking] due entries of mail.out.fdb (soonest first), counts
//!         per entry:  message bytes ─▶ client::attempt (route or smarthost,
//!                     on the pass's open connection to that host if any)
//!                     ─▶ outbound::apply ─▶ [blocking] record  (durable, I58)
//!                     ─▶ keep the connection for the next entry to the host
//!         end of pass: QUIT every kept connection
//!                     no recipient pending, one failed ─▶ [blocking] file_dsn
//!                     still pending, waited past the delay notice, not
//!                     told yet ─▶ [blocking] file_delay_notice
//!         wait for: stop │ the queue commits past its seq │ next due │ RESCAN
//! ```
//!
//! I58's window: the record of a handover follows the peer's 250 to the
//! final dot at once, and nothing else is written or awaited in between;
//! a kill between the two (or between the final dot and the 250) leaves
//! the entry pending, and the next attempt sends the message again. It is
//! the only place where a message can reach a peer twice.

use super::client::{self, Attempt, Kept};
use crate::stats::{Stats, StatsSource};
use crate::tasks::{Task, TaskContext, TaskResult};
use futures_util::future::BoxFuture;
use mail::outbound::{self as out, Entry, OutState, OutboundConfig, Outcome, QueueCounts};
use nsf::{Engine, Timestamp};
use protocol::{StatValue, Statistic};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use views::Views;

/// Longest wait between looks at the queue (a queue made since, a clock
/// that jumped).
const RESCAN: Duration = Duration::from_secs(10);
/// Entries one pass takes.
const PER_PASS: usize = 100;
/// Each wait for the peer (connect, a reply), RFC 5321 §4.5.3.2 asks for
/// minutes; a queue is not held that long by one peer here.
const PEER_TIMEOUT: Duration = Duration::from_secs(60);

/// What `show stats` reports as `outbound.*`.
#[derive(Default)]
struct OutboundStats {
    waiting: AtomicU64,
    retrying: AtomicU64,
    delivered: AtomicU64,
    failed: AtomicU64,
    attempts: AtomicU64,
    dsns: AtomicU64,
    delay_notices: AtomicU64,
    connections: AtomicU64,
}

impl StatsSource for OutboundStats {
    fn statistics(&self, out: &mut Vec<Statistic>) {
        let mut put = |name: &str, v: &AtomicU64| {
            out.push(Statistic {
                name: format!("outbound.{name}"),
                value: StatValue::Count(v.load(Ordering::Relaxed)),
            })
        };
        put("waiting", &self.waiting);
        put("retrying", &self.retrying);
        put("delivered", &self.delivered);
        put("failed", &self.failed);
        put("attempts", &self.attempts);
        put("dsns", &self.dsns);
        put("delay_notices", &self.delay_notices);
        put("connections", &self.connections);
    }
}

/// The outbound task (see the module docs).
pub struct OutboundTask {
    engine: Arc<Engine>,
    views: Arc<Views>,
    config: OutboundConfig,
    expire: Duration,
    helo: String,
    tls: Arc<rustls::ClientConfig>,
    stats: Arc<OutboundStats>,
}

impl OutboundTask {
    /// The task over `engine` and `views`, delivering as `config` routes,
    /// giving a recipient up after `expire` (`router.expire_hours`),
    /// greeting peers as `helo` (else the host name), its figures
    /// reported with `stats` (`outbound.*`).
    pub fn new(
        engine: Arc<Engine>,
        views: Arc<Views>,
        stats: &Stats,
        config: OutboundConfig,
        expire: Duration,
        helo: Option<String>,
    ) -> OutboundTask {
        let own = Arc::new(OutboundStats::default());
        stats.add_source(own.clone());
        OutboundTask {
            engine,
            views,
            config,
            expire,
            helo: helo
                .or_else(crate::tls::host_name)
                .unwrap_or_else(|| "localhost".into()),
            tls: client::opportunistic_tls(),
            stats: own,
        }
    }

    /// One look at the queue: every due entry attempted and recorded.
    /// Returns when the next entry is due.
    async fn pass(&self) -> Result<Option<Timestamp>, String> {
        let (engine, views) = (self.engine.clone(), self.views.clone());
        let now = Timestamp::now();
        let (entries, next_due, counts) =
            blocking(move || out::due(&engine, &views, now, PER_PASS)).await?;
        self.counts(counts);
        let more = entries.len() == PER_PASS;
        // One connection per host for the whole pass (RFC 5321 §3.3).
        let mut open: HashMap<String, Kept> = HashMap::new();
        for entry in entries {
            if let Err(e) = self.handle(entry, &mut open).await {
                tracing::warn!("outbound: {e}");
            }
        }
        for (_, kept) in open {
            kept.quit().await;
        }
        Ok(if more { Some(now) } else { next_due })
    }

    async fn handle(
        &self,
        mut entry: Entry,
        open: &mut HashMap<String, Kept>,
    ) -> Result<(), String> {
        let pending = entry.pending();
        if !pending.is_empty() {
            self.deliver(&mut entry, &pending, open).await?;
        }
        let owed = entry.pending().is_empty()
            && entry.states.contains(&OutState::Failed)
            && !entry.return_to.is_empty();
        if owed {
            let (engine, views, mta) = (self.engine.clone(), self.views.clone(), self.helo.clone());
            blocking(move || out::file_dsn(&engine, &views, &entry, &mta, Timestamp::now()))
                .await?;
            self.stats.dsns.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let now = Timestamp::now();
        let waited = until(now, entry.queued);
        let delayed = !entry.pending().is_empty()
            && !entry.delay_noticed
            && !entry.return_to.is_empty()
            && waited >= self.config.delay_notice();
        if delayed {
            let retry_until = Timestamp(
                entry
                    .queued
                    .0
                    .saturating_add(i64::try_from(self.expire.as_micros()).unwrap_or(i64::MAX)),
            );
            let (engine, views, mta) = (self.engine.clone(), self.views.clone(), self.helo.clone());
            blocking(move || {
                out::file_delay_notice(&engine, &views, &entry, retry_until, &mta, now)
            })
            .await?;
            self.stats.delay_notices.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// One attempt at `entry`'s `pending` recipients, recorded (I58), on
    /// the connection `open` keeps to its host if there is one; the
    /// connection is kept there afterwards.
    async fn deliver(
        &self,
        entry: &mut Entry,
        pending: &[usize],
        open: &mut HashMap<String, Kept>,
    ) -> Result<(), String> {
        let (engine, views, e) = (self.engine.clone(), self.views.clone(), entry.clone());
        let message = blocking(move || out::message(&engine, &views, &e)).await?;
        let handover = match self.config.route(&entry.domain) {
            Some(host) => {
                let attempt = Attempt {
                    host,
                    helo: &self.helo,
                    sender: &entry.sender,
                    recipients: pending
                        .iter()
                        .map(|&i| (i, entry.recipients[i].as_str()))
                        .collect(),
                    message: &message,
                    tls: Some(self.tls.clone()),
                    timeout: PEER_TIMEOUT,
                };
                let kept = open.remove(host);
                let handover = client::attempt(attempt, kept).await;
                if handover.connected {
                    self.stats.connections.fetch_add(1, Ordering::Relaxed);
                }
                Some((host.to_string(), handover))
            }
            None => None,
        };
        let outcomes = match &handover {
            Some((_, h)) => h.outcomes.clone(),
            None => pending
                .iter()
                .map(|&i| (i, Outcome::Failed(format!("no route to {}", entry.domain))))
                .collect(),
        };
        out::apply(
            entry,
            &outcomes,
            &self.config,
            self.expire,
            Timestamp::now(),
        );
        let (engine, views, e) = (self.engine.clone(), self.views.clone(), entry.clone());
        // I58: the handover is recorded right after the peer's 250.
        blocking(move || out::record(&engine, &views, &e)).await?;
        self.stats.attempts.fetch_add(1, Ordering::Relaxed);
        for (i, o) in &outcomes {
            match o {
                Outcome::Sent => {
                    self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        message_id = %entry.message_id,
                        recipient = %entry.recipients[*i],
                        "outbound: handed over, recorded"
                    );
                }
                Outcome::Failed(why) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(recipient = %entry.recipients[*i], "outbound: failed: {why}");
                }
                Outcome::Retry(why) => {
                    if entry.states[*i] == OutState::Failed {
                        self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    }
                    tracing::info!(recipient = %entry.recipients[*i], "outbound: will retry: {why}");
                }
            }
        }
        // Only now, with the handover recorded, may the connection carry
        // another transaction (or QUIT at the end of the pass).
        if let Some((host, h)) = handover {
            if let Some(kept) = h.keep() {
                open.insert(host, kept);
            }
        }
        Ok(())
    }

    fn counts(&self, c: QueueCounts) {
        self.stats.waiting.store(c.waiting, Ordering::Relaxed);
        self.stats.retrying.store(c.retrying, Ordering::Relaxed);
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> mail::MailResult<T> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("a blocking job failed: {e}")),
    }
}

impl Task for OutboundTask {
    fn name(&self) -> &str {
        "outbound"
    }

    fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            loop {
                if ctx.is_stop_requested() {
                    return Ok(());
                }
                // The queue's seq before the pass: a commit during it
                // wakes the wait below at once.
                let queue = self.engine.open_database(out::QUEUE_PATH).ok();
                let seq = queue.as_ref().map(|db| db.durable_seq());
                let wait = match self.pass().await {
                    Ok(Some(due)) => until(due, Timestamp::now()),
                    Ok(None) => RESCAN,
                    Err(e) => {
                        tracing::warn!("outbound: a pass failed: {e}");
                        RESCAN
                    }
                };
                if wait.is_zero() {
                    continue;
                }
                let changed = async {
                    match (&queue, seq) {
                        (Some(db), Some(seq)) => {
                            let _ = db.next_change(seq).await;
                        }
                        _ => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = ctx.stop_requested() => return Ok(()),
                    _ = changed => {}
                    _ = tokio::time::sleep(wait.min(RESCAN)) => {}
                }
            }
        })
    }
}

/// The wait from `now` until `due` (zero if past).
fn until(due: Timestamp, now: Timestamp) -> Duration {
    Duration::from_micros(due.0.saturating_sub(now.0).max(0) as u64)
}
