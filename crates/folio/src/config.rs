//! `folio.toml`: every engine setting, with unknown keys rejected.
//!
//! A misspelt setting that is silently ignored is a durability bug waiting
//! to happen (`translog.enabeld = true`), so parsing is strict: unknown keys
//! and bad values are startup errors naming the key. Sizes are written as
//! integers (bytes) or strings with a unit (`"64MiB"`, `"1GiB"`).

use nsf::EngineConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use translog::{LogConfig, LogStyle, Tuning};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub buffer_pool_size: Option<Size>,
    /// Seconds between background flush/checkpoint passes.
    pub flush_interval_secs: Option<f64>,
    /// Where view rebuilds put temporary sort files (default: the system
    /// temporary directory).
    pub view_rebuild_dir: Option<PathBuf>,
    /// Memory one view rebuild may use for sorting.
    pub view_rebuild_memory: Option<Size>,
    #[serde(default)]
    pub translog: TranslogSection,
    /// Threads running requests (the worker pool).
    pub worker_threads: Option<usize>,
    /// Threads doing network I/O.
    pub io_threads: Option<usize>,
    /// Native connections served at once.
    pub max_connections: Option<usize>,
    /// Native: seconds a client has from connecting to its Hello.
    pub handshake_timeout_secs: Option<f64>,
    /// Native: seconds a connection with nothing in flight is kept
    /// (0 = for ever).
    pub idle_timeout_secs: Option<f64>,
    /// Both listeners: seconds an answer may wait for the client to read
    /// any of it (and a native upload for more of its bytes).
    pub stall_timeout_secs: Option<f64>,
    /// Seconds requests in flight get to finish at shutdown.
    pub shutdown_grace_secs: Option<f64>,
    /// HTTP connections served at once.
    pub http_max_connections: Option<usize>,
    /// Seconds an HTTP client has to send a request's header.
    pub http_header_timeout_secs: Option<f64>,
    /// Seconds a kept-alive HTTP connection waits for its next request.
    pub http_idle_timeout_secs: Option<f64>,
    /// Seconds a request body may take, before `http_body_min_rate`
    /// extends it.
    pub http_body_timeout_secs: Option<f64>,
    /// Bytes per second a request body must average past
    /// `http_body_timeout_secs` (0 = none: the whole body within it).
    pub http_body_min_rate: Option<Size>,
    /// Users besides administrators who may read `GET /metrics` and
    /// `GET /_stats/history`.
    pub http_metrics_users: Option<Vec<String>>,
    /// Serve the administrator's console at `/_console/` (default true).
    pub console: Option<bool>,
    /// Native protocol address.
    pub listen: Option<String>,
    /// HTTP API address, or "off".
    pub http_listen: Option<String>,
    /// SMTP (inbound mail) address, or "off" (the default).
    pub smtp_listen: Option<String>,
    /// Message submission (RFC 6409) address, or "off" (the default).
    pub submission_listen: Option<String>,
    /// IMAP (reading mail) address, or "off" (the default).
    pub imap_listen: Option<String>,
    /// IMAP with implicit TLS (RFC 8314, port 993 style), or "off" (the
    /// default); the `[imap]` settings apply.
    pub imaps_listen: Option<String>,
    /// Submission with implicit TLS (RFC 8314, port 465 style), or "off"
    /// (the default); the `[submission]` settings apply.
    pub submissions_listen: Option<String>,
    /// CouchDB replication protocol address, or "off" (the default).
    pub couchdb_listen: Option<String>,
    /// Network compression offered, most preferred first.
    pub compression: Option<Vec<String>>,
    /// The highest zstd level granted to a client asking for one (1 to
    /// 19); any TOML value, so a wrong type is refused naming the setting.
    pub compression_max_level: Option<toml::Value>,
    /// Largest document JSON accepted.
    pub max_document_size: Option<Size>,
    /// Largest attachment accepted.
    pub max_attachment_size: Option<Size>,
    /// Attachment uploads written at once (0 = no limit).
    pub attachment_streams: Option<usize>,
    /// Attachment chunks written back at once, engine-wide (0 = no limit).
    pub attachment_writeback: Option<usize>,
    /// Whether the attachment store tries zstd ("auto", the default) or
    /// stores every attachment as is ("off").
    pub attachment_compression: Option<String>,
    /// The zstd level the attachment store compresses at (1 to 19); any
    /// TOML value, so a wrong type is refused naming the setting.
    pub attachment_compression_level: Option<toml::Value>,
    /// Databases kept open at once; idle ones beyond it are closed.
    pub max_open_databases: Option<usize>,
    #[serde(default)]
    pub tls: TlsSection,
    #[serde(default)]
    pub mail: MailSection,
    #[serde(default)]
    pub smtp: SmtpSection,
    #[serde(default)]
    pub submission: SubmissionSection,
    #[serde(default)]
    pub imap: ImapSection,
    #[serde(default)]
    pub router: RouterSection,
    #[serde(default)]
    pub couchdb: CouchdbSection,
    /// Days a deletion stub is kept before it is purged (default 90):
    /// replicas must replicate more often than this (design.md I45).
    pub purge_interval_days: Option<f64>,
    /// Scheduled server-to-server replication (`peerrepl/config.rs`).
    #[serde(default)]
    pub replication: Vec<crate::peerrepl::ReplicationSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpSection {
    /// SMTP connections served at once.
    pub max_connections: Option<usize>,
    /// Largest message accepted (advertised as SIZE).
    pub max_message_size: Option<Size>,
    /// Most recipients of one message (at least 100).
    pub max_recipients: Option<usize>,
    /// Seconds the server waits for the next command.
    pub command_timeout_secs: Option<f64>,
    /// Seconds the server waits for more of a message after 354.
    pub data_timeout_secs: Option<f64>,
    /// The name in the greeting (default: the host name).
    pub server_name: Option<String>,
}

