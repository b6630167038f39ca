//! What the server did during a run, read from outside it: CPU time in
//! user and system mode and the bytes it handed to write calls
//! (`/proc/PID/stat`, `/proc/PID/io`), and from its statistics the log's
//! bytes, fsyncs and checkpoints and the router's deliveries and delivery
//! latency; beside it, the load driver's own CPU time (this process,
//! `getrusage`: the driver and the server share the machine's cores) and
//! the bytes written to the data directory's block device (`device.rs`).
//!
//! Bytes written to the log are `log.bytes_written`; to the data
//! directory, the server's write calls (`wchar`) less the log's bytes.
//! `wchar` also counts the replies written to sockets, a small share here
//! (a run's replies are mostly short; the report says so), and every
//! rewrite of a cached page: it is what the server asked for, not what
//! reached the disk. What reached the disk is the device's count of
//! sectors written, by every writer on that device. `write_bytes` of
//! `/proc/PID/io` is not read: on this machine it counted several times
//! what the disk received (a run whose server claimed 2.9 GB moved 0.55 GB
//! by `/proc/diskstats`). The buffer pool's flushed pages
//! (`pool.pages_flushed` × the page size) are kept in the result; they
//! match with the log on but miss the pages an unlogged commit forces.
//! Fsyncs are counted twice: the log's (`log.fsyncs`), and every
//! fdatasync of any file the server made (`wait.file.sync.count`, data
//! files and log alike), so both arms are compared by the syncs they cost. The
//! server's resident memory (`VmRSS` of `/proc/PID/status`) and open
//! descriptors (`/proc/PID/fd`) are read too: with every user's mail file
//! open they are what grows with the user count.
//!
//! The machine's own CPU accounting (`/proc/stat`) is read too, as shares
//! of all the cores' time over the window: idle, the time the hypervisor
//! gave to other guests (`steal`) and what every other process used
//! (busy less the server and the driver). A virtual machine's cores are
//! not always its own: in one run here a quarter of the time was stolen,
//! which moved an arm's p95 by a factor of three. A result that carries
//! these figures says whether its runs were measured on a quiet machine.

use super::device::Device;
use client::{Client, StatValue};
use serde::Serialize;

/// One reading of the server.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reading {
    /// Seconds since the run's start.
    pub t_s: f64,
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    /// This process's (the load driver's) CPU time.
    pub driver_cpu_user_s: Option<f64>,
    pub driver_cpu_system_s: Option<f64>,
    /// Bytes written to the data directory's device, by every writer.
    pub device_bytes: Option<u64>,
    pub wchar: Option<u64>,
    pub pages_flushed: Option<u64>,
    pub log_bytes: Option<u64>,
    pub log_fsyncs: Option<u64>,
    pub file_syncs: Option<u64>,
    pub log_checkpoints: Option<u64>,
    pub delivered: Option<u64>,
    pub waiting: Option<u64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    /// The machine's CPU time by state (`/proc/stat`, first line).
    pub machine: Option<MachineCpu>,
}

/// The machine's CPU time, in clock ticks, summed over its cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MachineCpu {
    pub busy: u64,
    pub idle: u64,
    pub iowait: u64,
    pub steal: u64,
}

impl MachineCpu {
    /// Parses the `cpu` line of `/proc/stat`: user nice system idle
    /// iowait irq softirq steal (guest time is already in user).
    pub fn parse(stat: &str) -> Option<MachineCpu> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        if f.len() < 4 {
            return None;
        }
        Some(MachineCpu {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            idle: at(3),
            iowait: at(4),
            steal: at(7),
        })
    }

    fn read() -> Option<MachineCpu> {
        MachineCpu::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn total(&self) -> u64 {
        self.busy + self.idle + self.iowait + self.steal
    }
}

