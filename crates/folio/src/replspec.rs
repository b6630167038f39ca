//! The spellings `folio replicate SRC DST` accepts, turned into the one
//! form the drivers run.
//!
//! SRC and DST are each a database of the data directory (`mail/a.fdb`)
//! or one on a server (`HOST:PORT/PATH`, e.g. `127.0.0.1:1352/mail/a.fdb`
//! or `[::1]:1352/a.fdb`). Documents flow SRC into DST (`--pull`, the
//! default), DST into SRC (`--push`), or both ways (`--both`), whichever
//! end is where:
//!
//! ```text
//!   SRC              DST              runs as
//!   local            local            the local driver
//!   HOST:PORT/P      local            --server HOST:PORT, LOCAL=DST, REMOTE=P
//!   local            HOST:PORT/P      --server HOST:PORT, LOCAL=SRC, REMOTE=P, direction reversed
//!   A:PORT/P         B:PORT/Q         --server A --peer B (A replicates its P with B's Q), reversed
//! ```
//!
//! (With `--server` the direction is the local side's: pull brings the
//! server's changes in. "Reversed" maps SRC-into-DST onto that.) An end
//! on a server together with `--server` or `--peer` is refused: the
//! server is named once. `--create` makes a new replica of a server's
//! database in the data directory, so it needs SRC on a server and DST
//! here.

use crate::cli::{Args, Cmd};
use crate::error::{FolioError, FolioResult};
use crate::replcli::Direction;

/// One end of a replication, as spelled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// A database of the data directory.
    Local(String),
    /// A database on a server.
    Remote {
        /// HOST:PORT of the server's native protocol.
        server: String,
        /// The database's path there.
        path: String,
    },
}

impl End {
    /// Reads one end: `HOST:PORT/PATH` is on a server (a host, a colon, a
    /// port of digits, a slash, a path); anything else is a local path.
    pub fn parse(spelled: &str) -> FolioResult<End> {
        let Some((head, path)) = spelled.split_once('/') else {
            return Ok(End::Local(spelled.to_string()));
        };
        let Some((host, port)) = head.rsplit_once(':') else {
            return Ok(End::Local(spelled.to_string()));
        };
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || host.is_empty() {
            return Ok(End::Local(spelled.to_string()));
        }
        if port.parse::<u16>().is_err() {
            return Err(FolioError::Usage(format!(
                "{spelled:?}: port {port} is not a TCP port (1-65535)"
            )));
        }
        if path.trim_matches('/').is_empty() {
            return Err(FolioError::Usage(format!(
                "{spelled:?}: HOST:PORT/PATH needs a database path after the slash"
            )));
        }
        Ok(End::Remote {
            server: head.to_string(),
            path: path.to_string(),
        })
    }
}

