//! The SMTP client that hands a queue entry to its route (RFC 5321 §3,
//! client side): STARTTLS when the peer offers it, every recipient's
//! answer kept apart, and a connection reused for the next entry to the
//! same host within a pass of the queue (RFC 5321 §3.3 lets a client
//! send several transactions on one connection).
//!
//! ```text
//!   connect ─ 220 ─ EHLO (HELO if refused) ─ [STARTTLS ─ 220 ─ TLS ─ EHLO]
//!   (or a kept connection: RSET ─ 250, else a new one as above)
//!     ─ MAIL FROM ─ RCPT TO × n ─ DATA ─ 354 ─ message, dot-stuffed ─ "."
//!     ─ 250 ─▶ Handover: the caller records it durably, then keeps the
//!              connection for the next entry, or says QUIT
//! ```
//!
//! Written here rather than taken from a crate: the queue needs each
//! recipient's answer (a 550 for one, 250 for the others), the moment of
//! the DATA reply (the record of the handover follows it at once, I58),
//! and the connection kept open until that record is durable; the mail
//! sending crates we looked at (lettre, mail-send) fold a transaction
//! into one call and are not in the project's dependency set. Replies are
//! read strictly (a code, `-` or space, at most 512 lines of at most
//! 4 KiB); every wait has the attempt's timeout.
//!
//! TLS is opportunistic (RFC 7435): the peer's certificate is not
//! checked, since no trust anchors are configured for relays and a
//! failed check would only send the message in the clear instead. A
//! handshake that fails ends the attempt (retried later), never falls
//! back to the clear on the same connection.

use mail::outbound::{one_line, Outcome};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

/// A byte stream the client talks over (plain TCP, or TLS over it).
trait Wire: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Wire for T {}

type Conn = BufStream<Box<dyn Wire>>;

/// What one attempt hands over.
pub(crate) struct Attempt<'a> {
    /// `host:port`.
    pub host: &'a str,
    /// The EHLO name.
    pub helo: &'a str,
    /// The envelope sender (`""` for `<>`).
    pub sender: &'a str,
    /// (index in the entry, address) of each pending recipient.
    pub recipients: Vec<(usize, &'a str)>,
    pub message: &'a [u8],
    /// The TLS client for STARTTLS; `None`: never.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub timeout: Duration,
}

/// What became of an attempt: each recipient's outcome, and the
/// connection, still open after a handover, to keep or QUIT once it is
/// recorded.
pub(crate) struct Handover {
    pub outcomes: Vec<(usize, Outcome)>,
    /// A new connection was made for it (not a kept one).
    pub connected: bool,
    conn: Option<Conn>,
    timeout: Duration,
}

impl Handover {
    /// The connection, for the next attempt to the same host, if it is
    /// still open and between transactions.
    pub(crate) fn keep(self) -> Option<Kept> {
        self.conn.map(|conn| Kept {
            conn,
            timeout: self.timeout,
        })
    }
}

/// A connection between transactions, kept for the next attempt to the
/// same host.
pub(crate) struct Kept {
    conn: Conn,
    timeout: Duration,
}

impl Kept {
    /// Says QUIT (best effort) and closes.
    pub(crate) async fn quit(mut self) {
        let c = &mut self.conn;
        let _ = tokio::time::timeout(self.timeout, async {
            if c.write_all(b"QUIT\r\n").await.is_ok() && c.flush().await.is_ok() {
                let _ = read_reply(c).await;
            }
        })
        .await;
    }
}

/// One reply: its code and its text lines joined.
struct Reply {
    code: u16,
    text: String,
}

impl Reply {
    fn line(&self) -> String {
        one_line(&format!("{} {}", self.code, self.text))
    }
}

/// Why an attempt stopped before every recipient had an answer.
enum Stop {
    /// The peer said this to the whole transaction.
    Reply(Reply),
    /// No answer (connection, timeout, TLS, a garbled reply).
    Io(String),
}

