//! The source of a replication: a `folio serve` the tool starts in a
//! temporary directory with the settings a variant needs, or the server
//! at `--server`; and putting the corpus into it over the network.
//!
//! The attachment-compression variant runs its own source server with
//! [`ATTACHMENT_SETTING`] in its `folio.toml`. A build whose settings do
//! not know it refuses the file (unknown keys are errors, `config.rs`);
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

/// The settings line that turns attachment compression on at the source.
pub const ATTACHMENT_SETTING: &str = "attachment_compression = \"auto\"\n";

/// The settings line of the source of variants `off` and `network`:
/// attachments stored as they are, so those variants measure the
/// connection's compression alone (the server's default is `auto`).
pub const PLAIN_SETTING: &str = "attachment_compression = \"off\"\n";

/// The administrator of the servers the tool starts.
const ADMIN: &str = "admin";

/// Why this build would refuse [`ATTACHMENT_SETTING`], if it would (the
/// parser's words, without its list of every known key).
pub fn attachment_setting_refusal() -> Option<String> {
    crate::config::parse(ATTACHMENT_SETTING)
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
    /// (`folio.toml` lines) and an administrator to sign in as.
    pub fn start(data: &Path, settings: &str) -> Result<Source, String> {
        std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
        std::fs::write(data.join("folio.toml"), settings)
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
