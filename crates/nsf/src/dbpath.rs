//! A database's one name: [`DbPath`].
//!
//! A database is known by its path relative to the data directory
//! (`mail/alice.fdb`). The operating system accepts many spellings of one
//! file (`mail/./alice.fdb`, `mail//alice.fdb`, `mail/x/../alice.fdb`), and
//! the open-database cache is keyed by the name. Two spellings of one file
//! would give two independent `Database` instances of one file, each with
//! its own header, free list and pages in the pool: each would overwrite
//! the other's acknowledged writes. Invariant I18 (docs/design.md) is that
//! this never happens: every door (CLI, native protocol, HTTP, and the
//! layers built later) reaches a database only through a `DbPath`, and a
//! `DbPath` can only be made from the canonical spelling. Anything else is
//! refused with the reason, never silently mapped: a client that spelled a
//! path oddly learns so, instead of finding its documents under a name it
//! did not use.
//!
//! Canonical means: 1 to 240 bytes of `/`-separated segments, none empty,
//! `.` or `..`, none starting or ending with white space; no backslash,
//! no control character; the last segment is `NAME.fdb` with a lowercase
//! extension and a non-empty name.
//!
//! The engine backs this with a second key, the file's identity on disk
//! (device and inode, where the backend knows them), so a link made by
//! hand inside the data directory cannot open a second instance either.

use crate::{NsfError, NsfResult};
use std::fmt;

/// Longest database path, in bytes.
pub const MAX_DB_PATH: usize = 240;

/// A database path in its one canonical spelling (I18).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DbPath(String);

impl DbPath {
    /// Checks that `path` is the canonical spelling of a database path.
    pub fn parse(path: &str) -> NsfResult<DbPath> {
        match problem(path) {
            None => Ok(DbPath(path.to_string())),
            Some(reason) => Err(NsfError::BadPath {
                path: path.to_string(),
                reason: reason.to_string(),
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DbPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for DbPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DbPath {
    type Err = NsfError;
    fn from_str(s: &str) -> NsfResult<DbPath> {
        DbPath::parse(s)
    }
}

/// Why `path` is not canonical, or `None` if it is.
fn problem(path: &str) -> Option<&'static str> {
    if path.is_empty() || path.len() > MAX_DB_PATH {
        return Some("must be 1 to 240 bytes");
    }
    if path.chars().any(|c| c.is_control()) {
        return Some("control characters are not allowed");
    }
    if path.contains('\\') {
        return Some("backslashes are not allowed; folders are separated by '/'");
    }
    if path.starts_with('/') {
        return Some("must be relative to the data directory (no leading '/')");
    }
    if path.ends_with('/') {
        return Some("must name a file, not a folder (no trailing '/')");
    }
    for seg in path.split('/') {
        match seg {
            "" => return Some("empty folder name ('//')"),
            "." | ".." => return Some("'.' and '..' are not allowed"),
            _ if seg.trim() != seg => {
                return Some("folder and file names cannot start or end with white space")
            }
            _ => {}
        }
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('.') {
        Some((stem, "fdb")) if !stem.is_empty() => None,
        Some((stem, ext)) if ext.eq_ignore_ascii_case("fdb") && !stem.is_empty() => {
            Some("the extension is '.fdb', in lowercase")
        }
        Some(("", _)) => Some("the file needs a name before '.fdb'"),
        _ => Some("database paths end in .fdb"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths_parse() {
        for p in [
            "a.fdb",
            "mail/alice.fdb",
            "x/y/z.fdb",
            "names.v2.fdb",
            "é/ü.fdb",
        ] {
            assert_eq!(DbPath::parse(p).unwrap().as_str(), p);
        }
    }

    #[test]
    fn every_other_spelling_is_refused_with_its_reason() {
        let cases = [
            ("", "1 to 240"),
            ("alias/./real.fdb", "'.' and '..'"),
            ("./real.fdb", "'.' and '..'"),
            ("alias//real.fdb", "empty folder"),
            ("alias/../real.fdb", "'.' and '..'"),
            ("../real.fdb", "'.' and '..'"),
            ("/abs/real.fdb", "leading '/'"),
            ("alias/real.fdb/", "trailing '/'"),
            ("alias\\real.fdb", "backslash"),
            ("alias/real.FDB", "lowercase"),
            ("alias/real.Fdb", "lowercase"),
            ("alias/.fdb", "a name before"),
            ("alias/real", "end in .fdb"),
            ("alias/real.fdb.bak", "end in .fdb"),
            (" alias/real.fdb", "white space"),
            ("alias /real.fdb", "white space"),
            ("alias/real.fdb ", "white space"),
            ("a\u{0}b.fdb", "control"),
            ("a\nb.fdb", "control"),
        ];
        for (p, why) in cases {
            let e = DbPath::parse(p).unwrap_err().to_string();
            assert!(e.contains(why), "{p:?}: {e}");
        }
        let long = format!("{}.fdb", "a".repeat(MAX_DB_PATH));
        assert!(DbPath::parse(&long).is_err());
    }
}
