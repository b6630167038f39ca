//! TLS for both listeners: the rustls server configuration, from the
//! administrator's certificate and key or from a self-signed pair made on
//! first run.
//!
//! ```text
//!   TlsSettings ─┬─ off ─────────────────────────────▶ None
//!                ├─ cert + key (PEM files) ──load──┐
//!                └─ self_signed ─ <data>/tls/ ─────┤
//!                     cert.pem, key.pem            ▼
//!                     (made once by rcgen)    TlsConfig { rustls::ServerConfig,
//!                                                         cert_path, … }
//! ```
//!
//! Why it is built this way:
//!
//! - **Errors name the file and the problem** (missing, no certificate in
//!   it, key unreadable, key does not match the certificate): a server
//!   that refuses to start over TLS must say exactly what to fix.
//! - **The self-signed pair is made once and kept**, so clients that were
//!   told to trust `<data>/tls/cert.pem` keep trusting it across restarts.
//!   It names `localhost`, `127.0.0.1`, `::1` and the machine's host name.
//!   The key is written first and readable by its owner only; the
//!   certificate is written last, so a crash in between leaves a pair
//!   that is incomplete, and an incomplete pair is made anew.
//! - **One crypto provider, named explicitly** (`ring`): the build carries
//!   no other, and nothing depends on a process-wide default.
//! - **ALPN offers `http/1.1`**: the HTTP listener speaks it; clients of the
//!   native protocol offer no ALPN and are unaffected.

use crate::auth::{restrict_mode, write_secret_file};
use crate::{ServerError, ServerResult};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::{read_file, write_file_atomic};
use storage::Backend;

/// The directory of the self-signed pair, in the data directory.
pub const SELF_SIGNED_DIR: &str = "tls";
/// The self-signed certificate's file name (in [`SELF_SIGNED_DIR`]).
pub const CERT_FILE: &str = "cert.pem";
/// The self-signed key's file name (in [`SELF_SIGNED_DIR`]).
pub const KEY_FILE: &str = "key.pem";
/// The one ALPN protocol offered.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// How the listeners use TLS (`[tls]` in `folio.toml`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// The certificate chain, PEM (server certificate first). Relative
    /// paths are taken from the data directory.
    pub cert: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// Use a self-signed certificate, made on first run.
    pub self_signed: bool,
}

/// A ready TLS configuration.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// For `tokio_rustls::TlsAcceptor::from`.
    pub config: Arc<ServerConfig>,
    /// The certificate file: what clients of a self-signed server trust.
    pub cert_path: PathBuf,
    /// SHA-256 of the server certificate (DER), lower-case hex.
    pub cert_sha256: String,
    /// Whether this call made a new self-signed pair.
    pub generated: bool,
}

/// The TLS configuration `settings` ask for: `None` when TLS is off.
pub fn server_tls_config(
    settings: &TlsSettings,
    data_dir: &Path,
    backend: Arc<dyn Backend>,
) -> ServerResult<Option<TlsConfig>> {
    let in_data = |p: &PathBuf| data_dir.join(p);
    match (&settings.cert, &settings.key, settings.self_signed) {
        (None, None, false) => Ok(None),
        (Some(cert), Some(key), false) => {
            load(backend.as_ref(), &in_data(cert), &in_data(key), false).map(Some)
        }
        (None, None, true) => {
            let dir = data_dir.join(SELF_SIGNED_DIR);
            let generated = ensure_self_signed(backend.as_ref(), &dir)?;
            load(
                backend.as_ref(),
                &dir.join(CERT_FILE),
                &dir.join(KEY_FILE),
                generated,
            )
            .map(Some)
        }
        (_, _, true) => Err(setting(
            "tls.self_signed",
            "cannot be combined with tls.cert and tls.key",
        )),
        _ => Err(setting("tls", "cert and key must be given together")),
    }
}

fn setting(key: &str, reason: &str) -> ServerError {
    ServerError::Setting {
        key: key.into(),
        reason: reason.into(),
    }
}

fn file_error(path: &Path, reason: impl Into<String>) -> ServerError {
    ServerError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Loads a certificate chain and key and builds the server configuration.
fn load(
    backend: &dyn Backend,
    cert_path: &Path,
    key_path: &Path,
    generated: bool,
) -> ServerResult<TlsConfig> {
    let certs = read_certs(backend, cert_path)?;
    let key = read_key(backend, key_path)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| file_error(key_path, format!("key unreadable: {e}")))?;
    let cert_sha256 = to_hex(&Sha256::digest(&certs[0]));
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)
        .map_err(|e| ServerError::Tls(format!("protocol versions: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => file_error(
                key_path,
                format!(
                    "key does not match the certificate in {}",
                    cert_path.display()
                ),
            ),
            e => file_error(cert_path, format!("certificate unusable: {e}")),
        })?;
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(TlsConfig {
        config: Arc::new(config),
        cert_path: cert_path.to_path_buf(),
        cert_sha256,
        generated,
    })
}

