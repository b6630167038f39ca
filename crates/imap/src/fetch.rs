//! One message's FETCH answer: the items asked for, in the order asked,
//! reading the message's bytes only when an item needs them (FLAGS, UID,
//! INTERNALDATE and RFC822.SIZE come from the snapshot alone).

use crate::mime;
use crate::session::{flag_fetch, nonzero, nonzero64};
use crate::store::{Mailstore, MessageMeta};
use crate::{ImapError, ImapResult};
use chrono::{FixedOffset, TimeZone};
use imap_next::imap_types::core::{Literal, NString};
use imap_next::imap_types::datetime::DateTime;
use imap_next::imap_types::fetch::{MessageDataItem, MessageDataItemName, Section};

/// What one message answers, and whether reading it sets `\Seen`
/// (BODY[...] without PEEK, RFC822, RFC822.TEXT).
pub(crate) struct Fetched {
    pub items: Vec<MessageDataItem<'static>>,
    pub sets_seen: bool,
}

pub(crate) fn items(
    store: &dyn Mailstore,
    mailbox: &str,
    m: &MessageMeta,
    names: &[MessageDataItemName<'static>],
) -> ImapResult<Fetched> {
    let mut raw: Option<Vec<u8>> = None;
    let load = |raw: &mut Option<Vec<u8>>| -> ImapResult<()> {
        if raw.is_none() {
            *raw = Some(store.message(mailbox, m.uid)?);
        }
        Ok(())
    };
    let mut out = Vec::with_capacity(names.len());
    let mut sets_seen = false;
    for name in names {
        let item = match name {
            MessageDataItemName::Flags => MessageDataItem::Flags(flag_fetch(&m.flags)),
            MessageDataItemName::Uid => MessageDataItem::Uid(nonzero(m.uid)),
            MessageDataItemName::Rfc822Size => MessageDataItem::Rfc822Size(m.size),
            MessageDataItemName::InternalDate => {
                MessageDataItem::InternalDate(date(m.internal_date))
            }
            MessageDataItemName::Envelope => {
                load(&mut raw)?;
                let bytes = raw.as_deref().unwrap_or_default();
                match mime::parse(bytes) {
                    Some(msg) => MessageDataItem::Envelope(mime::envelope(&msg)),
                    None => continue,
                }
            }
            MessageDataItemName::BodyStructure | MessageDataItemName::Body => {
                load(&mut raw)?;
                let bytes = raw.as_deref().unwrap_or_default();
                let Some(msg) = mime::parse(bytes) else {
                    continue;
                };
                let s = mime::body_structure(bytes, &msg);
                if matches!(name, MessageDataItemName::Body) {
                    MessageDataItem::Body(s)
                } else {
                    MessageDataItem::BodyStructure(s)
                }
            }
            MessageDataItemName::BodyExt {
                section,
                partial,
                peek,
            } => {
                load(&mut raw)?;
                let bytes = mime::section(raw.as_deref().unwrap_or_default(), section.as_ref());
                sets_seen |= !peek;
                let (origin, bytes) = match partial {
                    Some((start, len)) => (Some(*start), cut(bytes, *start, len.get())),
                    None => (None, bytes),
                };
                MessageDataItem::BodyExt {
                    section: section.clone(),
                    origin,
                    data: literal(bytes)?,
                }
            }
            MessageDataItemName::Rfc822 => {
                load(&mut raw)?;
                sets_seen = true;
                MessageDataItem::Rfc822(literal(raw.clone().unwrap_or_default())?)
            }
            MessageDataItemName::Rfc822Header => {
                load(&mut raw)?;
                let h = mime::section(
                    raw.as_deref().unwrap_or_default(),
                    Some(&Section::Header(None)),
                );
                MessageDataItem::Rfc822Header(literal(h)?)
            }
            MessageDataItemName::Rfc822Text => {
                load(&mut raw)?;
                sets_seen = true;
                let t = mime::section(
                    raw.as_deref().unwrap_or_default(),
                    Some(&Section::Text(None)),
                );
                MessageDataItem::Rfc822Text(literal(t)?)
            }
            MessageDataItemName::ModSeq => MessageDataItem::ModSeq(nonzero64(m.modseq)),
            // Not offered (no BINARY).
            _ => continue,
        };
        out.push(item);
    }
    Ok(Fetched {
        items: out,
        sets_seen,
    })
}

/// `<start.len>`: the bytes from `start`, at most `len` of them.
fn cut(mut bytes: Vec<u8>, start: u32, len: u32) -> Vec<u8> {
    let from = (start as usize).min(bytes.len());
    let to = from.saturating_add(len as usize).min(bytes.len());
    bytes.truncate(to);
    bytes.drain(..from);
    bytes
}

/// Bytes as a literal, so line ends and 8-bit bytes pass untouched.
fn literal(bytes: Vec<u8>) -> ImapResult<NString<'static>> {
    Literal::try_from(bytes).map(NString::from).map_err(|_| {
        ImapError::Refused("the message holds a NUL byte, which IMAP cannot carry".into())
    })
}

/// µs since 1970 as an IMAP date-time (UTC): whole seconds (IMAP has
/// no fractions; the codec refuses them), and 1970 for a time outside
/// the years IMAP can write (0 to 9999).
pub(crate) fn date(micros: i64) -> DateTime {
    let utc = FixedOffset::east_opt(0).expect("UTC");
    let epoch = || {
        let t = utc.timestamp_opt(0, 0).single().expect("1970");
        DateTime::try_from(t).expect("1970 is an IMAP date")
    };
    utc.timestamp_opt(micros.div_euclid(1_000_000), 0)
        .single()
        .and_then(|t| DateTime::try_from(t).ok())
        .unwrap_or_else(epoch)
}

#[cfg(test)]
mod tests {
    use super::date;

    #[test]
    fn dates_drop_fractions_and_never_panic() {
        let d = date(1_700_000_000_492_508);
        assert_eq!(d.as_ref().timestamp(), 1_700_000_000);
        assert_eq!(d.as_ref().timestamp_subsec_nanos(), 0);
        assert_eq!(date(-1).as_ref().timestamp(), -1);
        for extreme in [i64::MIN, i64::MAX, 300_000_000_000_000_000] {
            assert_eq!(date(extreme).as_ref().timestamp(), 0);
        }
    }
}
