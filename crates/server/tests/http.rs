//! The HTTP/JSON API end to end, in process: a `Service` over a temporary
//! data directory, `server::http::serve` on 127.0.0.1:0, ureq (or a raw
//! socket, where a client must misbehave) on the other side. Refused
//! requests are checked for their status and JSON error body and for
//! having changed nothing.

use base64::Engine as _;
use nsf::{Engine, EngineConfig};
use serde_json::{json, Value};
use server::auth::UserStore;
use server::stats::Stats;
use server::tls::{server_tls_config, TlsSettings};
use server::{http, Lifecycle, Limits, Service};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::backend::FsBackend;
use tokio::sync::watch;
use translog::LogConfig;
use views::{ColumnDef, ViewConfig, ViewDef, Views};

const PW: &str = "correct horse battery";

/// A server on a loopback port over its own data directory.
struct Server {
    addr: SocketAddr,
    service: Arc<Service>,
    stop: watch::Sender<Lifecycle>,
    served: Option<tokio::task::JoinHandle<()>>,
    runtime: tokio::runtime::Runtime,
    agent: ureq::Agent,
    /// The certificate to trust, when serving over TLS.
    cert: Option<std::path::PathBuf>,
    _dir: tempfile::TempDir,
}

/// Who a request claims to be.
#[derive(Clone, Copy)]
enum Who<'a> {
    Anonymous,
    /// Basic authentication with the test password.
    User(&'a str),
    Bearer(&'a str),
    /// An `Authorization` header as given.
    Header(&'a str),
}

const ADMIN: Who = Who::User("admin");
const ALICE: Who = Who::User("alice");
const BOB: Who = Who::User("bob");

/// An answer, whatever its status.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts the status, and for errors the JSON error body.
    fn expect(self, status: u16) -> Reply {
        assert_eq!(
            self.status,
            status,
            "unexpected status; body: {}",
            String::from_utf8_lossy(&self.body)
        );
        if status >= 400 {
            let e = self.json();
            assert_eq!(e["code"], json!(status), "error body {e}");
            assert!(e["error"].is_string(), "error body {e}");
            assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{e}");
            assert_eq!(self.header("content-type"), Some("application/json"));
        }
        self
    }
}

impl Server {
    fn start() -> Server {
        Server::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Server {
        Server::launch(limits, false)
    }

    fn launch(limits: Limits, tls: bool) -> Server {
        let max_open = EngineConfig::new("").max_open_databases;
        Server::launch_with(limits, tls, max_open, http::HttpSettings::default())
    }

    /// A server whose open-database cache keeps `max_open` databases.
    fn with_open_limit(max_open: usize) -> Server {
        Server::launch_with(
            Limits::default(),
            false,
            max_open,
            http::HttpSettings::default(),
        )
    }

    /// A server whose HTTP connections have `settings`.
    fn with_http(settings: http::HttpSettings) -> Server {
        let max_open = EngineConfig::new("").max_open_databases;
        Server::launch_with(Limits::default(), false, max_open, settings)
    }

    fn launch_with(
        limits: Limits,
        tls: bool,
        max_open: usize,
        settings: http::HttpSettings,
    ) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut cfg = EngineConfig::new(&data);
        cfg.buffer_pool_size = 16 << 20;
        cfg.max_open_databases = max_open;
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
        users.add_user("bob", PW, false).unwrap();
        let service = Arc::new(Service::new(
            Arc::new(engine),
            Arc::new(views),
            Arc::new(users),
            Arc::new(Stats::new()),
            limits,
        ));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = tls.then(|| {
            let settings = TlsSettings {
                self_signed: true,
                ..TlsSettings::default()
            };
            server_tls_config(&settings, &data, service.engine().backend())
                .unwrap()
                .unwrap()
        });
        let cert = tls.as_ref().map(|t| t.cert_path.clone());
        let acceptor = tls.map(|t| tokio_rustls::TlsAcceptor::from(t.config));
        let (stop, life) = watch::channel(Lifecycle::Serving);
        let served = runtime.spawn(http::serve(
            listener,
            acceptor,
            service.clone(),
            settings,
            life,
        ));
        Server {
            addr,
            service,
            stop,
            served: Some(served),
            runtime,
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
            cert,
            _dir: dir,
        }
    }

    fn call(&self, method: &str, path: &str, who: Who, body: Option<&[u8]>) -> Reply {
        let mut req = self
            .agent
            .request(method, &format!("http://{}{path}", self.addr));
        match who {
            Who::Anonymous => {}
            Who::User(name) => req = req.set("Authorization", &basic(name, PW)),
            Who::Bearer(token) => req = req.set("Authorization", &format!("Bearer {token}")),
            Who::Header(h) => req = req.set("Authorization", h),
        }
        let r = match body {
            Some(b) => req.send_bytes(b),
            None => req.call(),
        };
        reply(r)
    }

    fn get(&self, path: &str, who: Who) -> Reply {
        self.call("GET", path, who, None)
    }

    fn send(&self, method: &str, path: &str, who: Who, body: &Value) -> Reply {
        self.call(method, path, who, Some(body.to_string().as_bytes()))
    }

    /// Creates a database as the administrator.
    fn create_db(&self, path: &str) {
        self.call("PUT", &db_url(path), ADMIN, None).expect(201);
    }

    /// Creates a document; returns its UNID.
    fn create_doc(&self, db: &str, who: Who, doc: &Value) -> String {
        let r = self
            .send("POST", &format!("{}/docs", db_url(db)), who, doc)
            .expect(201);
        r.json()["unid"].as_str().unwrap().to_string()
    }

    /// The database's document count and change sequence.
    fn db_state(&self, db: &str) -> (u64, u64) {
        let info = self.get(&db_url(db), ADMIN).expect(200).json();
        (
            info["note_count"].as_u64().unwrap(),
            info["sequence"].as_u64().unwrap(),
        )
    }

    fn statistic(&self, name: &str) -> Option<u64> {
        self.service
            .stats()
            .snapshot(self.service.engine())
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| match s.value {
                protocol::StatValue::Count(n) => Some(n),
                _ => None,
            })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(Lifecycle::Draining);
        if let Some(served) = self.served.take() {
            let done = self
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(20), served).await });
            if !std::thread::panicking() {
                assert!(
                    matches!(done, Ok(Ok(()))),
                    "serve did not return after shutdown"
                );
            }
        }
    }
}

fn reply(r: Result<ureq::Response, ureq::Error>) -> Reply {
    let resp = match r {
        Ok(resp) => resp,
        Err(ureq::Error::Status(_, resp)) => resp,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = resp.header(&n).unwrap_or_default().to_string();
            (n, v)
        })
        .collect();
    let mut body = Vec::new();
    resp.into_reader().read_to_end(&mut body).unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

fn basic(user: &str, password: &str) -> String {
    let creds = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {creds}")
}

/// A database's URL: its path is one percent-encoded segment.
fn db_url(path: &str) -> String {
    format!("/db/{}", path.replace('/', "%2F"))
}

fn doc_url(db: &str, unid: &str) -> String {
    format!("{}/docs/{unid}", db_url(db))
}

