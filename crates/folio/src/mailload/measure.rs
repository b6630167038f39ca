//! What the server did during a run, read from outside it: CPU time in
//! user and system mode and the bytes it handed to write calls
//! (`/proc/PID/stat`, `/proc/PID/io`), and from its statistics the log's
//! bytes, fsyncs and checkpoints and the router's deliveries and delivery
//! latency.
//!
//! Bytes written to the log are `log.bytes_written`; to the data
//! directory, the server's write calls (`wchar`) less the log's bytes.
//! `wchar` also counts the replies written to sockets, a small share here
//! (a run's replies are mostly short; the report says so). Two other
//! figures are kept in the result but not used: `write_bytes` of
//! `/proc/PID/io`, which on this machine counts several times what the
//! disk receives (a run whose server claimed 2.9 GB moved 0.55 GB by
//! `/proc/diskstats`), and the buffer pool's flushed pages
//! (`pool.pages_flushed` × the page size), which match with the log on
//! but miss the pages an unlogged commit forces. Fsyncs are the log's
//! (`log.fsyncs`); with the log off the server does not count the syncs
//! of data files, and the report says so. The server's resident memory
//! (`VmRSS` of `/proc/PID/status`) and open descriptors (`/proc/PID/fd`)
//! are read too: with every user's mail file open they are what grows
//! with the user count.

use client::{Client, StatValue};
use serde::Serialize;

/// One reading of the server.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reading {
    /// Seconds since the run's start.
    pub t_s: f64,
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    pub write_bytes: Option<u64>,
    pub wchar: Option<u64>,
    pub pages_flushed: Option<u64>,
    pub log_bytes: Option<u64>,
    pub log_fsyncs: Option<u64>,
    pub log_checkpoints: Option<u64>,
    pub delivered: Option<u64>,
    pub waiting: Option<u64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub open_fds: Option<u64>,
}

/// Reads the server's process (when its id is known) and statistics.
pub async fn read(client: &Client, pid: Option<u32>, t_s: f64) -> Reading {
    let mut r = Reading {
        t_s,
        ..Reading::default()
    };
    if let Some(pid) = pid {
        if let Some((user, system)) = cpu_seconds(pid) {
            r.cpu_user_s = Some(user);
            r.cpu_system_s = Some(system);
        }
        r.write_bytes = io_field(pid, "write_bytes");
        r.wchar = io_field(pid, "wchar");
        r.rss_bytes = rss_bytes(pid);
        r.open_fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()
            .map(|d| d.count() as u64);
    }
    if let Ok(stats) = client.statistics().await {
        let count = |name: &str| {
            stats
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| match s.value {
                    StatValue::Count(n) => Some(n),
                    _ => None,
                })
        };
        let gauge = |name: &str| {
            stats
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| match s.value {
                    StatValue::Gauge(x) => Some(x),
                    StatValue::Count(n) => Some(n as f64),
                    _ => None,
                })
        };
        r.log_bytes = count("log.bytes_written");
        r.pages_flushed = count("pool.pages_flushed");
        r.log_fsyncs = count("log.fsyncs");
        r.log_checkpoints = count("log.checkpoints");
        r.delivered = count("router.delivered");
        r.waiting = count("router.waiting");
        r.latency_p50_ms = gauge("router.latency_p50_ms");
        r.latency_p99_ms = gauge("router.latency_p99_ms");
    }
    r
}

/// User and system CPU seconds of `pid` (fields 14 and 15 of its stat).
pub(crate) fn cpu_seconds(pid: u32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it do not.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let ticks = |i: usize| f.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? / tck, ticks(12)? / tck))
}

/// A field of `/proc/PID/io`.
fn io_field(pid: u32, field: &str) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// Resident memory of `pid` (`VmRSS`, in kB in `/proc/PID/status`).
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The difference of two readings as the report's figures.
pub fn between(a: &Reading, b: &Reading) -> serde_json::Value {
    let secs = (b.t_s - a.t_s).max(1e-9);
    let d = |x: Option<f64>, y: Option<f64>| Some(y? - x?);
    let du = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
    let user = d(a.cpu_user_s, b.cpu_user_s);
    let system = d(a.cpu_system_s, b.cpu_system_s);
    let page = storage::page::PAGE_SIZE as u64;
    let log = du(a.log_bytes, b.log_bytes);
    let wchar = du(a.wchar, b.wchar);
    let data = wchar.map(|w| w.saturating_sub(log.unwrap_or(0)));
    serde_json::json!({
        "seconds": secs,
        "cpu_user_percent": user.map(|u| 100.0 * u / secs),
        "cpu_system_percent": system.map(|s| 100.0 * s / secs),
        "cpu_percent": user.zip(system).map(|(u, s)| 100.0 * (u + s) / secs),
        "cpu_user_share": match (user, system) {
            (Some(u), Some(s)) if u + s > 0.0 => Some(u / (u + s)),
            _ => None,
        },
        "bytes_written_log": log,
        "bytes_written_data": data,
        "proc_write_bytes": du(a.write_bytes, b.write_bytes),
        "proc_wchar": wchar,
        "pool_flushed_bytes": du(a.pages_flushed, b.pages_flushed).map(|p| p * page),
        "log_fsyncs": du(a.log_fsyncs, b.log_fsyncs),
        "log_checkpoints": du(a.log_checkpoints, b.log_checkpoints),
        "delivered": du(a.delivered, b.delivered),
        "router_waiting_at_end": b.waiting,
        "router_latency_p50_ms": b.latency_p50_ms,
        "router_latency_p99_ms": b.latency_p99_ms,
        "rss_bytes_at_end": b.rss_bytes,
        "open_fds_at_end": b.open_fds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_and_an_io_account() {
        let pid = std::process::id();
        let (user, system) = cpu_seconds(pid).expect("own stat");
        assert!(user >= 0.0 && system >= 0.0);
        assert!(io_field(pid, "write_bytes").is_some());
        assert!(io_field(pid, "wchar").is_some());
        assert!(rss_bytes(pid).is_some_and(|b| b > 0));
    }

    #[test]
    fn data_bytes_are_the_write_calls_less_the_log() {
        let a = Reading {
            wchar: Some(1000),
            log_bytes: Some(100),
            cpu_user_s: Some(1.0),
            cpu_system_s: Some(1.0),
            ..Reading::default()
        };
        let b = Reading {
            t_s: 10.0,
            wchar: Some(5000),
            log_bytes: Some(1100),
            cpu_user_s: Some(4.0),
            cpu_system_s: Some(2.0),
            ..Reading::default()
        };
        let v = between(&a, &b);
        assert_eq!(v["bytes_written_log"], 1000);
        assert_eq!(v["bytes_written_data"], 3000);
        assert_eq!(v["cpu_user_percent"], 30.0);
        assert_eq!(v["cpu_user_share"], 0.75);
    }
}
