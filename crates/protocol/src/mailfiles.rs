//! Files sent with a message over the network (`Request::SendMailFiles`,
//! docs/protocol.md §5.2): the request names each file and its exact
//! size, and its `Chunk`s carry the files' bytes back to back, in order,
//! like one `PutAttachment` upload.
//!
//! Declaring every size up front lets the server refuse a message over
//! its size limit before it stores anything, and split one stream into
//! files without a framing of its own.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use proptest_derive::Arbitrary;

/// A file of a `SendMailFiles` upload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct MailFile {
    /// Its name in the message (unique ignoring case).
    pub name: String,
    /// Its MIME type.
    pub mime: String,
    /// Its exact size in bytes: the upload carries exactly this many
    /// bytes of it.
    pub size: u64,
}

#[cfg(test)]
mod tests {
    use crate::{MailFile, Request, Shape};

    /// Sending with files sits after `Meeting` and streams like an upload.
    #[test]
    fn send_mail_files_has_its_tag_and_uploads() {
        let r = Request::SendMailFiles {
            json: "{}".into(),
            draft: false,
            on_behalf_of: None,
            files: vec![MailFile {
                name: "a".into(),
                mime: "t".into(),
                size: 3,
            }],
        };
        let bytes = r.encode().unwrap();
        assert_eq!(bytes, [33, 2, b'{', b'}', 0, 0, 1, 1, b'a', 1, b't', 3]);
        assert_eq!(r.shape(), Shape::Upload);
        assert_eq!(Request::decode(&bytes).ok(), Some(r));
    }
}