/// Deterministic bytes that are not a repeating pattern.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Sends `head` (and `body`) on a raw connection, optionally cutting it
/// off, and returns the status of the answer, if one came.
fn raw_request(addr: SocketAddr, head: &str, body: &[u8], cut_off: bool) -> Option<u16> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    if cut_off {
        return None;
    }
    let text = read_head(&mut s);
    text.split_whitespace().nth(1).and_then(|c| c.parse().ok())
}

/// Reads an answer's status line and headers, lowercased.
fn read_head(s: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&answer).to_lowercase()
}

// ---------------------------------------------------------------- tests

#[test]
fn server_root_names_the_caller() {
    let s = Server::start();
    let r = s.get("/", Who::Anonymous).expect(200).json();
    assert_eq!(r["server"], "folio");
    assert!(r["version"].is_string());
    assert_eq!(r["user"], Value::Null);
    assert_eq!(s.get("/", ALICE).expect(200).json()["user"], "alice");
}

#[test]
fn documents_are_created_read_updated_and_deleted() {
    let s = Server::start();
    let r = s
        .send(
            "PUT",
            &db_url("mail/alice.fdb"),
            ADMIN,
            &json!({"title": "Alice's mail"}),
        )
        .expect(201);
    assert_eq!(r.header("location"), Some("/db/mail%2Falice.fdb"));
    let info = r.json();
    assert_eq!(info["path"], "mail/alice.fdb");
    assert_eq!(info["title"], "Alice's mail");
    assert_eq!(
        s.get(&db_url("mail/alice.fdb"), ADMIN).expect(200).json()["title"],
        "Alice's mail"
    );
    let listed = s.get("/dbs?folder=mail/", ADMIN).expect(200).json();
    assert_eq!(
        listed,
        json!([{"path": "mail/alice.fdb", "title": "Alice's mail"}])
    );
    // The same database again is a conflict.
    s.call("PUT", &db_url("mail/alice.fdb"), ADMIN, None)
        .expect(409);

    let db = "mail/alice.fdb";
    let created = s
        .send(
            "POST",
            &format!("{}/docs", db_url(db)),
            ADMIN,
            &json!({"Subject": "Hello", "Tags": ["a", "b"], "Size": 3}),
        )
        .expect(201);
    let meta = created.json();
    let unid = meta["unid"].as_str().unwrap().to_string();
    assert_eq!(meta["seq"], 1);
    assert!(meta["note_id"].as_u64().is_some() && meta["change"].as_u64().is_some());
    assert_eq!(
        created.header("location").unwrap(),
        format!("/db/mail%2Falice.fdb/docs/{unid}")
    );

    let read = s.get(&doc_url(db, &unid), ADMIN).expect(200);
    assert_eq!(read.header("etag"), Some("\"1\""));
    let doc = read.json();
    assert_eq!(doc["Subject"], "Hello");
    assert_eq!(doc["Tags"], json!(["a", "b"]));
    assert_eq!(doc["Size"], json!(3.0));
    assert_eq!(doc["$unid"], json!(unid));
    assert_eq!(doc["$seq"], 1);

    // An update based on the current sequence, carried in the body.
    let mut edited = doc.clone();
    edited["Subject"] = json!("Hello again");
    let m = s
        .send("PUT", &doc_url(db, &unid), ADMIN, &edited)
        .expect(200)
        .json();
    assert_eq!(m["seq"], 2);
    // The same body again is based on a stale sequence: a conflict.
    s.send("PUT", &doc_url(db, &unid), ADMIN, &edited)
        .expect(409);
    // ... unless forced.
    let m = s
        .send(
            "PUT",
            &format!("{}?force=true", doc_url(db, &unid)),
            ADMIN,
            &edited,
        )
        .expect(200)
        .json();
    assert_eq!(m["seq"], 3);
    // If-Match carries the sequence too.
    let put_if = |seq: &str| {
        let r = s
            .agent
            .put(&format!("http://{}{}", s.addr, doc_url(db, &unid)))
            .set("Authorization", &basic("admin", PW))
            .set("If-Match", seq)
            .send_string(r#"{"Subject":"third"}"#);
        reply(r)
    };
    put_if("\"2\"").expect(409);
    assert_eq!(put_if("\"3\"").expect(200).json()["seq"], 4);
    let doc = s.get(&doc_url(db, &unid), ADMIN).expect(200).json();
    assert_eq!(doc["Subject"], "third");
    assert_eq!(doc["Tags"], json!(["a", "b"]));
    // null removes an item.
    s.send(
        "PUT",
        &doc_url(db, &unid),
        ADMIN,
        &json!({"$seq": 4, "Tags": null}),
    )
    .expect(200);
    assert!(s
        .get(&doc_url(db, &unid), ADMIN)
        .json()
        .get("Tags")
        .is_none());

    // Changes list the documents in change order.
    let other = s.create_doc(db, ADMIN, &json!({"Subject": "Second"}));
    let changes = s
        .get(&format!("{}/docs?since=0&limit=10", db_url(db)), ADMIN)
        .expect(200)
        .json();
    let docs = changes["docs"].as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["$unid"], json!(unid));
    assert_eq!(docs[1]["$unid"], json!(other));
    assert_eq!(changes["more"], false);
    let next = changes["next"].as_u64().unwrap();
    // Paging one change at a time reaches the same documents (a page may
    // be empty: changes the caller does not see, like the ACL, leave holes).
    let (mut since, mut paged) = (0, Vec::new());
    loop {
        let page = s
            .get(&format!("{}/docs?since={since}&limit=1", db_url(db)), ADMIN)
            .expect(200)
            .json();
        let docs = page["docs"].as_array().unwrap();
        assert!(docs.len() <= 1);
        paged.extend(docs.iter().map(|d| d["$unid"].clone()));
        since = page["next"].as_u64().unwrap();
        if page["more"] == false {
            break;
        }
    }
    assert_eq!(paged, [json!(unid), json!(other)]);

    // Delete: a stale sequence conflicts, the current one deletes.
    s.call(
        "DELETE",
        &format!("{}?seq=1", doc_url(db, &unid)),
        ADMIN,
        None,
    )
    .expect(409);
    s.call(
        "DELETE",
        &format!("{}?seq=5", doc_url(db, &unid)),
        ADMIN,
        None,
    )
    .expect(200);
    s.get(&doc_url(db, &unid), ADMIN).expect(404);
    s.call("DELETE", &doc_url(db, &unid), ADMIN, None)
        .expect(404);
    let after = s
        .get(&format!("{}/docs?since={next}", db_url(db)), ADMIN)
        .expect(200)
        .json();
    let stub = &after["docs"][0];
    assert_eq!(stub["$unid"], json!(unid));
    assert_eq!(stub["$deleted"], true);
}