fn read_pem(backend: &dyn Backend, path: &Path) -> ServerResult<Vec<u8>> {
    read_file(backend, path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => file_error(path, "missing (no such file)"),
        _ => file_error(path, format!("unreadable: {e}")),
    })
}

fn read_certs(backend: &dyn Backend, path: &Path) -> ServerResult<Vec<CertificateDer<'static>>> {
    let pem = read_pem(backend, path)?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, format!("not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(file_error(
            path,
            "no certificate in it (expected a PEM \"BEGIN CERTIFICATE\" block)",
        ));
    }
    Ok(certs)
}

fn read_key(backend: &dyn Backend, path: &Path) -> ServerResult<PrivateKeyDer<'static>> {
    let pem = read_pem(backend, path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| file_error(path, format!("key unreadable: not valid PEM: {e}")))?
        .ok_or_else(|| {
            file_error(
                path,
                "no private key in it (expected a PEM PKCS#8, PKCS#1 or SEC1 private key)",
            )
        })
}

/// Makes the self-signed pair in `dir` unless both files are there.
/// Returns whether it made one.
fn ensure_self_signed(backend: &dyn Backend, dir: &Path) -> ServerResult<bool> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    if backend.exists(&cert_path) && backend.exists(&key_path) {
        return Ok(false);
    }
    let names = subject_names();
    tracing::info!(
        "making a self-signed TLS certificate for {} in {}",
        names.join(", "),
        dir.display()
    );
    let (cert_pem, key_pem) = self_signed_pem(names)?;
    backend
        .create_dir_all(dir)
        .map_err(|e| file_error(dir, format!("cannot create: {e}")))?;
    restrict_mode(dir, 0o700).map_err(|e| file_error(dir, format!("cannot restrict: {e}")))?;
    // The key first: the certificate's presence marks a complete pair.
    write_secret_file(backend, &key_path, key_pem.as_bytes())
        .map_err(|e| file_error(&key_path, format!("cannot write: {e}")))?;
    write_file_atomic(backend, &cert_path, cert_pem.as_bytes())
        .map_err(|e| file_error(&cert_path, format!("cannot write: {e}")))?;
    Ok(true)
}

/// A new self-signed certificate and its key (ECDSA P-256), both PEM.
fn self_signed_pem(names: Vec<String>) -> ServerResult<(String, String)> {
    let tls = |e: rcgen::Error| ServerError::Tls(format!("cannot make a certificate: {e}"));
    let mut params = rcgen::CertificateParams::new(names).map_err(tls)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Folio server (self-signed)");
    let key = rcgen::KeyPair::generate().map_err(tls)?;
    let cert = params.self_signed(&key).map_err(tls)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The names the self-signed certificate is valid for.
fn subject_names() -> Vec<String> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if let Some(host) = host_name().filter(|h| !names.contains(h)) {
        names.push(host);
    }
    names
}