/// The submission listener's own settings; its limits and timeouts are
/// `[smtp]`'s.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionSection {
    /// Submission connections served at once.
    pub max_connections: Option<usize>,
    /// Passwords without TLS on connections that are not loopback.
    pub plaintext_auth: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImapSection {
    /// IMAP sessions served at once.
    pub max_connections: Option<usize>,
    /// Seconds a session may wait for its next command (IDLE included).
    pub idle_timeout_secs: Option<f64>,
    /// Largest command, literals aside.
    pub max_command_size: Option<Size>,
    /// Largest message APPEND takes.
    pub max_message_size: Option<Size>,
    /// Passwords without TLS on connections that are not loopback.
    pub plaintext_login: Option<bool>,
    /// Milliseconds between an idling session's looks for changes.
    pub idle_poll_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CouchdbSection {
    /// Origins whose pages may call the CouchDB door from a browser
    /// (CORS), each `scheme://host[:port]`, or `"*"` for any; none by
    /// default.
    pub cors_origins: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSection {
    /// Hours a message waits before its sender gets a delay notice.
    pub delay_notice_hours: Option<u32>,
    /// Hours a message waits before a recipient is given up (NDR).
    pub expire_hours: Option<u32>,
    /// Most mail files the router delivers into at once.
    pub workers: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailSection {
    /// How many mail.box databases new messages are spread over.
    pub boxes: Option<u32>,
    /// Largest message accepted for sending (body and attachments).
    pub max_message_size: Option<Size>,
    /// The domains delivered here; mail for others goes out (none: every
    /// domain is local and nothing goes out).
    pub domains: Option<Vec<String>>,
    /// Where mail for other domains goes (`host:port`) without a route
    /// of its own.
    pub smarthost: Option<String>,
    /// Seconds before the second outbound attempt (the router's first
    /// wait, 60, unless set).
    pub outbound_first_retry_secs: Option<f64>,
    /// Seconds a message for another domain may wait before its sender
    /// is told it is delayed (RFC 3464 `Action: delayed`; 4 hours unless
    /// set).
    pub outbound_delay_notice_secs: Option<f64>,
    /// `[[mail.route]]`: per-domain static routes.
    #[serde(default)]
    pub route: Vec<RouteSection>,
}

/// One `[[mail.route]]`: mail for `domain` goes to `host` (`name:port`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    pub domain: String,
    pub host: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain.
    pub cert: Option<PathBuf>,
    /// PEM private key.
    pub key: Option<PathBuf>,
    /// Generate (once) and use a self-signed certificate.
    pub self_signed: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslogSection {
    pub enabled: Option<bool>,
    pub dir: Option<PathBuf>,
    pub style: Option<String>,
    pub tuning: Option<String>,
    pub extent_size: Option<Size>,
    pub max_size: Option<Size>,
    /// Milliseconds a commit waits for space when the log is full before
    /// failing with "log full".
    pub full_wait_ms: Option<u64>,
    /// Fix up, at start-up, every database restart recovery could not
    /// bring back or that failed and was detached from the log (default
    /// true).
    pub auto_fixup: Option<bool>,
    /// Where `folio archive` copies completed extents (archive style);
    /// relative to the data directory, default `archive`.
    pub archive_dir: Option<PathBuf>,
}

/// A byte size: an integer, or a string such as "512MiB".
#[derive(Debug, Clone, Copy)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => parse_size(&s).map(Size).map_err(serde::de::Error::custom),
        }
    }
}

/// Parses "123", "64KiB", "64MiB", "1GiB", "10MB", "2GB".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("invalid size {s:?}: expected a number with an optional unit such as 64MiB")
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "invalid size {s:?}: unknown unit {u:?} (use B, KiB, MiB, GiB, KB, MB or GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("invalid size {s:?}: too large"))
}

fn setting(key: &str, reason: impl Into<String>) -> String {
    format!("invalid setting {key}: {}", reason.into())
}

/// Longest timeout accepted (a week).
const MAX_TIMEOUT_SECS: f64 = 604_800.0;

/// A timeout in seconds, checked: at least 0.1 s and at most a week.
fn timeout(key: &str, secs: Option<f64>) -> Result<Option<Duration>, String> {
    match secs {
        None => Ok(None),
        Some(s) if (0.1..=MAX_TIMEOUT_SECS).contains(&s) => Ok(Some(Duration::from_secs_f64(s))),
        Some(_) => Err(setting(
            key,
            format!("must be between 0.1 and {MAX_TIMEOUT_SECS} seconds"),
        )),
    }
}

/// Reads `path` (if given) or `<data>/folio.toml` (if present).
pub fn load(data_dir: &Path, explicit: Option<&Path>) -> Result<FileConfig, String> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = data_dir.join("folio.toml");
            if !p.exists() {
                return parse_with_env("", std::env::vars());
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_with_env(&text, std::env::vars()).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<FileConfig, String> {
    parse_with_env(text, std::iter::empty())
}

/// Prefix of environment variables that override settings:
/// `FOLIO__WORKER_THREADS=32`, `FOLIO__TRANSLOG__STYLE=linear` (a double
/// underscore separates section and key, so it never clashes with other
/// `FOLIO_` variables).
pub const ENV_PREFIX: &str = "FOLIO__";

/// Parses settings text, then applies overrides from `(name, value)`
/// environment pairs (those starting with [`ENV_PREFIX`]). A value is
/// read as a TOML value if it is one (`32`, `true`, `["fast"]`), else as
/// a string; an override of an unknown key is an error naming the
/// variable.
pub fn parse_with_env(
    text: &str,
    env: impl Iterator<Item = (String, String)>,
) -> Result<FileConfig, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.message().to_string())?;
    let mut from_env = Vec::new();
    for (name, value) in env {
        let Some(key) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path: Vec<String> = key.to_lowercase().split("__").map(str::to_string).collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "environment variable {name}: malformed setting name"
            ));
        }
        let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(value.clone()));
        let (last, sections) = path.split_last().expect("split gives at least one part");
        let mut t = &mut table;
        for sec in sections {
            t = t
                .entry(sec.clone())
                .or_insert_with(|| toml::Value::Table(Default::default()))
                .as_table_mut()
                .ok_or_else(|| format!("environment variable {name}: {sec} is not a section"))?;
        }
        t.insert(last.clone(), parsed);
        from_env.push(name);
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            let msg = e.message().to_string();
            if from_env.is_empty() {
                msg
            } else {
                format!(
                    "{msg} (settings overridden from the environment: {})",
                    from_env.join(", ")
                )
            }
        })
}

impl FileConfig {
    /// The views layer's settings, validated.
    pub fn view_config(&self) -> Result<views::ViewConfig, String> {
        let mut v = views::ViewConfig::default();
        if let Some(d) = &self.view_rebuild_dir {
            v.rebuild_dir = d.clone();
        }
        if let Some(Size(n)) = self.view_rebuild_memory {
            if n < 1 << 20 {
                return Err(setting("view_rebuild_memory", "must be at least 1MiB"));
            }
            v.rebuild_memory =
                usize::try_from(n).map_err(|_| setting("view_rebuild_memory", "too large"))?;
        }
        Ok(v)
    }