#[test]
fn missing_things_are_404() {
    let s = Server::start();
    s.create_db("a.fdb");
    let missing = "0123456789ABCDEF0123456789ABCDEF";
    s.get(&db_url("nothing.fdb"), ADMIN).expect(404);
    s.get(&doc_url("nothing.fdb", missing), ADMIN).expect(404);
    s.get(&doc_url("a.fdb", missing), ADMIN).expect(404);
    s.send("PUT", &doc_url("a.fdb", missing), ADMIN, &json!({"A": "b"}))
        .expect(404);
    s.get(&format!("{}/views/NoSuchView", db_url("a.fdb")), ADMIN)
        .expect(404);
    let unid = s.create_doc("a.fdb", ADMIN, &json!({"A": "b"}));
    s.get(
        &format!("{}/attachments/none.bin", doc_url("a.fdb", &unid)),
        ADMIN,
    )
    .expect(404);
    s.get("/no/such/route", ADMIN).expect(404);
    s.get("/db", ADMIN).expect(404);
}

#[test]
fn malformed_requests_are_400_and_change_nothing() {
    let s = Server::start();
    let db = "m.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "kept"}));
    let before = s.db_state(db);
    let docs = format!("{}/docs", db_url(db));
    let doc = doc_url(db, &unid);
    let bodies: [&[u8]; 9] = [
        b"{not json",
        b"",
        b"[1,2,3]",
        b"\"text\"",
        br#"{"Flag": true}"#,
        br#"{"Nested": {"a": 1}}"#,
        br#"{"Mixed": [1, "a"]}"#,
        br#"{"When": {"$type": "datetime", "v": "yesterday"}}"#,
        b"\xff\xfe{}",
    ];
    for body in bodies {
        let what = String::from_utf8_lossy(body);
        let r = s.call("POST", &docs, ADMIN, Some(body));
        assert_eq!(r.status, 400, "POST {what}");
        r.expect(400);
        let r = s.call("PUT", &doc, ADMIN, Some(body));
        assert_eq!(r.status, 400, "PUT {what}");
        r.expect(400);
    }
    for bad_seq in [json!("1"), json!(-1), json!(1.5), json!(1u64 << 40)] {
        s.send(
            "PUT",
            &doc,
            ADMIN,
            &json!({"$seq": bad_seq, "Subject": "x"}),
        )
        .expect(400);
    }
    let bad_urls = [
        format!("{}/docs/not-a-unid", db_url(db)),
        format!("{}/docs/{}", db_url(db), "G".repeat(32)),
        format!("{docs}?since=abc"),
        format!("{docs}?since=-1"),
        format!("{docs}?limit=99999999999"),
        format!("{docs}?lmit=3"),
        format!("{docs}?since=1&since=2"),
        format!("{}/views/V?count=many", db_url(db)),
        format!("{}/views/V?start=1&key=a", db_url(db)),
        format!("{}/views/V?prefix=yes&key=a", db_url(db)),
        format!("{}/views/V/find", db_url(db)),
    ];
    for url in &bad_urls {
        let r = s.get(url, ADMIN);
        assert_eq!(r.status, 400, "GET {url}");
        r.expect(400);
    }
    s.send(
        "PUT",
        &format!("{doc}?force=maybe"),
        ADMIN,
        &json!({"A": "b"}),
    )
    .expect(400);
    s.call("DELETE", &format!("{doc}?seq=x"), ADMIN, None)
        .expect(400);
    s.call("DELETE", &format!("{doc}?sequence=1"), ADMIN, None)
        .expect(400);
    let put_if = reply(
        s.agent
            .put(&format!("http://{}{doc}", s.addr))
            .set("Authorization", &basic("admin", PW))
            .set("If-Match", "\"one\"")
            .send_string(r#"{"A":"b"}"#),
    );
    put_if.expect(400);
    let put_both = reply(
        s.agent
            .put(&format!("http://{}{doc}", s.addr))
            .set("Authorization", &basic("admin", PW))
            .set("If-Match", "\"1\"")
            .send_string(r#"{"$seq":2,"A":"b"}"#),
    );
    put_both.expect(400);
    // Wrong method, and a body where a different shape is expected.
    let r = s.call("PATCH", &doc, ADMIN, Some(b"{}")).expect(405);
    assert!(r.header("allow").is_some());
    s.call("POST", &doc, ADMIN, Some(b"{}")).expect(405);
    s.send("PUT", &db_url("x.fdb"), ADMIN, &json!({"title": 3}))
        .expect(400);
    s.send("PUT", &db_url("x.fdb"), ADMIN, &json!({"name": "x"}))
        .expect(400);
    s.call("PUT", &db_url("../x.fdb"), ADMIN, None).expect(400);
    s.send(
        "POST",
        &format!("{}/folders/F/add", db_url(db)),
        ADMIN,
        &json!({"unids": ["nope"]}),
    )
    .expect(400);
    s.send(
        "POST",
        &format!("{}/folders/F/add", db_url(db)),
        ADMIN,
        &json!({"unids": "nope"}),
    )
    .expect(400);
    s.send(
        "PUT",
        &format!("{}/_acl", db_url(db)),
        ADMIN,
        &json!({"entries": [{"name": "x", "level": "emperor"}]}),
    )
    .expect(400);
    // Nothing changed, and the document is as it was.
    assert_eq!(s.db_state(db), before);
    assert!(s.get(&db_url("x.fdb"), ADMIN).status == 404);
    let kept = s.get(&doc, ADMIN).expect(200).json();
    assert_eq!(kept["Subject"], "kept");
    assert_eq!(kept["$seq"], 1);
}

#[test]
fn access_is_checked_for_every_caller() {
    let s = Server::start();
    let db = "acl.fdb";
    s.create_db(db);
    let docs = format!("{}/docs", db_url(db));
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "secret"}));
    let before = s.db_state(db);

    // Anonymous callers are asked to sign in.
    let r = s
        .send("POST", &docs, Who::Anonymous, &json!({"A": "b"}))
        .expect(401);
    assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"folio\""));
    s.get(&doc_url(db, &unid), Who::Anonymous).expect(401);
    s.get("/stats", Who::Anonymous).expect(401);
    // Wrong or malformed credentials.
    s.get("/", Who::Header(&basic("alice", "wrong password")))
        .expect(401);
    s.get("/", Who::Header(&basic("nobody", PW))).expect(401);
    s.get("/", Who::Header("Basic !!!")).expect(401);
    s.get("/", Who::Header("Digest abc")).expect(401);
    s.get("/", Who::Bearer("folio_not_a_token")).expect(401);
    // A user the ACL does not name has no access, and cannot tell the
    // database from a missing one.
    s.get(&doc_url(db, &unid), BOB).expect(404);
    s.send("POST", &docs, BOB, &json!({"A": "b"})).expect(404);
    s.get(&format!("{}/_acl", db_url(db)), BOB).expect(404);
    s.get(&format!("{}/_access", db_url(db)), BOB).expect(404);
    assert_eq!(s.db_state(db), before);

    // The administrator gives alice Editor access and bob Reader access,
    // and lets anonymous callers read.
    let acl = json!({
        "default": "noaccess",
        "anonymous": "reader",
        "roles": ["Sales"],
        "entries": [
            {"name": "admin", "level": "manager"},
            {"name": "alice", "level": "editor", "roles": ["Sales"]},
            {"name": "bob", "level": "reader"},
        ],
    });
    let stored = s
        .send("PUT", &format!("{}/_acl", db_url(db)), ADMIN, &acl)
        .expect(200)
        .json();
    assert_eq!(stored["anonymous"], "reader");
    let with_acl = s.db_state(db);
    assert_eq!(
        s.get(&format!("{}/_acl", db_url(db)), ADMIN)
            .expect(200)
            .json(),
        stored
    );
    // A list without a Manager is refused.
    s.send(
        "PUT",
        &format!("{}/_acl", db_url(db)),
        ADMIN,
        &json!({"entries": [{"name": "alice", "level": "editor"}]}),
    )
    .expect(400);
    let access = s
        .get(&format!("{}/_access", db_url(db)), ALICE)
        .expect(200)
        .json();
    assert_eq!(
        access,
        json!({"user": "alice", "level": "editor", "roles": ["Sales"]})
    );

    assert_eq!(
        s.get(&doc_url(db, &unid), BOB).expect(200).json()["Subject"],
        "secret"
    );
    s.get(&doc_url(db, &unid), Who::Anonymous).expect(200);
    s.send("POST", &docs, BOB, &json!({"A": "b"})).expect(403);
    s.send("POST", &docs, Who::Anonymous, &json!({"A": "b"}))
        .expect(401);
    s.send("PUT", &doc_url(db, &unid), BOB, &json!({"A": "b"}))
        .expect(403);
    s.call("DELETE", &doc_url(db, &unid), BOB, None).expect(403);
    s.send("PUT", &format!("{}/_acl", db_url(db)), ALICE, &acl)
        .expect(403);
    assert_eq!(s.db_state(db), with_acl);

    // $Readers hides a document from everyone it does not name.
    let private = s.create_doc(
        db,
        ALICE,
        &json!({"Subject": "for Sales", "$Readers": ["[Sales]"]}),
    );
    s.get(&doc_url(db, &private), ALICE).expect(200);
    s.get(&doc_url(db, &private), BOB).expect(404);
    s.get(&doc_url(db, &private), Who::Anonymous).expect(404);
    let seen: Vec<Value> = s.get(&format!("{docs}?since=0"), BOB).expect(200).json()["docs"]
        .as_array()
        .unwrap()
        .clone();
    assert!(seen.iter().all(|d| d["$unid"] != json!(private)));
    // Databases bob cannot open are not listed for him.
    s.create_db("hidden.fdb");
    let listed = s.get("/dbs", BOB).expect(200).json();
    assert_eq!(listed, json!([{"path": "acl.fdb", "title": ""}]));
}

