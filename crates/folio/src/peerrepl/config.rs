//! `[[replication]]` entries of `folio.toml`: what a server replicates
//! with its peers, and how often.
//!
//! ```toml
//! [[replication]]
//! name = "hub"                 # optional; the statistics' key (default replication<N>)
//! peer = "hub.example:1352"    # the peer's native address
//! user = "server-a"            # credentials for the peer (optional: anonymous)
//! password = "..."             #   or password_env = "HUB_PASSWORD"
//! databases = ["sales.fdb"]    # the same paths on both servers ...
//! folder = "mail"              #   ... or every database here under a folder
//! interval_secs = 900          # between the end of one run and the next
//! direction = "both"           # pull | push | both (default both)
//! selection = "Form = \"Order\""  # pulls only
//! on_change = true             # also run soon after a local commit (push | both)
//! on_change_delay_secs = 2     #   that long after the first commit seen (default 2,
//!                              #   at most interval_secs)
//! ```
//!
//! Parsed as strictly as the rest of the file: an unknown key or a bad
//! value stops the server at start with a message naming the entry and
//! the key, so a misspelt entry never silently replicates nothing.

use protocol::PeerDirection;
use serde::Deserialize;
use std::time::Duration;

/// One `[[replication]]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationSection {
    pub name: Option<String>,
    pub peer: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub password_env: Option<String>,
    pub databases: Option<Vec<String>>,
    pub folder: Option<String>,
    pub interval_secs: Option<f64>,
    pub direction: Option<String>,
    pub selection: Option<String>,
    pub on_change: Option<bool>,
    pub on_change_delay_secs: Option<f64>,
}

/// Which databases an entry replicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Databases {
    /// These paths, the same on both servers.
    List(Vec<String>),
    /// Every database here under this folder (listed at each run), the
    /// same path on the peer.
    Folder(String),
}

/// One validated entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Its key in the statistics (`replication.<name>.*`).
    pub name: String,
    /// The peer's native address.
    pub peer: String,
    /// User and password for the peer; `None` signs in anonymously.
    pub credentials: Option<(String, String)>,
    /// What it replicates.
    pub databases: Databases,
    /// From the end of one run to the start of the next.
    pub interval: Duration,
    /// Which way documents flow.
    pub direction: PeerDirection,
    /// Only documents this formula selects are pulled.
    pub selection: Option<String>,
    /// With `on_change = true`: how long after the first local commit
    /// seen the entry runs (a burst of commits makes one run).
    pub on_change: Option<Duration>,
}

/// The shortest interval accepted.
const MIN_INTERVAL_SECS: f64 = 1.0;
/// The longest (a week).
const MAX_INTERVAL_SECS: f64 = 604_800.0;
/// `on_change_delay_secs` when not given.
const DEFAULT_ON_CHANGE_DELAY_SECS: f64 = 2.0;
/// The shortest on-change delay accepted.
const MIN_ON_CHANGE_DELAY_SECS: f64 = 0.1;

