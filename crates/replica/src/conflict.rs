//! The conflict rule: which version a replica keeps, and when the other
//! one becomes a conflict document. docs/design.md §11.4 states it; this
//! is the one place it is decided.
//!
//! **Which version wins** is the version order alone ([`Version`]: higher
//! sequence number, then later sequence time, then the digest). Every
//! replica keeps the maximum of what it has seen, so once all have seen
//! the same versions they keep the same winner, in whatever order the
//! replications ran. A deletion stub is a version like any other: a
//! delete is an edit that bumps the sequence number.
//!
//! **Whether the loser is kept** depends on history, not on order. A loser
//! the winner was made from (it is among the winner's revisions) is simply
//! superseded: that is an ordinary update arriving. A loser the winner was
//! *not* made from is a concurrent edit, and is kept as a conflict
//! document — a deletion stub too, as a conflict document that is itself
//! a stub, so a deletion that loses is still a deleted leaf of the
//! document's revision tree (design.md I63: every acknowledged version,
//! deleted or live, stays a leaf or an ancestor). So, delete versus edit:
//!
//! ```text
//!   winner      loser (concurrent)   result
//!   edit        edit                 winner; loser kept as conflict document
//!   deletion    edit                 deleted; the edit kept as conflict document
//!   edit        deletion             the document lives on; the deletion kept
//!                                    as a conflict document that is a stub
//!   deletion    deletion             deleted; the other kept as a conflict stub
//! ```
//!
//! **Who makes the conflict document**: the target, when a write meets a
//! concurrent version (whether the incoming version replaced the held one
//! or lost to it), in the same write (I27). Its identity is a function of
//! the document and the losing version alone ([`conflict_unid`]), its
//! version is the losing version and its content the losing content, so
//! every replica that meets the same pair makes the very same document;
//! conflict documents then replicate like any other, and a second copy
//! arriving is "already have".

use crate::msg::{Entry, Envelope};
use crate::version::Version;
use nsf::Unid;
use sha2::{Digest, Sha256};

/// What a target holds of one document, as its local query reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held<V> {
    /// The version held.
    pub version: V,
    /// Whether it is a deletion stub.
    pub deleted: bool,
    /// The versions it was made from (as far as it keeps them).
    pub revisions: Vec<V>,
    /// Content of this version the target could reuse for the incoming
    /// one ([`crate::ContentKey`]); empty when there is none to offer.
    pub have: Vec<crate::ContentKey>,
}

/// The target's decision on one summary entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not held at all: fetch it.
    New,
    /// Held at a lower version: fetch it (an update, or a concurrent edit
    /// that wins).
    Newer,
    /// Held at a higher version not made from the offered one: fetch it,
    /// to keep it as a conflict document (a deletion stub as a conflict
    /// stub).
    Loser,
    /// Held at this very version: skip.
    Same,
    /// Held at a version made from the offered one: skip.
    Ancestor,
}

impl Decision {
    /// Whether the document is fetched.
    pub fn wanted(self) -> bool {
        matches!(self, Decision::New | Decision::Newer | Decision::Loser)
    }
}

/// Decides whether a target fetches `offered`, holding `held`.
pub fn decide<V: Version>(offered: &Entry<V>, held: Option<&Held<V>>) -> Decision {
    let Some(held) = held else {
        return Decision::New;
    };
    if held.version == offered.version {
        Decision::Same
    } else if held.version < offered.version {
        Decision::Newer
    } else if held.revisions.contains(&offered.version) {
        Decision::Ancestor
    } else {
        Decision::Loser
    }
}

/// What writing one incoming document did, as the store reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied<V, N> {
    /// The document was new here, and is stored.
    Stored,
    /// This version (or, by the version order, the same document) is here.
    AlreadyHave,
    /// The incoming version is higher and replaced `loser`.
    Replaced {
        /// What was held before.
        loser: Envelope<V, N>,
    },
    /// The version held is higher; nothing was written.
    Lost {
        /// What is held.
        winner: Held<V>,
    },
}