/// Listing reads the catalog: thirty databases behind a cache of four are
/// all listed for the administrator, a user sees exactly those whose ACL
/// admits them, and no database is opened to answer (design.md I20).
#[test]
fn listing_many_databases_opens_none_of_them() {
    let s = Server::with_open_limit(4);
    let bob_may = json!({"entries": [{"name": "admin", "level": "manager"},
                                     {"name": "Bob", "level": "reader"}]});
    for i in 0..30 {
        let db = format!("many/db{i:02}.fdb");
        s.create_db(&db);
        if i % 5 == 0 {
            s.send("PUT", &format!("{}/_acl", db_url(&db)), ADMIN, &bob_may)
                .expect(200);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.statistic("db.open").unwrap() > 4 {
        assert!(Instant::now() < deadline, "the cache stayed over its limit");
        std::thread::sleep(Duration::from_millis(20));
    }
    let opened = s.statistic("db.opened").unwrap();
    let all = s.get("/dbs", ADMIN).expect(200).json();
    assert_eq!(all.as_array().unwrap().len(), 30);
    assert_eq!(all[7], json!({"path": "many/db07.fdb", "title": ""}));
    let bob: Vec<Value> = (0..30)
        .step_by(5)
        .map(|i| json!({"path": format!("many/db{i:02}.fdb"), "title": ""}))
        .collect();
    assert_eq!(s.get("/dbs", BOB).expect(200).json(), json!(bob));
    assert_eq!(
        s.get("/dbs?folder=many/db1", BOB).expect(200).json(),
        json!([bob[2], bob[3]])
    );
    assert_eq!(s.get("/dbs", ALICE).expect(200).json(), json!([]));
    assert_eq!(
        s.statistic("db.opened"),
        Some(opened),
        "listing opened no database"
    );
    assert_eq!(s.statistic("db.open_limit"), Some(4));
}

#[test]
fn oversized_documents_and_attachments_are_413() {
    let limits = Limits {
        max_document_bytes: 64 << 10,
        max_attachment_bytes: 1 << 20,
        ..Limits::default()
    };
    let s = Server::with_limits(limits);
    let db = "big.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "small"}));
    let before = s.db_state(db);
    let big = json!({"Body": "x".repeat(100 << 10)});
    s.send("POST", &format!("{}/docs", db_url(db)), ADMIN, &big)
        .expect(413);
    s.send("PUT", &doc_url(db, &unid), ADMIN, &big).expect(413);
    // A body without a length is cut off at the limit just the same.
    let chunked = reply(
        s.agent
            .post(&format!("http://{}{}/docs", s.addr, db_url(db)))
            .set("Authorization", &basic("admin", PW))
            .send(std::io::Cursor::new(big.to_string().into_bytes())),
    );
    chunked.expect(413);
    assert_eq!(s.db_state(db), before);

    // An attachment declared too large is refused before its bytes are
    // sent: the answer comes while the client still holds them back.
    let att = format!("{}/attachments/big.bin", doc_url(db, &unid));
    let head = format!(
        "PUT {att} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        basic("admin", PW),
        (1 << 20) + 1
    );
    assert_eq!(raw_request(s.addr, &head, b"", false), Some(413));
    s.get(&att, ADMIN).expect(404);
    // Exactly the limit is fine.
    let ok = noise(1 << 20, 2);
    s.call("PUT", &att, ADMIN, Some(&ok)).expect(201);
    assert_eq!(s.get(&att, ADMIN).expect(200).body, ok);
}

/// A body is parsed once, as it comes in, and the parse is what the
/// write uses: a document of exactly the limit is stored as sent, one
/// byte more is 413, and malformed JSON is a 400 naming the problem and
/// where, with nothing created.
#[test]
fn a_body_at_the_limit_is_stored_and_malformed_json_creates_nothing() {
    let max = 64 << 10;
    let s = Server::with_limits(Limits {
        max_document_bytes: max,
        ..Limits::default()
    });
    let db = "edge.fdb";
    s.create_db(db);
    let docs = format!("{}/docs", db_url(db));
    // `{"Body":"xx…x"}` of exactly `len` bytes.
    let body_of = |len: usize| format!(r#"{{"Body":"{}"}}"#, "x".repeat(len - 11));
    let at_limit = body_of(max);
    assert_eq!(at_limit.len(), max);
    let created = s
        .call("POST", &docs, ADMIN, Some(at_limit.as_bytes()))
        .expect(201)
        .json();
    let unid = created["unid"].as_str().unwrap().to_string();
    let stored = s.get(&doc_url(db, &unid), ADMIN).expect(200).json();
    assert_eq!(stored["Body"].as_str().map(str::len), Some(max - 11));
    let edit = body_of(max).replacen('x', "y", 1);
    s.call("PUT", &doc_url(db, &unid), ADMIN, Some(edit.as_bytes()))
        .expect(200);
    let stored = s.get(&doc_url(db, &unid), ADMIN).expect(200).json();
    assert!(stored["Body"].as_str().unwrap().starts_with('y'));
    s.call("POST", &docs, ADMIN, Some(body_of(max + 1).as_bytes()))
        .expect(413);

    let before = s.db_state(db);
    let malformed = [
        // Cut short at the limit: the parse fails at its very end.
        at_limit[..max - 1].to_string(),
        format!(r#"{{"Body":"{}",}}"#, "x".repeat(max - 20)),
        "{\"Body\": tru}".to_string(),
    ];
    for body in &malformed {
        let r = s
            .call("POST", &docs, ADMIN, Some(body.as_bytes()))
            .expect(400)
            .json();
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("malformed JSON document:") && reason.contains("line 1 column"),
            "{reason}"
        );
        s.call("PUT", &doc_url(db, &unid), ADMIN, Some(body.as_bytes()))
            .expect(400);
    }
    let view = r#"{"name":"V","kind":"view","selection":"SELECT @All","columns":[]"#;
    let r = s
        .call(
            "POST",
            &format!("{}/views", db_url(db)),
            ADMIN,
            Some(view.as_bytes()),
        )
        .expect(400)
        .json();
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .starts_with("bad view definition:"),
        "{r}"
    );
    assert_eq!(
        s.db_state(db),
        before,
        "a refused body changed the database"
    );
    s.get(&format!("{}/views/V", db_url(db)), ADMIN).expect(404);
}

/// A body that comes too slowly is answered 408 Request Timeout, not
/// 400 (the request may have been fine; the client or its link was
/// slow), for a document and for an attachment alike, and nothing of it
/// is stored.
#[test]
fn a_body_that_comes_too_slowly_is_408() {
    let s = Server::with_http(http::HttpSettings {
        body_timeout: Duration::from_millis(300),
        body_min_rate: 0,
        ..http::HttpSettings::default()
    });
    let db = "slow.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "kept"}));
    let before = s.db_state(db);
    let att = format!("{}/attachments/slow.bin", doc_url(db, &unid));
    for (method, path, part) in [
        (
            "POST",
            format!("{}/docs", db_url(db)),
            &b"{\"Subject\":"[..],
        ),
        ("PUT", att.clone(), &b"half of the bytes"[..]),
    ] {
        let mut conn = TcpStream::connect(s.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
             Content-Length: 1000\r\n\r\n",
            basic("admin", PW)
        );
        conn.write_all(head.as_bytes()).unwrap();
        conn.write_all(part).unwrap();
        // The rest never comes; the answer does, and the connection ends.
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{method}: {answer}");
        let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
        let e: Value = serde_json::from_str(body).unwrap();
        assert_eq!(e["code"], 408, "{e}");
        assert_eq!(e["error"], "request_timeout", "{e}");
        assert!(e["reason"].as_str().unwrap().contains("too slowly"), "{e}");
    }
    assert_eq!(s.db_state(db), before);
    s.get(&att, ADMIN).expect(404);
}

#[test]
fn undeclared_oversized_attachment_is_413() {
    let limits = Limits {
        max_attachment_bytes: 1 << 20,
        ..Limits::default()
    };
    let s = Server::with_limits(limits);
    let db = "big.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "small"}));
    let att = format!("{}/attachments/big.bin", doc_url(db, &unid));
    // Chunked, so the size is only known once the limit is passed.
    let r = reply(
        s.agent
            .put(&format!("http://{}{att}", s.addr))
            .set("Authorization", &basic("admin", PW))
            .send(std::io::Cursor::new(noise((1 << 20) + 10, 1))),
    );
    r.expect(413);
    s.get(&att, ADMIN).expect(404);
}

#[test]
fn attachments_round_trip_byte_exact() {
    let s = Server::start();
    let db = "files.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "report"}));
    let data = noise(5 << 20, 42);
    let att = format!("{}/attachments/report%20v1.pdf", doc_url(db, &unid));

    // With a Content-Length.
    let r = reply(
        s.agent
            .put(&format!("http://{}{att}", s.addr))
            .set("Authorization", &basic("admin", PW))
            .set("Content-Type", "application/pdf")
            .send_bytes(&data),
    )
    .expect(201);
    assert_eq!(r.json()["size"], json!(data.len()));
    let got = s.get(&att, ADMIN).expect(200);
    assert_eq!(got.header("content-type"), Some("application/pdf"));
    assert_eq!(got.header("content-length"), Some("5242880"));
    assert!(got.body == data, "the attachment came back changed");

    // Chunked, without a length, replacing it.
    let data2 = noise((5 << 20) + 123, 7);
    reply(
        s.agent
            .put(&format!("http://{}{att}", s.addr))
            .set("Authorization", &basic("admin", PW))
            .send(std::io::Cursor::new(data2.clone())),
    )
    .expect(201);
    let got = s.get(&att, ADMIN).expect(200);
    assert_eq!(got.header("content-type"), Some("application/octet-stream"));
    assert!(
        got.body == data2,
        "the replaced attachment came back changed"
    );

    // Readers may fetch but not store; others learn nothing.
    s.get(&att, BOB).expect(404);
    s.call("PUT", &att, BOB, Some(b"x")).expect(404);

    // A client that goes away mid-upload leaves nothing behind.
    let cut = format!("{}/attachments/cut.bin", doc_url(db, &unid));
    let uploads = s.statistic("op.put_attachment.count").unwrap_or(0);
    let head = format!(
        "PUT {cut} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
        basic("admin", PW),
        1 << 20
    );
    raw_request(s.addr, &head, &noise(100 << 10, 3), true);
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.statistic("op.put_attachment.count").unwrap_or(0) == uploads {
        assert!(Instant::now() < deadline, "the cut-off upload never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.get(&cut, ADMIN).expect(404);
}

/// A database of `n` documents with subjects s000, s001, ... and a view
/// sorted by subject.
fn view_fixture(s: &Server, db: &str, n: usize) -> Vec<String> {
    s.create_db(db);
    let unids = (0..n)
        .map(|i| {
            s.create_doc(
                db,
                ADMIN,
                &json!({"Form": "Memo", "Subject": format!("s{i:03}"), "N": i}),
            )
        })
        .collect();
    add_view(
        s,
        db,
        "BySubject",
        "SELECT Form = \"Memo\"",
        &["Subject=Subject:asc", "N=N"],
    );
    unids
}

/// Creates view `name` of `db` directly through the service.
fn add_view(s: &Server, db: &str, name: &str, selection: &str, columns: &[&str]) {
    let database = s.service.engine().open_database(db).unwrap();
    let columns = columns
        .iter()
        .map(|c| ColumnDef::parse(c).unwrap())
        .collect();
    let def = ViewDef::view(name, selection, columns);
    s.service.views().create(&database, def).unwrap();
}

#[test]
fn views_page_and_find() {
    let s = Server::start();
    let db = "views.fdb";
    let unids = view_fixture(&s, db, 100);
    let view = format!("{}/views/BySubject", db_url(db));
    let page = s
        .get(&format!("{view}?start=0&count=40&total=true"), ADMIN)
        .expect(200)
        .json();
    assert_eq!(page["titles"], json!(["Subject", "N"]));
    assert_eq!(page["total"], 100);
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[0]["position"], 0);
    assert_eq!(rows[0]["unid"], json!(unids[0]));
    assert_eq!(rows[0]["columns"], json!({"Subject": "s000", "N": 0.0}));
    assert_eq!(rows[39]["columns"]["Subject"], "s039");

    let page = s
        .get(&format!("{view}?start=80&count=40"), ADMIN)
        .expect(200)
        .json();
    assert!(page.get("total").is_none());
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 20);
    assert_eq!(rows[0]["columns"]["Subject"], "s080");

    let page = s
        .get(&format!("{view}?key=s05&prefix=true&count=3"), ADMIN)
        .expect(200)
        .json();
    let subjects: Vec<&str> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["columns"]["Subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["s050", "s051", "s052"]);
    let page = s
        .get(&format!("{view}?start=99&count=2&backward=true"), ADMIN)
        .expect(200)
        .json();
    assert_eq!(page["rows"][0]["columns"]["Subject"], "s099");
    assert_eq!(page["rows"][1]["columns"]["Subject"], "s098");

    let found = s
        .get(&format!("{view}/find?key=s042"), ADMIN)
        .expect(200)
        .json();
    assert_eq!(found, json!({"position": 42, "count": 1}));
    let found = s
        .get(&format!("{view}/find?key=s04&prefix=true"), ADMIN)
        .expect(200)
        .json();
    assert_eq!(found, json!({"position": 40, "count": 10}));
    s.get(&format!("{view}/find?key=zzz"), ADMIN).expect(404);

    // New documents show on the next read (the view refreshes when opened)
    // and on an explicit update.
    s.create_doc(
        db,
        ADMIN,
        &json!({"Form": "Memo", "Subject": "s100", "N": 100}),
    );
    let up = s
        .call("POST", &format!("{view}/update"), ADMIN, None)
        .expect(200)
        .json();
    assert!(up["seq"].as_u64().is_some() && up["changed"].as_u64().is_some());
    let page = s
        .get(&format!("{view}?start=100&total=true"), ADMIN)
        .expect(200)
        .json();
    assert_eq!(page["total"], 101);
    assert_eq!(page["rows"][0]["columns"]["Subject"], "s100");

    // Views and folders can be created over HTTP too (Designer access).
    let folder = json!({"name": "Inbox", "kind": "folder", "columns": [
        {"title": "Subject", "formula": "Subject", "sort": "asc"}]});
    s.send("POST", &format!("{}/views", db_url(db)), BOB, &folder)
        .expect(404);
    let r = s
        .send("POST", &format!("{}/views", db_url(db)), ADMIN, &folder)
        .expect(201);
    assert_eq!(r.header("location"), Some("/db/views.fdb/folders/Inbox"));
    let add = format!("{}/folders/Inbox/add", db_url(db));
    s.send("POST", &add, ADMIN, &json!({"unids": [unids[7], unids[3]]}))
        .expect(200);
    let inbox = s
        .get(&format!("{}/folders/Inbox?total=true", db_url(db)), ADMIN)
        .expect(200)
        .json();
    assert_eq!(inbox["total"], 2);
    assert_eq!(inbox["rows"][0]["columns"]["Subject"], "s003");
    s.send(
        "POST",
        &format!("{}/folders/Inbox/remove", db_url(db)),
        ADMIN,
        &json!({"unids": [unids[3]]}),
    )
    .expect(200);
    let inbox = s
        .get(&format!("{}/folders/Inbox?total=true", db_url(db)), ADMIN)
        .expect(200)
        .json();
    assert_eq!(inbox["total"], 1);
    assert_eq!(inbox["rows"][0]["unid"], json!(unids[7]));
}

#[test]
fn search_streams_ndjson() {
    let s = Server::start();
    let db = "search.fdb";
    view_fixture(&s, db, 30);
    let url = format!("{}/search", db_url(db));
    let r = s
        .send(
            "POST",
            &url,
            ADMIN,
            &json!({"formula": "@Begins(Subject; \"s01\")"}),
        )
        .expect(200);
    assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
    let text = String::from_utf8(r.body).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 11);
    assert_eq!(lines[10], json!({"found": 10}));
    let mut subjects: Vec<&str> = lines[..10]
        .iter()
        .map(|d| d["Subject"].as_str().unwrap())
        .collect();
    subjects.sort();
    assert_eq!(subjects[0], "s010");
    assert_eq!(subjects[9], "s019");
    // Nothing modified after a date in the future.
    let r = s
        .send(
            "POST",
            &url,
            ADMIN,
            &json!({"formula": "Form = \"Memo\"", "since": "2999-01-01T00:00:00Z"}),
        )
        .expect(200);
    assert_eq!(String::from_utf8(r.body).unwrap(), "{\"found\":0}\n");

    s.send("POST", &url, ADMIN, &json!({"formula": "Subject = "}))
        .expect(400);
    s.send("POST", &url, ADMIN, &json!({"formula": 3}))
        .expect(400);
    s.send("POST", &url, ADMIN, &json!({})).expect(400);
    s.send(
        "POST",
        &url,
        ADMIN,
        &json!({"formula": "1", "since": "last week"}),
    )
    .expect(400);
    s.send("POST", &url, BOB, &json!({"formula": "1"}))
        .expect(404);
    s.send(
        "POST",
        &format!("{}/search", db_url("none.fdb")),
        ADMIN,
        &json!({"formula": "1"}),
    )
    .expect(404);
}

#[test]
fn sessions_issue_bearer_tokens() {
    let s = Server::start();
    let r = s
        .send(
            "POST",
            "/_session",
            Who::Anonymous,
            &json!({"user": "alice", "password": PW}),
        )
        .expect(200)
        .json();
    assert_eq!(r["user"], "alice");
    let token = r["token"].as_str().unwrap().to_string();
    assert_eq!(
        s.get("/", Who::Bearer(&token)).expect(200).json()["user"],
        "alice"
    );
    // The token stands in for the password in Basic authentication too.
    assert_eq!(
        s.get("/", Who::Header(&basic("alice", &token)))
            .expect(200)
            .json()["user"],
        "alice"
    );
    s.get("/", Who::Bearer(&format!("{token}x"))).expect(401);
    s.send(
        "POST",
        "/_session",
        Who::Anonymous,
        &json!({"user": "alice", "password": "wrong password"}),
    )
    .expect(401);
    s.call("POST", "/_session", Who::Anonymous, Some(b"user=alice"))
        .expect(400);
    s.send(
        "POST",
        "/_session",
        Who::Anonymous,
        &json!({"user": "alice"}),
    )
    .expect(400);
    // GET /_session says who a request signs in as (the console's reload).
    s.get("/_session", Who::Anonymous).expect(401);
    assert_eq!(
        s.get("/_session", Who::Bearer(&token)).expect(200).json()["user"],
        "alice"
    );
    s.send("PUT", "/_session", Who::Anonymous, &json!({}))
        .expect(405);
}

#[test]
fn statistics_count_requests() {
    let s = Server::start();
    s.create_db("s.fdb");
    s.create_doc("s.fdb", ADMIN, &json!({"A": "b"}));
    s.get("/nowhere", ADMIN).expect(404);
    let stats = s.get("/stats", ALICE).expect(200).json();
    assert!(stats["server.http_requests"].as_u64().unwrap() >= 4);
    assert_eq!(stats["op.create.count"], 1);
    assert!(stats["server.uptime_s"].is_number());
}

#[test]
fn tls_listener_serves_https_and_handshakes_off_the_accept_path() {
    let s = Server::launch(Limits::default(), true);
    let pem = std::fs::read(s.cert.as_ref().unwrap()).unwrap();
    let trusted = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for c in trusted {
        roots.add(c).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    // A client that connects and says nothing holds up no one else.
    let _silent = TcpStream::connect(s.addr).unwrap();
    let addr = s.addr;
    let answer = s.runtime.block_on(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        let request = format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            basic("alice", PW)
        );
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), tls.read_to_end(&mut answer))
            .await
            .expect("the HTTPS answer never came")
            .unwrap();
        String::from_utf8(answer).unwrap()
    });
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"server\":\"folio\""), "{answer}");
    assert!(answer.contains("\"user\":\"alice\""), "{answer}");
    // Plain HTTP on the TLS port gets no answer.
    assert_eq!(
        raw_request(s.addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"", false),
        None
    );
}

