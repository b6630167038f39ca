//! Running the real `folio` binary from the end-to-end tests.
#![allow(dead_code)] // each test binary uses its own subset

use client::blocking::Client;
use client::ClientOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// The administrator's password in the server tests' data directories.
pub const ADMIN_PW: &str = "admin-password-1";

pub fn folio(data: &Path, args: &[&str], stdin: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
    cmd.arg("--data").arg(data).args(args);
    run(cmd, stdin)
}

/// Runs `cmd` with `stdin` piped in and its output captured. A child that
/// exits without reading its input (a command that takes none, or fails
/// first) is not an error here.
fn run(mut cmd: Command, stdin: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    child.wait_with_output().unwrap()
}

pub fn ok(data: &Path, args: &[&str], stdin: &str) -> String {
    let o = folio(data, args, stdin);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Fails with exactly one line on stderr containing `needle`.
pub fn fails(data: &Path, args: &[&str], stdin: &str, needle: &str) {
    let o = folio(data, args, stdin);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
}

/// A data directory with an administrator (`admin`, [`ADMIN_PW`]) and
/// the given plain users (password `<name>-password`).
pub fn users_dir(users: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        server::auth::UserStore::open(std::sync::Arc::new(storage::backend::FsBackend), tmp.path())
            .unwrap();
    store.add_user("admin", ADMIN_PW, true).unwrap();
    for u in users {
        store.add_user(u, &format!("{u}-password"), false).unwrap();
    }
    tmp
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// A `folio serve` child on ephemeral loopback ports.
pub struct Server {
    child: Child,
    pub native: String,
    pub http: String,
    /// The SMTP address, when `smtp_listen` is on.
    pub smtp: Option<String>,
    /// The submission address, when `submission_listen` is on.
    pub submission: Option<String>,
    /// The IMAP address, when `imap_listen` is on.
    pub imap: Option<String>,
    /// The implicit-TLS IMAP address, when `imaps_listen` is on.
    pub imaps: Option<String>,
    /// The implicit-TLS submission address, when `submissions_listen` is on.
    pub submissions: Option<String>,
    /// The CouchDB door's address, when `couchdb_listen` is on.
    pub couchdb: Option<String>,
    /// What the server wrote to stderr so far.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub fn start(data: &Path) -> Server {
        Server::start_with(data, &[])
    }

    /// Starts `folio serve` with extra arguments (e.g. `--tls-self-signed`).
    pub fn start_with(data: &Path, extra: &[&str]) -> Server {
        Server::launch(Command::new(env!("CARGO_BIN_EXE_folio")), data, extra)
    }

    /// Starts `folio serve` with extra environment variables (settings
    /// such as `FOLIO__COUCHDB_LISTEN`).
    pub fn start_with_env(data: &Path, env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
        cmd.envs(env.iter().copied());
        Server::launch(cmd, data, &[])
    }

    /// Starts `folio serve` with its native listener on `native` (for
    /// servers that name each other in their folio.toml).
    pub fn start_on(data: &Path, native: &str) -> Server {
        let cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
        Server::launch_on(cmd, data, native, &[])
    }

    /// Starts `folio serve` with a hard (and soft) descriptor limit of
    /// `limit`.
    pub fn start_with_descriptor_limit(data: &Path, limit: u64) -> Server {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(move || match libc::setrlimit(libc::RLIMIT_NOFILE, &rl) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            });
        }
        Server::launch(cmd, data, &[])
    }

    fn launch(cmd: Command, data: &Path, extra: &[&str]) -> Server {
        Server::launch_on(cmd, data, "127.0.0.1:0", extra)
    }

    fn launch_on(mut cmd: Command, data: &Path, native: &str, extra: &[&str]) -> Server {
        let mut child = cmd
            .arg("--data")
            .arg(data)
            .args(["serve", "--listen", native, "--http-listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        // Warnings (a lowered connection limit) may come first.
        let mut before = String::new();
        let line = loop {
            let mut line = String::new();
            err.read_line(&mut line).unwrap();
            if line.contains("serving data directory") {
                break line;
            }
            if line.is_empty() {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve did not start: {before}");
            }
            before.push_str(&line);
        };
        let after = |key: &str| {
            let rest =
                &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
            rest.split([',', ';']).next().unwrap().trim().to_string()
        };
        let (native, http) = (after("on native "), after("http "));
        let smtp = line.contains(", smtp ").then(|| after(", smtp "));
        let imap = line.contains(", imap ").then(|| after(", imap "));
        let submission = line
            .contains(", submission ")
            .then(|| after(", submission "));
        let couchdb = line.contains(", couchdb ").then(|| after(", couchdb "));
        let imaps = line.contains(", imaps ").then(|| after(", imaps "));
        let submissions = line
            .contains(", submissions ")
            .then(|| after(", submissions "));
        // Keep draining stderr so the server never blocks on a full pipe;
        // what it logs is kept for `log`.
        let log = std::sync::Arc::new(std::sync::Mutex::new(before));
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Server {
            child,
            native,
            http,
            smtp,
            submission,
            imap,
            imaps,
            submissions,
            couchdb,
            log,
        }
    }

    pub fn client(&self, user: Option<(&str, &str)>) -> Result<Client, client::ClientError> {
        let mut o = ClientOptions::new(self.native.as_str());
        if let Some((u, p)) = user {
            o = o.with_credentials(u, p);
        }
        Client::connect(o)
    }

    pub fn admin(&self) -> Client {
        self.client(Some(("admin", ADMIN_PW))).unwrap()
    }

    /// Runs the CLI against this server as the administrator.
    pub fn cli(&self, args: &[&str], stdin: &str) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
        cmd.args(["--server", &self.native, "--user", "admin"])
            .args(args)
            .env("FOLIO_PASSWORD", ADMIN_PW);
        run(cmd, stdin)
    }

    /// `folio --server SELF replicate DB DB --peer PEER ARGS` as the
    /// administrator on both: this server replicates its `db` with the
    /// peer's; the answer as JSON (the command must succeed).
    pub fn replicate_with(&self, peer: &Server, db: &str, args: &[&str]) -> serde_json::Value {
        let o = Command::new(env!("CARGO_BIN_EXE_folio"))
            .args([
                "--server",
                &self.native,
                "--user",
                "admin",
                "replicate",
                db,
                db,
            ])
            .args(["--peer", &peer.native, "--peer-user", "admin"])
            .args(args)
            .env("FOLIO_PASSWORD", ADMIN_PW)
            .env("FOLIO_PEER_PASSWORD", ADMIN_PW)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "replicate {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        json(&String::from_utf8(o.stdout).unwrap())
    }

    /// What the server has logged (its stderr) so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The server's log once a line containing `needle` is in it (the
    /// log is read from the server's stderr by a thread of its own, so a
    /// line written just before an answer may arrive just after it), or
    /// the log as it is after 10 s.
    pub fn log_with(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let log = self.log();
            if log.contains(needle) || std::time::Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has ended (killed from outside, say).
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Sends SIGTERM and waits at most `limit` for the process to exit:
    /// its status and how long it took. A server still running at the
    /// limit is killed and the test fails.
    pub fn stop_within(
        mut self,
        limit: std::time::Duration,
    ) -> (std::process::ExitStatus, std::time::Duration) {
        let sent = std::time::Instant::now();
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, sent.elapsed());
            }
            assert!(
                sent.elapsed() < limit,
                "the server was still running {limit:?} after SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub fn stop(mut self) -> std::process::ExitStatus {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.child.wait().unwrap()
    }

    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Debian tools the console's and `/metrics`' tests drive
/// (`scripts/install-console-tools.sh`: promtool, Chromium, ChromeDriver,
/// Python Selenium and requests). The first test that finds one missing runs that
/// script, where this process may (it installs with apt-get, as root);
/// `Err` says what is still missing and why, so the test can say loudly
/// that it is skipped. Nothing is installed by hand.
pub fn console_tools() -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            if missing_console_tools().is_empty() {
                return Ok(());
            }
            let script = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../scripts/install-console-tools.sh");
            let ran = Command::new("bash").arg(&script).output();
            let missing = missing_console_tools();
            if missing.is_empty() {
                return Ok(());
            }
            let said = match ran {
                Ok(o) => format!(
                    "{} exited with {}: {}",
                    script.display(),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                Err(e) => format!("{} could not be run: {e}", script.display()),
            };
            Err(format!("{} missing; {said}", missing.join(", ")))
        })
        .clone()
}