/// Validates every entry; `env` reads `password_env` variables. The
/// error names the entry (`replication[N]`, or its name) and the key.
pub fn entries(
    sections: &[ReplicationSection],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Entry>, String> {
    let mut out: Vec<Entry> = Vec::with_capacity(sections.len());
    for (i, s) in sections.iter().enumerate() {
        let entry = entry(i, s, env)?;
        if out.iter().any(|e| e.name == entry.name) {
            return Err(format!(
                "invalid setting replication[{i}].name: {:?} is used by another entry",
                entry.name
            ));
        }
        out.push(entry);
    }
    Ok(out)
}

fn entry(
    i: usize,
    s: &ReplicationSection,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Entry, String> {
    let bad = |key: &str, why: String| format!("invalid setting replication[{i}].{key}: {why}");
    let name = match &s.name {
        Some(n) => {
            let ok = !n.is_empty()
                && n.len() <= 64
                && n.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !ok {
                return Err(bad(
                    "name",
                    format!("{n:?}: use 1 to 64 lowercase letters, digits, '_' and '-'"),
                ));
            }
            n.clone()
        }
        None => format!("replication{i}"),
    };
    let peer = match &s.peer {
        Some(p)
            if p.rsplit_once(':').is_some_and(|(h, port)| {
                !h.is_empty() && port.parse::<u16>().is_ok_and(|n| n > 0)
            }) =>
        {
            p.clone()
        }
        Some(p) => return Err(bad("peer", format!("{p:?} is not HOST:PORT"))),
        None => {
            return Err(bad(
                "peer",
                "missing: the peer's native address, HOST:PORT".into(),
            ))
        }
    };
    let password = match (&s.password, &s.password_env) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "password_env",
                "give password or password_env, not both".into(),
            ))
        }
        (Some(p), None) => Some(p.clone()),
        (None, Some(var)) => {
            Some(env(var).ok_or_else(|| bad("password_env", format!("{var} is not set")))?)
        }
        (None, None) => None,
    };
    let credentials = match (&s.user, password) {
        (Some(u), p) if !u.is_empty() => Some((u.clone(), p.unwrap_or_default())),
        (Some(_), _) => return Err(bad("user", "is empty".into())),
        (None, Some(_)) => return Err(bad("password", "given without a user".into())),
        (None, None) => None,
    };
    let databases = match (&s.databases, &s.folder) {
        (Some(_), Some(_)) => {
            return Err(bad("folder", "give databases or folder, not both".into()))
        }
        (Some(list), None) if list.is_empty() => return Err(bad("databases", "is empty".into())),
        (Some(list), None) => {
            for p in list {
                nsf::DbPath::parse(p).map_err(|e| bad("databases", format!("{p:?}: {e}")))?;
            }
            Databases::List(list.clone())
        }
        (None, Some(f)) => Databases::Folder(f.trim_matches('/').to_string()),
        (None, None) => {
            return Err(bad(
                "databases",
                "missing: list the databases, or give a folder".into(),
            ))
        }
    };
    let interval = match s.interval_secs {
        Some(n) if (MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&n) => {
            Duration::from_secs_f64(n)
        }
        Some(_) => {
            return Err(bad(
                "interval_secs",
                format!("must be between {MIN_INTERVAL_SECS} and {MAX_INTERVAL_SECS}"),
            ))
        }
        None => return Err(bad("interval_secs", "missing".into())),
    };
    let direction = match s.direction.as_deref() {
        None | Some("both") => PeerDirection::Both,
        Some("pull") => PeerDirection::Pull,
        Some("push") => PeerDirection::Push,
        Some(d) => return Err(bad("direction", format!("{d:?}: use pull, push or both"))),
    };
    if let Some(f) = &s.selection {
        formula::Formula::parse(f).map_err(|e| bad("selection", format!("{f:?}: {e}")))?;
        if direction != PeerDirection::Pull {
            return Err(bad(
                "selection",
                "applies to pulls only: set direction = \"pull\"".into(),
            ));
        }
    }
    let on_change = on_change(s, direction, interval).map_err(|(key, why)| bad(key, why))?;
    Ok(Entry {
        name,
        peer,
        credentials,
        databases,
        interval,
        direction,
        selection: s.selection.clone(),
        on_change,
    })
}