/// Runs `a` (see the module docs), on `kept` if it is still usable.
pub(crate) async fn attempt(a: Attempt<'_>, kept: Option<Kept>) -> Handover {
    let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
    let mut reused = match kept {
        Some(k) => still_open(k.conn, a.timeout).await,
        None => None,
    };
    let connected = reused.is_none();
    // The whole transaction (a message of many megabytes included) has
    // four times what one wait has.
    let result = tokio::time::timeout(a.timeout * 4, transaction(&a, reused.take(), &mut outcomes))
        .await
        .unwrap_or_else(|_| Err(Stop::Io("the attempt timed out".into())));
    let (conn, stop) = match result {
        Ok(conn) => (Some(conn), None),
        Err(stop) => (None, Some(stop)),
    };
    if let Some(stop) = stop {
        // Everyone without an answer yet gets the transaction's.
        // (Those refused at RCPT keep that answer; no one is `Sent`
        // before the 250 to the final dot.)
        let answered: Vec<usize> = outcomes.iter().map(|(i, _)| *i).collect();
        for (i, _) in &a.recipients {
            if !answered.contains(i) {
                outcomes.push((*i, stopped(&stop, a.host)));
            }
        }
    }
    Handover {
        outcomes,
        connected,
        conn,
        timeout: a.timeout,
    }
}

/// A kept connection, if the peer still answers RSET with 250 (it may
/// have closed it since: then a new one is made, nothing lost).
async fn still_open(mut c: Conn, timeout: Duration) -> Option<Conn> {
    let alive = tokio::time::timeout(timeout, async {
        command(&mut c, "RSET").await?;
        expect(&mut c, 250).await
    })
    .await;
    matches!(alive, Ok(Ok(_))).then_some(c)
}

fn stopped(stop: &Stop, host: &str) -> Outcome {
    match stop {
        Stop::Reply(r) if r.code >= 500 => Outcome::Failed(r.line()),
        Stop::Reply(r) => Outcome::Retry(r.line()),
        Stop::Io(why) => Outcome::Retry(format!("{host}: {why}")),
    }
}

/// The transaction up to the reply to the final dot, on `kept` or a new
/// connection; `Ok` hands back the connection after a 250 for it (the
/// accepted recipients are then `Sent`), or after every recipient was
/// refused.
async fn transaction(
    a: &Attempt<'_>,
    kept: Option<Conn>,
    outcomes: &mut Vec<(usize, Outcome)>,
) -> Result<Conn, Stop> {
    let mut accepted: Vec<usize> = Vec::new();
    let io = |e: std::io::Error| Stop::Io(e.to_string());
    let mut c = match kept {
        Some(c) => c,
        None => connect(a).await?,
    };
    command(&mut c, &format!("MAIL FROM:<{}>", a.sender)).await?;
    expect(&mut c, 250).await?;
    for (i, rcpt) in &a.recipients {
        command(&mut c, &format!("RCPT TO:<{rcpt}>")).await?;
        let r = read_reply(&mut c).await?;
        match r.code {
            250 | 251 => accepted.push(*i),
            500.. => outcomes.push((*i, Outcome::Failed(r.line()))),
            _ => outcomes.push((*i, Outcome::Retry(r.line()))),
        }
    }
    if accepted.is_empty() {
        command(&mut c, "RSET").await?;
        let _ = read_reply(&mut c).await;
        return Ok(c);
    }
    command(&mut c, "DATA").await?;
    expect(&mut c, 354).await?;
    c.write_all(&dot_stuffed(a.message)).await.map_err(io)?;
    c.write_all(b".\r\n").await.map_err(io)?;
    c.flush().await.map_err(io)?;
    // From here until the caller's record is durable, a crash may send
    // the message again (I58).
    expect(&mut c, 250).await?;
    outcomes.extend(accepted.iter().map(|&i| (i, Outcome::Sent)));
    Ok(c)
}

/// A new connection to `a.host`, greeted, and over TLS if the peer
/// offers STARTTLS and `a.tls` allows it.
async fn connect(a: &Attempt<'_>) -> Result<Conn, Stop> {
    let tcp = TcpStream::connect(a.host)
        .await
        .map_err(|e| Stop::Io(format!("cannot connect: {e}")))?;
    let _ = tcp.set_nodelay(true);
    let mut c: Conn = BufStream::new(Box::new(tcp));
    expect(&mut c, 220).await?;
    let extensions = hello(&mut c, a.helo).await?;
    if let Some(tls) = &a.tls {
        if extensions
            .iter()
            .any(|e| e.eq_ignore_ascii_case("STARTTLS"))
        {
            command(&mut c, "STARTTLS").await?;
            expect(&mut c, 220).await?;
            let stream = c.into_inner();
            let name = server_name(a.host)?;
            let connector = tokio_rustls::TlsConnector::from(tls.clone());
            let secured = connector
                .connect(name, stream)
                .await
                .map_err(|e| Stop::Io(format!("TLS handshake: {e}")))?;
            c = BufStream::new(Box::new(secured));
            hello(&mut c, a.helo).await?;
        }
    }
    Ok(c)
}

