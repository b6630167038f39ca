//! One run, `--compare-logging` (the same run with the log on and off on
//! identical fresh data), `--view-logging` (the same with every Inbox's
//! index logged and unlogged) and `--sweep` (one run per user count; with
//! `--compare-logging`, both arms at each count, the one that goes first
//! alternating from count to count so that neither always meets a
//! machine warmed or tired by the other), against servers the tool
//! starts in a temporary directory; or one run against `--server`. Each
//! run's figures go into `result.json`, and the pages into `report.html`
//! (`report.rs`; a sweep's capacity per arm in `sweep.rs`).

use super::args::MailArgs;
use super::device::Device;
use super::driver::{self, Driven, Target};
use super::limits;
use super::measure;
use super::report::{self, Compared, Run};
use super::setup::{self, ADMIN, ADMIN_PW};
use super::sweep;
use crate::cli::Args;
use crate::dbsload::ServerProc;
use crate::progress::Progress;
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::path::Path;

/// `folio load mail`.
pub fn run(a: &MailArgs, args: &Args) -> Result<(), String> {
    a.check(args.server.is_some())?;
    let runs = match &args.server {
        Some(addr) => vec![remote(a, args, addr)?],
        None => {
            let mut base = match &a.dir {
                Some(d) => tempfile::tempdir_in(d),
                None => tempfile::tempdir(),
            }
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
            base.disable_cleanup(a.keep_data);
            let plan = plan(a);
            let progress = Progress::new("mail", plan.len() as u64 * 2);
            let mut runs = Vec::new();
            for p in plan {
                runs.push(local(a, base.path(), p, &progress)?);
            }
            progress.finish();
            runs
        }
    };
    let swept = !a.sweep.is_empty();
    let compared = if a.compare_logging {
        Some(Compared::Log)
    } else if a.view_logging {
        Some(Compared::ViewLog)
    } else {
        None
    };
    let mode = match (compared, swept) {
        (Some(_), true) => "compare-logging sweep",
        (Some(c), false) => c.mode(),
        (None, true) => "sweep",
        (None, false) => "single",
    };
    let jsons: Vec<Value> = runs.iter().map(|r| r.json.clone()).collect();
    let result = json!({
        "workload": "mail",
        "mode": mode,
        "settings": settings(a, args),
        "machine": crate::load::machine(),
        "runs": jsons,
        "comparison": compared
            .filter(|_| !swept)
            .map(|c| report::comparison(&runs, c)),
        "sweep": swept.then(|| sweep::result(&jsons)),
    });
    report::write(&a.out, &result, &runs)?;
    println!("result.json and report.html in {}", a.out.display());
    Ok(())
}

fn settings(a: &MailArgs, args: &Args) -> Value {
    json!({
        "users": if a.sweep.is_empty() { json!(a.users) } else { json!(a.sweep) },
        "arms": (a.compare_logging && !a.sweep.is_empty()).then_some(
            "log on and log off at each user count, on identical fresh data; the arm that runs \
             first alternates from one count to the next (log on first at the first count)"),
        "docs per mail file": a.docs,
        "document sizes": format!("1–{} KiB text", a.max_doc_kib),
        "attachments": format!("{}% of documents, 50 KiB–2 MiB, half incompressible", a.attach_percent),
        "mail boxes": a.mailboxes,
        "iteration": format!("{} s at time scale {} = {:.1} s", a.iteration, a.time_scale, a.iteration().as_secs_f64()),
        "measured": format!("{} s after one iteration of ramp-up", a.seconds),
        "connections": a.connections,
        "server": args.server.clone().unwrap_or_else(|| "started by the tool (loopback)".into()),
        "seed": a.seed,
        "settings from the environment": env_overrides(),
    })
}

/// The `FOLIO__*` settings in this process's environment: a server the
/// tool starts inherits them, in both arms alike, so the report names them.
fn env_overrides() -> String {
    let mut vars: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with(crate::config::ENV_PREFIX))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    vars.sort();
    if vars.is_empty() {
        "none (defaults)".into()
    } else {
        vars.join(" ")
    }
}

/// The local runs, in the order they run.
fn plan(a: &MailArgs) -> Vec<Plan> {
    let single = |users, logging, logged_inbox| Plan {
        users,
        logging,
        logged_inbox,
        turn: None,
    };
    match (a.sweep.is_empty(), a.compare_logging, a.view_logging) {
        (false, true, _) => a
            .sweep
            .iter()
            .enumerate()
            .flat_map(|(i, &users)| {
                let order = if i % 2 == 0 {
                    [true, false]
                } else {
                    [false, true]
                };
                (1..=2).zip(order).map(move |(turn, logging)| Plan {
                    users,
                    logging,
                    logged_inbox: None,
                    turn: Some(turn),
                })
            })
            .collect(),
        (false, false, _) => a.sweep.iter().map(|&n| single(n, true, None)).collect(),
        (true, true, _) => vec![single(a.users, true, None), single(a.users, false, None)],
        (true, false, true) => vec![
            single(a.users, true, Some(true)),
            single(a.users, true, Some(false)),
        ],
        (true, false, false) => vec![single(a.users, true, None)],
    }
}

