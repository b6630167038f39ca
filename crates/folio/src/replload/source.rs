//! The source of a replication: a `folio serve` the tool starts in a
//! temporary directory with the settings a variant needs, or the server
//! at `--server`; and putting the corpus into it over the network.
//!
//! The attachment-compression variant runs its own source server with
//! [`attachment_settings`] in its `folio.toml`. A build whose settings do
//! not know them refuses the file (unknown keys are errors, `config.rs`);
//! [`attachment_setting_refusal`] asks the same parser the server uses,
//! so the variant is reported unavailable with the parser's own words
//! rather than measured without the setting.

use super::corpus::Doc;
use crate::dbsload::ServerProc;
use crate::remote::Endpoint;
use client::blocking::Client;
use client::NetCompression;
use std::path::Path;
use std::sync::Arc;

/// The settings lines that turn attachment compression on at the source,
/// at zstd `level`.
pub fn attachment_settings(level: i64) -> String {
    format!("attachment_compression = \"auto\"\nattachment_compression_level = {level}\n")
}

/// The settings line of the source of variants `off` and `network`:
/// attachments stored as they are, so those variants measure the
/// connection's compression alone (the server's default is `auto`).
pub const PLAIN_SETTING: &str = "attachment_compression = \"off\"\n";

/// The settings line every source the tool starts gets: the simulated
/// link is a loopback socket, whose 64 KiB segments let the kernel grow
/// the server's send buffer to megabytes, and a writer is woken only
/// when a third of it has drained — minutes at 56 kbit/s, past the
/// default 60 s `stall_timeout_secs`, which then closes a connection
/// whose client is reading all along (a real slow line's segments keep
/// the buffer, and so the wait, small). The server's guard against
/// clients that stop reading stays on, at an hour.
pub const LINK_SETTING: &str = "stall_timeout_secs = 3600\n";

/// The administrator of the servers the tool starts.
const ADMIN: &str = "admin";

/// Why this build would refuse [`attachment_settings`] at `level`, if it
/// would (the parser's words, without its list of every known key).
pub fn attachment_setting_refusal(level: i64) -> Option<String> {
    crate::config::parse(&attachment_settings(level))
        .and_then(|c| c.engine_config(std::path::Path::new(".")))
        .err()
        .map(|e| e.split(", expected").next().unwrap_or(&e).to_string())
}

/// A server replicated from.
pub struct Source {
    /// Running while the source is (`None` with `--server`).
    server: Option<ServerProc>,
    endpoint: Endpoint,
}

impl Source {
    /// Starts `folio serve` on a fresh `data` directory with `settings`
    /// (`folio.toml` lines) and [`LINK_SETTING`], and an administrator to
    /// sign in as.
    pub fn start(data: &Path, settings: &str) -> Result<Source, String> {
        std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
        std::fs::write(data.join("folio.toml"), format!("{settings}{LINK_SETTING}"))
            .map_err(|e| format!("folio.toml: {e}"))?;
        let password = format!("load-{:x}", rand::random::<u64>());
        server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), data)
            .and_then(|users| users.add_user(ADMIN, &password, true))
            .map_err(|e| e.to_string())?;
        let server = ServerProc::spawn(data)?;
        let endpoint = Endpoint {
            addr: server.native.clone(),
            credentials: Some((ADMIN.into(), password)),
            tls_ca: None,
            compression: NetCompression::Auto,
        };
        Ok(Source {
            server: Some(server),
            endpoint,
        })
    }

    /// The server at `--server`, as the global options sign in to it.
    pub fn remote(endpoint: Endpoint) -> Source {
        Source {
            server: None,
            endpoint,
        }
    }

    /// The server's process id, if the tool started it.
    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(ServerProc::pid)
    }

    /// Its native protocol address.
    pub fn addr(&self) -> &str {
        &self.endpoint.addr
    }

    /// A connection to it at `addr` (its own, or a proxy's in front of
    /// it) with `compression` forced.
    pub fn connect(&self, addr: &str, compression: NetCompression) -> Result<Client, String> {
        let endpoint = Endpoint {
            addr: addr.into(),
            compression,
            ..self.endpoint.clone()
        };
        endpoint
            .connect("folio-load-replication")
            .map_err(|e| e.to_string())
    }

    /// Stops the server the tool started.
    pub fn stop(self) -> Result<(), String> {
        match self.server {
            Some(s) => s.stop(),
            None => Ok(()),
        }
    }
}

/// Creates `path` on the source (unless it exists) and puts `docs` into
/// it, attachments included. Each document is durable on the server when
/// its call returns (the server's write path).
pub fn upload(client: &Client, path: &str, docs: &[Doc], create: bool) -> Result<(), String> {
    if create {
        client
            .create_database(path, "Replication corpus")
            .map_err(|e| format!("creating {path}: {e}"))?;
    }
    let (db, _) = client
        .open_database(path)
        .map_err(|e| format!("opening {path}: {e}"))?;
    for (i, d) in docs.iter().enumerate() {
        let meta = client
            .create_document(db, &d.json)
            .map_err(|e| format!("{path}: document {i}: {e}"))?;
        if let Some(a) = &d.attachment {
            client
                .put_attachment(
                    db,
                    meta.unid,
                    &a.name,
                    a.mime,
                    Some(a.bytes.len() as u64),
                    &a.bytes[..],
                )
                .map_err(|e| format!("{path}: attachment {}: {e}", a.name))?;
        }
    }
    client
        .close_database(db)
        .map_err(|e| format!("closing {path}: {e}"))
}