fn missing_console_tools() -> Vec<&'static str> {
    let runs = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    [
        ("promtool", runs("promtool", &["--version"])),
        ("/usr/bin/chromium", Path::new("/usr/bin/chromium").exists()),
        (
            "/usr/bin/chromedriver",
            Path::new("/usr/bin/chromedriver").exists(),
        ),
        (
            "python3 selenium",
            runs("/usr/bin/python3", &["-c", "import selenium"]),
        ),
        (
            "python3 requests",
            runs("/usr/bin/python3", &["-c", "import requests"]),
        ),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(name, _)| name)
    .collect()
}

/// The mail clients the IMAP tests drive (`scripts/install-mail-clients.sh`:
/// `mbsync` from Debian's isync, `imapclient` and the `aiosmtpd` sink the
/// outbound tests deliver to, from PyPI), installed by that
/// script the first time a test finds one missing. A client still missing
/// afterwards fails the test with the script's output: these tests are
/// not skipped.
pub fn mail_clients() {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        if missing_mail_clients().is_empty() {
            return Ok(());
        }
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-mail-clients.sh");
        let ran = Command::new("bash").arg(&script).output();
        let missing = missing_mail_clients();
        if missing.is_empty() {
            return Ok(());
        }
        Err(match ran {
            Ok(o) => format!(
                "{} missing after {} ({}): {}",
                missing.join(", "),
                script.display(),
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("{} could not be run: {e}", script.display()),
        })
    });
    if let Err(why) = installed {
        panic!("{why}");
    }
}

fn missing_mail_clients() -> Vec<&'static str> {
    let runs = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    [
        ("mbsync", runs("mbsync", &["--version"])),
        ("imapclient", runs("python3", &["-c", "import imapclient"])),
        ("aiosmtpd", runs("python3", &["-c", "import aiosmtpd"])),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(name, _)| name)
    .collect()
}

/// Runs a Python script (on stdin) with `args`, through the `python3` on
/// PATH: a client nobody here wrote (smtplib, imaplib). Its stdout must be
/// JSON; a failed script fails the test with its stderr.
pub fn python(script: &str, args: &[&str]) -> serde_json::Value {
    let mut child = Command::new("python3")
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs the client script");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8(out.stdout).unwrap())
}
