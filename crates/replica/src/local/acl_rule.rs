//! The ACL's own replication rule, on the target: an ACL travels only by
//! a Manager's change.
//!
//! Every replica's ACL note has the same UNID (from the replica id,
//! design.md §2.7), so it replicates like a document; but replacing a
//! database's access list is a Manager's act. The classic rule: the ACL
//! a source sends is written on the target only when the replication
//! acts for someone the target's ACL, as it stands, names Manager. The
//! network door applies it through the caller's access (the server's
//! write check); this is the same rule for every driver that writes
//! into a database of its own — the local driver, and a server pulling
//! from its peer — where the acting name is given by whoever runs it.
//! A refused ACL note is not written and counts as refused; its page
//! completes like any other, so later sessions do not ask again for it.
//! A target with no ACL yet (a new replica being filled) takes the first
//! one that arrives: there is nobody to protect yet.

use nsf::{Database, NsfResult};

/// For whom a replication writes into its target, as far as the ACL
/// rule goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ActingFor {
    /// The data directory's administrator (the embedded commands), who
    /// may change any ACL.
    #[default]
    Administrator,
    /// Nobody signed in: the ACL's anonymous access.
    Anonymous,
    /// This user (a person or a server's name in the ACL).
    User(String),
}

impl ActingFor {
    /// Whether an incoming ACL note (or its stub) may replace `db`'s.
    pub fn may_replace_acl(&self, db: &Database) -> NsfResult<bool> {
        let user = match self {
            ActingFor::Administrator => return Ok(true),
            ActingFor::Anonymous => None,
            ActingFor::User(name) => Some(name.as_str()),
        };
        Ok(db.acl()?.is_none_or(|acl| acl.access(user).can_manage()))
    }
}