/// One local run: its user count, the log on or off, and, when that is
/// what the runs compare, whether every Inbox is a logged folder (`None`:
/// the template's unlogged Inbox, not in question); in a sweep with both
/// arms, whether it runs first or second at its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    users: usize,
    logging: bool,
    logged_inbox: Option<bool>,
    turn: Option<u8>,
}

impl Plan {
    fn label(self) -> String {
        let log = if self.logging { "on" } else { "off" };
        let inbox = match self.logged_inbox {
            Some(true) => ", Inbox logged",
            Some(false) => ", Inbox not logged",
            None => "",
        };
        let turn = match self.turn {
            Some(1) => " (ran first)",
            Some(_) => " (ran second)",
            None => "",
        };
        format!("{} users, log {log}{inbox}{turn}", self.users)
    }

    fn dir_name(self) -> String {
        let log = if self.logging { "log" } else { "nolog" };
        let inbox = match self.logged_inbox {
            Some(true) => "-viewlog",
            Some(false) => "-noviewlog",
            None => "",
        };
        format!("data-{}-{log}{inbox}", self.users)
    }
}

/// A fresh data directory, prepared embedded, then a server on it.
fn local(a: &MailArgs, base: &Path, p: Plan, progress: &Progress) -> Result<Run, String> {
    let (users, logging, label) = (p.users, p.logging, p.label());
    let data = base.join(p.dir_name());
    setup::write_settings(&data, a.mailboxes, logging)?;
    // A cache limit set (in the environment) is one the descriptors must
    // hold; an unset one the server sizes from the limit it gets.
    let max_open = crate::config::load(&data, None)?.max_open_databases;
    if let Some(warning) = max_open
        .map(|n| limits::ensure(limits::needed(a.mailboxes, n, a.connections)))
        .transpose()?
        .flatten()
    {
        progress.line(&format!("{label}: {warning}"));
    }
    progress.step(&format!("{label}: preparing {users} mail files"));
    let prepared = setup::prepare_local(&data, a, users, p.logged_inbox == Some(true))?;
    progress.line(&format!(
        "{label}: prepared {} documents ({} with attachments, {:.0} MB) in {:.1} s",
        prepared.docs,
        prepared.attachments,
        prepared.content_bytes as f64 / 1e6,
        prepared.seconds
    ));
    let device = Device::holding(&data);
    let server = ServerProc::spawn(&data)?;
    let target = Target {
        addr: server.native.clone(),
        user: ADMIN.into(),
        password: ADMIN_PW.into(),
        pid: Some(server.pid()),
        device: device.clone(),
    };
    let driven = driver::drive(&target, a, users, progress);
    let stopped = server.stop();
    let run = driven.map(|d| {
        let mut run = finish(
            &label,
            users,
            logging,
            serde_json::to_value(&prepared).unwrap_or_default(),
            d,
            progress,
        );
        run.json["inbox_logged"] = json!(p.logged_inbox == Some(true));
        run.json["turn"] = json!(p.turn);
        run.json["server"]["device"] = json!(device.as_ref().map(|d| d.name.clone()));
        run
    })?;
    stopped?;
    let mut run = run;
    if a.keep_data {
        run.json["data_dir"] = json!(data);
    } else {
        std::fs::remove_dir_all(&data)
            .map_err(|e| format!("cannot remove {}: {e}", data.display()))?;
    }
    Ok(run)
}

