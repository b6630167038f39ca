//! The mail settings (`[mail]` in `folio.toml`), checked once.

use crate::{MailError, MailResult};

/// Mail settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MailConfig {
    boxes: u32,
    max_message_bytes: u64,
}

impl MailConfig {
    /// `mail.boxes` when not set.
    pub const DEFAULT_BOXES: u32 = 4;
    /// Most mail boxes.
    pub const MAX_BOXES: u32 = 64;
    /// `mail.max_message_size` when not set: 32 MiB.
    pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 32 << 20;
    /// Smallest and largest `mail.max_message_size`.
    pub const MESSAGE_BYTES_RANGE: (u64, u64) = (1 << 10, 4 << 30);

    /// Settings with `boxes` mail boxes (1 to 64) and messages of at most
    /// `max_message_bytes` (body and attachments; 1 KiB to 4 GiB).
    pub fn new(boxes: u32, max_message_bytes: u64) -> MailResult<MailConfig> {
        if !(1..=Self::MAX_BOXES).contains(&boxes) {
            return Err(MailError::Setting {
                key: "mail.boxes".into(),
                reason: format!("must be between 1 and {}", Self::MAX_BOXES),
            });
        }
        let (lo, hi) = Self::MESSAGE_BYTES_RANGE;
        if !(lo..=hi).contains(&max_message_bytes) {
            return Err(MailError::Setting {
                key: "mail.max_message_size".into(),
                reason: "must be between 1KiB and 4GiB".into(),
            });
        }
        Ok(MailConfig {
            boxes,
            max_message_bytes,
        })
    }

    /// How many mail boxes new messages are spread over.
    pub fn boxes(&self) -> u32 {
        self.boxes
    }

    /// The largest message (body and attachments), in bytes.
    pub fn max_message_bytes(&self) -> u64 {
        self.max_message_bytes
    }
}

impl Default for MailConfig {
    fn default() -> Self {
        MailConfig {
            boxes: Self::DEFAULT_BOXES,
            max_message_bytes: Self::DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_name_their_key() {
        assert_eq!(MailConfig::default().boxes(), 4);
        assert!(MailConfig::new(1, 1 << 10).is_ok());
        for (boxes, max, key) in [
            (0, 1 << 20, "mail.boxes"),
            (65, 1 << 20, "mail.boxes"),
            (4, 1000, "mail.max_message_size"),
        ] {
            match MailConfig::new(boxes, max) {
                Err(MailError::Setting { key: k, .. }) => assert_eq!(k, key),
                other => panic!("expected a setting error, got {other:?}"),
            }
        }
    }
}