/// Rewrites a `replicate` command whose ends name servers into the
/// `--server` / `--peer` form (module docs), and folds `--pull`,
/// `--push` and `--both` into its direction. Other commands pass as they
/// are.
pub fn normalize(mut args: Args) -> FolioResult<Args> {
    let server = args.server.clone();
    let Cmd::Replicate {
        src,
        dst,
        direction,
        create,
        peer,
        pull,
        push,
        both,
        ..
    } = &mut args.cmd
    else {
        return Ok(args);
    };
    if *push {
        *direction = Direction::Push;
    } else if *both {
        *direction = Direction::Both;
    } else if *pull {
        *direction = Direction::Pull;
    }
    let ends = (End::parse(src)?, End::parse(dst)?);
    if matches!(ends, (End::Local(_), End::Local(_))) {
        return Ok(args);
    }
    if server.is_some() || peer.is_some() {
        return Err(FolioError::Usage(
            "name the server once: either HOST:PORT/PATH in SRC or DST, or --server (and --peer), not both".into(),
        ));
    }
    let reversed = match *direction {
        Direction::Pull => Direction::Push,
        Direction::Push => Direction::Pull,
        Direction::Both => Direction::Both,
    };
    let no_create = || {
        FolioError::Usage(
            "--create makes a new replica in the data directory: give the server's database as SRC and a local path as DST".into(),
        )
    };
    match ends {
        (End::Remote { server, path }, End::Local(local)) => {
            args.server = Some(server);
            (*src, *dst) = (local, path);
        }
        (End::Local(local), End::Remote { server, path }) => {
            if *create {
                return Err(no_create());
            }
            args.server = Some(server);
            (*src, *dst) = (local, path);
            *direction = reversed;
        }
        (End::Remote { server: a, path: p }, End::Remote { server: b, path: q }) => {
            if *create {
                return Err(no_create());
            }
            args.server = Some(a);
            *peer = Some(b);
            (*src, *dst) = (p, q);
            *direction = reversed;
        }
        (End::Local(_), End::Local(_)) => {}
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parsed(line: &str) -> FolioResult<Args> {
        let args = Args::try_parse_from(line.split_whitespace())
            .map_err(|e| FolioError::Usage(e.to_string()))?;
        normalize(args)
    }

    fn replicate(a: &Args) -> (String, String, Direction, Option<String>) {
        match &a.cmd {
            Cmd::Replicate {
                src,
                dst,
                direction,
                peer,
                ..
            } => (src.clone(), dst.clone(), *direction, peer.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ends_parse_as_local_paths_or_server_databases() {
        assert_eq!(End::parse("a.fdb").unwrap(), End::Local("a.fdb".into()));
        assert_eq!(
            End::parse("mail/a.fdb").unwrap(),
            End::Local("mail/a.fdb".into())
        );
        assert_eq!(
            End::parse("host:1352/mail/a.fdb").unwrap(),
            End::Remote {
                server: "host:1352".into(),
                path: "mail/a.fdb".into()
            }
        );
        assert_eq!(
            End::parse("[::1]:1352/a.fdb").unwrap(),
            End::Remote {
                server: "[::1]:1352".into(),
                path: "a.fdb".into()
            }
        );
        // Not a port: a local path with a colon.
        assert_eq!(
            End::parse("c:x/a.fdb").unwrap(),
            End::Local("c:x/a.fdb".into())
        );
        for bad in ["host:99999/a.fdb", "host:1352/", "host:1352//"] {
            assert!(
                matches!(End::parse(bad), Err(FolioError::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn server_ends_become_the_server_and_peer_forms() {
        let a = parsed("folio replicate 10.0.0.1:1352/db.fdb local.fdb").unwrap();
        assert_eq!(a.server.as_deref(), Some("10.0.0.1:1352"));
        assert_eq!(
            replicate(&a),
            ("local.fdb".into(), "db.fdb".into(), Direction::Pull, None)
        );

        let a = parsed("folio replicate local.fdb 10.0.0.1:1352/db.fdb").unwrap();
        assert_eq!(a.server.as_deref(), Some("10.0.0.1:1352"));
        assert_eq!(
            replicate(&a),
            ("local.fdb".into(), "db.fdb".into(), Direction::Push, None)
        );

        let a = parsed("folio replicate local.fdb h:1/db.fdb --push").unwrap();
        assert_eq!(replicate(&a).2, Direction::Pull);

        let a = parsed("folio replicate a:1/x.fdb b:2/y.fdb --both").unwrap();
        assert_eq!(a.server.as_deref(), Some("a:1"));
        assert_eq!(
            replicate(&a),
            (
                "x.fdb".into(),
                "y.fdb".into(),
                Direction::Both,
                Some("b:2".into())
            )
        );
    }

    #[test]
    fn direction_flags_fold_into_the_direction_and_conflict() {
        assert_eq!(
            replicate(&parsed("folio replicate a.fdb b.fdb --both").unwrap()).2,
            Direction::Both
        );
        assert_eq!(
            replicate(&parsed("folio replicate a.fdb b.fdb --push").unwrap()).2,
            Direction::Push
        );
        assert_eq!(
            replicate(&parsed("folio replicate a.fdb b.fdb").unwrap()).2,
            Direction::Pull
        );
        for bad in [
            "folio replicate a.fdb b.fdb --pull --push",
            "folio replicate a.fdb b.fdb --both --direction pull",
        ] {
            assert!(parsed(bad).is_err(), "{bad}");
        }
        let a = parsed("folio replicate a.fdb b.fdb --select SELECT@All").unwrap();
        match a.cmd {
            Cmd::Replicate { selection, .. } => {
                assert_eq!(selection.as_deref(), Some("SELECT@All"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_server_is_named_once_and_create_needs_the_server_as_source() {
        for bad in [
            "folio --server h:1 replicate h:1/a.fdb b.fdb",
            "folio replicate h:1/a.fdb b.fdb --peer p:2",
            "folio replicate a.fdb h:1/b.fdb --create",
            "folio replicate h:1/a.fdb p:2/b.fdb --create",
        ] {
            assert!(matches!(parsed(bad), Err(FolioError::Usage(_))), "{bad}");
        }
        let a = parsed("folio replicate h:1/a.fdb b.fdb --create").unwrap();
        assert!(matches!(a.cmd, Cmd::Replicate { create: true, .. }));
    }
}
