//! Serde forms of `nsf`'s ids inside replication messages.
//!
//! `nsf`'s ids do not implement `Deserialize` (and some serialise as the
//! text a user reads); messages carry them in their compact numeric form
//! instead, through these `#[serde(with = ...)]` modules: a UNID as its
//! 16 bytes, sequences and instance/replica ids as integers, times as
//! microseconds.

use nsf::{DbInstanceId, ReplicaId, Seq, Timestamp, Unid};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! newtype_form {
    ($name:ident, $t:ty, $inner:ty, $wrap:expr) => {
        pub(crate) mod $name {
            use super::*;

            pub(crate) fn serialize<S: Serializer>(v: &$t, s: S) -> Result<S::Ok, S::Error> {
                v.0.serialize(s)
            }

            pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                <$inner>::deserialize(d).map($wrap)
            }
        }
    };
}

newtype_form!(unid, Unid, [u8; 16], Unid);
newtype_form!(seq, Seq, u64, Seq);
newtype_form!(timestamp, Timestamp, i64, Timestamp);
newtype_form!(replica_id, ReplicaId, u64, ReplicaId);
newtype_form!(instance_id, DbInstanceId, u64, DbInstanceId);

/// A list of UNIDs, each as its 16 bytes.
pub(crate) mod unids {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &[Unid], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|u| u.0))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Unid>, D::Error> {
        Vec::<[u8; 16]>::deserialize(d).map(|v| v.into_iter().map(Unid).collect())
    }
}
