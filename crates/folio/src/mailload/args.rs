//! The options of `folio load mail`, and their checks: a bad value or an
//! option that does not apply to the chosen mode is refused before
//! anything is prepared.

use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct MailArgs {
    /// Simulated mail users (each with a mail file from the template).
    #[arg(long, default_value_t = 1000)]
    pub users: usize,
    /// Documents prefilled into each mail file's Inbox.
    #[arg(long, default_value_t = 200)]
    pub docs: usize,
    /// Largest prefilled text body in KiB (sizes are drawn from 1 KiB to
    /// this); smaller than 100 only to prepare big sweeps faster.
    #[arg(long, default_value_t = 100)]
    pub max_doc_kib: usize,
    /// Share of prefilled documents with an attachment (50 KiB–2 MiB,
    /// half of them incompressible), in percent; 0 for none.
    #[arg(long, default_value_t = 10)]
    pub attach_percent: u32,
    /// mail.box databases (the server's `mail.boxes`).
    #[arg(long, default_value_t = 10)]
    pub mailboxes: u32,
    /// Seconds of one iteration of the script at time scale 1.
    #[arg(long, default_value_t = 900.0)]
    pub iteration: f64,
    /// Compresses time: 60 runs one iteration per 15 s instead of 15 min.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Seconds measured (after one iteration of ramp-up, which is not
    /// counted).
    #[arg(long, default_value_t = 120.0)]
    pub seconds: f64,
    /// Connections the users are multiplexed over.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Runs the same workload with the transaction log on and off, on
    /// identical fresh data, side by side; with --sweep, both at every
    /// user count (alternating which goes first) and each one's capacity.
    #[arg(long)]
    pub compare_logging: bool,
    /// Runs the same workload with view logging on every Inbox on and off
    /// (the transaction log on in both), on identical fresh data, side by
    /// side.
    #[arg(long)]
    pub view_logging: bool,
    /// Comma-separated user counts: each at steady state, then response
    /// and trans/min against users and the capacity (the highest count
    /// with p95 ≤ 50 ms, router p99 ≤ 1 s and ≥ 95% of offered deliveries
    /// delivered).
    #[arg(long, value_delimiter = ',')]
    pub sweep: Vec<usize>,
    /// With --server: the server's process id, to read its CPU and bytes
    /// written from /proc (same machine only).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Seed of the random choices (recipients, documents, sizes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the temporary data directories (default: the system
    /// temp dir); deleted afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep each run's data directory (its path goes into result.json as
    /// `data_dir`) instead of deleting it, to inspect the mail files.
    #[arg(long)]
    pub keep_data: bool,
    /// Where result.json and report.html are written.
    #[arg(long, default_value = "folio-load-mail")]
    pub out: PathBuf,
}

/// The largest response time the percentile histograms hold (one minute).
pub const MAX_RESPONSE_US: u64 = 60_000_000;

impl MailArgs {
    /// One iteration of the script in real time.
    pub fn iteration(&self) -> Duration {
        Duration::from_secs_f64(self.iteration / self.time_scale)
    }

    /// Refuses bad values and options that do not apply (`server`: the
    /// run is against a server the tool did not start).
    pub fn check(&self, server: bool) -> Result<(), String> {
        let positive = [
            ("--users", self.users),
            ("--connections", self.connections),
            ("--max-doc-kib", self.max_doc_kib),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be above 0"));
        }
        if self.max_doc_kib > 100 {
            return Err("--max-doc-kib is at most 100 (WORKLOADS.md: 1–100 KiB)".into());
        }
        if self.attach_percent > 100 {
            return Err("--attach-percent is a percentage (0–100)".into());
        }
        if self.mailboxes == 0 {
            return Err("--mailboxes must be above 0".into());
        }
        let finite = |v: f64| v.is_finite() && v > 0.0;
        if !finite(self.iteration) || !finite(self.time_scale) || !finite(self.seconds) {
            return Err("--iteration, --time-scale and --seconds must be positive numbers".into());
        }
        if self.view_logging && (self.compare_logging || !self.sweep.is_empty()) {
            return Err(
                "--view-logging is a run of its own: leave out --compare-logging and --sweep"
                    .into(),
            );
        }
        if self.sweep.contains(&0) {
            return Err("--sweep user counts must be above 0".into());
        }
        if server {
            if self.compare_logging {
                return Err("--compare-logging needs servers the tool starts (its log is switched off and on): leave out --server".into());
            }
            if self.view_logging {
                return Err("--view-logging needs servers the tool starts (each Inbox is defined logged or not before the run): leave out --server".into());
            }
            if !self.sweep.is_empty() {
                return Err(
                    "--sweep needs fresh servers the tool starts: leave out --server".into(),
                );
            }
            if self.dir.is_some() || self.keep_data {
                return Err("--dir and --keep-data do not apply with --server: there is no local data directory".into());
            }
        } else if self.server_pid.is_some() {
            return Err(
                "--server-pid applies only with --server (the tool knows its own server)".into(),
            );
        }
        Ok(())
    }
}