    /// Turns the file into engine settings, validating every value.
    pub fn engine_config(&self, data_dir: &Path) -> Result<EngineConfig, String> {
        let mut cfg = EngineConfig::new(data_dir);
        if let Some(Size(n)) = self.buffer_pool_size {
            if n < 1 << 20 {
                return Err(setting("buffer_pool_size", "must be at least 1MiB"));
            }
            cfg.buffer_pool_size =
                usize::try_from(n).map_err(|_| setting("buffer_pool_size", "too large"))?;
        }
        if let Some(s) = self.flush_interval_secs {
            if !(0.01..=3600.0).contains(&s) {
                return Err(setting(
                    "flush_interval_secs",
                    "must be between 0.01 and 3600",
                ));
            }
            cfg.flush_interval = Duration::from_secs_f64(s);
        }
        cfg.log = self.translog.log_config(data_dir)?;
        if let Some(on) = self.translog.auto_fixup {
            cfg.auto_fixup = on;
        }
        if let Some(n) = self.attachment_writeback {
            if n > 1024 {
                return Err(setting("attachment_writeback", "must be at most 1024"));
            }
            cfg.attachment_writeback = n;
        }
        if let Some(v) = &self.attachment_compression {
            cfg.attachment_compression = nsf::AttachmentCompression::parse(v)
                .map_err(|e| setting("attachment_compression", e))?;
        }
        if let Some(v) = &self.attachment_compression_level {
            let n = v.as_integer().ok_or_else(|| {
                setting(
                    "attachment_compression_level",
                    format!("{v}: expected a zstd level from 1 to 19"),
                )
            })?;
            cfg.attachment_compression_level = nsf::CompressionLevel::new(n)
                .map_err(|e| setting("attachment_compression_level", e))?;
        }
        if let Some(n) = self.max_open_databases {
            if !(1..=1_000_000).contains(&n) {
                return Err(setting(
                    "max_open_databases",
                    "must be between 1 and 1000000",
                ));
            }
            cfg.max_open_databases = n;
        }
        Ok(cfg)
    }
}

impl FileConfig {
    /// The stub purge interval (`purge_interval_days`), validated: at
    /// least a day, at most ten years.
    pub fn purge_interval(&self) -> Result<Duration, String> {
        match self.purge_interval_days {
            None => Ok(crate::peerrepl::purge::DEFAULT_PURGE_INTERVAL),
            Some(d) if (1.0..=3650.0).contains(&d) => Ok(Duration::from_secs_f64(d * 86_400.0)),
            Some(_) => Err(setting("purge_interval_days", "must be between 1 and 3650")),
        }
    }

    /// The mail settings (`[mail]`), validated.
    pub fn mail_config(&self) -> Result<mail::MailConfig, String> {
        let boxes = self.mail.boxes.unwrap_or(mail::MailConfig::DEFAULT_BOXES);
        let max = self
            .mail
            .max_message_size
            .map_or(mail::MailConfig::DEFAULT_MAX_MESSAGE_BYTES, |Size(n)| n);
        mail::MailConfig::new(boxes, max).map_err(|e| e.to_string())
    }

    /// This server's mail domains and the outbound routes, validated.
    pub fn outbound_config(&self) -> Result<mail::outbound::OutboundConfig, String> {
        let m = &self.mail;
        let routes = m
            .route
            .iter()
            .map(|r| mail::outbound::Route {
                domain: r.domain.clone(),
                host: r.host.clone(),
            })
            .collect();
        let c = mail::outbound::OutboundConfig::new(
            m.domains.clone().unwrap_or_default(),
            m.smarthost.clone(),
            routes,
        )
        .map_err(|e| e.to_string())?;
        let c = match timeout(
            "mail.outbound_first_retry_secs",
            m.outbound_first_retry_secs,
        )? {
            Some(t) => c.with_first_retry(t),
            None => c,
        };
        match timeout(
            "mail.outbound_delay_notice_secs",
            m.outbound_delay_notice_secs,
        )? {
            Some(t) => Ok(c.with_delay_notice(t)),
            None => Ok(c),
        }
    }

    /// The router settings (`[router]`), validated.
    pub fn router_config(&self) -> Result<mail::RouterConfig, String> {
        let r = &self.router;
        mail::RouterConfig::new(
            r.delay_notice_hours
                .unwrap_or(mail::RouterConfig::DEFAULT_DELAY_NOTICE_HOURS),
            r.expire_hours
                .unwrap_or(mail::RouterConfig::DEFAULT_EXPIRE_HOURS),
        )
        .and_then(|c| c.with_workers(r.workers.unwrap_or(mail::RouterConfig::DEFAULT_WORKERS)))
        .map_err(|e| e.to_string())
    }
}

impl FileConfig {
    /// The server's settings, validated.
    pub fn server_settings(&self, data_dir: &Path) -> Result<server::ServerSettings, String> {
        let mut s = server::ServerSettings::default();
        if let Some(n) = self.worker_threads {
            if !(1..=4096).contains(&n) {
                return Err(setting("worker_threads", "must be between 1 and 4096"));
            }
            s.worker_threads = n;
        }
        if let Some(n) = self.io_threads {
            if !(1..=256).contains(&n) {
                return Err(setting("io_threads", "must be between 1 and 256"));
            }
            s.io_threads = n;
        }
        if let Some(n) = self.max_connections {
            if n == 0 {
                return Err(setting("max_connections", "must be at least 1"));
            }
            s.native.max_connections = n;
        }
        if let Some(n) = self.http_max_connections {
            if n == 0 {
                return Err(setting("http_max_connections", "must be at least 1"));
            }
            s.http.max_connections = n;
        }
        self.apply_timeouts(&mut s)?;
        if let Some(users) = &self.http_metrics_users {
            if let Some(u) = users.iter().find(|u| u.trim().is_empty()) {
                return Err(setting(
                    "http_metrics_users",
                    format!("{u:?} is not a user name"),
                ));
            }
            s.http.metrics_users = users.clone();
        }
        if let Some(on) = self.console {
            s.http.console = on;
        }
        if let Some(a) = &self.listen {
            s.listen = socket_addr("listen", a)?;
        }
        match self.http_listen.as_deref() {
            Some("off") => s.http_listen = None,
            Some(a) => s.http_listen = Some(socket_addr("http_listen", a)?),
            None => {}
        }
        match self.couchdb_listen.as_deref() {
            Some("off") | None => s.couchdb_listen = None,
            Some(a) => s.couchdb_listen = Some(socket_addr("couchdb_listen", a)?),
        }
        if let Some(origins) = &self.couchdb.cors_origins {
            s.couchdb_cors = origins
                .iter()
                .map(|o| cors_origin(o))
                .collect::<Result<_, _>>()?;
        }
        if let Some(list) = &self.compression {
            s.native.compression = list
                .iter()
                .map(|m| match m.as_str() {
                    "off" => Ok(protocol::Compression::Off),
                    "fast" => Ok(protocol::Compression::Fast),
                    "strong" => Ok(protocol::Compression::Strong),
                    other => Err(setting(
                        "compression",
                        format!("{other:?} is not one of off, fast, strong"),
                    )),
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = &self.compression_max_level {
            let level = v.as_integer().map(protocol::ZstdLevel::new);
            s.native.max_strong_level = match level {
                Some(Ok(l)) => l,
                _ => {
                    return Err(setting(
                        "compression_max_level",
                        format!("{v}: expected a zstd level from 1 to 19"),
                    ))
                }
            };
        }
        s.limits = self.limits()?;
        s.smtp = self.smtp_settings(s.native.stall_timeout)?;
        s.submission = self.submission_settings(s.native.stall_timeout)?;
        s.outbound = self.outbound_config()?;
        s.imap = self.imap_settings("imap_listen", &self.imap_listen, s.native.stall_timeout)?;
        s.imaps = self
            .imap_settings("imaps_listen", &self.imaps_listen, s.native.stall_timeout)?
            .map(|i| server::imap::ImapSettings {
                implicit_tls: true,
                ..i
            });
        s.submissions = self
            .submission_settings_on(
                "submissions_listen",
                &self.submissions_listen,
                s.native.stall_timeout,
            )?
            .map(|i| server::smtp::SmtpSettings {
                implicit_tls: true,
                ..i
            });
        let rel = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                data_dir.join(p)
            }
        };
        s.tls = server::tls::TlsSettings {
            cert: self.tls.cert.as_ref().map(rel),
            key: self.tls.key.as_ref().map(rel),
            self_signed: self.tls.self_signed.unwrap_or(false),
        };
        if s.tls.cert.is_some() != s.tls.key.is_some() {
            return Err(setting("tls", "cert and key must be given together"));
        }
        if s.tls.self_signed && s.tls.cert.is_some() {
            return Err(setting(
                "tls.self_signed",
                "cannot be combined with tls.cert",
            ));
        }
        Ok(s)
    }
}

impl FileConfig {
    /// The limits on what one request may carry, validated (the server's,
    /// and the embedded commands', which run the same service).
    pub fn limits(&self) -> Result<server::Limits, String> {
        let mut limits = server::Limits::default();
        if let Some(Size(n)) = self.max_document_size {
            if !(1 << 10..=64 << 20).contains(&n) {
                return Err(setting(
                    "max_document_size",
                    "must be between 1KiB and 64MiB",
                ));
            }
            limits.max_document_bytes = n as usize;
        }
        if let Some(Size(n)) = self.max_attachment_size {
            if n == 0 {
                return Err(setting("max_attachment_size", "must be above 0"));
            }
            limits.max_attachment_bytes = n;
        }
        if let Some(n) = self.attachment_streams {
            limits.attachment_streams = n;
        }
        limits.mail = self.mail_config()?;
        Ok(limits)
    }

