//! One command, one behaviour: every CLI command run embedded (on a data
//! directory) and with `--server` (against the real `folio serve`) with
//! the same input prints the same output and fails with the same line.
//!
//! Each mode runs the same script on a fresh data directory of its own.
//! What must differ between two databases made apart is normalised: UNIDs
//! and replica/instance ids (named in order of first appearance, so a
//! different order still shows), times, and the file size (an embedded
//! command closes the engine and writes every page; a running server
//! keeps them in its pool). Nothing else.

mod common;
use common::{Server, ADMIN_PW};
use std::collections::HashMap;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;

/// One command of the script, what it must do and what it did.
struct Step {
    name: String,
    must_succeed: bool,
    outcome: Outcome,
}

/// The steps of a script run so far.
#[derive(Default)]
struct Log(Vec<Step>);

impl Log {
    /// A step that must succeed.
    fn ok(&mut self, name: &str, outcome: Outcome) {
        self.push(name, true, outcome)
    }

    /// A step that must fail.
    fn fails(&mut self, name: &str, outcome: Outcome) {
        self.push(name, false, outcome)
    }

    fn push(&mut self, name: &str, must_succeed: bool, outcome: Outcome) {
        self.0.push(Step {
            name: name.to_string(),
            must_succeed,
            outcome,
        })
    }
}

/// What a command did, as compared: exit status, stdout, stderr.
#[derive(Debug, PartialEq)]
struct Outcome {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// One of the two ways to run a command.
trait Mode {
    fn run(&self, args: &[&str], stdin: &str) -> Output;
}

struct Embedded<'a>(&'a Path);

impl Mode for Embedded<'_> {
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        common::folio(self.0, args, stdin)
    }
}

struct Remote<'a>(&'a Server);

impl Mode for Remote<'_> {
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        self.0.cli(args, stdin)
    }
}

/// Runs scripts in one mode, remembering the UNIDs its `doc put`s printed
/// under the names the script gives them, and normalising what it prints.
struct Session<'m> {
    mode: &'m dyn Mode,
    docs: HashMap<String, String>,
    ids: Ids,
}

impl<'m> Session<'m> {
    fn new(mode: &'m dyn Mode) -> Session<'m> {
        Session {
            mode,
            docs: HashMap::new(),
            ids: Ids::default(),
        }
    }

    /// Runs `args` (where `{name}` stands for the UNID of the document
    /// created as `name`).
    fn run(&mut self, args: &[&str], stdin: &str) -> Outcome {
        let args: Vec<String> = args.iter().map(|a| self.expand(a)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = self.mode.run(&args, &self.expand(stdin));
        Outcome {
            ok: o.status.success(),
            stdout: self.ids.normalise(&String::from_utf8_lossy(&o.stdout)),
            stderr: self.ids.normalise(&String::from_utf8_lossy(&o.stderr)),
        }
    }

    /// `doc put` of `json`, remembering the new document as `name`.
    fn put(&mut self, name: &str, json: &str) -> Outcome {
        let o = self.mode.run(&["doc", "put", "m.fdb"], json);
        let unid = String::from_utf8_lossy(&o.stdout).trim().to_string();
        self.docs.insert(name.to_string(), unid);
        Outcome {
            ok: o.status.success(),
            stdout: self.ids.normalise(&String::from_utf8_lossy(&o.stdout)),
            stderr: self.ids.normalise(&String::from_utf8_lossy(&o.stderr)),
        }
    }

    fn expand(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (name, unid) in &self.docs {
            text = text.replace(&format!("{{{name}}}"), unid);
        }
        text
    }
}

/// Names for the ids a mode printed, given in order of first appearance.
#[derive(Default)]
struct Ids {
    names: HashMap<String, String>,
}

impl Ids {
    fn normalise(&mut self, text: &str) -> String {
        let text = replace_runs(text, is_time_char, |run| {
            let t = run.trim_end_matches([',', '.', ':']);
            if t.len() >= 20 && nsf::Timestamp::parse_rfc3339(t).is_some() {
                Some(format!("<time>{}", &run[t.len()..]))
            } else {
                None
            }
        });
        let text = replace_runs(
            &text,
            |c| c.is_ascii_alphanumeric(),
            |run| {
                let hex = run
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c));
                if hex && (run.len() == 32 || run.len() == 16) {
                    let n = self.names.len();
                    Some(
                        self.names
                            .entry(run.to_string())
                            .or_insert_with(|| format!("<id{n}>"))
                            .clone(),
                    )
                } else {
                    None
                }
            },
        );
        blank_file_size(&text)
    }
}

