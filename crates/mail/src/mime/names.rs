//! Attachment names a mail file can hold, whatever the sender wrote.
//!
//! A sender controls the `filename=` of every part, so the name is made
//! safe here rather than trusted downstream: only the last path component
//! is kept (no `/`, `\`, `..` escapes), control characters and the
//! characters Windows forbids become `_`, dots and spaces at either end
//! go, a name left empty becomes `attachment.<ext>`, the name
//! is cut to [`MAX_NAME`] bytes keeping its extension, and a name already
//! used in the message (compared case-insensitively, as most file systems
//! do) gets `-2`, `-3`, … before its extension. The rules match what
//! `nsf` accepts for an attachment name (1 to 200 bytes, no separators or
//! control characters).

use std::collections::HashSet;

/// Longest attachment name, in bytes (as `nsf` allows).
pub const MAX_NAME: usize = 200;
/// Longest extension kept when a name is cut.
const MAX_EXTENSION: usize = 16;

/// Hands out safe, distinct names for one message's attachments.
#[derive(Default)]
pub(crate) struct NameSet {
    used: HashSet<String>,
}

impl NameSet {
    /// A safe name for a part whose header said `wanted` (if anything)
    /// and whose type is `mime`, distinct from the names given before.
    pub(crate) fn name(&mut self, wanted: Option<&str>, mime: &str) -> String {
        let cleaned = wanted.map(clean).unwrap_or_default();
        let base = if cleaned.is_empty() {
            format!("attachment.{}", extension_for(mime))
        } else {
            cleaned
        };
        let (stem, ext) = split_extension(&base);
        let mut candidate = fit(stem, ext, "");
        let mut n = 2u32;
        while self.used.contains(&candidate.to_lowercase()) {
            candidate = fit(stem, ext, &format!("-{n}"));
            n += 1;
        }
        self.used.insert(candidate.to_lowercase());
        candidate
    }
}

/// The last path component with forbidden characters replaced and
/// leading dots, trailing dots and surrounding spaces removed.
fn clean(wanted: &str) -> String {
    let last = wanted.rsplit(['/', '\\']).next().unwrap_or("");
    let replaced: String = last
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let edge = |c: char| c == '.' || c.is_whitespace();
    replaced
        .trim_start_matches(edge)
        .trim_end_matches(edge)
        .to_string()
}

/// `("report", ".pdf")` for `report.pdf`; a name without a short
/// extension is all stem.
fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(dot) if dot > 0 && name.len() - dot <= MAX_EXTENSION => name.split_at(dot),
        _ => (name, ""),
    }
}

/// `stem + suffix + ext`, cutting the stem (at a character boundary) so
/// the whole fits in [`MAX_NAME`] bytes.
fn fit(stem: &str, ext: &str, suffix: &str) -> String {
    let room = MAX_NAME - ext.len() - suffix.len();
    let mut cut = stem.len().min(room);
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}{ext}", &stem[..cut])
}

/// An extension for an unnamed part, from its MIME type.
fn extension_for(mime: &str) -> &str {
    let essence = mime.split(';').next().unwrap_or("");
    match essence {
        "text/plain" => "txt",
        "text/html" => "html",
        "message/rfc822" => "eml",
        _ => match essence.split_once('/') {
            Some((_, sub))
                if (1..=8).contains(&sub.len())
                    && sub.bytes().all(|b| b.is_ascii_alphanumeric()) =>
            {
                sub
            }
            _ => "bin",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(wanted: &str, mime: &str) -> String {
        NameSet::default().name(Some(wanted), mime)
    }

    #[test]
    fn path_components_and_escapes_are_removed() {
        assert_eq!(one("../../etc/passwd", "text/plain"), "passwd");
        assert_eq!(
            one("C:\\Users\\x\\report.pdf", "application/pdf"),
            "report.pdf"
        );
        assert_eq!(one("..", "application/pdf"), "attachment.pdf");
        assert_eq!(one(".bashrc", "text/plain"), "bashrc");
        assert_eq!(one("a\u{0}b\r\nc?.txt", "text/plain"), "a_b__c_.txt");
        assert_eq!(one("name. . ", "image/png"), "name");
        assert_eq!(one(" . .x", "image/png"), "x");
    }

    #[test]
    fn empty_names_get_a_fallback() {
        let mut names = NameSet::default();
        assert_eq!(names.name(None, "image/png"), "attachment.png");
        assert_eq!(names.name(Some("/"), "image/png"), "attachment-2.png");
        assert_eq!(
            names.name(Some("   "), "application/octet-stream"),
            "attachment.bin"
        );
        assert_eq!(names.name(None, "message/rfc822"), "attachment.eml");
        assert_eq!(
            names.name(None, "text/plain; charset=utf-8"),
            "attachment.txt"
        );
    }

    #[test]
    fn duplicates_become_unique() {
        let mut names = NameSet::default();
        assert_eq!(names.name(Some("a.txt"), "text/plain"), "a.txt");
        assert_eq!(names.name(Some("A.TXT"), "text/plain"), "A-2.TXT");
        assert_eq!(names.name(Some("dir/a.txt"), "text/plain"), "a-3.txt");
        assert_eq!(names.name(Some("a-2.txt"), "text/plain"), "a-2-2.txt");
    }

    #[test]
    fn long_names_are_cut_keeping_the_extension() {
        let long = format!("{}.pdf", "é".repeat(150));
        let mut names = NameSet::default();
        let first = names.name(Some(&long), "application/pdf");
        assert!(
            first.len() <= MAX_NAME && first.ends_with(".pdf"),
            "{first}"
        );
        let second = names.name(Some(&long), "application/pdf");
        assert!(
            second.len() <= MAX_NAME && second.ends_with("-2.pdf"),
            "{second}"
        );
        assert_ne!(first, second);
    }
}