#[test]
fn shutdown_lets_a_download_in_flight_finish() {
    let mut s = Server::start();
    let db = "dl.fdb";
    s.create_db(db);
    let unid = s.create_doc(db, ADMIN, &json!({"Subject": "big"}));
    let att = format!("{}/attachments/big.bin", doc_url(db, &unid));
    let data = noise(8 << 20, 9);
    s.call("PUT", &att, ADMIN, Some(&data)).expect(201);

    let resp = s
        .agent
        .get(&format!("http://{}{att}", s.addr))
        .set("Authorization", &basic("admin", PW))
        .call()
        .unwrap();
    let mut body = resp.into_reader();
    let mut got = vec![0u8; 64 << 10];
    body.read_exact(&mut got).unwrap();
    s.stop.send(Lifecycle::Draining).unwrap();
    // New connections are refused once the listener has stopped.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(s.addr).is_ok() {
        assert!(Instant::now() < deadline, "the listener kept accepting");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The download in flight still completes, byte for byte.
    body.read_to_end(&mut got).unwrap();
    assert!(got == data, "the download was cut short or changed");
    let served = s.served.take().unwrap();
    let done = s
        .runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), served).await });
    assert!(matches!(done, Ok(Ok(()))), "serve did not return");
}

#[test]
fn categorized_views_show_category_rows() {
    let s = Server::start();
    let db = "cat.fdb";
    view_fixture(&s, db, 5);
    s.create_doc(db, ADMIN, &json!({"Form": "Note", "Subject": "n0"}));
    add_view(
        &s,
        db,
        "ByForm",
        "SELECT @All",
        &["Form=Form:cat", "Subject=Subject:asc"],
    );
    let page = s
        .get(
            &format!("{}/views/ByForm?categories=true&count=10", db_url(db)),
            ADMIN,
        )
        .expect(200)
        .json();
    assert_eq!(page["categorized"], true);
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows[0], json!({"category": "Memo", "count": 5}));
    assert_eq!(rows[1]["columns"]["Subject"], "s000");
    assert!(rows.contains(&json!({"category": "Note", "count": 1})));
}

