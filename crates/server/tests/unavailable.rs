//! An engine shut down under open doors (`Engine::shutdown` runs while
//! others still hold the engine: a job or task past the shutdown grace,
//! docs/architecture.md "server") is a server unavailable for now, on both
//! doors: HTTP 503 with `Retry-After`, native error 503, each saying the
//! server is shutting down. Never a 500, and never "no such database" for
//! a database that is there.

use base64::Engine as _;
use client::blocking::Client;
use client::{ClientError, ClientOptions, ErrorCode};
use nsf::{Engine, EngineConfig};
use server::auth::UserStore;
use server::native::NativeSettings;
use server::stats::Stats;
use server::{http, native, Caller, Lifecycle, Limits, Service};
use std::sync::Arc;
use std::time::Duration;
use storage::backend::FsBackend;
use tokio::sync::watch;
use translog::LogConfig;
use views::{ViewConfig, Views};

const PW: &str = "correct horse battery";

fn basic(user: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{PW}"));
    format!("Basic {b64}")
}

/// Status, `Retry-After` and JSON body of an HTTP answer.
fn answer(r: Result<ureq::Response, ureq::Error>) -> (u16, Option<String>, serde_json::Value) {
    let resp = match r {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = resp.status();
    let retry = resp.header("retry-after").map(str::to_string);
    (status, retry, resp.into_json().unwrap())
}

#[test]
fn a_closed_engine_is_503_on_both_doors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut cfg = EngineConfig::new(&data);
    cfg.buffer_pool_size = 16 << 20;
    let mut log = LogConfig::new(data.join("translog"));
    log.extent_size = 4 << 20;
    log.max_size = 64 << 20;
    cfg.log = Some(log);
    let (engine, _) = Engine::open(Arc::new(FsBackend), cfg).unwrap();
    let views = Views::new(
        engine.backend(),
        ViewConfig {
            rebuild_dir: dir.path().join("sort"),
            rebuild_memory: 1 << 20,
        },
    );
    let users = UserStore::open(engine.backend(), engine.data_dir()).unwrap();
    users.add_user("admin", PW, true).unwrap();
    users.add_user("alice", PW, false).unwrap();
    let engine = Arc::new(engine);
    let service = Arc::new(Service::new(
        engine.clone(),
        Arc::new(views),
        Arc::new(users),
        Arc::new(Stats::new()),
        Limits::default(),
    ));
    service
        .create_database(&Caller::user("admin", true), "u.fdb", "")
        .unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let bind = || {
        runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap()
    };
    let (http_listener, native_listener) = (bind(), bind());
    let http_addr = http_listener.local_addr().unwrap();
    let native_addr = native_listener.local_addr().unwrap();
    let (stop, life) = watch::channel(Lifecycle::Serving);
    let served = [
        runtime.spawn(http::serve(
            http_listener,
            None,
            service.clone(),
            http::HttpSettings::default(),
            life.clone(),
        )),
        runtime.spawn(native::serve(
            native_listener,
            None,
            service.clone(),
            NativeSettings::default(),
            life,
        )),
    ];
    let url = |path: &str| format!("http://{http_addr}{path}");
    let admin =
        Client::connect(ClientOptions::new(native_addr.to_string()).with_credentials("admin", PW))
            .unwrap();
    let (db, _) = admin.open_database("u.fdb").unwrap();
    // Alice may not see the database: it is "not found" to her.
    let (status, _, _) = answer(
        ureq::get(&url("/db/u.fdb"))
            .set("Authorization", &basic("alice"))
            .call(),
    );
    assert_eq!(status, 404);

    engine.shutdown().unwrap();

    let refusals = [
        (
            "admin",
            ureq::post(&url("/db/u.fdb/docs")),
            Some(r#"{"A":"b"}"#),
        ),
        ("admin", ureq::get(&url("/db/u.fdb")), None),
        ("alice", ureq::get(&url("/db/u.fdb")), None),
    ];
    for (user, req, body) in refusals {
        let req = req.set("Authorization", &basic(user));
        let sent = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        let (status, retry, e) = answer(sent);
        assert_eq!(status, 503, "as {user}: {e}");
        assert_eq!(retry.as_deref(), Some("1"), "as {user}: {e}");
        assert_eq!(e["error"], "busy");
        let reason = e["reason"].as_str().unwrap();
        assert!(reason.contains("shutting down"), "as {user}: {reason}");
    }

    let native_refusals = [
        admin.create_document(db, r#"{"A":"b"}"#).map(drop),
        admin.database_info("u.fdb").map(drop),
    ];
    for r in native_refusals {
        match r {
            Err(ClientError::Server { code, message }) => {
                assert_eq!(code, ErrorCode::Busy, "{message}");
                assert!(message.contains("shutting down"), "{message}");
            }
            other => panic!("expected error 503, got {other:?}"),
        }
    }

    drop(admin);
    let _ = stop.send(Lifecycle::Draining);
    for s in served {
        let done =
            runtime.block_on(async { tokio::time::timeout(Duration::from_secs(20), s).await });
        assert!(matches!(done, Ok(Ok(()))), "serve did not return");
    }
}
