//! What a client needs to know to connect: where, as whom, how.
//!
//! Most settings have one right default, but compression depends on where
//! the server is: docs/protocol.md §4.1 measured that compression pays on
//! every real link (zstd, then LZ4) and costs only CPU on loopback, where
//! the "link" is memory. So [`ClientOptions::new`] chooses the compression
//! from the address it is given: `Off` alone for a loopback address
//! (`127.0.0.0/8`, `::1`, `localhost`), strong then fast otherwise.
//! `ClientOptions::default()` is `new("127.0.0.1:1352")`; changing `addr`
//! afterwards does not change `compression`, so prefer `new(addr)`.
//! [`ClientOptions::with_compression`] overrides the rule and forces one
//! method, which connecting then requires (`compression.rs`).

use crate::compression::NetCompression;
use protocol::{ClientConfig, Compression, Credentials, ZstdLevel, DEFAULT_MAX_FRAME_SIZE};
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where `folio serve` listens for the native protocol by default.
pub const DEFAULT_ADDR: &str = "127.0.0.1:1352";

/// How long [`Client::connect`](crate::Client::connect) may take by
/// default (TCP connect, TLS and protocol handshakes together).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach and log in to a Folio server.
#[derive(Clone)]
pub struct ClientOptions {
    /// `host:port` of the server's native protocol listener
    /// (`[::1]:1352` for an IPv6 address).
    pub addr: String,
    /// User to log in as; `None` asks for anonymous access.
    pub user: Option<String>,
    /// The user's password (empty if `None` while `user` is set).
    pub password: Option<String>,
    /// Compression methods offered, most preferred first (see the module
    /// docs for the default).
    pub compression: Vec<Compression>,
    /// The method the handshake must settle on, or connecting fails
    /// ([`ClientError::CompressionRefused`](crate::ClientError)); `None`
    /// accepts whatever the server chose of `compression` (or off).
    pub required_compression: Option<Compression>,
    /// The zstd level asked for and required (`zstd:N`); `None` leaves
    /// it to the server.
    pub compression_level: Option<ZstdLevel>,
    /// Sent in the handshake, for the server's logs and statistics.
    pub client_name: String,
    /// Speak TLS, trusting the given certificate; `None` for plain TCP.
    pub tls: Option<TlsOptions>,
    /// Limit for connecting: TCP, TLS and the protocol handshake.
    pub connect_timeout: Duration,
    /// Largest frame accepted or sent (docs/protocol.md §2).
    pub max_frame_size: u32,
}

/// TLS settings of a client.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// PEM file holding the certificate(s) to trust: the CA that signed
    /// the server's certificate, or the server's self-signed certificate.
    pub ca_cert: PathBuf,
    /// Name to check the server's certificate against; `None` takes the
    /// host part of the address (an IP address is checked as one).
    pub server_name: Option<String>,
}

impl ClientOptions {
    /// Options for a server at `addr`, anonymous, compression chosen by
    /// whether `addr` is a loopback address.
    pub fn new(addr: impl Into<String>) -> ClientOptions {
        let addr = addr.into();
        let compression = default_compression(&addr);
        ClientOptions {
            addr,
            user: None,
            password: None,
            compression,
            required_compression: None,
            compression_level: None,
            client_name: concat!("folio-client ", env!("CARGO_PKG_VERSION")).into(),
            tls: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        }
    }

