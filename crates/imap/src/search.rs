//! SEARCH keys (RFC 9051 §6.4.4, the RFC 3501 set) against one message.
//!
//! Flags, sizes, UIDs, sequence numbers and the internal date come from
//! the snapshot; header keys, BODY and TEXT read the message, and only
//! when a key needs it. There is no text index yet, so BODY and TEXT scan
//! every message they are asked about (decoded text parts, case
//! ignored). `\Recent` does not exist here: RECENT and NEW match nothing,
//! OLD everything.

use crate::mime;
use crate::seqset::contains;
use crate::store::{Mailstore, MessageMeta};
use crate::ImapResult;
use chrono::{DateTime, NaiveDate, Utc};
use imap_next::imap_types::core::AString;
use imap_next::imap_types::search::SearchKey;

/// One message being searched.
pub(crate) struct Candidate<'a> {
    pub store: &'a dyn Mailstore,
    pub mailbox: &'a str,
    pub meta: &'a MessageMeta,
    pub seq: u32,
    /// The mailbox's size and last UID, for `*`.
    pub count: u32,
    pub last_uid: u32,
    raw: Option<Vec<u8>>,
}

impl<'a> Candidate<'a> {
    pub fn new(
        store: &'a dyn Mailstore,
        mailbox: &'a str,
        meta: &'a MessageMeta,
        seq: u32,
        count: u32,
        last_uid: u32,
    ) -> Self {
        Candidate {
            store,
            mailbox,
            meta,
            seq,
            count,
            last_uid,
            raw: None,
        }
    }

    fn raw(&mut self) -> ImapResult<&[u8]> {
        if self.raw.is_none() {
            self.raw = Some(self.store.message(self.mailbox, self.meta.uid)?);
        }
        Ok(self.raw.as_deref().unwrap_or_default())
    }

    fn has(&self, flag: &str) -> bool {
        self.meta.flags.iter().any(|f| f.eq_ignore_ascii_case(flag))
    }

    fn header_contains(&mut self, name: &str, needle: &str) -> ImapResult<bool> {
        let raw = self.raw()?;
        let Some(msg) = mime::parse(raw) else {
            return Ok(false);
        };
        let needle = needle.to_lowercase();
        Ok(msg
            .headers()
            .iter()
            .filter(|h| h.name().eq_ignore_ascii_case(name))
            .any(|h| {
                let v = raw
                    .get(h.offset_start() as usize..h.offset_end() as usize)
                    .unwrap_or_default();
                String::from_utf8_lossy(v).to_lowercase().contains(&needle)
            }))
    }

    fn body_contains(&mut self, needle: &str, with_header: bool) -> ImapResult<bool> {
        let needle = needle.to_lowercase();
        let raw = self.raw()?;
        let Some(msg) = mime::parse(raw) else {
            return Ok(String::from_utf8_lossy(raw)
                .to_lowercase()
                .contains(&needle));
        };
        if with_header {
            let end = msg.root_part().offset_body as usize;
            let header = String::from_utf8_lossy(raw.get(..end).unwrap_or_default());
            if header.to_lowercase().contains(&needle) {
                return Ok(true);
            }
        }
        let found = msg.text_bodies().chain(msg.html_bodies()).any(|p| {
            p.text_contents()
                .is_some_and(|t| t.to_lowercase().contains(&needle))
        });
        Ok(found)
    }

    fn sent_date(&mut self) -> ImapResult<Option<NaiveDate>> {
        let raw = self.raw()?;
        Ok(mime::parse(raw)
            .and_then(|m| m.date().map(|d| d.to_timestamp()))
            .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0))
            .map(|t| t.date_naive()))
    }

    fn internal_date(&self) -> NaiveDate {
        DateTime::<Utc>::from_timestamp_micros(self.meta.internal_date)
            .unwrap_or_default()
            .date_naive()
    }
}

/// Whether the candidate matches every key (SEARCH's implicit AND).
pub(crate) fn all(keys: &[SearchKey<'_>], c: &mut Candidate<'_>) -> ImapResult<bool> {
    for k in keys {
        if !matches(k, c)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn text(a: &AString<'_>) -> String {
    String::from_utf8_lossy(a.as_ref()).into_owned()
}

fn matches(key: &SearchKey<'_>, c: &mut Candidate<'_>) -> ImapResult<bool> {
    use SearchKey as K;
    Ok(match key {
        K::And(keys) => all(keys.as_ref(), c)?,
        K::All | K::Old => true,
        K::New | K::Recent => false,
        K::SequenceSet(set) => contains(set, c.seq, c.count),
        K::Uid(set) => contains(set, c.meta.uid, c.last_uid),
        K::Not(k) => !matches(k, c)?,
        K::Or(a, b) => matches(a, c)? || matches(b, c)?,
        K::Answered => c.has("\\Answered"),
        K::Deleted => c.has("\\Deleted"),
        K::Draft => c.has("\\Draft"),
        K::Flagged => c.has("\\Flagged"),
        K::Seen => c.has("\\Seen"),
        K::Unanswered => !c.has("\\Answered"),
        K::Undeleted => !c.has("\\Deleted"),
        K::Undraft => !c.has("\\Draft"),
        K::Unflagged => !c.has("\\Flagged"),
        K::Unseen => !c.has("\\Seen"),
        K::Keyword(k) => c.has(k.as_ref()),
        K::Unkeyword(k) => !c.has(k.as_ref()),
        K::Larger(n) => c.meta.size > *n,
        K::Smaller(n) => c.meta.size < *n,
        K::Before(d) => c.internal_date() < *d.as_ref(),
        K::On(d) => c.internal_date() == *d.as_ref(),
        K::Since(d) => c.internal_date() >= *d.as_ref(),
        K::SentBefore(d) => c.sent_date()?.is_some_and(|s| s < *d.as_ref()),
        K::SentOn(d) => c.sent_date()?.is_some_and(|s| s == *d.as_ref()),
        K::SentSince(d) => c.sent_date()?.is_some_and(|s| s >= *d.as_ref()),
        K::From(s) => c.header_contains("From", &text(s))?,
        K::To(s) => c.header_contains("To", &text(s))?,
        K::Cc(s) => c.header_contains("Cc", &text(s))?,
        K::Bcc(s) => c.header_contains("Bcc", &text(s))?,
        K::Subject(s) => c.header_contains("Subject", &text(s))?,
        K::Header(name, s) => c.header_contains(&text(name), &text(s))?,
        K::Body(s) => c.body_contains(&text(s), false)?,
        K::Text(s) => c.body_contains(&text(s), true)?,
        // RFC 7162 §3.1.5: per-flag entries are not kept apart, so the
        // message's one mod-sequence answers for each.
        K::ModSequence { modseq, .. } => c.meta.modseq >= *modseq,
    })
}

/// Whether a search uses MODSEQ (then its answer names the highest
/// mod-sequence found, RFC 7162 §3.1.5).
pub(crate) fn uses_modseq(key: &SearchKey<'_>) -> bool {
    match key {
        SearchKey::ModSequence { .. } => true,
        SearchKey::And(keys) => keys.as_ref().iter().any(uses_modseq),
        SearchKey::Not(k) => uses_modseq(k),
        SearchKey::Or(a, b) => uses_modseq(a) || uses_modseq(b),
        _ => false,
    }
}
