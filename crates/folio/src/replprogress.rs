//! A network replication's progress on stderr: documents moved out of
//! those wanted, and bytes on the wire so far. A thin link takes minutes,
//! so `folio replicate` shows how far it is; the bar is drawn only when
//! stderr is a terminal (indicatif hides it otherwise), so scripts and
//! tests see just the JSON summary on stdout. Only the CLI turns it on
//! ([`enable`]): a server replicating with its peers draws nothing.

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Draws the bars of this process's replications (the CLI's).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// One pull's bar, removed when dropped.
pub struct ReplProgress {
    bar: ProgressBar,
}

impl ReplProgress {
    /// A bar for the pull `what` (e.g. "pull a.fdb ← host:1352/a.fdb").
    pub fn new(what: &str) -> ReplProgress {
        let target = if ENABLED.load(Ordering::Relaxed) {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        let style = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} documents, {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        ReplProgress { bar }
    }

    /// `done` of `known` documents moved (the count known so far grows
    /// page by page), `wire` bytes on the connection.
    pub fn update(&self, done: u64, known: u64, wire: u64) {
        self.bar.set_length(known.max(done));
        self.bar.set_position(done);
        self.bar
            .set_message(format!("{} on the wire", HumanBytes(wire)));
    }
}

impl Drop for ReplProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
