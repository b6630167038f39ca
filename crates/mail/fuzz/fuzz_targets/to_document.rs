//! Arbitrary bytes into `mime::to_document`: no panic, and every
//! attachment name is safe and unique in its message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mail::mime::{to_document, MAX_NAME};
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = to_document(data) {
        let mut seen = HashSet::new();
        for a in &message.attachments {
            assert!(!a.name.is_empty() && a.name.len() <= MAX_NAME);
            assert!(!a.name.contains(['/', '\\']));
            assert!(!a.name.chars().any(char::is_control));
            assert!(seen.insert(a.name.to_lowercase()));
        }
    }
});