/// The machine's host name, if it is a usable DNS name.
pub(crate) fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_ascii_lowercase();
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    valid.then_some(name)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An acceptor for a protocol that upgrades with STARTTLS (SMTP, IMAP):
/// the server's certificate without ALPN, which names HTTP's protocols.
pub(crate) fn starttls_acceptor(config: &ServerConfig) -> tokio_rustls::TlsAcceptor {
    let mut plain = config.clone();
    plain.alpn_protocols.clear();
    tokio_rustls::TlsAcceptor::from(Arc::new(plain))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, RootCertStore};
    use storage::backend::{FsBackend, MemBackend};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn self_signed() -> TlsSettings {
        TlsSettings {
            self_signed: true,
            ..TlsSettings::default()
        }
    }

    fn fs() -> Arc<dyn Backend> {
        Arc::new(FsBackend)
    }

    fn err(r: ServerResult<Option<TlsConfig>>) -> String {
        r.expect_err("an error").to_string()
    }

    #[test]
    fn off_when_not_asked() {
        let dir = tempfile::tempdir().unwrap();
        let none = server_tls_config(&TlsSettings::default(), dir.path(), fs()).unwrap();
        assert!(none.is_none());
        assert!(!dir.path().join(SELF_SIGNED_DIR).exists());
    }

    #[test]
    fn self_signed_is_made_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = server_tls_config(&self_signed(), dir.path(), fs())
            .unwrap()
            .unwrap();
        assert!(first.generated);
        assert_eq!(first.cert_path, dir.path().join("tls/cert.pem"));
        let cert = std::fs::read(&first.cert_path).unwrap();
        let key = std::fs::read(dir.path().join("tls/key.pem")).unwrap();
        assert_eq!(first.config.alpn_protocols, [ALPN_HTTP1.to_vec()]);

        let second = server_tls_config(&self_signed(), dir.path(), fs())
            .unwrap()
            .unwrap();
        assert!(!second.generated);
        assert_eq!(std::fs::read(&second.cert_path).unwrap(), cert);
        assert_eq!(std::fs::read(dir.path().join("tls/key.pem")).unwrap(), key);
        assert_eq!(first.cert_sha256, second.cert_sha256);

        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("tls/key.pem")), 0o600);
        assert_eq!(mode(&dir.path().join("tls")), 0o700);
    }

    #[test]
    fn an_incomplete_pair_is_made_anew() {
        let mem = Arc::new(MemBackend::new());
        let data = Path::new("/mem/data");
        let first = server_tls_config(&self_signed(), data, mem.clone())
            .unwrap()
            .unwrap();
        mem.remove_file(&first.cert_path).unwrap();
        let second = server_tls_config(&self_signed(), data, mem.clone())
            .unwrap()
            .unwrap();
        assert!(second.generated);
        assert_ne!(first.cert_sha256, second.cert_sha256);
    }

    #[test]
    fn given_files_are_used_and_relative_paths_are_in_the_data_directory() {
        let made = tempfile::tempdir().unwrap();
        let generated = server_tls_config(&self_signed(), made.path(), fs())
            .unwrap()
            .unwrap();
        let given = TlsSettings {
            cert: Some("tls/cert.pem".into()),
            key: Some(made.path().join("tls/key.pem")),
            self_signed: false,
        };
        let tls = server_tls_config(&given, made.path(), fs())
            .unwrap()
            .unwrap();
        assert!(!tls.generated);
        assert_eq!(tls.cert_path, generated.cert_path);
        assert_eq!(tls.cert_sha256, generated.cert_sha256);
    }

    #[test]
    fn bad_settings_and_files_give_precise_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        server_tls_config(&self_signed(), d, fs()).unwrap();
        let other = tempfile::tempdir().unwrap();
        server_tls_config(&self_signed(), other.path(), fs()).unwrap();
        let cert = d.join("tls/cert.pem");
        let key = d.join("tls/key.pem");
        std::fs::write(d.join("empty.pem"), "").unwrap();
        std::fs::write(
            d.join("junk-key.pem"),
            "-----BEGIN PRIVATE KEY-----\nAAECAwQF\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        std::fs::write(
            d.join("junk-cert.pem"),
            "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let pair = |c: &Path, k: &Path| TlsSettings {
            cert: Some(c.to_path_buf()),
            key: Some(k.to_path_buf()),
            self_signed: false,
        };
        let cases = [
            (pair(&d.join("nope.pem"), &key), "nope.pem: missing"),
            (pair(&cert, &d.join("nope.pem")), "nope.pem: missing"),
            (
                pair(&d.join("empty.pem"), &key),
                "empty.pem: no certificate",
            ),
            (pair(&key, &key), "key.pem: no certificate"),
            (pair(&cert, &cert), "cert.pem: no private key"),
            (
                pair(&cert, &d.join("junk-key.pem")),
                "junk-key.pem: key unreadable",
            ),
            (
                pair(&d.join("junk-cert.pem"), &key),
                "junk-cert.pem: certificate unusable",
            ),
            (
                pair(&cert, &other.path().join("tls/key.pem")),
                "key.pem: key does not match the certificate in",
            ),
        ];
        for (settings, needle) in cases {
            let e = err(server_tls_config(&settings, d, fs()));
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        }
        let half = TlsSettings {
            cert: Some(cert.clone()),
            ..TlsSettings::default()
        };
        assert!(err(server_tls_config(&half, d, fs())).contains("together"));
        let both = TlsSettings {
            self_signed: true,
            ..pair(&cert, &key)
        };
        assert!(err(server_tls_config(&both, d, fs())).contains("tls.self_signed"));
    }

    fn client_config(trusted: &[CertificateDer<'static>]) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        for c in trusted {
            roots.add(c.clone()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Arc::new(config)
    }

    /// Connects to `addr` as `name` and reads the server's greeting.
    async fn connect(
        config: Arc<ClientConfig>,
        addr: std::net::SocketAddr,
        name: &str,
    ) -> io::Result<(Vec<u8>, Option<Vec<u8>>)> {
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::try_from(name.to_string()).unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let mut greeting = Vec::new();
        tls.read_to_end(&mut greeting).await?;
        Ok((greeting, alpn))
    }

    #[tokio::test]
    async fn handshake_succeeds_only_for_a_client_trusting_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let tls = server_tls_config(&self_signed(), dir.path(), fs())
            .unwrap()
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
        let server = tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    s.write_all(b"hello").await.unwrap();
                    s.shutdown().await.unwrap();
                }
            }
        });

        let pem = std::fs::read(&tls.cert_path).unwrap();
        let trusted = rustls_pemfile::certs(&mut pem.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        for name in ["localhost", "127.0.0.1"] {
            let (greeting, alpn) = connect(client_config(&trusted), addr, name).await.unwrap();
            assert_eq!(greeting, b"hello");
            assert_eq!(alpn.as_deref(), Some(ALPN_HTTP1));
        }
        let refused = connect(client_config(&[]), addr, "localhost").await;
        let e = refused.expect_err("a client trusting nothing must fail");
        assert!(e.to_string().contains("UnknownIssuer"), "{e}");
        let wrong_name = connect(client_config(&trusted), addr, "example.com").await;
        assert!(wrong_name.is_err());
        server.abort();
    }
}