/// A conflict document to write: the losing version of `response_to`,
/// kept under a UNID of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictDoc<V, N> {
    /// [`conflict_unid`] of the document and the losing version.
    pub unid: Unid,
    /// The document it is a response to (marked `$Ref` in nsf).
    pub response_to: Unid,
    /// The losing version: also the conflict document's version, so every
    /// replica's copy is the same version.
    pub version: V,
    /// The losing version's revisions.
    pub revisions: Vec<V>,
    /// Whether the losing version is a deletion stub (the conflict
    /// document is then a stub too: a deleted leaf).
    pub deleted: bool,
    /// The losing content's size.
    pub size: u64,
    /// The losing content; the store marks it `$Conflict`.
    pub body: N,
}

impl<V: Version, N: Clone> ConflictDoc<V, N> {
    /// The conflict document keeping `loser`.
    pub fn keeping(loser: &Envelope<V, N>) -> ConflictDoc<V, N> {
        ConflictDoc {
            unid: conflict_unid(loser.unid, &loser.version),
            response_to: loser.unid,
            version: loser.version.clone(),
            revisions: loser.revisions.clone(),
            deleted: loser.deleted,
            size: loser.size,
            body: loser.body.clone(),
        }
    }
}

/// The conflict document, if any, that writing `incoming` calls for.
pub fn resolve<V: Version, N: Clone>(
    incoming: &Envelope<V, N>,
    applied: &Applied<V, N>,
) -> Option<ConflictDoc<V, N>> {
    match applied {
        // I63: a concurrent loser is kept whether it is live or a stub.
        Applied::Replaced { loser } if !incoming.revisions.contains(&loser.version) => {
            Some(ConflictDoc::keeping(loser))
        }
        Applied::Lost { winner } if !winner.revisions.contains(&incoming.version) => {
            Some(ConflictDoc::keeping(incoming))
        }
        _ => None,
    }
}