    /// The SMTP listener's settings, validated: `None` unless
    /// `smtp_listen` names an address.
    fn smtp_settings(
        &self,
        stall_timeout: Duration,
    ) -> Result<Option<server::smtp::SmtpSettings>, String> {
        let listen = match self.smtp_listen.as_deref() {
            None | Some("off") => return Ok(None),
            Some(a) => socket_addr("smtp_listen", a)?,
        };
        self.smtp_limits(listen, stall_timeout).map(Some)
    }

    /// The submission listener's settings, validated: `None` unless
    /// `submission_listen` names an address. Its limits and timeouts are
    /// `[smtp]`'s; `[submission]` has its connection limit and sign-in
    /// rule.
    fn submission_settings(
        &self,
        stall_timeout: Duration,
    ) -> Result<Option<server::smtp::SmtpSettings>, String> {
        self.submission_settings_on("submission_listen", &self.submission_listen, stall_timeout)
    }

    /// The submission settings for a listener on the address `key` names
    /// (`submission_listen` or `submissions_listen`).
    fn submission_settings_on(
        &self,
        key: &str,
        address: &Option<String>,
        stall_timeout: Duration,
    ) -> Result<Option<server::smtp::SmtpSettings>, String> {
        let listen = match address.as_deref() {
            None | Some("off") => return Ok(None),
            Some(a) => socket_addr(key, a)?,
        };
        let mut s = self.smtp_limits(listen, stall_timeout)?;
        let c = &self.submission;
        if let Some(n) = c.max_connections {
            if !(1..=100_000).contains(&n) {
                return Err(setting(
                    "submission.max_connections",
                    "must be between 1 and 100000",
                ));
            }
            s.max_connections = n;
        }
        s.plaintext_auth = c.plaintext_auth.unwrap_or(false);
        Ok(Some(s))
    }

    /// The `[smtp]` limits and timeouts for a listener on `listen`.
    fn smtp_limits(
        &self,
        listen: String,
        stall_timeout: Duration,
    ) -> Result<server::smtp::SmtpSettings, String> {
        let c = &self.smtp;
        let mut s = server::smtp::SmtpSettings {
            listen,
            stall_timeout,
            mail: self.mail_config()?,
            ..Default::default()
        };
        if let Some(n) = c.max_connections {
            if !(1..=100_000).contains(&n) {
                return Err(setting(
                    "smtp.max_connections",
                    "must be between 1 and 100000",
                ));
            }
            s.max_connections = n;
        }
        if let Some(Size(n)) = c.max_message_size {
            if !(1 << 10..=4 << 30).contains(&n) {
                return Err(setting(
                    "smtp.max_message_size",
                    "must be between 1KiB and 4GiB",
                ));
            }
            s.max_message_size = n;
        }
        if let Some(n) = c.max_recipients {
            if !(mail::smtp::MIN_RECIPIENTS..=mail::MAX_RECIPIENTS).contains(&n) {
                return Err(setting(
                    "smtp.max_recipients",
                    format!(
                        "must be between {} (RFC 5321 §4.5.3.1.8) and {}",
                        mail::smtp::MIN_RECIPIENTS,
                        mail::MAX_RECIPIENTS
                    ),
                ));
            }
            s.max_recipients = n;
        }
        if let Some(t) = timeout("smtp.command_timeout_secs", c.command_timeout_secs)? {
            s.command_timeout = t;
        }
        if let Some(t) = timeout("smtp.data_timeout_secs", c.data_timeout_secs)? {
            s.data_timeout = t;
        }
        if let Some(name) = &c.server_name {
            let printable = name.bytes().all(|b| b.is_ascii_graphic());
            if name.is_empty() || name.len() > 255 || !printable {
                return Err(setting(
                    "smtp.server_name",
                    "must be 1 to 255 printable ASCII characters without spaces",
                ));
            }
            s.server_name = Some(name.clone());
        }
        Ok(s)
    }