/// A view row as a caller can compare it across databases: without the
/// UNID and note id, which differ between them.
fn comparable(rows: &Value) -> Vec<Value> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(m) = r.as_object_mut() {
                m.remove("unid");
                m.remove("note_id");
            }
            r
        })
        .collect()
}

/// What `who` sees of `db`'s view `name` through every read the API has:
/// the whole view with its total, a page from every position both ways,
/// pages and finds from keys. Category rows are included where the view
/// has them.
fn everything_seen(s: &Server, db: &str, name: &str, who: Who, keys: &[&str]) -> Vec<Value> {
    let view = format!("{}/views/{name}", db_url(db));
    let all = s
        .get(
            &format!("{view}?count=10000&total=true&categories=true"),
            who,
        )
        .expect(200)
        .json();
    let total = all["total"].as_u64().unwrap();
    let mut seen = vec![json!(total), json!(comparable(&all["rows"]))];
    for p in 0..=total {
        for backward in [false, true] {
            let page = s
                .get(
                    &format!("{view}?start={p}&count=2&backward={backward}&categories=true"),
                    who,
                )
                .expect(200)
                .json();
            seen.push(json!([p, backward, comparable(&page["rows"])]));
        }
    }
    for key in keys {
        for prefix in [false, true] {
            let found = s.get(&format!("{view}/find?key={key}&prefix={prefix}"), who);
            seen.push(json!([key, prefix, found.status, found.json()]));
            let page = s
                .get(&format!("{view}?key={key}&prefix={prefix}&count=3"), who)
                .expect(200)
                .json();
            seen.push(json!([key, prefix, comparable(&page["rows"])]));
        }
    }
    seen
}

