//! Test support: a well-formedness check of the SVG and HTML the kit
//! writes, with quick-xml (tags balanced and matching, attributes quoted,
//! entities valid), and a count of the elements seen.

use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::BTreeMap;

/// Elements seen, by name, and every `font-size` attribute's value.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub elements: BTreeMap<String, usize>,
    pub font_sizes: Vec<f64>,
    pub root: Option<String>,
    /// Every run of text, trimmed.
    pub texts: Vec<String>,
}

impl Seen {
    pub fn count(&self, name: &str) -> usize {
        self.elements.get(name).copied().unwrap_or(0)
    }

    pub fn has_text(&self, t: &str) -> bool {
        self.texts.iter().any(|x| x == t)
    }
}

/// Parses `text` as one XML element; an error says what is wrong where.
pub(crate) fn check(text: &str) -> Result<Seen, String> {
    let mut reader = Reader::from_str(text);
    let mut open: Vec<String> = Vec::new();
    let mut seen = Seen::default();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("at {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if open.is_empty() && seen.root.replace(name.clone()).is_some() {
                    return Err(format!("a second root element <{name}>"));
                }
                for a in e.attributes() {
                    let a = a.map_err(|e| e.to_string())?;
                    if a.key.as_ref() == b"font-size" {
                        let v = a.unescape_value().map_err(|e| e.to_string())?;
                        seen.font_sizes
                            .push(v.parse().map_err(|_| format!("font-size {v:?}"))?);
                    }
                }
                *seen.elements.entry(name.clone()).or_default() += 1;
                if matches!(event, Event::Start(_)) {
                    open.push(name);
                }
            }
            Event::End(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if open.pop().as_deref() != Some(name.as_str()) {
                    return Err(format!("</{name}> closes nothing open"));
                }
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(|e| format!("text: {e}"))?;
                if !text.trim().is_empty() {
                    seen.texts.push(text.trim().to_string());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(name) = open.pop() {
        return Err(format!("<{name}> is never closed"));
    }
    if seen.root.is_none() {
        return Err("no element".into());
    }
    Ok(seen)
}