/// The UNID of the conflict document keeping version `loser` of `doc`:
/// the first 16 bytes of SHA-256 over a fixed tag, the document's UNID
/// and the version's identity bytes. The same on every replica.
pub fn conflict_unid<V: Version>(doc: Unid, loser: &V) -> Unid {
    let mut bytes = Vec::with_capacity(64);
    bytes.extend_from_slice(b"folio conflict v1\0");
    bytes.extend_from_slice(&doc.0);
    loser.identity(&mut bytes);
    let digest = Sha256::digest(&bytes);
    let mut unid = [0u8; 16];
    unid.copy_from_slice(&digest[..16]);
    Unid(unid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::Seq;

    /// (sequence number, time): enough of a version for the rule.
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct V(u32, i64);

    impl Version for V {
        fn identity(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
        }
    }

    const X: Unid = Unid([7; 16]);

    fn entry(v: V, deleted: bool) -> Entry<V> {
        Entry {
            unid: X,
            version: v,
            size: 10,
            deleted,
            change: Seq(1),
        }
    }

    fn held(v: V, deleted: bool, revisions: Vec<V>) -> Held<V> {
        Held {
            version: v,
            deleted,
            revisions,
            have: Vec::new(),
        }
    }

    fn env(v: V, deleted: bool, revisions: Vec<V>) -> Envelope<V, &'static str> {
        Envelope {
            unid: X,
            version: v,
            deleted,
            revisions,
            size: 3,
            body: "abc",
        }
    }

    #[test]
    fn decisions_follow_the_rule() {
        let offered = entry(V(2, 5), false);
        assert_eq!(decide(&offered, None), Decision::New);
        assert_eq!(
            decide(&offered, Some(&held(V(2, 5), false, vec![]))),
            Decision::Same
        );
        assert_eq!(
            decide(&offered, Some(&held(V(1, 9), false, vec![]))),
            Decision::Newer
        );
        assert_eq!(
            decide(&offered, Some(&held(V(2, 6), false, vec![]))),
            Decision::Loser,
            "equal sequence, later time wins; the loser is fetched to be kept"
        );
        assert_eq!(
            decide(&offered, Some(&held(V(3, 1), true, vec![V(2, 5)]))),
            Decision::Ancestor
        );
        assert_eq!(
            decide(&entry(V(2, 5), true), Some(&held(V(3, 1), false, vec![]))),
            Decision::Loser,
            "a concurrent deletion that loses is fetched to be kept as a deleted leaf"
        );
        assert!(Decision::Loser.wanted() && !Decision::Ancestor.wanted());
    }

    #[test]
    fn an_update_supersedes_quietly_and_a_concurrent_edit_is_kept() {
        let incoming = env(V(2, 5), false, vec![V(1, 1)]);
        let ancestor = Applied::Replaced {
            loser: env(V(1, 1), false, vec![]),
        };
        assert_eq!(resolve(&incoming, &ancestor), None);
        let concurrent = Applied::Replaced {
            loser: env(V(1, 2), false, vec![]),
        };
        let doc = resolve(&incoming, &concurrent).expect("a conflict document");
        assert_eq!(doc.response_to, X);
        assert_eq!(doc.version, V(1, 2));
        assert_eq!(doc.unid, conflict_unid(X, &V(1, 2)));
    }

    #[test]
    fn delete_versus_edit() {
        // A deletion wins over a concurrent edit: the edit is kept.
        let stub = env(V(3, 1), true, vec![V(2, 1)]);
        let edit = env(V(2, 2), false, vec![V(1, 1)]);
        let kept = resolve(
            &stub,
            &Applied::Replaced {
                loser: edit.clone(),
            },
        );
        assert_eq!(kept.map(|d| d.version), Some(V(2, 2)));
        // An edit wins over a concurrent deletion: the deletion is kept
        // as a conflict document that is a stub (a deleted leaf).
        let late_edit = env(V(4, 1), false, vec![V(3, 0)]);
        let kept = resolve(
            &late_edit,
            &Applied::Replaced {
                loser: stub.clone(),
            },
        )
        .expect("the deletion is kept");
        assert_eq!((kept.version, kept.deleted), (V(3, 1), true));
        assert_eq!(kept.unid, conflict_unid(X, &V(3, 1)));
        // An edit made from the deletion (a revival): nothing to keep.
        let revival = env(V(4, 1), false, vec![V(3, 1)]);
        assert_eq!(
            resolve(
                &revival,
                &Applied::Replaced {
                    loser: stub.clone()
                }
            ),
            None
        );
        // A deletion arriving after the edit it deleted: no conflict.
        let plain = env(V(3, 1), true, vec![V(1, 1), V(2, 2)]);
        assert_eq!(resolve(&plain, &Applied::Replaced { loser: edit }), None);
        // A losing incoming deletion is kept too, the same document
        // whichever replica meets the pair.
        let lost = Applied::Lost {
            winner: held(V(9, 9), false, vec![]),
        };
        let kept = resolve(&stub, &lost).expect("the losing deletion is kept");
        assert_eq!(
            (kept.unid, kept.deleted),
            (conflict_unid(X, &V(3, 1)), true)
        );
        // One that the winner was made from is not.
        let after = Applied::Lost {
            winner: held(V(9, 9), false, vec![V(3, 1)]),
        };
        assert_eq!(resolve(&stub, &after), None);
    }

    #[test]
    fn a_losing_incoming_edit_is_kept_unless_the_winner_descends_from_it() {
        let incoming = env(V(2, 2), false, vec![]);
        let concurrent = Applied::Lost {
            winner: held(V(3, 0), false, vec![V(2, 1)]),
        };
        assert_eq!(
            resolve(&incoming, &concurrent).map(|d| d.unid),
            Some(conflict_unid(X, &V(2, 2)))
        );
        let descendant = Applied::Lost {
            winner: held(V(3, 0), false, vec![V(2, 2)]),
        };
        assert_eq!(resolve(&incoming, &descendant), None);
    }

    #[test]
    fn conflict_unids_depend_on_document_and_version_only() {
        assert_eq!(conflict_unid(X, &V(1, 2)), conflict_unid(X, &V(1, 2)));
        assert_ne!(conflict_unid(X, &V(1, 2)), conflict_unid(X, &V(1, 3)));
        assert_ne!(
            conflict_unid(X, &V(1, 2)),
            conflict_unid(Unid([8; 16]), &V(1, 2))
        );
    }
}
