//! Which domains are this server's and where mail for the others goes
//! (`mail.domains`, `mail.smarthost`, `[[mail.route]]` in `folio.toml`),
//! checked once.
//!
//! With no local domain named, every address is local, as before there
//! was outbound delivery: the router looks every recipient up in the
//! directory and nothing leaves the server. Once `mail.domains` names
//! them, a recipient in any other domain is remote: it goes to the
//! outbound queue when a route reaches its domain (its own
//! `[[mail.route]]`, else the smarthost), and is refused otherwise.

use crate::{MailError, MailResult};

/// A static route: mail for `domain` goes to `host` (`name:port`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub domain: String,
    pub host: String,
}

/// The outbound settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutboundConfig {
    /// The domains delivered here (lowercase); empty: every domain.
    domains: Vec<String>,
    routes: Vec<Route>,
    smarthost: Option<String>,
    /// The router's schedule scaled so its first wait is this (unset:
    /// the schedule as it is, 1 minute first).
    first_retry: Option<std::time::Duration>,
    /// How long an entry may wait before its sender gets a delay notice
    /// (unset: [`OutboundConfig::DEFAULT_DELAY_NOTICE`]).
    delay_notice: Option<std::time::Duration>,
}

impl OutboundConfig {
    /// The wait before a delay notice unless `mail.outbound_delay_notice_secs`
    /// says otherwise: 4 hours, as sendmail's and Exim's first warning.
    pub const DEFAULT_DELAY_NOTICE: std::time::Duration = std::time::Duration::from_secs(4 * 3600);

    /// Checks and keeps the settings: domains are names (no `@`, no
    /// spaces), each route's domain once, every host `name:port`.
    pub fn new(
        domains: Vec<String>,
        smarthost: Option<String>,
        routes: Vec<Route>,
    ) -> MailResult<OutboundConfig> {
        let bad = |key: &str, reason: String| MailError::Setting {
            key: key.into(),
            reason,
        };
        let domains: Vec<String> = domains.iter().map(|d| d.to_ascii_lowercase()).collect();
        for d in &domains {
            check_domain(d).map_err(|r| bad("mail.domains", r))?;
        }
        if let Some(h) = &smarthost {
            check_host(h).map_err(|r| bad("mail.smarthost", r))?;
        }
        let mut seen = std::collections::HashSet::new();
        let mut kept = Vec::new();
        for r in routes {
            let domain = r.domain.to_ascii_lowercase();
            check_domain(&domain).map_err(|e| bad("mail.route.domain", e))?;
            check_host(&r.host).map_err(|e| bad("mail.route.host", e))?;
            if !seen.insert(domain.clone()) {
                return Err(bad("mail.route", format!("{domain} has two routes")));
            }
            if domains.contains(&domain) {
                return Err(bad(
                    "mail.route",
                    format!("{domain} is one of mail.domains: its mail is delivered here"),
                ));
            }
            kept.push(Route {
                domain,
                host: r.host,
            });
        }
        if (smarthost.is_some() || !kept.is_empty()) && domains.is_empty() {
            return Err(bad(
                "mail.domains",
                "must name this server's domains when mail.smarthost or a mail.route is set".into(),
            ));
        }
        Ok(OutboundConfig {
            domains,
            routes: kept,
            smarthost,
            first_retry: None,
            delay_notice: None,
        })
    }

    /// These settings with the retry schedule scaled so that the wait
    /// before the second attempt is `d` (the others in proportion).
    pub fn with_first_retry(self, d: std::time::Duration) -> OutboundConfig {
        OutboundConfig {
            first_retry: Some(d),
            ..self
        }
    }

    /// These settings with delay notices after `d` instead of
    /// [`OutboundConfig::DEFAULT_DELAY_NOTICE`].
    pub fn with_delay_notice(self, d: std::time::Duration) -> OutboundConfig {
        OutboundConfig {
            delay_notice: Some(d),
            ..self
        }
    }

    /// How long an entry waits before its sender is told it is delayed.
    pub fn delay_notice(&self) -> std::time::Duration {
        self.delay_notice.unwrap_or(Self::DEFAULT_DELAY_NOTICE)
    }