/// Documents bob may not read leave no trace in views: not in the total,
/// not in category rows or their counts, not as gaps in positions or
/// finds. What he sees is exactly what he would see of a database
/// without them.
#[test]
fn views_show_readers_totals_categories_and_positions_without_hidden_documents() {
    let s = Server::start();
    let acl = json!({"default": "noaccess", "roles": ["Sales"], "entries": [
        {"name": "admin", "level": "manager"},
        {"name": "bob", "level": "reader", "roles": ["Sales"]},
        {"name": "alice", "level": "editor"},
    ]});
    // (category, subject, $Readers): "Secret" holds only a document bob
    // may not read; other hidden ones sort between readable ones.
    let docs: [(&str, &str, Option<Value>); 9] = [
        ("Plans", "alpha", None),
        ("Plans", "beta", Some(json!(["alice"]))),
        ("Plans", "gamma", Some(json!(["[Sales]"]))),
        ("Secret", "merger", Some(json!(["alice"]))),
        ("Plans", "delta", None),
        ("Zoo", "beta", Some(json!(["alice", "carol"]))),
        ("Zoo", "epsilon", Some(json!(["bob"]))),
        ("Zoo", "zeta", None),
        ("Aardvark", "beta2", Some(json!(["*"]))),
    ];
    for (db, visible_only) in [("full.fdb", false), ("model.fdb", true)] {
        s.create_db(db);
        s.send("PUT", &format!("{}/_acl", db_url(db)), ADMIN, &acl)
            .expect(200);
        for (cat, subject, readers) in &docs {
            let hidden = readers.as_ref().is_some_and(|r| {
                !r.to_string().contains("bob")
                    && !r.to_string().contains("Sales")
                    && !r.to_string().contains('*')
            });
            if visible_only && hidden {
                continue;
            }
            let mut d = json!({"Cat": cat, "Subject": subject});
            if let Some(r) = readers {
                d["$Readers"] = r.clone();
            }
            s.create_doc(db, ADMIN, &d);
        }
        add_view(
            &s,
            db,
            "ByCat",
            "SELECT @All",
            &["Cat=Cat:cat", "Subject=Subject:asc"],
        );
        add_view(
            &s,
            db,
            "BySubject",
            "SELECT @All",
            &["Subject=Subject:asc", "Cat=Cat"],
        );
    }
    let keys = ["beta", "be", "merger", "m", "zeta", "Secret", "Zoo"];
    for view in ["ByCat", "BySubject"] {
        let full = everything_seen(&s, "full.fdb", view, BOB, &keys);
        let model = everything_seen(&s, "model.fdb", view, BOB, &keys);
        for (got, want) in full.iter().zip(&model) {
            assert_eq!(got, want, "bob in {view}");
        }
        assert_eq!(full.len(), model.len());
    }
    // The category whose only document is hidden is not there at all.
    let page = s
        .get(
            &format!(
                "{}/views/ByCat?categories=true&count=100&total=true",
                db_url("full.fdb")
            ),
            BOB,
        )
        .expect(200)
        .json();
    assert!(!page.to_string().contains("Secret"), "{page}");
    assert_eq!(page["total"], 6);
    // The administrator still sees everything.
    let page = s
        .get(
            &format!(
                "{}/views/ByCat?categories=true&count=100&total=true",
                db_url("full.fdb")
            ),
            ADMIN,
        )
        .expect(200)
        .json();
    assert_eq!(page["total"], 9);
    assert!(page["rows"]
        .as_array()
        .unwrap()
        .contains(&json!({"category": "Secret", "count": 1})));
}