fn is_time_char(c: char) -> bool {
    c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | 'T' | 'Z' | '+')
}

/// `text` with each maximal run of `in_run` characters that `replace`
/// maps replaced.
fn replace_runs(
    text: &str,
    in_run: impl Fn(char) -> bool,
    mut replace: impl FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let mut flush = |run: &mut String, out: &mut String| {
        match replace(run) {
            Some(r) => out.push_str(&r),
            None => out.push_str(run),
        }
        run.clear();
    };
    for c in text.chars() {
        if in_run(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The value of every `"file_size"` key blanked (see the module docs).
fn blank_file_size(text: &str) -> String {
    let key = "\"file_size\":";
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = rest[i + key.len()..].trim_start_matches(|c: char| c == ' ' || c.is_ascii_digit());
        out.push_str(" <size>");
    }
    out.push_str(rest);
    out
}

/// A data directory whose server has an administrator.
fn admin_data_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), tmp.path()).unwrap();
    store.add_user("admin", ADMIN_PW, true).unwrap();
    tmp
}

const ACL: &str = r#"{"default":"reader","anonymous":"noaccess","roles":["Sales"],"entries":[
  {"name":"admin","level":"manager"},{"name":"alice","level":"editor","roles":["Sales"]}]}"#;

/// The script both modes run: every command that exists in both, with
/// the failures a user meets most.
fn script(s: &mut Session, work: &Path) -> Vec<Step> {
    let mut log = Log::default();
    let file = work.join("data.bin");
    let content: Vec<u8> = (0..100_000u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(&file, &content).unwrap();
    let file = file.to_str().unwrap();

    log.ok(
        "db create --mail",
        s.run(&["db", "create", "m.fdb", "--title", "Mail", "--mail"], ""),
    );
    log.ok("db create", s.run(&["db", "create", "other/plain.fdb"], ""));
    log.ok("db list", s.run(&["db", "list"], ""));
    log.ok(
        "doc put a",
        s.put(
            "a",
            r#"{"Form":"Memo","Subject":"banana","From":"bob","N":1}"#,
        ),
    );
    log.ok(
        "doc put b",
        s.put(
            "b",
            r#"{"Form":"Memo","Subject":"Apple","From":"amy","N":2}"#,
        ),
    );
    log.ok(
        "doc put c",
        s.put(
            "c",
            r#"{"Form":"Memo","Subject":"cherry","From":"bob","N":3,"Tags":["x","y"]}"#,
        ),
    );
    log.ok(
        "doc update",
        s.run(
            &["doc", "update", "m.fdb", "{b}"],
            r#"{"$seq":1,"Subject":"zebra"}"#,
        ),
    );
    log.ok("doc get", s.run(&["doc", "get", "m.fdb", "{b}"], ""));
    log.ok("doc list", s.run(&["doc", "list", "m.fdb"], ""));
    log.ok("db info", s.run(&["db", "info", "m.fdb"], ""));
    log.ok(
        "attach put",
        s.run(
            &["attach", "put", "m.fdb", "{a}", file, "--name", "data.bin"],
            "",
        ),
    );
    let got = s.mode.run(
        &["attach", "get", "m.fdb", &s.expand("{a}"), "data.bin"],
        "",
    );
    assert!(got.stdout == content, "attachment round trip");
    log.ok(
        "view create",
        s.run(
            &[
                "view",
                "create",
                "m.fdb",
                "BySubject",
                "--select",
                "SELECT N >= 2",
                "--column",
                "Subject=Subject:asc",
                "--column",
                "Who=From",
            ],
            "",
        ),
    );
    log.ok(
        "view read --total",
        s.run(&["view", "read", "m.fdb", "BySubject", "--total"], ""),
    );
    log.ok(
        "view read --key",
        s.run(
            &[
                "view",
                "read",
                "m.fdb",
                "BySubject",
                "--key",
                "ZE",
                "--prefix",
            ],
            "",
        ),
    );
    log.ok(
        "view find",
        s.run(&["view", "find", "m.fdb", "BySubject", "zebra"], ""),
    );
    log.ok("doc put d", s.put("d", r#"{"Subject":"date","N":9}"#));
    log.ok(
        "view update",
        s.run(&["view", "update", "m.fdb", "BySubject"], ""),
    );
    log.ok(
        "folder add",
        s.run(&["folder", "add", "m.fdb", "Inbox", "{a}", "{c}"], ""),
    );
    log.ok("read Inbox", s.run(&["view", "read", "m.fdb", "Inbox"], ""));
    log.ok(
        "folder remove",
        s.run(&["folder", "remove", "m.fdb", "Inbox", "{a}"], ""),
    );
    log.ok(
        "read Inbox again",
        s.run(&["view", "read", "m.fdb", "Inbox"], ""),
    );
    log.ok(
        "read All Documents",
        s.run(
            &["view", "read", "m.fdb", "All Documents", "--count", "100"],
            "",
        ),
    );
    log.ok(
        "search",
        s.run(&["search", "m.fdb", "SELECT From = \"bob\""], ""),
    );
    log.ok(
        "search --since",
        s.run(
            &[
                "search",
                "m.fdb",
                "@Contains(Subject; \"an\")",
                "--since",
                "2000-01-01T00:00:00Z",
            ],
            "",
        ),
    );
    log.ok("acl set", s.run(&["acl", "set", "m.fdb"], ACL));
    log.ok("acl show", s.run(&["acl", "show", "m.fdb"], ""));
    log.ok("doc delete", s.run(&["doc", "delete", "m.fdb", "{c}"], ""));
    log.ok(
        "doc list after delete",
        s.run(&["doc", "list", "m.fdb"], ""),
    );
    log.ok("db info after delete", s.run(&["db", "info", "m.fdb"], ""));
    let by_subject = [
        "view",
        "create",
        "m.fdb",
        "BySubject",
        "--select",
        "SELECT @All",
        "--column",
        "Subject=Subject:desc",
    ];
    log.ok(
        "view delete",
        s.run(&["view", "delete", "m.fdb", "bysubject"], ""),
    );
    log.fails(
        "view read after delete",
        s.run(&["view", "read", "m.fdb", "BySubject"], ""),
    );
    log.ok("view defined again", s.run(&by_subject, ""));
    log.ok(
        "view read after it was defined again",
        s.run(&["view", "read", "m.fdb", "BySubject", "--total"], ""),
    );

    // Failures: the same one line, the same exit.
    log.fails(
        "no such document",
        s.run(
            &["doc", "get", "m.fdb", "00112233445566778899AABBCCDDEEFF"],
            "",
        ),
    );
    log.fails(
        "bad UNID",
        s.run(&["doc", "get", "m.fdb", "not-a-unid"], ""),
    );
    log.fails(
        "stale update",
        s.run(
            &["doc", "update", "m.fdb", "{b}"],
            r#"{"$seq":1,"Subject":"late"}"#,
        ),
    );
    log.fails(
        "malformed JSON",
        s.run(&["doc", "put", "m.fdb"], "{not json"),
    );
    log.fails(
        "no such database",
        s.run(&["doc", "put", "nope.fdb"], r#"{"S":"x"}"#),
    );
    log.fails("exists", s.run(&["db", "create", "m.fdb"], ""));
    log.fails("bad path", s.run(&["db", "create", "x//y.fdb"], ""));
    log.fails(
        "no such view",
        s.run(&["view", "read", "m.fdb", "Nope"], ""),
    );
    log.fails(
        "delete no such view",
        s.run(&["view", "delete", "m.fdb", "Nope"], ""),
    );
    log.fails("bad formula", s.run(&["search", "m.fdb", "SELECT ((("], ""));
    log.fails(
        "not a folder",
        s.run(&["folder", "add", "m.fdb", "BySubject", "{a}"], ""),
    );
    log.fails(
        "no attachment",
        s.run(&["attach", "get", "m.fdb", "{a}", "missing.bin"], ""),
    );
    log.fails(
        "ACL without a manager",
        s.run(
            &["acl", "set", "m.fdb"],
            r#"{"default":"manager","anonymous":"noaccess","roles":[],"entries":[]}"#,
        ),
    );
    log.ok("acl unchanged", s.run(&["acl", "show", "m.fdb"], ""));

    // Mail users: the directory and mail files.
    log.ok("mail list-users, none", s.run(&["mail", "list-users"], ""));
    log.ok(
        "mail create-user",
        s.run(
            &[
                "mail",
                "create-user",
                "Alice  Smith",
                "--alias",
                "alice@example.com",
                "--server-user",
                "alice",
            ],
            "",
        ),
    );
    log.ok(
        "mail create-user bob",
        s.run(&["mail", "create-user", "bob"], ""),
    );
    log.ok("mail list-users", s.run(&["mail", "list-users"], ""));
    log.fails(
        "mail create-user, name taken",
        s.run(&["mail", "create-user", "ALICE smith"], ""),
    );
    log.fails(
        "mail create-user, alias taken",
        s.run(&["mail", "create-user", "Carol", "--alias", "BOB"], ""),
    );
    log.fails(
        "mail create-user, bad name",
        s.run(&["mail", "create-user", "Eve, the Spy"], ""),
    );
    log.fails(
        "mail remove-user, unknown",
        s.run(&["mail", "remove-user", "nobody"], ""),
    );
    log.ok(
        "mail remove-user",
        s.run(&["mail", "remove-user", "alice@example.com"], ""),
    );
    log.fails(
        "mail create-user, file kept",
        s.run(&["mail", "create-user", "Alice Smith"], ""),
    );
    log.ok("mail list-users after", s.run(&["mail", "list-users"], ""));
    log.ok("mail files kept", s.run(&["db", "list"], ""));
    log.0
}

#[test]
fn every_command_prints_the_same_embedded_and_with_server() {
    let local = tempfile::tempdir().unwrap();
    let served = admin_data_dir();
    let work = tempfile::tempdir().unwrap();
    let srv = Server::start(served.path());
    let embedded = script(&mut Session::new(&Embedded(local.path())), work.path());
    let remote = script(&mut Session::new(&Remote(&srv)), work.path());
    assert!(srv.stop().success());
    let differ: Vec<String> = embedded
        .iter()
        .zip(&remote)
        .filter(|(e, r)| e.outcome != r.outcome)
        .map(|(e, r)| {
            format!(
                "{}:\n  embedded: {:?}\n  --server: {:?}",
                e.name, e.outcome, r.outcome
            )
        })
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // And what both did is right: the script's successes succeed quietly,
    // its failures fail with one line.
    for s in &embedded {
        let o = &s.outcome;
        if s.must_succeed {
            assert!(o.ok && o.stderr.is_empty(), "{}: {o:?}", s.name);
        } else {
            assert!(!o.ok && o.stdout.is_empty(), "{}: {o:?}", s.name);
            assert_eq!(o.stderr.lines().count(), 1, "{}: {o:?}", s.name);
            assert!(o.stderr.starts_with("folio: "), "{}: {o:?}", s.name);
        }
    }
}

#[test]
fn commands_of_one_mode_refuse_clearly_in_the_other() {
    let local = tempfile::tempdir().unwrap();
    let served = admin_data_dir();
    let srv = Server::start(served.path());
    let embedded = Embedded(local.path());
    let remote = Remote(&srv);
    for mode in [&embedded as &dyn Mode, &remote] {
        let o = mode.run(&["db", "create", "m.fdb", "--mail"], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The data directory's files: embedded only.
    for args in [
        &["db", "check", "m.fdb"][..],
        &["view", "list", "m.fdb"],
        &["view", "rebuild", "m.fdb", "Inbox"],
        &["log", "info"],
    ] {
        let o = embedded.run(args, "");
        assert!(
            o.status.success() && !o.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = remote.run(args, "");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && o.stdout.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        let command = args[..2].join(" ");
        assert!(
            err.starts_with(&format!(
                "folio: {command} works on the data directory itself"
            )),
            "{args:?}: {err}"
        );
    }
    // The server's statistics: with --server (without it, `show stats`
    // asks the server on the default address, not the data directory).
    let o = remote.run(&["show", "stats"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(stats["op.database.count"].as_u64() >= Some(1), "{stats}");
    assert!(srv.stop().success());
}

/// The one rule for a new database's ACL, applied to the two callers: a
/// signed-in administrator becomes Manager; the embedded caller (whoever
/// can open the files) has no name, so nobody is named and only server
/// administrators reach the database until `acl set` names someone.
#[test]
fn a_new_database_names_its_creator_as_manager_if_it_has_a_name() {
    let local = tempfile::tempdir().unwrap();
    let served = admin_data_dir();
    let srv = Server::start(served.path());
    let acl_of = |mode: &dyn Mode| {
        let o = mode.run(&["db", "create", "n.fdb"], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = mode.run(&["acl", "show", "n.fdb"], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let remote = acl_of(&Remote(&srv));
    let embedded = acl_of(&Embedded(local.path()));
    assert_eq!(remote["entries"][0]["name"], "admin");
    assert_eq!(remote["entries"][0]["level"], "manager");
    assert_eq!(embedded["entries"], serde_json::json!([]));
    for acl in [&remote, &embedded] {
        assert_eq!(
            (&acl["default"], &acl["anonymous"]),
            (&"noaccess".into(), &"noaccess".into())
        );
    }
    assert!(srv.stop().success());
}

/// The server's request limits come from the same settings and hold
/// embedded too: the embedded commands run the server's own service.
#[test]
fn the_request_limits_hold_embedded_too() {
    let local = tempfile::tempdir().unwrap();
    std::fs::write(
        local.path().join("folio.toml"),
        "max_document_size = \"1KiB\"\nmax_attachment_size = 1000\n",
    )
    .unwrap();
    let d = local.path();
    common::ok(d, &["db", "create", "m.fdb"], "");
    let big = format!(r#"{{"Body":"{}"}}"#, "x".repeat(2000));
    common::fails(d, &["doc", "put", "m.fdb"], &big, "above the limit");
    let unid = common::ok(d, &["doc", "put", "m.fdb"], r#"{"Body":"small"}"#);
    let file = d.join("big.bin");
    std::fs::write(&file, vec![7u8; 5000]).unwrap();
    common::fails(
        d,
        &[
            "attach",
            "put",
            "m.fdb",
            unid.trim(),
            file.to_str().unwrap(),
        ],
        "",
        "above the limit",
    );
    let info: serde_json::Value =
        serde_json::from_str(&common::ok(d, &["db", "info", "m.fdb"], "")).unwrap();
    assert_eq!(info["note_count"], 2, "the ACL and the small document only");
}
