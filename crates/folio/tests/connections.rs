//! End to end: no idle, silent or slow client can hold `folio serve` —
//! not its connections, not its descriptors, not its shutdown.
//!
//! Each test starts the real binary with a `folio.toml` of its own and
//! misbehaves on raw sockets next to well-behaved clients (the client
//! library, ureq). Timings are asserted only as generous bounds: that
//! something happened at all, and not before the server's own timeout.

mod common;

use common::{Server, ADMIN_PW};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A data directory with an administrator and the given settings.
fn data_dir(settings: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), tmp.path()).unwrap();
    store.add_user("admin", ADMIN_PW, true).unwrap();
    std::fs::write(tmp.path().join("folio.toml"), settings).unwrap();
    tmp
}

/// Raises this process's soft descriptor limit to the hard one; returns it.
fn raise_descriptor_limit() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl), 0);
        rl.rlim_cur = rl.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rl), 0);
    }
    rl.rlim_cur
}

/// Descriptors the process `pid` has open.
fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

fn basic_auth() -> String {
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("admin:{ADMIN_PW}"));
    format!("Basic {token}")
}

/// A connection that sent the first half of a request header.
fn half_header(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"POST /db/x.fdb/docs HTTP/1.1\r\nHost: folio\r\nContent-Le")
        .unwrap();
    s
}

/// A connection that sent the first bytes of a Hello frame (length, type,
/// flags, request id and part of the magic) and nothing more.
fn half_hello(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&[40, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, b'F', b'O'])
        .unwrap();
    s
}

/// An HTTP/1.1 answer read off a raw connection: status and body.
fn read_answer(s: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// `GET /` on a kept-alive raw connection.
fn get_root(s: &mut TcpStream) -> (u16, String) {
    let req = format!(
        "GET / HTTP/1.1\r\nHost: folio\r\nAuthorization: {}\r\n\r\n",
        basic_auth()
    );
    s.write_all(req.as_bytes()).unwrap();
    read_answer(s)
}

/// Reads until the server closes the connection (or `limit` passes):
/// what arrived, and whether it was closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, true),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (got, false)
            }
            Err(e) => panic!("reading: {e}"),
        }
    }
}

/// The code of the connection-level error frame at the start of `bytes`.
fn closing_code(bytes: &[u8]) -> Option<u16> {
    // length (4), type 0x08, flags, request id 0 (4), then the code.
    (bytes.len() >= 12 && bytes[4] == 0x08 && bytes[6..10] == [0, 0, 0, 0])
        .then(|| u16::from_le_bytes([bytes[10], bytes[11]]))
}

