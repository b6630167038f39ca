//! Progress of a load workload on stderr.
//!
//! A workload runs for minutes; a bar says how far it is and what it is
//! measuring now. It is drawn only when stderr is a terminal (indicatif
//! hides it otherwise), so logs and tests see just the result lines, which
//! go to stdout above the bar (through [`line`], which works whether a
//! bar is showing or not).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The bar on screen, if any, for [`line`].
static CURRENT: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Prints a result line on stdout without tearing the bar on screen.
pub fn line(text: &str) {
    let current = CURRENT.lock().ok().and_then(|c| c.clone());
    match current {
        Some(bar) => bar.suspend(|| println!("{text}")),
        None => println!("{text}"),
    }
}

/// A workload's progress: `steps` measurements, one at a time.
pub struct Progress {
    bar: ProgressBar,
    /// A step is under way (the next one completes it).
    started: AtomicBool,
}

impl Progress {
    pub fn new(workload: &str, steps: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(format!("folio load {workload}"));
        bar.enable_steady_tick(Duration::from_millis(250));
        if let Ok(mut c) = CURRENT.lock() {
            *c = Some(bar.clone());
        }
        Progress {
            bar,
            started: AtomicBool::new(false),
        }
    }

    /// Starts the next step, described by `what`.
    pub fn step(&self, what: &str) {
        if self.started.swap(true, Ordering::Relaxed) {
            self.bar.inc(1);
        }
        self.bar.set_message(what.to_string());
    }

    /// Prints a result line on stdout without tearing the bar.
    pub fn line(&self, text: &str) {
        line(text);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        if let Ok(mut c) = CURRENT.lock() {
            *c = None;
        }
    }
}