    /// An IMAP listener's settings, validated: `None` unless the setting
    /// `key` (`imap_listen` or `imaps_listen`) names an address.
    fn imap_settings(
        &self,
        key: &str,
        address: &Option<String>,
        stall_timeout: Duration,
    ) -> Result<Option<server::imap::ImapSettings>, String> {
        let listen = match address.as_deref() {
            None | Some("off") => return Ok(None),
            Some(a) => socket_addr(key, a)?,
        };
        let c = &self.imap;
        let mut s = server::imap::ImapSettings {
            listen,
            stall_timeout,
            ..Default::default()
        };
        if let Some(n) = c.max_connections {
            if !(1..=100_000).contains(&n) {
                return Err(setting(
                    "imap.max_connections",
                    "must be between 1 and 100000",
                ));
            }
            s.max_connections = n;
        }
        if let Some(t) = timeout("imap.idle_timeout_secs", c.idle_timeout_secs)? {
            s.idle_timeout = t;
        }
        if let Some(Size(n)) = c.max_command_size {
            if !(1 << 10..=1 << 20).contains(&n) {
                return Err(setting(
                    "imap.max_command_size",
                    "must be between 1KiB and 1MiB",
                ));
            }
            s.max_command_size = n as u32;
        }
        if let Some(Size(n)) = c.max_message_size {
            if !(1 << 10..=1 << 30).contains(&n) {
                return Err(setting(
                    "imap.max_message_size",
                    "must be between 1KiB and 1GiB",
                ));
            }
            s.max_message_size = n as u32;
        }
        if let Some(b) = c.plaintext_login {
            s.plaintext_login = b;
        }
        if let Some(ms) = c.idle_poll_ms {
            if !(10..=60_000).contains(&ms) {
                return Err(setting("imap.idle_poll_ms", "must be between 10 and 60000"));
            }
            s.idle_poll = Duration::from_millis(ms);
        }
        Ok(Some(s))
    }

    /// The connection timeouts and the shutdown grace period, validated.
    fn apply_timeouts(&self, s: &mut server::ServerSettings) -> Result<(), String> {
        if let Some(t) = timeout("handshake_timeout_secs", self.handshake_timeout_secs)? {
            s.native.handshake_timeout = t;
        }
        match self.idle_timeout_secs {
            Some(0.0) => s.native.idle_timeout = None,
            secs => {
                if let Some(t) = timeout("idle_timeout_secs", secs)
                    .map_err(|e| format!("{e} (or 0 for no idle timeout)"))?
                {
                    s.native.idle_timeout = Some(t);
                }
            }
        }
        if let Some(t) = timeout("stall_timeout_secs", self.stall_timeout_secs)? {
            s.native.stall_timeout = t;
            s.http.stall_timeout = t;
        }
        if let Some(t) = timeout("http_header_timeout_secs", self.http_header_timeout_secs)? {
            s.http.header_timeout = t;
        }
        if let Some(t) = timeout("http_idle_timeout_secs", self.http_idle_timeout_secs)? {
            s.http.idle_timeout = t;
        }
        if let Some(t) = timeout("http_body_timeout_secs", self.http_body_timeout_secs)? {
            s.http.body_timeout = t;
        }
        if let Some(Size(n)) = self.http_body_min_rate {
            s.http.body_min_rate = n;
        }
        if let Some(g) = self.shutdown_grace_secs {
            if !(0.0..=3600.0).contains(&g) {
                return Err(setting(
                    "shutdown_grace_secs",
                    "must be between 0 and 3600 seconds",
                ));
            }
            s.shutdown_grace = Duration::from_secs_f64(g);
        }
        Ok(())
    }
}

/// One `[couchdb] cors_origins` entry: `"*"`, or an origin exactly as a
/// browser sends it (`scheme://host[:port]`, no path, no trailing slash).
fn cors_origin(o: &str) -> Result<String, String> {
    let bad = |why: &str| setting("couchdb.cors_origins", format!("{o:?}: {why}"));
    if o == "*" {
        return Ok(o.to_string());
    }
    let Some((scheme, rest)) = o.split_once("://") else {
        return Err(bad("an origin is scheme://host[:port]"));
    };
    if !matches!(scheme, "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ', '@']) {
        return Err(bad("an origin has a host and no path, query or user"));
    }
    if o != o.to_ascii_lowercase() {
        return Err(bad("write an origin in lower case, as browsers send it"));
    }
    Ok(o.to_string())
}

/// Checks an address setting ("127.0.0.1:1352", "[::1]:8080", "localhost:1352").
fn socket_addr(key: &str, a: &str) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    match a.to_socket_addrs().map(|mut it| it.next().is_some()) {
        Ok(true) => Ok(a.to_string()),
        _ => Err(setting(
            key,
            format!("{a:?} is not an address such as 127.0.0.1:1352"),
        )),
    }
}