/// Reads the server's process (when its id is known), the device (when
/// known), this process's CPU time and the server's statistics.
pub async fn read(client: &Client, pid: Option<u32>, device: Option<&Device>, t_s: f64) -> Reading {
    let (driver_user, driver_system) = own_cpu_seconds().unzip();
    let mut r = Reading {
        t_s,
        driver_cpu_user_s: driver_user,
        driver_cpu_system_s: driver_system,
        device_bytes: device.and_then(Device::bytes_written),
        machine: MachineCpu::read(),
        ..Reading::default()
    };
    if let Some(pid) = pid {
        if let Some((user, system)) = cpu_seconds(pid) {
            r.cpu_user_s = Some(user);
            r.cpu_system_s = Some(system);
        }
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
        r.file_syncs = count("wait.file.sync.count");
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

/// User and system CPU seconds of this process, all its threads.
fn own_cpu_seconds() -> Option<(f64, f64)> {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage struct we own.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
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
    let percent = |x: Option<f64>| x.map(|x| 100.0 * x / secs);
    let page = storage::page::PAGE_SIZE as u64;
    let log = du(a.log_bytes, b.log_bytes);
    let wchar = du(a.wchar, b.wchar);
    let data = wchar.map(|w| w.saturating_sub(log.unwrap_or(0)));
    serde_json::json!({
        "seconds": secs,
        "cpu_user_percent": percent(user),
        "cpu_system_percent": percent(system),
        "cpu_percent": percent(user.zip(system).map(|(u, s)| u + s)),
        "cpu_user_share": match (user, system) {
            (Some(u), Some(s)) if u + s > 0.0 => Some(u / (u + s)),
            _ => None,
        },
        "device_bytes_written": du(a.device_bytes, b.device_bytes),
        "bytes_written_log": log,
        "bytes_written_data": data,
        "proc_wchar": wchar,
        "pool_flushed_bytes": du(a.pages_flushed, b.pages_flushed).map(|p| p * page),
        "log_fsyncs": du(a.log_fsyncs, b.log_fsyncs),
        "file_syncs": du(a.file_syncs, b.file_syncs),
        "log_checkpoints": du(a.log_checkpoints, b.log_checkpoints),
        "delivered": du(a.delivered, b.delivered),
        "router_waiting_at_end": b.waiting,
        "router_latency_p50_ms": b.latency_p50_ms,
        "router_latency_p99_ms": b.latency_p99_ms,
        "rss_bytes_at_end": b.rss_bytes,
        "open_fds_at_end": b.open_fds,
    })
}

/// The machine's CPU between two readings, as percentages of all its
/// cores' time: `other_percent` is what neither the server nor the
/// driver used (other processes, interrupts). `None` where `/proc/stat`
/// could not be read.
pub fn machine_between(a: &Reading, b: &Reading) -> serde_json::Value {
    let (Some(x), Some(y)) = (a.machine, b.machine) else {
        return serde_json::Value::Null;
    };
    let total = y.total().saturating_sub(x.total());
    if total == 0 {
        return serde_json::Value::Null;
    }
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let share = |t: f64| 100.0 * t / total as f64;
    let d = |x: Option<f64>, y: Option<f64>| Some(y? - x?);
    let ours = [
        d(a.cpu_user_s, b.cpu_user_s),
        d(a.cpu_system_s, b.cpu_system_s),
        d(a.driver_cpu_user_s, b.driver_cpu_user_s),
        d(a.driver_cpu_system_s, b.driver_cpu_system_s),
    ]
    .iter()
    .map(|s| s.unwrap_or(0.0) * tck)
    .sum::<f64>();
    let busy = y.busy.saturating_sub(x.busy) as f64;
    serde_json::json!({
        "busy_percent": share(busy),
        "idle_percent": share(y.idle.saturating_sub(x.idle) as f64),
        "iowait_percent": share(y.iowait.saturating_sub(x.iowait) as f64),
        "steal_percent": share(y.steal.saturating_sub(x.steal) as f64),
        "other_percent": share((busy - ours).max(0.0)),
    })
}

/// The load driver's (this process's) CPU between two readings, in
/// percent of one core.
pub fn driver_between(a: &Reading, b: &Reading) -> serde_json::Value {
    let secs = (b.t_s - a.t_s).max(1e-9);
    let d = |x: Option<f64>, y: Option<f64>| Some(y? - x?);
    let user = d(a.driver_cpu_user_s, b.driver_cpu_user_s);
    let system = d(a.driver_cpu_system_s, b.driver_cpu_system_s);
    let percent = |x: Option<f64>| x.map(|x| 100.0 * x / secs);
    serde_json::json!({
        "cpu_user_percent": percent(user),
        "cpu_system_percent": percent(system),
        "cpu_percent": percent(user.zip(system).map(|(u, s)| u + s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn this_process_has_cpu_time_and_an_io_account() {
        let pid = std::process::id();
        let (user, system) = cpu_seconds(pid).expect("own stat");
        assert!(user >= 0.0 && system >= 0.0);
        let (user, system) = own_cpu_seconds().expect("own rusage");
        assert!(user >= 0.0 && system >= 0.0);
        assert!(io_field(pid, "wchar").is_some());
        assert!(rss_bytes(pid).is_some_and(|b| b > 0));
    }

    #[test]
    fn window_figures_are_the_differences_of_two_readings() {
        let a = Reading {
            wchar: Some(1000),
            log_bytes: Some(100),
            cpu_user_s: Some(1.0),
            cpu_system_s: Some(1.0),
            driver_cpu_user_s: Some(0.5),
            driver_cpu_system_s: Some(0.5),
            device_bytes: Some(4096),
            ..Reading::default()
        };
        let b = Reading {
            t_s: 10.0,
            wchar: Some(5000),
            log_bytes: Some(1100),
            cpu_user_s: Some(4.0),
            cpu_system_s: Some(2.0),
            driver_cpu_user_s: Some(1.5),
            driver_cpu_system_s: Some(1.0),
            device_bytes: Some(4096 + 8192),
            ..Reading::default()
        };
        let v = between(&a, &b);
        assert_eq!(v["bytes_written_log"], 1000);
        assert_eq!(v["bytes_written_data"], 3000);
        assert_eq!(v["cpu_user_percent"], 30.0);
        assert_eq!(v["cpu_user_share"], 0.75);
        assert_eq!(v["device_bytes_written"], 8192);
        let driver = driver_between(&a, &b);
        assert_eq!(driver["cpu_user_percent"], 10.0);
        assert_eq!(driver["cpu_percent"], 15.0);
        assert!(v.get("proc_write_bytes").is_none());
    }

    #[test]
    fn the_machine_line_is_read_by_state() {
        let stat = "cpu  100 20 30 400 50 0 10 90 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        let m = MachineCpu::parse(stat).unwrap();
        assert_eq!(
            m,
            MachineCpu {
                busy: 160,
                idle: 400,
                iowait: 50,
                steal: 90
            }
        );
        assert_eq!(MachineCpu::parse("intr 1 2 3\n"), None);
        assert_eq!(MachineCpu::parse("cpu  1 x 3 4\n"), None);
        assert!(MachineCpu::read().is_some(), "this machine's /proc/stat");
    }

    #[test]
    fn the_machine_shares_add_up_to_the_window() {
        let a = Reading {
            machine: Some(MachineCpu {
                busy: 1000,
                idle: 1000,
                iowait: 0,
                steal: 0,
            }),
            ..Reading::default()
        };
        let b = Reading {
            machine: Some(MachineCpu {
                busy: 1500,
                idle: 1300,
                iowait: 100,
                steal: 100,
            }),
            ..Reading::default()
        };
        let v = machine_between(&a, &b);
        assert_eq!(v["busy_percent"], 50.0);
        assert_eq!(v["idle_percent"], 30.0);
        assert_eq!(v["iowait_percent"], 10.0);
        assert_eq!(v["steal_percent"], 10.0);
        // No process time known: all of the busy time is others'.
        assert_eq!(v["other_percent"], 50.0);
        assert_eq!(machine_between(&a, &Reading::default()), Value::Null);
    }
}