    /// The domains delivered here (lowercase; empty: every domain).
    pub fn domains(&self) -> &[String] {
        &self.domains
    }

    /// The domain of `address` (`user@domain`, or the part in `<…>`) if
    /// it is not one of this server's: mail for it leaves the server.
    pub fn remote_domain(&self, address: &str) -> Option<String> {
        if self.domains.is_empty() {
            return None;
        }
        let addr = match (address.find('<'), address.rfind('>')) {
            (Some(a), Some(b)) if a < b => &address[a + 1..b],
            _ => address,
        };
        let (_, domain) = addr.rsplit_once('@')?;
        let domain = domain.to_ascii_lowercase();
        (!self.domains.contains(&domain)).then_some(domain)
    }

    /// Where mail for `domain` goes: its route, else the smarthost.
    pub fn route(&self, domain: &str) -> Option<&str> {
        self.routes
            .iter()
            .find(|r| r.domain.eq_ignore_ascii_case(domain))
            .map(|r| r.host.as_str())
            .or(self.smarthost.as_deref())
    }

    /// The wait after `attempts` failed attempts: the router's schedule
    /// (`router::backoff`: 1, 5, 15, 30, 60 minutes, then hourly), scaled
    /// if `with_first_retry` set it.
    pub fn backoff(&self, attempts: u32) -> std::time::Duration {
        let wait = crate::backoff(attempts);
        match self.first_retry {
            Some(first) => wait.mul_f64(first.as_secs_f64() / crate::BACKOFF[0].as_secs_f64()),
            None => wait,
        }
    }
}

fn check_domain(d: &str) -> Result<(), String> {
    let ok = !d.is_empty()
        && d.len() <= 255
        && d.split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!("{d:?} is not a domain name"))
    }
}

fn check_host(h: &str) -> Result<(), String> {
    match h.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(())
        }
        _ => Err(format!("{h:?} is not host:port")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(domain: &str, host: &str) -> Route {
        Route {
            domain: domain.into(),
            host: host.into(),
        }
    }

    #[test]
    fn local_and_remote_domains() {
        let none = OutboundConfig::default();
        assert_eq!(none.remote_domain("bob@far.example"), None);
        let c = OutboundConfig::new(
            vec!["Example.com".into()],
            Some("relay.example.net:587".into()),
            vec![route("Partner.example", "127.0.0.1:2526")],
        )
        .unwrap();
        assert_eq!(c.remote_domain("alice@EXAMPLE.com"), None);
        assert_eq!(
            c.remote_domain("Bob <bob@Far.Example>").as_deref(),
            Some("far.example")
        );
        assert_eq!(
            c.remote_domain("bob@far.example").as_deref(),
            Some("far.example")
        );
        assert_eq!(c.remote_domain("alice"), None);
        assert_eq!(c.route("partner.example"), Some("127.0.0.1:2526"));
        assert_eq!(c.route("far.example"), Some("relay.example.net:587"));
        assert_eq!(c.backoff(2), std::time::Duration::from_secs(300));
        let quick = c.with_first_retry(std::time::Duration::from_millis(500));
        assert_eq!(quick.backoff(1), std::time::Duration::from_millis(500));
        assert_eq!(quick.backoff(2), std::time::Duration::from_millis(2500));
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        let cases = [
            (vec!["a b".to_string()], None, vec![], "mail.domains"),
            (
                vec!["x.org".into()],
                Some("nohost".into()),
                vec![],
                "mail.smarthost",
            ),
            (
                vec!["x.org".into()],
                None,
                vec![route("y.org", "h:0")],
                "mail.route.host",
            ),
            (
                vec!["x.org".into()],
                None,
                vec![route("y.org", "h:1"), route("Y.org", "h:2")],
                "mail.route",
            ),
            (
                vec!["x.org".into()],
                None,
                vec![route("x.org", "h:1")],
                "mail.route",
            ),
            (vec![], Some("h:25".into()), vec![], "mail.domains"),
        ];
        for (domains, smarthost, routes, key) in cases {
            match OutboundConfig::new(domains, smarthost, routes) {
                Err(MailError::Setting { key: k, .. }) => assert_eq!(k, key),
                other => panic!("expected {key} refused, got {other:?}"),
            }
        }
    }
}