    /// These options logging in as `user` with `password`.
    pub fn with_credentials(mut self, user: &str, password: &str) -> ClientOptions {
        self.user = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// These options with network compression `choice`: `Auto` restores
    /// the address rule; a forced method is offered alone and required.
    pub fn with_compression(mut self, choice: NetCompression) -> ClientOptions {
        self.compression_level = choice.level();
        match choice.forced() {
            None => {
                self.compression = default_compression(&self.addr);
                self.required_compression = None;
            }
            Some(method) => {
                self.compression = vec![method];
                self.required_compression = Some(method);
            }
        }
        self
    }

    /// These options speaking TLS.
    pub fn with_tls(mut self, tls: TlsOptions) -> ClientOptions {
        self.tls = Some(tls);
        self
    }

    /// The host part of `addr`: before the last `:`, without IPv6 brackets.
    pub(crate) fn host(&self) -> &str {
        host_of(&self.addr)
    }

    /// The protocol state machine's settings.
    pub(crate) fn protocol_config(&self) -> ClientConfig {
        ClientConfig {
            client_name: self.client_name.clone(),
            compression: self.compression.clone(),
            credentials: self.user.as_ref().map(|user| Credentials {
                user: user.clone(),
                password: self.password.clone().unwrap_or_default(),
            }),
            max_frame_size: self.max_frame_size,
            strong_level: self.compression_level,
            ..ClientConfig::default()
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions::new(DEFAULT_ADDR)
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("compression", &self.compression)
            .field("required_compression", &self.required_compression)
            .field("compression_level", &self.compression_level)
            .field("client_name", &self.client_name)
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_frame_size", &self.max_frame_size)
            .finish()
    }
}

/// `Off` alone on loopback, else strong then fast (docs/protocol.md §4.1).
fn default_compression(addr: &str) -> Vec<Compression> {
    if is_loopback(host_of(addr)) {
        vec![Compression::Off]
    } else {
        vec![Compression::Strong, Compression::Fast]
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _port)| host);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_the_address_without_its_port() {
        assert_eq!(host_of("127.0.0.1:1352"), "127.0.0.1");
        assert_eq!(host_of("[::1]:1352"), "::1");
        assert_eq!(host_of("db.example.com:1352"), "db.example.com");
        assert_eq!(host_of("db.example.com"), "db.example.com");
    }

    #[test]
    fn compression_is_off_on_loopback_only() {
        for addr in ["127.0.0.1:1352", "127.1.2.3:9", "[::1]:1352", "LOCALHOST:1"] {
            assert_eq!(ClientOptions::new(addr).compression, [Compression::Off]);
        }
        for addr in ["10.0.0.1:1352", "[2001:db8::1]:1352", "db.example.com:1352"] {
            assert_eq!(
                ClientOptions::new(addr).compression,
                [Compression::Strong, Compression::Fast]
            );
        }
    }

    #[test]
    fn a_forced_compression_is_offered_alone_and_required() {
        let opts = ClientOptions::new("127.0.0.1:1").with_compression(NetCompression::Zstd);
        assert_eq!(opts.compression, [Compression::Strong]);
        assert_eq!(opts.required_compression, Some(Compression::Strong));
        let auto = opts.with_compression(NetCompression::Auto);
        assert_eq!(auto.compression, [Compression::Off]);
        assert_eq!(auto.required_compression, None);
    }

    #[test]
    fn a_zstd_level_is_asked_for_in_the_hello_and_dropped_by_other_choices() {
        let l19 = ZstdLevel::new(19).unwrap();
        let opts = ClientOptions::new("127.0.0.1:1").with_compression(NetCompression::ZstdAt(l19));
        assert_eq!(opts.compression, [Compression::Strong]);
        assert_eq!(opts.required_compression, Some(Compression::Strong));
        assert_eq!(opts.compression_level, Some(l19));
        assert_eq!(opts.protocol_config().strong_level, Some(l19));
        let plain = opts.with_compression(NetCompression::Zstd);
        assert_eq!(plain.compression_level, None);
        assert_eq!(plain.protocol_config().strong_level, None);
    }

    #[test]
    fn debug_hides_the_password() {
        let opts = ClientOptions::default().with_credentials("alice", "secret");
        let text = format!("{opts:?}");
        assert!(text.contains("alice") && !text.contains("secret"), "{text}");
    }

    #[test]
    fn credentials_reach_the_hello_only_with_a_user() {
        let mut opts = ClientOptions {
            password: Some("pw".into()),
            ..ClientOptions::default()
        };
        assert!(opts.protocol_config().credentials.is_none());
        opts.user = Some("alice".into());
        let creds = opts.protocol_config().credentials.unwrap();
        assert_eq!(
            (creds.user.as_str(), creds.password.as_str()),
            ("alice", "pw")
        );
    }
}