impl TranslogSection {
    fn log_config(&self, data_dir: &Path) -> Result<Option<LogConfig>, String> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let dir = match &self.dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => data_dir.join(d),
            None => data_dir.join("translog"),
        };
        let mut lc = LogConfig::new(dir);
        if let Some(s) = &self.style {
            lc.style = match s.as_str() {
                "circular" => LogStyle::Circular,
                "linear" => LogStyle::Linear,
                "archive" => LogStyle::Archive,
                other => {
                    return Err(setting(
                        "translog.style",
                        format!("{other:?} is not one of circular, linear, archive"),
                    ))
                }
            };
        }
        lc.archive_dir = self.archive_dir(data_dir, &lc)?;
        if let Some(t) = &self.tuning {
            lc.tuning = match t.as_str() {
                "runtime" => Tuning::Runtime,
                "standard" => Tuning::Standard,
                "restart" => Tuning::Restart,
                other => {
                    return Err(setting(
                        "translog.tuning",
                        format!("{other:?} is not one of runtime, standard, restart"),
                    ))
                }
            };
        }
        if let Some(Size(n)) = self.extent_size {
            lc.extent_size = n;
        }
        if let Some(Size(n)) = self.max_size {
            lc.max_size = n;
        }
        if let Some(ms) = self.full_wait_ms {
            lc.full_wait = Duration::from_millis(ms);
        }
        lc.validate()
            .map_err(|e| setting("translog", e.to_string()))?;
        Ok(Some(lc))
    }

    /// `translog.archive_dir`, for archive style only (default
    /// `<data>/archive`); never the log directory itself.
    fn archive_dir(&self, data_dir: &Path, lc: &LogConfig) -> Result<Option<PathBuf>, String> {
        if lc.style != LogStyle::Archive {
            return match &self.archive_dir {
                Some(_) => Err(setting(
                    "translog.archive_dir",
                    format!(
                        "is set, but translog.style is {:?}; archiving needs \"archive\"",
                        lc.style.as_str()
                    ),
                )),
                None => Ok(None),
            };
        }
        let dir = match &self.archive_dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => data_dir.join(d),
            None => data_dir.join("archive"),
        };
        if dir == lc.dir {
            return Err(setting(
                "translog.archive_dir",
                "must not be the log directory (translog.dir) itself",
            ));
        }
        Ok(Some(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let e = parse("buffer_pool_sise = 5").unwrap_err();
        assert!(e.contains("buffer_pool_sise"), "{e}");
        let e = parse("[translog]\nenabeld = true").unwrap_err();
        assert!(e.contains("enabeld"), "{e}");
    }

    #[test]
    fn auto_fixup_is_on_by_default_and_must_be_a_boolean() {
        let on = parse("").unwrap().engine_config(Path::new("/d")).unwrap();
        assert!(on.auto_fixup);
        let off = parse("[translog]\nauto_fixup = false").unwrap();
        assert!(!off.engine_config(Path::new("/d")).unwrap().auto_fixup);
        let e = parse("[translog]\nauto_fixup = \"yes\"").unwrap_err();
        assert!(e.contains("expected a boolean"), "{e}");
    }

    #[test]
    fn attachment_compression_is_auto_or_off() {
        let cfg = |text: &str| parse(text).unwrap().engine_config(Path::new("/d"));
        use nsf::AttachmentCompression::{Auto, Off};
        assert_eq!(cfg("").unwrap().attachment_compression, Auto);
        assert_eq!(
            cfg("attachment_compression = \"off\"")
                .unwrap()
                .attachment_compression,
            Off
        );
        let e = cfg("attachment_compression = \"lz4\"").unwrap_err();
        assert!(
            e.contains("attachment_compression") && e.contains("lz4"),
            "{e}"
        );
    }

    #[test]
    fn attachment_compression_level_is_a_zstd_level_from_1_to_19() {
        let cfg = |text: &str| parse(text)?.engine_config(Path::new("/d"));
        assert_eq!(cfg("").unwrap().attachment_compression_level.get(), 3);
        let nine = cfg("attachment_compression_level = 9").unwrap();
        assert_eq!(nine.attachment_compression_level.get(), 9);
        for bad in ["0", "20", "-3"] {
            let e = cfg(&format!("attachment_compression_level = {bad}")).unwrap_err();
            assert!(
                e.contains("attachment_compression_level")
                    && e.contains(bad)
                    && e.contains("1 to 19"),
                "{e}"
            );
        }
        let e = cfg("attachment_compression_level = \"max\"").unwrap_err();
        assert!(e.contains("attachment_compression_level"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let c = parse("[translog]\nstyle = \"spiral\"").unwrap();
        let e = c.engine_config(Path::new("/d")).unwrap_err();
        assert!(e.contains("translog.style") && e.contains("spiral"), "{e}");
        let e = parse("buffer_pool_size = \"12 parsecs\"").unwrap_err();
        assert!(e.contains("unknown unit"), "{e}");
    }

    #[test]
    fn archive_style_and_its_directory() {
        let lc = |text: &str| {
            parse(text)
                .unwrap()
                .engine_config(Path::new("/d"))
                .map(|e| e.log.unwrap())
        };
        let a = lc("[translog]\nstyle = \"archive\"").unwrap();
        assert_eq!(a.style, LogStyle::Archive);
        assert_eq!(a.archive_dir.as_deref(), Some(Path::new("/d/archive")));
        let b = lc("[translog]\nstyle = \"archive\"\narchive_dir = \"/backup/log\"").unwrap();
        assert_eq!(b.archive_dir.as_deref(), Some(Path::new("/backup/log")));
        assert_eq!(lc("[translog]").unwrap().archive_dir, None);
        let e = lc("[translog]\narchive_dir = \"x\"").unwrap_err();
        assert!(
            e.contains("translog.archive_dir") && e.contains("circular"),
            "{e}"
        );
        let e = lc("[translog]\nstyle = \"archive\"\narchive_dir = \"translog\"").unwrap_err();
        assert!(e.contains("log directory"), "{e}");
        let e = parse("[translog]\narchive_dri = \"x\"").unwrap_err();
        assert!(e.contains("archive_dri"), "{e}");
    }

    #[test]
    fn sizes_and_defaults() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        let c = parse(
            "buffer_pool_size = \"64MiB\"\n[translog]\ntuning = \"restart\"\nmax_size = \"256MiB\"",
        )
        .unwrap();
        let e = c.engine_config(Path::new("/d")).unwrap();
        assert_eq!(e.buffer_pool_size, 64 << 20);
        let lc = e.log.unwrap();
        assert_eq!(lc.max_size, 256 << 20);
        assert_eq!(lc.dir, Path::new("/d/translog"));
        let off = parse("[translog]\nenabled = false")
            .unwrap()
            .engine_config(Path::new("/d"))
            .unwrap();
        assert!(off.log.is_none());
    }

    #[test]
    fn mail_settings() {
        let c = parse("").unwrap().mail_config().unwrap();
        assert_eq!((c.boxes(), c.max_message_bytes()), (4, 32 << 20));
        let c = parse("[mail]\nboxes = 1\nmax_message_size = \"1MiB\"")
            .unwrap()
            .mail_config()
            .unwrap();
        assert_eq!((c.boxes(), c.max_message_bytes()), (1, 1 << 20));
        let e = parse("[mail]\nboxes = 0")
            .unwrap()
            .mail_config()
            .unwrap_err();
        assert!(e.contains("mail.boxes"), "{e}");
        let e = parse("[mail]\nbox = 2").unwrap_err();
        assert!(e.contains("box"), "{e}");
        let env = [("FOLIO__MAIL__BOXES".to_string(), "2".to_string())];
        let c = parse_with_env("", env.into_iter()).unwrap();
        assert_eq!(c.mail_config().unwrap().boxes(), 2);
    }

    #[test]
    fn router_settings() {
        let c = parse("").unwrap().router_config().unwrap();
        assert_eq!(c, mail::RouterConfig::default());
        let c = parse("[router]\ndelay_notice_hours = 1\nexpire_hours = 2")
            .unwrap()
            .router_config()
            .unwrap();
        assert_eq!(c.expire().as_secs(), 7200);
        let e = parse("[router]\nexpire_hours = 2")
            .unwrap()
            .router_config()
            .unwrap_err();
        assert!(e.contains("router.delay_notice_hours"), "{e}");
        let e = parse("[router]\nexpire = 2").unwrap_err();
        assert!(e.contains("expire"), "{e}");
        let c = parse("[router]\nworkers = 4")
            .unwrap()
            .router_config()
            .unwrap();
        assert_eq!(c.workers(), 4);
        let e = parse("[router]\nworkers = 0")
            .unwrap()
            .router_config()
            .unwrap_err();
        assert!(e.contains("router.workers"), "{e}");
    }

    #[test]
    fn open_database_limit() {
        let d = Path::new("/d");
        assert_eq!(
            parse("")
                .unwrap()
                .engine_config(d)
                .unwrap()
                .max_open_databases,
            1000
        );
        let c = parse("max_open_databases = 500").unwrap();
        assert_eq!(c.engine_config(d).unwrap().max_open_databases, 500);
        let e = parse("max_open_databases = 0")
            .unwrap()
            .engine_config(d)
            .unwrap_err();
        assert!(e.contains("max_open_databases"), "{e}");
    }

    #[test]
    fn server_settings_are_checked_and_named() {
        let c = parse("worker_threads = 8\nmax_connections = 10\nlisten = \"127.0.0.1:0\"\nhttp_listen = \"off\"\ncompression = [\"fast\"]").unwrap();
        let s = c.server_settings(Path::new("/d")).unwrap();
        assert_eq!((s.worker_threads, s.native.max_connections), (8, 10));
        assert!(s.http_listen.is_none());
        assert_eq!(s.native.compression, vec![protocol::Compression::Fast]);
        assert_eq!(s.native.max_strong_level, protocol::ZstdLevel::MAX);
        let nine = parse("compression_max_level = 9").unwrap();
        let nine = nine.server_settings(Path::new("/d")).unwrap();
        assert_eq!(nine.native.max_strong_level.get(), 9);
        for (text, key) in [
            ("worker_threads = 0", "worker_threads"),
            ("listen = \"nowhere\"", "listen"),
            ("compression = [\"zip\"]", "compression"),
            ("compression_max_level = 20", "compression_max_level"),
            ("compression_max_level = 0", "compression_max_level"),
            ("compression_max_level = \"high\"", "compression_max_level"),
            ("[tls]\ncert = \"c.pem\"", "tls"),
        ] {
            let e = parse(text)
                .unwrap()
                .server_settings(Path::new("/d"))
                .unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        assert!(parse("[tls]\nself_sined = true")
            .unwrap_err()
            .contains("self_sined"));
    }

    #[test]
    fn metrics_readers() {
        let s = parse("http_metrics_users = [\"prom\"]")
            .unwrap()
            .server_settings(Path::new("/d"))
            .unwrap();
        assert_eq!(s.http.metrics_users, vec!["prom".to_string()]);
        let e = parse("http_metrics_users = [\" \"]")
            .unwrap()
            .server_settings(Path::new("/d"))
            .unwrap_err();
        assert!(e.contains("http_metrics_users"), "{e}");
        assert!(parse("http_metrics_user = [\"prom\"]")
            .unwrap_err()
            .contains("http_metrics_user"));
        assert!(parse("http_metrics_users = \"prom\"").is_err());
        let on = parse("").unwrap().server_settings(Path::new("/d")).unwrap();
        assert!(on.http.console);
        let off = parse("console = false").unwrap();
        assert!(!off.server_settings(Path::new("/d")).unwrap().http.console);
        let e = parse("console = \"no\"").unwrap_err();
        assert!(e.contains("expected a boolean"), "{e}");
    }

    #[test]
    fn connection_timeouts_and_limits() {
        let c = parse(
            "http_max_connections = 50\nhandshake_timeout_secs = 2.5\nidle_timeout_secs = 0\n\
             stall_timeout_secs = 7\nshutdown_grace_secs = 0\nhttp_header_timeout_secs = 1\n\
             http_idle_timeout_secs = 30\nhttp_body_timeout_secs = 4\nhttp_body_min_rate = \"2KiB\"",
        )
        .unwrap();
        let s = c.server_settings(Path::new("/d")).unwrap();
        assert_eq!(s.http.max_connections, 50);
        assert_eq!(s.native.handshake_timeout, Duration::from_millis(2_500));
        assert_eq!(s.native.idle_timeout, None);
        assert_eq!(s.native.stall_timeout, Duration::from_secs(7));
        assert_eq!(s.http.stall_timeout, Duration::from_secs(7));
        assert_eq!(s.shutdown_grace, Duration::ZERO);
        assert_eq!(s.http.header_timeout, Duration::from_secs(1));
        assert_eq!(s.http.idle_timeout, Duration::from_secs(30));
        assert_eq!(s.http.body_timeout, Duration::from_secs(4));
        assert_eq!(s.http.body_min_rate, 2 << 10);
        let d = parse("").unwrap().server_settings(Path::new("/d")).unwrap();
        assert_eq!(d.shutdown_grace, Duration::from_secs(10));
        assert_eq!(d.native.idle_timeout, Some(Duration::from_secs(3_600)));
        for (text, key) in [
            ("http_max_connections = 0", "http_max_connections"),
            ("handshake_timeout_secs = 0", "handshake_timeout_secs"),
            ("idle_timeout_secs = -1", "idle_timeout_secs"),
            ("http_header_timeout_secs = 1e9", "http_header_timeout_secs"),
            ("shutdown_grace_secs = 7200", "shutdown_grace_secs"),
        ] {
            let e = parse(text)
                .unwrap()
                .server_settings(Path::new("/d"))
                .unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        assert!(parse("http_header_timeout = 5")
            .unwrap_err()
            .contains("http_header_timeout"));
    }

    #[test]
    fn couchdb_listen_is_off_unless_set() {
        let d = Path::new("/d");
        let settings = |text: &str| parse(text).unwrap().server_settings(d).unwrap();
        assert!(settings("").couchdb_listen.is_none(), "off by default");
        assert!(settings("couchdb_listen = \"off\"")
            .couchdb_listen
            .is_none());
        let on = settings("couchdb_listen = \"127.0.0.1:5984\"");
        assert_eq!(on.couchdb_listen.as_deref(), Some("127.0.0.1:5984"));
        let env = [(
            "FOLIO__COUCHDB_LISTEN".to_string(),
            "127.0.0.1:5984".to_string(),
        )];
        let c = parse_with_env("", env.into_iter()).unwrap();
        let s = c.server_settings(d).unwrap();
        assert_eq!(s.couchdb_listen.as_deref(), Some("127.0.0.1:5984"));
        let e = parse("couchdb_listen = \"nowhere\"")
            .unwrap()
            .server_settings(d)
            .unwrap_err();
        assert!(e.contains("couchdb_listen"), "{e}");
    }

    #[test]
    fn imap_settings() {
        let d = Path::new("/d");
        assert!(parse("")
            .unwrap()
            .server_settings(d)
            .unwrap()
            .imap
            .is_none());
        let off = parse("imap_listen = \"off\"").unwrap();
        assert!(off.server_settings(d).unwrap().imap.is_none());
        let c = parse(
            "imap_listen = \"127.0.0.1:1143\"\nstall_timeout_secs = 9\n[imap]\n\
             max_connections = 7\nidle_timeout_secs = 60\nmax_command_size = \"8KiB\"\n\
             max_message_size = \"2MiB\"\nplaintext_login = true\nidle_poll_ms = 20",
        )
        .unwrap();
        let s = c.server_settings(d).unwrap().imap.unwrap();
        assert_eq!(s.listen, "127.0.0.1:1143");
        assert_eq!(s.max_connections, 7);
        assert_eq!(s.idle_timeout, Duration::from_secs(60));
        assert_eq!((s.max_command_size, s.max_message_size), (8 << 10, 2 << 20));
        assert!(s.plaintext_login);
        assert_eq!(s.idle_poll, Duration::from_millis(20));
        assert_eq!(s.stall_timeout, Duration::from_secs(9));
        let env = [(
            "FOLIO__IMAP_LISTEN".to_string(),
            "127.0.0.1:1143".to_string(),
        )];
        let c = parse_with_env("", env.into_iter()).unwrap();
        let s = c.server_settings(d).unwrap().imap.unwrap();
        assert_eq!(s.listen, "127.0.0.1:1143");
        assert!(!s.plaintext_login, "off by default");
        assert!(!s.implicit_tls);
        // The implicit-TLS twins: their own addresses, the same sections.
        let c = parse(
            "imaps_listen = \"127.0.0.1:1993\"\nsubmissions_listen = \"127.0.0.1:1465\"\n\
             [imap]\nmax_connections = 9\n[submission]\nmax_connections = 8",
        )
        .unwrap();
        let all = c.server_settings(d).unwrap();
        assert!(all.imap.is_none() && all.submission.is_none());
        let imaps = all.imaps.unwrap();
        assert_eq!(
            (
                imaps.listen.as_str(),
                imaps.max_connections,
                imaps.implicit_tls
            ),
            ("127.0.0.1:1993", 9, true)
        );
        let subs = all.submissions.unwrap();
        assert_eq!(
            (
                subs.listen.as_str(),
                subs.max_connections,
                subs.implicit_tls
            ),
            ("127.0.0.1:1465", 8, true)
        );
        let e = parse("imaps_listen = \"nowhere\"")
            .unwrap()
            .server_settings(d)
            .unwrap_err();
        assert!(e.contains("imaps_listen"), "{e}");
        let on = "imap_listen = \"127.0.0.1:1143\"\n";
        for (text, key) in [
            ("[imap]\nmax_connections = 0", "imap.max_connections"),
            ("[imap]\nidle_timeout_secs = 0", "imap.idle_timeout_secs"),
            ("[imap]\nmax_command_size = 10", "imap.max_command_size"),
            (
                "[imap]\nmax_message_size = \"2GiB\"",
                "imap.max_message_size",
            ),
            ("[imap]\nidle_poll_ms = 1", "imap.idle_poll_ms"),
        ] {
            let e = parse(&format!("{on}{text}"))
                .unwrap()
                .server_settings(d)
                .unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        let e = parse("imap_listen = \"nowhere\"")
            .unwrap()
            .server_settings(d)
            .unwrap_err();
        assert!(e.contains("imap_listen"), "{e}");
        assert!(parse("[imap]\nmax_sesions = 1")
            .unwrap_err()
            .contains("max_sesions"));
    }

    #[test]
    fn smtp_settings() {
        let d = Path::new("/d");
        assert!(parse("")
            .unwrap()
            .server_settings(d)
            .unwrap()
            .smtp
            .is_none());
        let off = parse("smtp_listen = \"off\"").unwrap();
        assert!(off.server_settings(d).unwrap().smtp.is_none());
        let c = parse(
            "smtp_listen = \"127.0.0.1:2525\"\nstall_timeout_secs = 9\n[smtp]\n\
             max_connections = 7\nmax_message_size = \"2MiB\"\nmax_recipients = 200\n\
             command_timeout_secs = 1.5\ndata_timeout_secs = 2\nserver_name = \"mx.example\"\n\
             [mail]\nboxes = 2",
        )
        .unwrap();
        let s = c.server_settings(d).unwrap().smtp.unwrap();
        assert_eq!(s.listen, "127.0.0.1:2525");
        assert_eq!((s.max_connections, s.max_recipients), (7, 200));
        assert_eq!(s.max_message_size, 2 << 20);
        assert_eq!(s.command_timeout, Duration::from_millis(1_500));
        assert_eq!(s.data_timeout, Duration::from_secs(2));
        assert_eq!(s.stall_timeout, Duration::from_secs(9));
        assert_eq!(s.server_name.as_deref(), Some("mx.example"));
        assert_eq!(s.mail.boxes(), 2);
        let on = "smtp_listen = \"127.0.0.1:2525\"\n";
        for (text, key) in [
            ("smtp_listen = \"nowhere\"", "smtp_listen"),
            ("[smtp]\nmax_connections = 0", "smtp.max_connections"),
            ("[smtp]\nmax_message_size = 10", "smtp.max_message_size"),
            ("[smtp]\nmax_recipients = 99", "smtp.max_recipients"),
            (
                "[smtp]\ncommand_timeout_secs = 0",
                "smtp.command_timeout_secs",
            ),
            ("[smtp]\ndata_timeout_secs = 1e9", "smtp.data_timeout_secs"),
            ("[smtp]\nserver_name = \"a b\"", "smtp.server_name"),
        ] {
            let text = match text.starts_with("smtp_listen") {
                true => text.to_string(),
                false => format!("{on}{text}"),
            };
            let e = parse(&text).unwrap().server_settings(d).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        assert!(parse("[smtp]\nmax_mesage_size = 1")
            .unwrap_err()
            .contains("max_mesage_size"));
    }

    #[test]
    fn environment_overrides_settings() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
                .into_iter()
        };
        let c = parse_with_env(
            "worker_threads = 4",
            env(&[
                ("FOLIO__WORKER_THREADS", "16"),
                ("FOLIO__TRANSLOG__STYLE", "linear"),
                ("FOLIO_KILL_TRIALS", "3"),
            ]),
        )
        .unwrap();
        assert_eq!(c.worker_threads, Some(16));
        assert_eq!(c.translog.style.as_deref(), Some("linear"));
        let e = parse_with_env("", env(&[("FOLIO__WORKER_THREDS", "1")])).unwrap_err();
        assert!(
            e.contains("worker_threds") && e.contains("FOLIO__WORKER_THREDS"),
            "{e}"
        );
    }

    #[test]
    fn view_settings() {
        let c = parse("view_rebuild_dir = \"/fast\"\nview_rebuild_memory = \"16MiB\"").unwrap();
        let v = c.view_config().unwrap();
        assert_eq!(
            (v.rebuild_dir.as_path(), v.rebuild_memory),
            (Path::new("/fast"), 16 << 20)
        );
        let e = parse("view_rebuild_memory = 1000")
            .unwrap()
            .view_config()
            .unwrap_err();
        assert!(e.contains("view_rebuild_memory"), "{e}");
        assert!(parse("view_rebuild_dri = \"/x\"")
            .unwrap_err()
            .contains("view_rebuild_dri"));
    }
}