/// The index shows documents as of its last update: a document that
/// gained `$Readers` since is left out of rows until then, and counted
/// no more after it.
#[test]
fn a_document_restricted_since_the_last_update_is_not_shown() {
    let s = Server::start();
    let db = "stale.fdb";
    s.create_db(db);
    let acl = json!({"default": "reader", "entries": [{"name": "admin", "level": "manager"}]});
    s.send("PUT", &format!("{}/_acl", db_url(db)), ADMIN, &acl)
        .expect(200);
    let a = s.create_doc(db, ADMIN, &json!({"Subject": "a"}));
    s.create_doc(db, ADMIN, &json!({"Subject": "b"}));
    let database = s.service.engine().open_database(db).unwrap();
    let mut def = ViewDef::view(
        "Manual",
        "SELECT @All",
        vec![ColumnDef::parse("S=Subject:asc").unwrap()],
    );
    def.refresh = views::Refresh::Manual;
    s.service.views().create(&database, def).unwrap();
    let view = format!("{}/views/Manual", db_url(db));
    s.call("POST", &format!("{view}/update"), ADMIN, None)
        .expect(200);
    s.send(
        "PUT",
        &doc_url(db, &a),
        ADMIN,
        &json!({"$Readers": ["alice"]}),
    )
    .expect(200);
    let subjects = |who| {
        let page = s.get(&format!("{view}?total=true"), who).expect(200).json();
        let rows: Vec<Value> = page["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["columns"]["S"].clone())
            .collect();
        (rows, page["total"].clone())
    };
    assert_eq!(subjects(BOB).0, vec![json!("b")]);
    s.call("POST", &format!("{view}/update"), ADMIN, None)
        .expect(200);
    assert_eq!(subjects(BOB), (vec![json!("b")], json!(1)));
    assert_eq!(subjects(ADMIN), (vec![json!("a"), json!("b")], json!(2)));
    let found = s.get(&format!("{view}/find?key=b"), BOB).expect(200).json();
    assert_eq!(found, json!({"position": 0, "count": 1}));
}

/// A caller subject to `$Readers` reads a page of a view with nothing
/// restricted at about the administrator's cost: no note is read per row,
/// and nothing is scanned.
#[test]
fn an_unrestricted_view_costs_a_reader_what_it_costs_the_administrator() {
    let s = Server::start();
    let db = "big.fdb";
    s.create_db(db);
    let acl = json!({"default": "reader", "entries": [{"name": "admin", "level": "manager"}]});
    s.send("PUT", &format!("{}/_acl", db_url(db)), ADMIN, &acl)
        .expect(200);
    let database = s.service.engine().open_database(db).unwrap();
    for i in 0..3000 {
        let items = nsf::items_from_json(&json!({"Subject": format!("s{i:04}")})).unwrap();
        let items = items
            .into_iter()
            .map(|u| match u {
                nsf::ItemUpdate::Set(item) => item,
                other => panic!("{other:?}"),
            })
            .collect();
        database.create(items).unwrap();
    }
    add_view(&s, db, "BySubject", "SELECT @All", &["Subject=Subject:asc"]);
    let coll = s.service.views().open(&database, "BySubject").unwrap();
    assert_eq!(coll.restricted().unwrap(), 0);
    drop(coll);
    let url = format!(
        "{}/views/BySubject?start=1500&count=40&total=true",
        db_url(db)
    );
    let page_reads = |who| {
        s.get(&url, who).expect(200); // the view is up to date, the ACL cached
        let before = s.service.engine().pool_stats();
        let page = s.get(&url, who).expect(200).json();
        let after = s.service.engine().pool_stats();
        assert_eq!(page["total"], 3000);
        assert_eq!(page["rows"][0]["position"], 1500);
        (after.hits + after.misses) - (before.hits + before.misses)
    };
    let (admin, bob) = (page_reads(ADMIN), page_reads(BOB));
    // Bob's three reads of the collection (open, page, total) each read
    // one more page: the root of the restricted tree, which is empty.
    assert!(
        bob <= admin + 3,
        "a page of 40 rows: {bob} page reads for bob, {admin} for the administrator"
    );
}

/// An answer sent before the request body was read (here a wrong
/// method) says `Connection: close`: the server cannot reuse that
/// connection, and a pooling client that was not told would send its next
/// request onto a closing socket. An answer to a body that was read keeps
/// the connection.
#[test]
fn an_answer_that_leaves_the_body_unread_closes_the_connection() {
    let s = Server::start();
    s.create_db("c.fdb");
    let unid = s.create_doc("c.fdb", ADMIN, &json!({"Subject": "x"}));
    let auth = basic("admin", PW);
    let path = format!("/db/c.fdb/docs/{unid}");
    let body = br#"{"Subject": "y"}"#;
    let ask = |method: &str| {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        c.write_all(head.as_bytes()).unwrap();
        c.write_all(body).unwrap();
        read_head(&mut c)
    };
    let refused = ask("PATCH");
    assert!(refused.starts_with("http/1.1 405"), "{refused}");
    assert!(refused.contains("\r\nconnection: close\r\n"), "{refused}");
    let kept = ask("PUT");
    assert!(kept.starts_with("http/1.1 200"), "{kept}");
    assert!(!kept.contains("connection: close"), "{kept}");
}
