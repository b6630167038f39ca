//! The Host and its background tasks in a whole server (`server::run` on
//! loopback ports, driven over HTTP): a failing task is marked failed in
//! `GET /stats` while the server goes on serving, and a task that ignores
//! its stop and keeps a thread holding the engine neither stops the
//! shutdown at the deadline nor keeps it from ending in a checkpoint.

use base64::Engine as _;
use futures_util::future::BoxFuture;
use nsf::{Engine, EngineConfig, ItemValue, Unid};
use serde_json::{json, Value};
use server::auth::UserStore;
use server::{Bound, Host, ServerSettings, Task, TaskContext, TaskResult, TaskState};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use storage::backend::FsBackend;
use translog::LogConfig;
use views::{ViewConfig, Views};

const PW: &str = "correct horse battery";

fn open(data: &Path) -> (Engine, Option<translog::RecoveryReport>) {
    let mut cfg = EngineConfig::new(data);
    cfg.buffer_pool_size = 16 << 20;
    let mut log = LogConfig::new(data.join("translog"));
    log.extent_size = 4 << 20;
    log.max_size = 64 << 20;
    cfg.log = Some(log);
    Engine::open(Arc::new(FsBackend), cfg).unwrap()
}

fn views(engine: &Engine, dir: &Path) -> Views {
    Views::new(
        engine.backend(),
        ViewConfig {
            rebuild_dir: dir.join("sort"),
            rebuild_memory: 1 << 20,
        },
    )
}

/// Returns an error as soon as it runs.
struct Failing;

impl Task for Failing {
    fn name(&self) -> &str {
        "failing"
    }

    fn run(self: Box<Self>, _: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async { Err("cannot reach the relay host".into()) })
    }
}

/// Hands the engine to a thread that never lets go of it (a job stuck in
/// a system call), and never answers its stop request.
struct Stuck {
    engine: Arc<Engine>,
    holder: mpsc::Sender<Arc<Engine>>,
}

impl Task for Stuck {
    fn name(&self) -> &str {
        "stuck"
    }

    fn run(self: Box<Self>, _: TaskContext) -> BoxFuture<'static, TaskResult> {
        Box::pin(async move {
            self.holder.send(self.engine.clone()).unwrap();
            std::future::pending::<()>().await;
            Ok(())
        })
    }
}

fn basic() -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PW}"));
    format!("Basic {b64}")
}

#[test]
fn failed_and_stuck_tasks_neither_stop_the_service_nor_an_orderly_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (engine, _) = open(&data);
    let views = views(&engine, dir.path());
    UserStore::open(engine.backend(), engine.data_dir())
        .unwrap()
        .add_user("admin", PW, true)
        .unwrap();
    let mut host = Host::new(engine, views).unwrap();
    let (holder, held) = mpsc::channel();
    host.add_task(Failing).unwrap();
    host.add_task(Stuck {
        engine: host.engine().clone(),
        holder,
    })
    .unwrap();
    let stats = host.stats().clone();
    let engine = Arc::downgrade(host.engine());

    let grace = Duration::from_secs(1);
    let settings = ServerSettings {
        listen: "127.0.0.1:0".into(),
        http_listen: Some("127.0.0.1:0".into()),
        worker_threads: 4,
        io_threads: 2,
        shutdown_grace: grace,
        ..ServerSettings::default()
    };
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let (bound_tx, bound) = mpsc::channel::<Bound>();
    let server = std::thread::spawn(move || {
        server::run(
            settings,
            host,
            |b| bound_tx.send(b.clone()).unwrap(),
            Some(stop_rx),
        )
    });
    let http = bound.recv_timeout(Duration::from_secs(30)).unwrap().http;
    let base = format!("http://{}", http.unwrap());
    // The stuck task's thread: it holds the engine until the test ends.
    let stuck_job = held.recv_timeout(Duration::from_secs(30)).unwrap();

    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let stats_json = || -> Value {
        agent
            .get(&format!("{base}/stats"))
            .set("Authorization", &basic())
            .call()
            .unwrap()
            .into_json()
            .unwrap()
    };
    let s = stats_json();
    assert_eq!(s["task.stats.state"], "running", "{s}");
    assert_eq!(s["task.stuck.state"], "running", "{s}");
    assert_eq!(
        s["task.failing.state"], "failed: cannot reach the relay host",
        "{s}"
    );
    // The server serves on without the failed task.
    let created = agent
        .put(&format!("{base}/db/t.fdb"))
        .set("Authorization", &basic())
        .call()
        .unwrap();
    assert_eq!(created.status(), 201);
    let doc: Value = agent
        .post(&format!("{base}/db/t.fdb/docs"))
        .set("Authorization", &basic())
        .send_json(json!({"Subject": "acknowledged"}))
        .unwrap()
        .into_json()
        .unwrap();
    let unid: Unid = doc["unid"].as_str().unwrap().parse().unwrap();

    let stopping = Instant::now();
    stop.send(true).unwrap();
    let result = server.join().unwrap();
    let took = stopping.elapsed();
    assert!(
        result.is_ok(),
        "a task holding the engine failed the shutdown: {result:?}"
    );
    assert!(
        took >= grace,
        "the stuck task was not given the grace period: {took:?}"
    );
    assert!(
        took < grace + Duration::from_secs(15),
        "shutdown took {took:?}"
    );
    assert_eq!(
        stats.tasks().state("stuck"),
        Some(TaskState::Failed(
            "did not stop by the shutdown deadline".into()
        ))
    );
    assert_eq!(stats.tasks().state("stats"), Some(TaskState::Stopped));
    assert!(
        matches!(stats.tasks().state("failing"), Some(TaskState::Failed(_))),
        "a failed task stays failed"
    );

    // The stuck job still holds the engine, which is closed under it.
    assert!(engine.upgrade().is_some());
    assert!(stuck_job.is_closed());
    assert!(matches!(
        stuck_job.open_database("t.fdb"),
        Err(nsf::NsfError::EngineClosed)
    ));

    // Restarted: recovery starts at the shutdown checkpoint, with nothing
    // to redo, and the acknowledged document is there.
    let (engine, report) = open(&data);
    let report = report.unwrap();
    assert_eq!(report.committed_txns_redone, 0, "{report:?}");
    assert_eq!(report.pages_redone, 0, "{report:?}");
    let note = engine.open_database("t.fdb").unwrap().get(unid).unwrap();
    assert!(matches!(
        &note.item("Subject").unwrap().value,
        ItemValue::Text(t) if t == "acknowledged"
    ));
    drop(stuck_job);
    engine.close().unwrap();
}
