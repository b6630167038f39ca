//! Opening a connection: TCP (with `TCP_NODELAY`), optionally TLS, then
//! the protocol handshake, all under one time limit.
//!
//! ```text
//!   TcpStream::connect ─▶ set_nodelay ─▶ [TLS handshake] ─▶ Hello ─▶ Welcome
//!   └──────────────────── ClientOptions::connect_timeout ──────────────────┘
//! ```
//!
//! `TCP_NODELAY` because the protocol pipelines many small frames and
//! waits for their answers; Nagle's algorithm would hold a small request
//! back until the previous one is acknowledged. TLS uses rustls with the
//! `ring` provider named explicitly (the workspace builds rustls without
//! aws-lc), trusting only the certificates in the configured PEM file:
//! a Folio deployment has its own CA or a self-signed server certificate,
//! not a web PKI identity.
//!
//! The handshake runs here, before the connection task starts, so that a
//! refusal (401, 1001) is the answer of [`Client::connect`](crate::Client::connect)
//! itself rather than of the first request.

use crate::error::ClientError;
use crate::options::{ClientOptions, TlsOptions};
use protocol::{ClientConnection, ClientEvent, Welcome};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::RootCertStore;
use std::io::BufReader;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A byte stream to the server: plain TCP or TLS over TCP.
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// An open connection whose handshake succeeded.
pub(crate) struct Connected {
    pub(crate) stream: Box<dyn Transport>,
    pub(crate) conn: ClientConnection,
    pub(crate) welcome: Welcome,
}

/// Connects and completes the handshake within the connect timeout.
pub(crate) async fn connect(opts: &ClientOptions) -> Result<Connected, ClientError> {
    tokio::time::timeout(opts.connect_timeout, establish(opts))
        .await
        .map_err(|_elapsed| ClientError::Timeout)?
}

async fn establish(opts: &ClientOptions) -> Result<Connected, ClientError> {
    let tcp = open_tcp(&opts.addr).await?;
    let mut stream: Box<dyn Transport> = match &opts.tls {
        None => Box::new(tcp),
        Some(tls) => Box::new(open_tls(tcp, opts, tls).await?),
    };
    let mut conn = ClientConnection::new(opts.protocol_config())?;
    let welcome = handshake(&mut stream, &mut conn).await?;
    crate::compression::check_negotiated(
        (opts.required_compression, opts.compression_level),
        (welcome.compression, welcome.strong_level),
    )?;
    tracing::debug!(
        addr = %opts.addr,
        session = %welcome.session,
        compression = %welcome.compression,
        server = %welcome.server_name,
        "connected"
    );
    Ok(Connected {
        stream,
        conn,
        welcome,
    })
}

async fn open_tcp(addr: &str) -> Result<TcpStream, ClientError> {
    let in_context = |e: std::io::Error| {
        ClientError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot connect to {addr}: {e}"),
        ))
    };
    let tcp = TcpStream::connect(addr).await.map_err(in_context)?;
    tcp.set_nodelay(true).map_err(in_context)?;
    Ok(tcp)
}

async fn open_tls(
    tcp: TcpStream,
    opts: &ClientOptions,
    tls: &TlsOptions,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, ClientError> {
    let name = tls.server_name.as_deref().unwrap_or(opts.host());
    let server_name = ServerName::try_from(name.to_string())
        .map_err(|e| ClientError::Tls(format!("invalid server name {name:?}: {e}")))?;
    let connector = TlsConnector::from(Arc::new(tls_config(tls)?));
    connector
        .connect(server_name, tcp)
        .await
        .map_err(|e| ClientError::Tls(format!("handshake with {} failed: {e}", opts.addr)))
}

/// A rustls configuration (ring provider) trusting the CA file's
/// certificates only.
fn tls_config(tls: &TlsOptions) -> Result<rustls::ClientConfig, ClientError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certificates(tls)? {
        roots.add(cert).map_err(|e| {
            ClientError::Tls(format!("cannot trust {}: {e}", tls.ca_cert.display()))
        })?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn read_certificates(tls: &TlsOptions) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let path = tls.ca_cert.display();
    let file = std::fs::File::open(&tls.ca_cert)
        .map_err(|e| ClientError::Tls(format!("cannot open CA file {path}: {e}")))?;
    let certs = rustls_pemfile::certs(&mut BufReader::new(file))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ClientError::Tls(format!("cannot read CA file {path}: {e}")))?;
    if certs.is_empty() {
        return Err(ClientError::Tls(format!(
            "no PEM certificate in CA file {path}"
        )));
    }
    Ok(certs)
}

/// Sends the Hello and reads until the Welcome or the server's refusal.
async fn handshake(
    stream: &mut Box<dyn Transport>,
    conn: &mut ClientConnection,
) -> Result<Welcome, ClientError> {
    write_output(stream, conn).await?;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(ClientError::Closed {
                reason: "the server closed the connection during the handshake".into(),
            });
        }
        let events = match conn.receive(&buf[..n]) {
            Ok(events) => events,
            Err(e) => {
                // Tell the server what was wrong, as far as it still listens.
                let _ = write_output(stream, conn).await;
                return Err(e.into());
            }
        };
        if let Some(answer) = handshake_answer(events) {
            return answer;
        }
    }
}

/// The Welcome, a refusal, or `None` if more bytes are needed.
fn handshake_answer(events: Vec<ClientEvent>) -> Option<Result<Welcome, ClientError>> {
    let mut welcome = None;
    for event in events {
        match event {
            ClientEvent::Connected(w) => welcome = Some(w),
            ClientEvent::Closed { code, message } if welcome.is_none() => {
                return Some(Err(ClientError::Server { code, message }))
            }
            ClientEvent::Closed { code, message } => {
                return Some(Err(ClientError::Closed {
                    reason: format!("the server closed the connection at once: {code}: {message}"),
                }))
            }
            // No request is in flight yet, so nothing else can arrive.
            _ => {}
        }
    }
    welcome.map(Ok)
}

async fn write_output(
    stream: &mut Box<dyn Transport>,
    conn: &mut ClientConnection,
) -> std::io::Result<()> {
    stream.write_all(&conn.take_output()).await?;
    stream.flush().await
}