/// EHLO, else HELO; the extensions offered.
async fn hello(c: &mut Conn, helo: &str) -> Result<Vec<String>, Stop> {
    command(c, &format!("EHLO {helo}")).await?;
    let r = read_reply(c).await?;
    if r.code == 250 {
        return Ok(r.text.split('\n').skip(1).map(str::to_string).collect());
    }
    command(c, &format!("HELO {helo}")).await?;
    expect(c, 250).await?;
    Ok(Vec::new())
}

async fn command(c: &mut Conn, line: &str) -> Result<(), Stop> {
    let io = |e: std::io::Error| Stop::Io(e.to_string());
    c.write_all(line.as_bytes()).await.map_err(io)?;
    c.write_all(b"\r\n").await.map_err(io)?;
    c.flush().await.map_err(io)
}

/// Reads a reply and wants `code` (any 2xx for 250).
async fn expect(c: &mut Conn, code: u16) -> Result<Reply, Stop> {
    let r = read_reply(c).await?;
    let ok = if code == 250 {
        (200..300).contains(&r.code)
    } else {
        r.code == code
    };
    if ok {
        Ok(r)
    } else {
        Err(Stop::Reply(r))
    }
}

/// Most lines of one reply, and bytes of one line.
const MAX_LINES: usize = 512;
const MAX_LINE: u64 = 4096;

async fn read_reply(c: &mut Conn) -> Result<Reply, Stop> {
    let mut lines: Vec<String> = Vec::new();
    let mut code = 0;
    loop {
        let mut raw = Vec::new();
        let n = (&mut *c)
            .take(MAX_LINE)
            .read_until(b'\n', &mut raw)
            .await
            .map_err(|e| Stop::Io(e.to_string()))?;
        if n == 0 {
            return Err(Stop::Io("the peer closed the connection".into()));
        }
        let line = String::from_utf8_lossy(&raw);
        let line = line.trim_end_matches(['\r', '\n']);
        let (head, rest) = line.split_at(line.len().min(3));
        let this: u16 = match head.parse() {
            Ok(n) if (200..600).contains(&n) => n,
            _ => return Err(Stop::Io(format!("not an SMTP reply: {:?}", one_line(line)))),
        };
        if code != 0 && this != code {
            return Err(Stop::Io("a reply changed its code between lines".into()));
        }
        code = this;
        let more = rest.starts_with('-');
        lines.push(rest.get(1..).unwrap_or("").to_string());
        if !more {
            return Ok(Reply {
                code,
                text: lines.join("\n"),
            });
        }
        if lines.len() >= MAX_LINES {
            return Err(Stop::Io("a reply of too many lines".into()));
        }
    }
}

/// The message with every line starting with `.` given another, ending
/// in CRLF (RFC 5321 §4.5.2).
fn dot_stuffed(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 64);
    let mut at_line_start = true;
    for &b in message {
        if at_line_start && b == b'.' {
            out.push(b'.');
        }
        out.push(b);
        at_line_start = b == b'\n';
    }
    if !out.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn server_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>, Stop> {
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    rustls::pki_types::ServerName::try_from(name.to_string())
        .map_err(|e| Stop::Io(format!("{name:?} cannot name a TLS server: {e}")))
}

/// A TLS client for opportunistic STARTTLS: it encrypts, and checks the
/// peer's signatures, but not who issued its certificate (see the
/// module docs).
pub(crate) fn opportunistic_tls() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    Arc::new(config)
}

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_at_line_starts_are_doubled_and_the_end_is_crlf() {
        assert_eq!(dot_stuffed(b".a\r\nb.\r\n..c"), b"..a\r\nb.\r\n...c\r\n");
        assert_eq!(dot_stuffed(b"x\r\n"), b"x\r\n");
    }
}
