//! kill -9 crash harness.
//!
//! Each trial starts the real `folio` binary running the seeded crash
//! workload (4 writer threads over 3 databases: creates, updates, deletes,
//! attachments), kills it with SIGKILL at a random moment, reads every
//! begin/ack line that reached the pipe, then opens the data directory
//! in-process — which runs restart recovery — and holds it to the model:
//! every acknowledged operation present, every unacknowledged one wholly
//! present or wholly absent, every database opening and passing its
//! consistency check. Trials run in series of `FOLIO_KILL_SERIES` on one
//! directory, so later trials recover over the debris of earlier ones.
//!
//! `FOLIO_KILL_TRIALS` sets the number of trials (default 100, CI's count);
//! see docs/testing.md for the 1,000-trial command.

use folio::crashtest::{Event, Model};
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const THREADS: usize = 4;
const DBS: usize = 3;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const CONFIG: &str = r#"
buffer_pool_size = "8MiB"
flush_interval_secs = 0.05
[translog]
extent_size = "1MiB"
max_size = "16MiB"
tuning = "restart"
"#;

struct TrialOutcome {
    acked: u64,
    inflight_applied: usize,
    inflight_absent: usize,
    unlogged_views_rebuilt: usize,
}

/// Runs the child until the kill, feeding its events into the model.
fn run_child(dir: &Path, cfg: &Path, seed: u64, kill_after: Duration, model: &mut Model) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(dir)
        .arg("--config")
        .arg(cfg)
        .args([
            "debug",
            "crash-workload",
            "--seed",
            &seed.to_string(),
            "--threads",
            &THREADS.to_string(),
            "--dbs",
            &DBS.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start folio");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let ready = rx.recv_timeout(Duration::from_secs(60));
    if !matches!(&ready, Ok(l) if l.starts_with("READY")) {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "child did not start: {ready:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::thread::sleep(kill_after);
    if let Some(status) = child.try_wait().unwrap() {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
        panic!("the workload stopped by itself before the kill ({status}): {err}");
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let mut acked = 0;
    for line in rx.try_iter() {
        let ev = Event::from_line(&line).unwrap_or_else(|| panic!("bad line from child: {line:?}"));
        if matches!(ev, Event::Ack(..)) {
            acked += 1;
        }
        model.apply(&ev);
    }
    if status.success() {
        panic!("child exited on its own before the kill");
    }
    acked
}

fn verify(dir: &Path, cfg: &Path, model: &mut Model) -> TrialOutcome {
    let settings = folio::datadir::settings(dir, Some(cfg)).unwrap();
    let dd = folio::datadir::open(dir, settings)
        .unwrap_or_else(|e| panic!("data directory failed to open after kill: {e}"));
    if let Some(r) = &dd.recovery {
        assert!(
            r.failed_databases.is_empty(),
            "databases failed recovery: {:?}",
            r.failed_databases
        );
    }
    let v = model
        .verify(&dd.engine, DBS)
        .unwrap_or_else(|e| panic!("verification failed: {e}"));
    let vc = folio::crashtest::check_views(&dd.views, &dd.engine, DBS)
        .unwrap_or_else(|e| panic!("view verification failed: {e}"));
    dd.engine.close().unwrap();
    TrialOutcome {
        acked: 0,
        inflight_applied: v.inflight_applied,
        inflight_absent: v.inflight_absent,
        unlogged_views_rebuilt: vc.unlogged_rebuilt,
    }
}

#[test]
fn kill_9_loses_no_acknowledged_commit() {
    let trials = env_usize("FOLIO_KILL_TRIALS", 100);
    let series = env_usize("FOLIO_KILL_SERIES", 10).max(1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(env_usize("FOLIO_KILL_SEED", 1) as u64);
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("folio.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let (mut total_acked, mut applied, mut absent, mut rebuilt) = (0u64, 0usize, 0usize, 0usize);
    let mut model = Model::default();
    let mut dir = tmp.path().join("s0");
    for trial in 0..trials {
        if trial % series == 0 {
            dir = tmp.path().join(format!("s{}", trial / series));
            model = Model::default();
        }
        let kill_after = Duration::from_millis(rng.gen_range(5..400));
        let acked = run_child(&dir, &cfg, trial as u64 + 1, kill_after, &mut model);
        let o = verify(&dir, &cfg, &mut model);
        total_acked += acked + o.acked;
        applied += o.inflight_applied;
        absent += o.inflight_absent;
        rebuilt += o.unlogged_views_rebuilt;
    }
    eprintln!(
        "kill -9 trials: {trials}; acknowledged operations checked: {total_acked}; \
         in-flight at kill: {applied} applied whole, {absent} absent whole; \
         acknowledged lost: 0; partial: 0; databases failing to open: 0; \
         logged views rebuilt: 0; unlogged views rebuilt after the kill: {rebuilt}"
    );
    assert!(total_acked > trials as u64, "the workload made progress");
}