/// Against `--server`: users created and prefilled over the network.
fn remote(a: &MailArgs, args: &Args, addr: &str) -> Result<Run, String> {
    let endpoint = crate::remote::Endpoint::from_args(args, addr).map_err(|e| e.to_string())?;
    let (user, password) = endpoint.credentials.clone().ok_or(
        "--server: sign in as a server administrator with --user (password in FOLIO_PASSWORD)",
    )?;
    let target = Target {
        addr: endpoint.addr.clone(),
        user,
        password,
        pid: a.server_pid,
        device: None,
    };
    let progress = Progress::new("mail", 2);
    progress.step(&format!(
        "preparing {} mail users over the network",
        a.users
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let prepared = rt.block_on(async {
        let clients = target.connect_many(a.connections.clamp(1, 8)).await?;
        setup::prepare_remote(&clients, a, a.users).await
    })?;
    drop(rt);
    let driven = driver::drive(&target, a, a.users, &progress)?;
    let label = format!("{} users, server {addr}", a.users);
    Ok(finish(
        &label,
        a.users,
        true,
        serde_json::to_value(&prepared).unwrap_or_default(),
        driven,
        &progress,
    ))
}

/// A driven run's figures.
fn finish(
    label: &str,
    users: usize,
    logging: bool,
    prepared: Value,
    d: Driven,
    progress: &Progress,
) -> Run {
    let r = &d.recorder;
    let counted = r.overall.len();
    let trans_per_min = counted as f64 / (d.window_s / 60.0);
    let per_op: serde_json::Map<String, Value> = r
        .per_op
        .iter()
        .map(|(n, h)| (n.to_string(), percentiles(h)))
        .collect();
    let mut server = measure::between(&d.at_window_start, &d.at_window_end);
    server["log_bytes_per_transaction"] = json!(server["bytes_written_log"]
        .as_u64()
        .filter(|_| counted > 0)
        .map(|b| b as f64 / counted as f64));
    let per_second: Vec<Value> = r
        .per_second
        .iter()
        .enumerate()
        .map(|(s, h)| json!({"t_s": s, "ops": h.len(), "p50_ms": ms(h, 50.0), "p99_ms": ms(h, 99.0)}))
        .collect();
    let offered = r.offered_deliveries;
    let delivered = server["delivered"].as_u64();
    let driver = measure::driver_between(&d.at_window_start, &d.at_window_end);
    let machine = measure::machine_between(&d.at_window_start, &d.at_window_end);
    let json = json!({
        "label": label,
        "users": users,
        "logging": logging,
        "prepared": prepared,
        "ramp_s": d.ramp_s,
        "window_s": d.window_s,
        "iterations": d.iterations,
        "operations": counted,
        "trans_per_min": trans_per_min,
        "response": {"overall": percentiles(&r.overall), "per_operation": per_op},
        "server": server,
        "driver": driver,
        "machine": machine,
        "deliveries": {
            "offered": offered,
            "delivered": delivered,
            "delivered_share": delivered.filter(|_| offered > 0).map(|d| d as f64 / offered as f64),
        },
        "errors": r.errors,
        "per_second": per_second,
        "samples": d.samples,
    });
    progress.line(&format!(
        "{label}: {trans_per_min:.0} trans/min, response p50 {:.2} ms p95 {:.2} ms p99 {:.2} ms; router p99 {} ms, delivered {} of {offered}; CPU server {:.0}% driver {:.0}% others {:.0}% stolen {:.0}%; {} errors",
        ms(&r.overall, 50.0),
        ms(&r.overall, 95.0),
        ms(&r.overall, 99.0),
        json["server"]["router_latency_p99_ms"],
        delivered.map_or("–".into(), |d| d.to_string()),
        json["server"]["cpu_percent"].as_f64().unwrap_or(f64::NAN),
        json["driver"]["cpu_percent"].as_f64().unwrap_or(f64::NAN),
        json["machine"]["other_percent"].as_f64().unwrap_or(f64::NAN),
        json["machine"]["steal_percent"].as_f64().unwrap_or(f64::NAN),
        r.errors.values().sum::<u64>(),
    ));
    Run {
        json,
        overall: r.overall.clone(),
        per_op: r
            .per_op
            .iter()
            .map(|(n, h)| (n.to_string(), h.clone()))
            .collect(),
    }
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q / 100.0) as f64 / 1e3
}

fn percentiles(h: &Histogram<u64>) -> Value {
    json!({
        "count": h.len(),
        "mean_ms": h.mean() / 1e3,
        "p50_ms": ms(h, 50.0),
        "p95_ms": ms(h, 95.0),
        "p99_ms": ms(h, 99.0),
        "max_ms": h.max() as f64 / 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        mail: MailArgs,
    }

    fn args(line: &[&str]) -> MailArgs {
        Cli::parse_from([&["mail"], line].concat()).mail
    }

    #[test]
    fn a_compared_sweep_runs_both_arms_per_count_alternating_the_first() {
        let p = plan(&args(&["--compare-logging", "--sweep", "100,200,400"]));
        let seen: Vec<(usize, bool, Option<u8>)> =
            p.iter().map(|p| (p.users, p.logging, p.turn)).collect();
        assert_eq!(
            seen,
            [
                (100, true, Some(1)),
                (100, false, Some(2)),
                (200, false, Some(1)),
                (200, true, Some(2)),
                (400, true, Some(1)),
                (400, false, Some(2)),
            ]
        );
        let dirs: std::collections::BTreeSet<String> = p.iter().map(|p| p.dir_name()).collect();
        assert_eq!(dirs.len(), p.len(), "each run on its own fresh data");
    }

    #[test]
    fn the_other_modes_keep_their_runs() {
        let users = |p: Vec<Plan>| -> Vec<(usize, bool)> {
            p.iter().map(|p| (p.users, p.logging)).collect()
        };
        assert_eq!(
            users(plan(&args(&["--sweep", "5,10"]))),
            [(5, true), (10, true)]
        );
        assert_eq!(
            users(plan(&args(&["--users", "7", "--compare-logging"]))),
            [(7, true), (7, false)]
        );
        let v = plan(&args(&["--users", "7", "--view-logging"]));
        assert_eq!(
            v.iter().map(|p| p.logged_inbox).collect::<Vec<_>>(),
            [Some(true), Some(false)]
        );
        assert_eq!(plan(&args(&["--users", "7"])).len(), 1);
        assert!(plan(&args(&["--users", "7"]))[0].turn.is_none());
    }
}