/// The on-change delay, if the entry runs on change. Only an entry that
/// pushes may: a commit here is news for the peer, while the peer's
/// commits are not seen here (the peer's own entry pushes them).
fn on_change(
    s: &ReplicationSection,
    direction: PeerDirection,
    interval: Duration,
) -> Result<Option<Duration>, (&'static str, String)> {
    let delay = s.on_change_delay_secs;
    match s.on_change {
        Some(true) => {}
        Some(false) | None if delay.is_some() => {
            return Err((
                "on_change_delay_secs",
                "given without on_change = true".into(),
            ))
        }
        Some(false) | None => return Ok(None),
    }
    if direction == PeerDirection::Pull {
        return Err((
            "on_change",
            "needs direction push or both: the peer's commits are not seen here, \
             give the peer an on-change entry that pushes instead"
                .into(),
        ));
    }
    let secs = delay.unwrap_or(DEFAULT_ON_CHANGE_DELAY_SECS.min(interval.as_secs_f64()));
    if !(MIN_ON_CHANGE_DELAY_SECS..=interval.as_secs_f64()).contains(&secs) {
        return Err((
            "on_change_delay_secs",
            format!("must be between {MIN_ON_CHANGE_DELAY_SECS} and interval_secs"),
        ));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Entry>, String> {
        let file = crate::config::parse(text)?;
        entries(&file.replication, &|v| {
            (v == "HUB_PW").then(|| "s3cret".into())
        })
    }

    #[test]
    fn a_full_entry_and_the_defaults() {
        let e = parse(
            r#"
            [[replication]]
            name = "hub"
            peer = "hub.example:1352"
            user = "server-a"
            password_env = "HUB_PW"
            databases = ["sales.fdb", "hr/staff.fdb"]
            interval_secs = 900
            direction = "pull"
            selection = "Form = \"Order\""

            [[replication]]
            peer = "127.0.0.1:2000"
            folder = "/mail/"
            interval_secs = 1.5
            "#,
        )
        .unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].name, "hub");
        assert_eq!(e[0].credentials, Some(("server-a".into(), "s3cret".into())));
        assert_eq!(
            e[0].databases,
            Databases::List(vec!["sales.fdb".into(), "hr/staff.fdb".into()])
        );
        assert_eq!(e[0].interval, Duration::from_secs(900));
        assert_eq!(e[0].direction, PeerDirection::Pull);
        assert_eq!(e[1].name, "replication1");
        assert_eq!(e[1].credentials, None);
        assert_eq!(e[1].databases, Databases::Folder("mail".into()));
        assert_eq!(e[1].direction, PeerDirection::Both);
        assert_eq!(e[1].interval, Duration::from_millis(1500));
        assert_eq!(e[0].on_change, None);
    }

    #[test]
    fn an_on_change_entry_and_its_delay() {
        let base = "[[replication]]\npeer = \"h:1\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 60\n";
        let e = parse(&format!("{base}on_change = true\n")).unwrap();
        assert_eq!(e[0].on_change, Some(Duration::from_secs(2)));
        let e = parse(&format!(
            "{base}on_change = true\non_change_delay_secs = 0.5\ndirection = \"push\"\n"
        ))
        .unwrap();
        assert_eq!(e[0].on_change, Some(Duration::from_millis(500)));
        let short = base.replace("interval_secs = 60", "interval_secs = 1");
        let e = parse(&format!("{short}on_change = true\n")).unwrap();
        assert_eq!(e[0].on_change, Some(Duration::from_secs(1)), "capped");
        let e = parse(&format!("{base}on_change = false\n")).unwrap();
        assert_eq!(e[0].on_change, None);
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry_and_key() {
        let base = "peer = \"h:1\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 60\n";
        for (extra, names) in [
            ("colour = \"red\"", "colour"),
            ("direction = \"sideways\"", "replication[0].direction"),
            ("selection = \"Form = \"", "replication[0].selection"),
            ("selection = \"Form = 1\"", "applies to pulls only"),
            (
                "password = \"x\"",
                "replication[0].password: given without a user",
            ),
            ("user = \"u\"\npassword_env = \"NOPE\"", "NOPE is not set"),
            ("folder = \"mail\"", "replication[0].folder"),
            ("name = \"Hub!\"", "replication[0].name"),
            ("on_change_delay = 2", "on_change_delay"),
            (
                "on_change_delay_secs = 2",
                "replication[0].on_change_delay_secs: given without on_change",
            ),
            (
                "on_change = true\non_change_delay_secs = 0",
                "replication[0].on_change_delay_secs: must be",
            ),
            (
                "on_change = true\non_change_delay_secs = -1",
                "replication[0].on_change_delay_secs: must be",
            ),
            (
                "on_change = true\non_change_delay_secs = 61",
                "replication[0].on_change_delay_secs: must be",
            ),
            (
                "on_change = true\ndirection = \"pull\"",
                "replication[0].on_change: needs direction push or both",
            ),
        ] {
            let e = parse(&format!("[[replication]]\n{base}{extra}\n")).unwrap_err();
            assert!(e.contains(names), "{extra}: {e}");
        }
        for (entry, names) in [
            (
                "databases = [\"a.fdb\"]\ninterval_secs = 60",
                "replication[0].peer: missing",
            ),
            (
                "peer = \"nohost\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 60",
                "replication[0].peer",
            ),
            (
                "peer = \"h:1\"\ninterval_secs = 60",
                "replication[0].databases: missing",
            ),
            (
                "peer = \"h:1\"\ndatabases = []\ninterval_secs = 60",
                "replication[0].databases: is empty",
            ),
            (
                "peer = \"h:1\"\ndatabases = [\"../x.fdb\"]\ninterval_secs = 60",
                "replication[0].databases",
            ),
            (
                "peer = \"h:1\"\ndatabases = [\"a.fdb\"]",
                "replication[0].interval_secs: missing",
            ),
            (
                "peer = \"h:1\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 0.5",
                "replication[0].interval_secs",
            ),
        ] {
            let e = parse(&format!("[[replication]]\n{entry}\n")).unwrap_err();
            assert!(e.contains(names), "{entry}: {e}");
        }
        let twice = "[[replication]]\nname = \"a\"\npeer = \"h:1\"\ndatabases = [\"a.fdb\"]\ninterval_secs = 60\n";
        let e = parse(&format!("{twice}{twice}")).unwrap_err();
        assert!(e.contains("replication[1].name"), "{e}");
    }
}