/// Which of `conns` the server closed within `limit` (polling them all,
/// without blocking on any): the bytes each closed one received.
fn closed_by_server(conns: &mut [TcpStream], limit: Duration) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + limit;
    let mut got = vec![Vec::new(); conns.len()];
    let mut closed = vec![false; conns.len()];
    for c in conns.iter() {
        c.set_nonblocking(true).unwrap();
    }
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        for (i, c) in conns.iter_mut().enumerate() {
            while !closed[i] {
                match c.read(&mut buf) {
                    Ok(0) => closed[i] = true,
                    Ok(n) => got[i].extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => closed[i] = true,
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    got.into_iter()
        .zip(closed)
        .filter_map(|(g, c)| c.then_some(g))
        .collect()
}

fn http_agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build()
}

/// Creates a database and a document over HTTP; returns the document's UNID.
fn http_create(agent: &ureq::Agent, http: &str, db: &str, subject: &str) -> String {
    let url = format!("http://{http}/db/{}", db.replace('/', "%2F"));
    let r = agent
        .put(&url)
        .set("Authorization", &basic_auth())
        .send_string("{}");
    assert!(
        matches!(&r, Ok(a) if a.status() == 201) || matches!(&r, Err(ureq::Error::Status(409, _))),
        "create {db}: {r:?}"
    );
    let saved: serde_json::Value = agent
        .post(&format!("{url}/docs"))
        .set("Authorization", &basic_auth())
        .send_string(&format!(r#"{{"Subject":"{subject}"}}"#))
        .unwrap()
        .into_json()
        .unwrap();
    saved["unid"].as_str().unwrap().to_string()
}

/// Creates a database and a document through the client library.
fn native_create(c: &client::blocking::Client, db: &str, subject: &str) -> client::Unid {
    c.create_database(db, db).unwrap();
    let (h, _) = c.open_database(db).unwrap();
    let saved = c
        .create_document(h, &format!(r#"{{"Subject":"{subject}"}}"#))
        .unwrap();
    let back = c
        .read_document(h, client::DocRef::Unid(saved.unid))
        .unwrap();
    assert!(back.json.contains(subject));
    saved.unid
}

/// Reads a document through the client library; its subject.
fn native_subject(c: &client::blocking::Client, db: &str, unid: client::Unid) -> String {
    let (h, _) = c.open_database(db).unwrap();
    let doc = c.read_document(h, client::DocRef::Unid(unid)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&doc.json).unwrap();
    v["Subject"].as_str().unwrap().to_string()
}

fn stat(c: &client::blocking::Client, name: &str) -> f64 {
    let all = c.statistics().unwrap();
    let s = all
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no statistic {name}"));
    match s.value {
        protocol::StatValue::Count(n) => n as f64,
        protocol::StatValue::Gauge(g) => g,
        ref other => panic!("{name}: {other:?}"),
    }
}

/// Ten thousand half-open connections, half on each listener, plus a
/// burst beyond the connection limits: clients old and new still get
/// answers, new databases open (descriptors are left for them), the
/// burst is refused at once, descriptors stay bounded, SIGTERM ends the
/// process at once with status 0, and every acknowledged document is
/// there after a restart.
#[test]
fn a_flood_of_half_open_connections_neither_starves_clients_nor_holds_shutdown() {
    // 5,000 per listener when the hard descriptor limit allows it (this
    // test's process holds both sides' sockets; the server keeps a
    // quarter of its limit for files): scaled down on a smaller limit.
    let hard = raise_descriptor_limit();
    let per_side = (((hard * 3 / 4).saturating_sub(128) / 2).saturating_sub(600)).min(5_000);
    assert!(
        per_side >= 100,
        "a hard descriptor limit of {hard} is too low for this test"
    );
    let per_side = per_side as usize;
    let extra = 400;
    let limit = per_side + 200;
    let grace = 30;
    let tmp = data_dir(&format!(
        "max_connections = {limit}\nhttp_max_connections = {limit}\n\
         handshake_timeout_secs = 600\nhttp_header_timeout_secs = 600\n\
         shutdown_grace_secs = {grace}\n"
    ));
    let srv = Server::start(tmp.path());
    let (native, http) = (srv.native.clone(), srv.http.clone());
    let agent = http_agent();

    // Established before the flood: a native client and a kept-alive
    // HTTP connection.
    let early = srv.admin();
    let mut acked = vec![(
        "before.fdb".to_string(),
        native_create(&early, "before.fdb", "before"),
    )];
    let mut kept = TcpStream::connect(&http).unwrap();
    assert_eq!(get_root(&mut kept).0, 200);

    let started = Instant::now();
    let mut half_http: Vec<TcpStream> = (0..per_side).map(|_| half_header(&http)).collect();
    let mut half_native: Vec<TcpStream> = (0..per_side)
        .map(|i| match i % 2 {
            0 => half_hello(&native),
            _ => TcpStream::connect(&native).unwrap(),
        })
        .collect();
    eprintln!(
        "{per_side} half-open connections per listener opened in {:?}",
        started.elapsed()
    );

    // Clients old and new are answered; databases (new files) open.
    for i in 0..3 {
        let db = format!("flood/early-{i}.fdb");
        acked.push((
            db.clone(),
            native_create(&early, &db, &format!("early {i}")),
        ));
    }
    let late = srv.admin();
    for i in 0..3 {
        let db = format!("flood/late-{i}.fdb");
        acked.push((db.clone(), native_create(&late, &db, &format!("late {i}"))));
    }
    let mut acked_http = Vec::new();
    for i in 0..3 {
        let db = format!("flood/http-{i}.fdb");
        acked_http.push((
            db.clone(),
            http_create(&agent, &http, &db, &format!("http {i}")),
        ));
    }
    assert_eq!(get_root(&mut kept).0, 200);

    // A burst beyond the limits is refused at once: a 503 or error 503.
    let mut over_http: Vec<TcpStream> = (0..extra).map(|_| half_header(&http)).collect();
    let mut over_native: Vec<TcpStream> = (0..extra).map(|_| half_hello(&native)).collect();
    let refused_http = closed_by_server(&mut over_http, Duration::from_secs(5));
    let refused_native = closed_by_server(&mut over_native, Duration::from_secs(5));
    // At most 200 of each burst fit (fewer: the clients above hold some).
    assert!(
        refused_http.len() >= extra - 200,
        "{} of {extra} HTTP connections over the limit refused",
        refused_http.len()
    );
    assert!(
        refused_native.len() >= extra - 200,
        "{} of {extra} native connections over the limit refused",
        refused_native.len()
    );
    for got in &refused_http {
        assert!(
            got.is_empty() || got.starts_with(b"HTTP/1.1 503"),
            "{got:?}"
        );
    }
    for got in &refused_native {
        assert!(got.is_empty() || closing_code(got) == Some(503), "{got:?}");
    }
    let fds = open_descriptors(srv.pid());
    eprintln!(
        "server descriptors during the flood: {fds}; refused {} HTTP and {} native",
        refused_http.len(),
        refused_native.len()
    );
    assert!(
        fds <= 2 * limit + 400,
        "{fds} descriptors for 2 x {limit} connections"
    );
    assert!(
        fds >= 2 * per_side,
        "the flood is not held: {fds} descriptors"
    );

    // Established clients carry on after the burst.
    acked.push((
        "flood/after.fdb".to_string(),
        native_create(&early, "flood/after.fdb", "after"),
    ));
    assert_eq!(get_root(&mut kept).0, 200);

    // Nothing in flight: shutdown does not wait for the half-open ones.
    let (status, took) = srv.stop_within(Duration::from_secs(grace + 30));
    eprintln!(
        "exit after SIGTERM with {} half-open connections: {took:?}",
        2 * per_side
    );
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(grace - 10),
        "shutdown took {took:?}: it waited for idle connections"
    );
    half_http.clear();
    half_native.clear();
    drop((over_http, over_native, kept));

    let srv = Server::start(tmp.path());
    let c = srv.admin();
    for (db, unid) in &acked {
        assert!(native_subject(&c, db, *unid).len() > 1, "{db}");
    }
    for (db, unid) in &acked_http {
        let url = format!(
            "http://{}/db/{}/docs/{unid}",
            srv.http,
            db.replace('/', "%2F")
        );
        let doc: serde_json::Value = agent
            .get(&url)
            .set("Authorization", &basic_auth())
            .call()
            .unwrap()
            .into_json()
            .unwrap();
        assert!(
            doc["Subject"].as_str().unwrap().starts_with("http "),
            "{doc}"
        );
    }
    assert!(srv.stop().success());
}

/// A client that sends part of a header, nothing at all, nothing after
/// its answer, a body too slowly (answered 408), or half a handshake is
/// closed after the configured time; a client-library connection left idle fails its next
/// call with the reason (it does not hang); an answer the client stops
/// reading is cut.
#[test]
fn silent_and_slow_clients_are_closed_after_their_timeouts() {
    let tmp = data_dir(
        "http_header_timeout_secs = 1\nhttp_idle_timeout_secs = 1\n\
         http_body_timeout_secs = 1\nhttp_body_min_rate = 1024\n\
         handshake_timeout_secs = 1\nidle_timeout_secs = 1\nstall_timeout_secs = 1\n",
    );
    let srv = Server::start(tmp.path());
    let (native, http) = (srv.native.clone(), srv.http.clone());
    let admin = srv.admin();
    native_create(&admin, "t.fdb", "t");
    let (db, _) = admin.open_database("t.fdb").unwrap();
    let unid = admin
        .create_document(db, r#"{"Subject":"big"}"#)
        .unwrap()
        .unid;
    let big: Vec<u8> = (0..16u32 << 20).map(|i| (i % 251) as u8).collect();
    admin
        .put_attachment(
            db,
            unid,
            "big.bin",
            "application/octet-stream",
            None,
            &big[..],
        )
        .unwrap();
    drop(admin);

    let start = Instant::now();
    let mut half = half_header(&http);
    let mut silent = TcpStream::connect(&http).unwrap();
    let mut kept = TcpStream::connect(&http).unwrap();
    assert_eq!(get_root(&mut kept).0, 200);
    let mut slow_body = TcpStream::connect(&http).unwrap();
    slow_body
        .write_all(
            format!(
                "POST /db/t.fdb/docs HTTP/1.1\r\nHost: folio\r\nAuthorization: {}\r\n\
                 Content-Length: 100000\r\n\r\n{{\"Subject\":",
                basic_auth()
            )
            .as_bytes(),
        )
        .unwrap();
    let mut hello = half_hello(&native);
    let idle = srv.admin();

    for (what, conn) in [
        ("half a header", &mut half),
        ("no request at all", &mut silent),
        ("no request after an answer", &mut kept),
    ] {
        let (_, closed) = read_until_closed(conn, Duration::from_secs(20));
        assert!(closed, "HTTP connection with {what} still open");
    }
    let (answer, closed) = read_until_closed(&mut slow_body, Duration::from_secs(20));
    assert!(closed, "HTTP connection with a slow body still open");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408") && answer.contains("too slowly"),
        "{answer}"
    );
    let (frame, closed) = read_until_closed(&mut hello, Duration::from_secs(20));
    assert!(closed, "native connection with half a Hello still open");
    assert_eq!(closing_code(&frame), Some(408), "{frame:?}");
    // None of it happened before the configured second.
    assert!(start.elapsed() >= Duration::from_millis(900));

    // The library connection left idle was closed too: its next call
    // fails with the reason rather than hanging.
    std::thread::sleep(Duration::from_millis(1_500));
    let e = idle.statistics().unwrap_err();
    assert!(e.to_string().contains("without a request"), "{e}");

    // An answer the client stops reading is cut after the stall time.
    let mut reader = TcpStream::connect(&http).unwrap();
    reader
        .write_all(
            format!(
                "GET /db/t.fdb/docs/{}/attachments/big.bin HTTP/1.1\r\nHost: folio\r\n\
                 Authorization: {}\r\n\r\n",
                nsf::Unid(unid.0),
                basic_auth()
            )
            .as_bytes(),
        )
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let (got, closed) = read_until_closed(&mut reader, Duration::from_secs(20));
    assert!(closed, "a download nobody reads still open");
    assert!(
        got.len() < big.len(),
        "the whole download arrived although nobody read it for 4 s"
    );

    let c = srv.admin();
    let timed_out = stat(&c, "server.connections_timed_out");
    assert!(
        timed_out >= 6.0,
        "server.connections_timed_out = {timed_out}"
    );
    assert!(srv.stop().success());
}

/// At SIGTERM, idle and half-open connections close at once and requests
/// in flight get the grace period; a request still stuck then (a body that
/// never comes, an upload that stalls) is cut, the process exits 0 soon
/// after, and the acknowledged documents survive.
#[test]
fn shutdown_cuts_stuck_requests_at_the_grace_deadline() {
    let grace = 2;
    let tmp = data_dir(&format!(
        "shutdown_grace_secs = {grace}\nhttp_body_timeout_secs = 600\n\
         http_header_timeout_secs = 600\nhandshake_timeout_secs = 600\nstall_timeout_secs = 600\n"
    ));
    let srv = Server::start(tmp.path());
    let (native, http) = (srv.native.clone(), srv.http.clone());
    let admin = srv.admin();
    let unid = native_create(&admin, "s.fdb", "kept");
    let (db, _) = admin.open_database("s.fdb").unwrap();

    let mut kept = TcpStream::connect(&http).unwrap();
    assert_eq!(get_root(&mut kept).0, 200);
    let _half = half_header(&http);
    let _hello = half_hello(&native);
    let idle = srv.admin();

    // A request whose body never comes, counted in once it is in a handler.
    let before = stat(&admin, "server.http_requests");
    let mut stuck = TcpStream::connect(&http).unwrap();
    stuck
        .write_all(
            format!(
                "POST /db/s.fdb/docs HTTP/1.1\r\nHost: folio\r\nAuthorization: {}\r\n\
                 Content-Length: 1000\r\n\r\n{{\"Subject\":",
                basic_auth()
            )
            .as_bytes(),
        )
        .unwrap();
    let waited = Instant::now();
    while stat(&admin, "server.http_requests") < before + 1.0 {
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "the request never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // An upload that stalls after its request.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let uploader = srv.admin();
    let upload = std::thread::spawn(move || {
        let (db, _) = uploader.open_database("s.fdb").unwrap();
        let stalled = StalledReader(rx);
        uploader.put_attachment(
            db,
            unid,
            "stalled.bin",
            "application/octet-stream",
            None,
            stalled,
        )
    });
    std::thread::sleep(Duration::from_millis(300));

    let (status, took) = srv.stop_within(Duration::from_secs(grace + 30));
    eprintln!("exit after SIGTERM with a stuck request: {took:?} (grace {grace} s)");
    assert!(status.success(), "{status:?}");
    assert!(
        took >= Duration::from_millis(grace * 1_000 - 500),
        "exited after {took:?}: the request in flight was not given the grace period"
    );
    assert!(
        took < Duration::from_secs(grace + 10),
        "exited after {took:?}: stuck requests held shutdown"
    );
    // Every client sees its connection closed.
    let (_, closed) = read_until_closed(&mut stuck, Duration::from_secs(10));
    assert!(closed);
    let (_, closed) = read_until_closed(&mut kept, Duration::from_secs(10));
    assert!(closed);
    assert!(idle.statistics().is_err());
    drop(tx);
    assert!(
        upload.join().unwrap().is_err(),
        "the stalled upload was not cut"
    );
    let _ = db;

    let srv = Server::start(tmp.path());
    assert_eq!(native_subject(&srv.admin(), "s.fdb", unid), "kept");
    assert!(srv.stop().success());
}

/// CPU time (user + system) the process `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// With every descriptor taken (databases opened until the engine gets
/// "too many open files"), a new connection cannot be accepted: the
/// listener backs off instead of spinning a core, and accepts it as soon
/// as descriptors are free again. The limits were fitted under the small
/// descriptor limit rather than refused.
#[test]
fn out_of_descriptors_the_listener_waits_and_recovers() {
    // A cache limit above what the descriptors hold, so that databases
    // kept open take them all (unset, the limit would fit under them).
    let tmp = data_dir("max_open_databases = 1000\n");
    // 400 descriptors: 256 kept for files, 128 for refusals, 16 for
    // connections (10 native, 5 HTTP once fitted).
    let srv = Server::start_with_descriptor_limit(tmp.path(), 400);
    let native = srv.native.clone();
    let admin = srv.admin();
    let spare: Vec<_> = (0..5).map(|_| srv.admin()).collect();
    // The native limit was lowered to fit: the 11th connection is refused.
    let mut more = Vec::new();
    let refused = loop {
        match srv.client(Some(("admin", ADMIN_PW))) {
            Ok(c) => more.push(c),
            Err(e) => break e.to_string(),
        }
        assert!(more.len() < 50, "no connection limit under 400 descriptors");
    };
    assert_eq!(1 + spare.len() + more.len(), 10, "{refused}");
    assert!(refused.contains("503"), "{refused}");
    // The refusal names what is busy: connections, not the log.
    assert!(
        refused.contains("limit of 10 connections") && !refused.contains("log"),
        "{refused}"
    );
    drop(more);
    let mut created = 0;
    let full = loop {
        match admin.create_database(&format!("fill/{created}.fdb"), "fill") {
            Ok(_) => created += 1,
            Err(e) => break e.to_string(),
        }
        assert!(created < 1_000, "the descriptor limit was not applied");
    };
    eprintln!("{created} databases created before: {full}");

    // No descriptor for the next connection: the accept fails and waits.
    let mut waiting = TcpStream::connect(&native).unwrap();
    let pid = srv.pid();
    let (ticks, wall) = (cpu_ticks(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let used = (cpu_ticks(pid) - ticks) as f64 / 100.0;
    eprintln!(
        "server CPU while accepts fail: {used:.2} s in {:?}",
        wall.elapsed()
    );
    assert!(used < 0.5, "the accept loop spun: {used} s of CPU in 3 s");

    // Descriptors come free: the waiting connection is accepted, and a
    // new client is served.
    drop(spare);
    let (frame, closed) = {
        waiting.write_all(b"not a hello").unwrap();
        read_until_closed(&mut waiting, Duration::from_secs(20))
    };
    assert!(closed && closing_code(&frame).is_some(), "{frame:?}");
    let again = srv.admin();
    assert!(stat(&again, "server.connections") >= 1.0);
}

/// Upload content that never comes: a read waits until the test drops
/// the sender, then fails.
struct StalledReader(std::sync::mpsc::Receiver<()>);

impl Read for StalledReader {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        let _ = self.0.recv();
        Err(std::io::Error::other("the test ended the upload"))
    }
}

/// With no `max_open_databases` set, the server sizes its cache from the
/// descriptors its listeners leave: four times the limit (the cache's
/// ceiling, I19) plus the engine's other files fit beside the connection
/// limits, and one more would not. A limit that is set is kept as it is.
#[test]
fn an_unset_cache_limit_is_sized_from_the_descriptors() {
    let limit_of = |srv: &Server| stat(&srv.admin(), "db.open_limit") as u64;
    for descriptors in [8_000u64, 3_400] {
        let tmp = data_dir("");
        let srv = Server::start_with_descriptor_limit(tmp.path(), descriptors);
        let limit = limit_of(&srv);
        // The default listeners at their limits (2,000 native, 1,000
        // HTTP, lowered in proportion where they do not fit beside a
        // quarter kept for files) and a queue of refusals each.
        let room = descriptors - (descriptors / 4).max(256) - 2 * 64;
        // (Scaled connection limits round down: at most one more left.)
        let connections = 3_000u64.min(room) + 2 * 64;
        let engine = descriptors - connections;
        let ceiling = |n: u64| n * nsf::CACHE_CEILING as u64 + nsf::ENGINE_FILES_RESERVE;
        assert!(ceiling(limit) <= engine, "{descriptors}: limit {limit}");
        assert!(ceiling(limit + 1) > engine, "{descriptors}: limit {limit}");
        assert!(srv.stop().success());
    }
    let tmp = data_dir("max_open_databases = 300\n");
    let srv = Server::start_with_descriptor_limit(tmp.path(), 8_000);
    assert_eq!(limit_of(&srv), 300);
    assert!(srv.stop().success());
}
