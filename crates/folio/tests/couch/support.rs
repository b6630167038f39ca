//! What the CouchDB-door tests share: the server with the door on, plain
//! HTTP requests, and PouchDB in Node driven a command at a time
//! (`pouch_driver.js`).
#![allow(dead_code)] // each test binary uses its own subset

use crate::common::{Server, ADMIN_PW};
use base64::Engine as _;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

pub const ALICE: (&str, &str) = ("alice", "alice-password");
pub const BOB: (&str, &str) = ("bob", "bob-password");
pub const CAROL: (&str, &str) = ("carol", "carol-password");
pub const ADMIN: (&str, &str) = ("admin", ADMIN_PW);

pub fn start(data: &Path) -> Server {
    Server::start_with_env(data, &[("FOLIO__COUCHDB_LISTEN", "127.0.0.1:0")])
}

pub fn couch_url(s: &Server) -> String {
    format!(
        "http://{}",
        s.couchdb.as_ref().expect("the CouchDB door is on")
    )
}

/// One request: the status and the JSON answer.
pub fn req(method: &str, url: &str, who: Option<(&str, &str)>, body: Option<&str>) -> (u16, Value) {
    let mut r = ureq::request(method, url).timeout(std::time::Duration::from_secs(60));
    if let Some((u, p)) = who {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        r = r.set("Authorization", &format!("Basic {token}"));
    }
    let answer = match body {
        Some(b) => r.set("Content-Type", "application/json").send_string(b),
        None => r.call(),
    };
    let resp = match answer {
        Ok(resp) => resp,
        Err(ureq::Error::Status(_, resp)) => resp,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
    (status, v)
}

pub fn ok(method: &str, url: &str, who: (&str, &str), body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string());
    let (status, v) = req(method, url, Some(who), body.as_deref());
    assert!((200..300).contains(&status), "{method} {url}: {status} {v}");
    v
}

/// A database `name` with alice as Editor, bob as Reader, carol as Author.
pub fn team_db(s: &Server, name: &str) -> String {
    let url = format!("{}/{name}", couch_url(s));
    ok("PUT", &url, ADMIN, None);
    let acl = json!({"default": "noaccess", "entries": [
        {"name": "alice", "level": "editor"},
        {"name": "bob", "level": "reader"},
        {"name": "carol", "level": "author"},
        {"name": "admin", "level": "manager"},
    ]});
    let acl_url = format!("http://{}/db/{name}.fdb/_acl", s.http);
    ok("PUT", &acl_url, ADMIN, Some(acl));
    url
}

/// PouchDB in Node, installed on first use into the target directory.
pub fn pouch_modules() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pouchdb");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-pouchdb.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("node_modules")
    })
}

/// A PouchDB memory database in a Node process, remote = `url`.
pub struct Pouch {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Pouch {
    pub fn open(url: &str, who: (&str, &str)) -> Pouch {
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/couch/pouch_driver.js");
        let mut child = Command::new("node")
            .arg(driver)
            .args([url, who.0, who.1])
            .env("NODE_PATH", pouch_modules())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Pouch {
            child,
            input,
            output,
        }
    }

    pub fn call(&mut self, cmd: Value) -> Value {
        self.send(cmd);
        self.receive()
    }

    /// Sends a command without waiting for its answer.
    pub fn send(&mut self, cmd: Value) {
        writeln!(self.input, "{cmd}").unwrap();
    }

    /// The answer to the oldest command not yet answered.
    pub fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("driver said {line:?}"))
    }

    /// A replication (`pull`, `push`) that must succeed with no failure.
    pub fn replicate(&mut self, op: &str) -> Value {
        let r = self.call(json!({"op": op}));
        assert_eq!(r["ok"], json!(true), "{op}: {r}");
        assert_eq!(r["doc_write_failures"], json!(0), "{op}: {r}");
        r
    }

    /// Every local document (with `_conflicts`), by id.
    pub fn all(&mut self) -> Vec<Value> {
        self.call(json!({"op": "all"})).as_array().unwrap().clone()
    }
}

impl Drop for Pouch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every document the door shows `who`, with `_conflicts`, by id.
pub fn folio_all(db: &str, who: (&str, &str)) -> Vec<Value> {
    let rows = ok("GET", &format!("{db}/_all_docs"), who, None);
    rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap();
            let url = format!("{db}/{}?conflicts=true", encode(id));
            ok("GET", &url, who, None)
        })
        .collect()
}

pub fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Documents compared as JSON values, numbers as numbers.
pub fn same_docs(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// One request with a raw body: the status, the content type and the
/// answer's bytes.
pub fn raw(
    method: &str,
    url: &str,
    who: Option<(&str, &str)>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut r = ureq::request(method, url).timeout(std::time::Duration::from_secs(60));
    if let Some((u, p)) = who {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        r = r.set("Authorization", &format!("Basic {token}"));
    }
    for (k, v) in headers {
        r = r.set(k, v);
    }
    let answer = if method == "GET" || method == "HEAD" {
        r.call()
    } else {
        r.send_bytes(body)
    };
    let resp = match answer {
        Ok(resp) => resp,
        Err(ureq::Error::Status(_, resp)) => resp,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let ct = resp.content_type().to_string();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes).unwrap();
    (status, ct, bytes)
}

/// CouchDB's digest of `bytes` (`md5-` and the MD5 in base64), computed
/// here by Python's hashlib, a party other than the server.
pub fn md5_digest(bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys,hashlib,base64;d=base64.b64decode(sys.stdin.read());\
             print('md5-'+base64.b64encode(hashlib.md5(d).digest()).decode())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b64.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Bytes that look random and compress poorly, different per `seed`.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
