//! Mail user administration: the directory's people and their mail
//! files, over the network (tag 25 of `Request`, tag 19 of `Response`).
//!
//! The three operations travel as one request variant carrying a
//! [`MailAdminRequest`], and are answered by one response variant
//! carrying a [`MailAdminAnswer`]: the mail requests keep to two tags of
//! the top-level enums, and grow here (appended variants, as everywhere
//! in this crate) without touching the others. They are for server
//! administrators only; docs/protocol.md §5.2 and docs/http.md ("Mail
//! users") give the refusals.
//!
//! A person travels as typed fields, not JSON text: it is a fixed record
//! the mail layer defines (docs/mail.md), not a document of free items.

use crate::ids::Unid;
use serde::{Deserialize, Serialize};

#[cfg(test)]
use proptest_derive::Arbitrary;

/// A mail user administration request. The variant order is the wire
/// format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum MailAdminRequest {
    /// Adds a person to the directory and makes their mail file;
    /// answered with `Created`.
    CreateUser {
        /// The full name.
        name: String,
        /// Other names mail to the person may use.
        aliases: Vec<String>,
        /// The server user the person signs in as (`None`: the full name).
        server_user: Option<String>,
    },
    /// Every person in the directory, by full name; answered with `Users`.
    ListUsers,
    /// Takes the person a name names out of the directory; answered with
    /// `Removed`. The mail file is kept unless `delete_file`: then it is
    /// deleted first, as `DeleteDatabase` deletes (design.md I42), and a
    /// file another person also uses is refused (409), changing nothing.
    RemoveUser {
        /// Any of the person's names.
        name: String,
        /// Delete the mail file too.
        delete_file: bool,
    },
}

/// The answer to a [`MailAdminRequest`]. The variant order is the wire
/// format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum MailAdminAnswer {
    /// The person added.
    Created(MailUser),
    /// Every person, by full name.
    Users(Vec<MailUser>),
    /// The person removed, and what became of their mail file.
    Removed {
        /// The person.
        user: MailUser,
        /// Their mail file.
        file: MailFileFate,
    },
}

/// What became of a removed person's mail file. The variant order is the
/// wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum MailFileFate {
    /// Left where it is (the default).
    Kept,
    /// Deleted (`delete_file`).
    Deleted,
    /// `delete_file`, but there was no file to delete.
    Absent,
}

/// A person in the directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct MailUser {
    /// The person document's UNID.
    pub unid: Unid,
    /// The full name, white space collapsed.
    pub full_name: String,
    /// The full name in lowercase, spaces as dots.
    pub short_name: String,
    /// Other names.
    pub aliases: Vec<String>,
    /// The mail file's path, `mail/<short name>.fdb`.
    pub mail_file: String,
    /// The server user the person signs in as.
    pub server_user: String,
}

#[cfg(test)]
mod tests {
    use crate::{FrameType, MailAdminRequest, Request, Response, Unid};

    /// The mail requests sit at tag 25, their own variants after it.
    #[test]
    fn mail_admin_requests_have_their_tags() {
        let r = Request::MailAdmin(MailAdminRequest::ListUsers);
        assert_eq!(r.encode().unwrap(), [25, 1]);
        let r = Request::MailAdmin(MailAdminRequest::RemoveUser {
            name: "a".into(),
            delete_file: true,
        });
        assert_eq!(r.encode().unwrap(), [25, 2, 1, b'a', 1]);
        assert_eq!(Request::decode(&[25, 2, 1, b'a', 2]).ok(), None);
    }

    /// Sending sits at request tag 31 and its answer at response tag 24.
    #[test]
    fn send_mail_has_its_tags() {
        let r = Request::SendMail {
            json: "{}".into(),
            draft: true,
            on_behalf_of: None,
        };
        assert_eq!(r.encode().unwrap(), [31, 2, b'{', b'}', 1, 0]);
        let a = Response::MailSent {
            message_id: "m".into(),
            stored_in: "b".into(),
            unid: Unid([0; 16]),
            draft: false,
        };
        let bytes = a.encode().unwrap();
        assert_eq!(&bytes[..5], [24, 1, b'm', 1, b'b']);
        assert_eq!(Response::decode(&bytes, FrameType::Response).ok(), Some(a));
    }

    /// Compact sits at request tag 38 and its answer at response tag 28.
    #[test]
    fn compact_has_its_tags() {
        let r = Request::Compact {
            path: "a".into(),
            copy: true,
            dry_run: false,
        };
        assert_eq!(r.encode().unwrap(), [38, 1, b'a', 1, 0]);
        let a = Response::Compacted(crate::CompactSummary {
            path: "a".into(),
            truncated: true,
            ..Default::default()
        });
        let bytes = a.encode().unwrap();
        assert_eq!(&bytes[..3], [28, 1, b'a']);
        assert_eq!(Response::decode(&bytes, FrameType::Response).ok(), Some(a));
    }
}
