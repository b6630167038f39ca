//! View and folder definitions, and how they are stored as design notes.
//!
//! A definition is user data: it lives in a *design note* (items
//! `$DesignType`, `$Title` and `$ViewDef`, the definition as JSON), so it
//! is logged, survives anything a document survives and can later
//! replicate. Design notes are never selected by views or found by search.
//! The index built from a definition is local state kept in the design
//! catalog (see `catalog`).

use crate::{ViewError, ViewResult};
use formula::Formula;
use nsf::{Item, ItemValue, Note};
use serde::{Deserialize, Serialize};

/// Item naming a design note's type (`view` or `folder`).
pub const DESIGN_TYPE_ITEM: &str = "$DesignType";
/// Item holding the definition as JSON.
pub const VIEW_DEF_ITEM: &str = "$ViewDef";
/// Longest view name, in bytes.
pub const MAX_NAME: usize = 128;
/// Most columns in one view.
pub const MAX_COLUMNS: usize = 32;

/// View (selected by formula) or folder (explicit membership).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    View,
    Folder,
}

/// Column sort order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Not part of the collation.
    #[default]
    None,
    Asc,
    Desc,
}

/// When the index is brought up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Refresh {
    /// Built at creation; brought up to date whenever it is opened.
    Auto,
    /// Built on first open; then brought up to date whenever opened.
    #[default]
    AutoAfterFirstUse,
    /// Only brought up to date when asked (`update`).
    Manual,
    /// Brought up to date on open if the last update is older than this.
    EveryHours(u32),
}

impl std::str::FromStr for Refresh {
    type Err = ViewError;
    fn from_str(s: &str) -> ViewResult<Refresh> {
        let bad = || {
            ViewError::BadDefinition(format!(
                "refresh {s:?}: expected auto, auto_after_first_use, manual or every:N (hours)"
            ))
        };
        match s {
            "auto" => Ok(Refresh::Auto),
            "auto_after_first_use" => Ok(Refresh::AutoAfterFirstUse),
            "manual" => Ok(Refresh::Manual),
            _ => {
                let n = s.strip_prefix("every:").ok_or_else(bad)?;
                match n.parse::<u32>() {
                    Ok(h) if h > 0 => Ok(Refresh::EveryHours(h)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

/// One column. Unknown fields are refused: a misspelt `"sotr"` must not
/// silently mean the default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnDef {
    pub title: String,
    pub formula: String,
    #[serde(default)]
    pub sort: Sort,
    /// Text compares case-sensitively (default: insensitive).
    #[serde(default)]
    pub case_sensitive: bool,
    /// Only the first column may be categorized; it is then sorted.
    #[serde(default)]
    pub categorized: bool,
}

impl ColumnDef {
    /// Parses the command-line form `TITLE=FORMULA[:asc|:desc|:cat|:case]…`.
    /// Flags are taken from the end, so `Date=@Modified:desc` sorts the
    /// formula `@Modified` descending.
    pub fn parse(spec: &str) -> ViewResult<ColumnDef> {
        let (title, mut formula) = spec.split_once('=').ok_or_else(|| {
            ViewError::BadDefinition(format!("column {spec:?}: expected TITLE=FORMULA"))
        })?;
        let mut col = ColumnDef {
            title: title.trim().to_string(),
            formula: String::new(),
            sort: Sort::None,
            case_sensitive: false,
            categorized: false,
        };
        while let Some((rest, flag)) = formula.rsplit_once(':') {
            match flag.trim() {
                "asc" => col.sort = Sort::Asc,
                "desc" => col.sort = Sort::Desc,
                "cat" => col.categorized = true,
                "case" => col.case_sensitive = true,
                _ => break,
            }
            formula = rest;
        }
        col.formula = formula.trim().to_string();
        if col.categorized && col.sort == Sort::None {
            col.sort = Sort::Asc;
        }
        Ok(col)
    }
}

/// A view or folder definition. Unknown fields are refused (a misspelt
/// `"refersh"` or `"loged"` must not silently mean the default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewDef {
    pub name: String,
    pub kind: Kind,
    /// Selection formula (views only; folders ignore it).
    #[serde(default)]
    pub selection: String,
    pub columns: Vec<ColumnDef>,
    #[serde(default)]
    pub refresh: Refresh,
    /// Index changes go through the transaction log (I14).
    #[serde(default)]
    pub logged: bool,
}

impl ViewDef {
    /// A view selecting by `selection`.
    pub fn view(name: &str, selection: &str, columns: Vec<ColumnDef>) -> ViewDef {
        ViewDef {
            name: name.to_string(),
            kind: Kind::View,
            selection: selection.to_string(),
            columns,
            refresh: Refresh::default(),
            logged: false,
        }
    }

    /// A folder.
    pub fn folder(name: &str, columns: Vec<ColumnDef>) -> ViewDef {
        ViewDef {
            name: name.to_string(),
            kind: Kind::Folder,
            selection: String::new(),
            columns,
            refresh: Refresh::default(),
            logged: false,
        }
    }

    /// Checks what only a new definition must satisfy: a view states its
    /// selection (an empty one is refused, as search refuses an empty
    /// formula; `SELECT @All` selects everything), a folder has none.
    /// Definitions stored before this rule keep opening: `compile` still
    /// reads an empty stored selection as `SELECT @All`.
    pub fn check_new(&self) -> ViewResult<()> {
        let blank = self.selection.trim().is_empty();
        match self.kind {
            Kind::View if blank => Err(ViewError::BadDefinition(
                "a view needs a selection formula (SELECT @All selects every document)".into(),
            )),
            Kind::Folder if !blank => Err(ViewError::BadDefinition(
                "a folder has no selection formula; its documents are added to it".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Checks the definition and parses its formulas.
    pub fn compile(&self) -> ViewResult<Compiled> {
        let bad = |m: String| Err(ViewError::BadDefinition(m));
        if self.name.trim().is_empty() || self.name.len() > MAX_NAME {
            return bad(format!("a name must have 1 to {MAX_NAME} bytes"));
        }
        if self.name.chars().any(char::is_control) {
            return bad("a name cannot contain control characters".into());
        }
        if self.columns.is_empty() || self.columns.len() > MAX_COLUMNS {
            return bad(format!("a view needs 1 to {MAX_COLUMNS} columns"));
        }
        for (i, c) in self.columns.iter().enumerate() {
            if c.categorized && i > 0 {
                return bad(format!(
                    "column {:?}: only the first column may be categorized",
                    c.title
                ));
            }
        }
        let selection = match self.kind {
            Kind::View => Some(parse(
                "selection",
                if self.selection.trim().is_empty() {
                    "SELECT @All"
                } else {
                    &self.selection
                },
            )?),
            Kind::Folder => None,
        };
        let columns = self
            .columns
            .iter()
            .map(|c| parse(&format!("column {:?}", c.title), &c.formula))
            .collect::<ViewResult<Vec<_>>>()?;
        let sorted = (0..self.columns.len())
            .filter(|&i| self.columns[i].sort != Sort::None)
            .collect();
        Ok(Compiled {
            def: self.clone(),
            selection,
            columns,
            sorted,
        })
    }

    /// The items of the design note holding this definition.
    pub fn to_items(&self) -> ViewResult<Vec<Item>> {
        let json = serde_json::to_string(self)
            .map_err(|e| ViewError::BadDefinition(format!("cannot encode: {e}")))?;
        let kind = match self.kind {
            Kind::View => "view",
            Kind::Folder => "folder",
        };
        Ok(vec![
            Item {
                name: DESIGN_TYPE_ITEM.into(),
                value: ItemValue::Text(kind.into()),
            },
            Item {
                name: "$Title".into(),
                value: ItemValue::Text(self.name.clone()),
            },
            Item {
                name: VIEW_DEF_ITEM.into(),
                value: ItemValue::Text(json),
            },
        ])
    }

    /// Reads the definition back from its design note.
    pub fn from_note(note: &Note) -> ViewResult<ViewDef> {
        match note.item(VIEW_DEF_ITEM).map(|i| &i.value) {
            Some(ItemValue::Text(json)) => serde_json::from_str(json).map_err(|e| {
                ViewError::BadDefinition(format!("design note {}: {e}", note.oid.unid))
            }),
            _ => Err(ViewError::BadDefinition(format!(
                "design note {} has no {VIEW_DEF_ITEM} item",
                note.oid.unid
            ))),
        }
    }
}

fn parse(what: &str, src: &str) -> ViewResult<Formula> {
    Formula::parse(src).map_err(|error| ViewError::Formula {
        what: what.to_string(),
        error,
    })
}

/// Whether a note is a design note (never shown in views or search).
pub fn is_design_note(note: &Note) -> bool {
    note.item(DESIGN_TYPE_ITEM).is_some()
}

/// A definition with its formulas parsed.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub def: ViewDef,
    /// `None` for folders.
    pub selection: Option<Formula>,
    pub columns: Vec<Formula>,
    /// Indexes of the sorted columns, in collation order.
    sorted: Vec<usize>,
}

impl Compiled {
    /// Indexes of the sorted columns, in collation order.
    pub fn sorted_columns(&self) -> &[usize] {
        &self.sorted
    }

    pub fn categorized(&self) -> bool {
        self.def.columns.first().is_some_and(|c| c.categorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_specs_parse_flags_from_the_end() {
        let c = ColumnDef::parse("Date=@Modified:desc").unwrap();
        assert_eq!(
            (c.title.as_str(), c.formula.as_str()),
            ("Date", "@Modified")
        );
        assert_eq!(c.sort, Sort::Desc);
        let c = ColumnDef::parse("Who=From:cat").unwrap();
        assert!(c.categorized && c.sort == Sort::Asc);
        let c = ColumnDef::parse("L=\"a\":\"b\"").unwrap();
        assert_eq!(c.formula, "\"a\":\"b\"");
        assert!(ColumnDef::parse("nothing").is_err());
    }

    #[test]
    fn bad_formulas_are_named_errors() {
        let d = ViewDef::view(
            "V",
            "SELECT Form = ",
            vec![ColumnDef::parse("S=Subject").unwrap()],
        );
        let e = d.compile().unwrap_err().to_string();
        assert!(e.contains("selection") && e.contains("line 1"), "{e}");
        let d = ViewDef::view("V", "", vec![ColumnDef::parse("S=@Nope(1)").unwrap()]);
        let e = d.compile().unwrap_err().to_string();
        assert!(e.contains("column \"S\""), "{e}");
    }

    #[test]
    fn refresh_settings_parse() {
        assert_eq!(
            "every:4".parse::<Refresh>().unwrap(),
            Refresh::EveryHours(4)
        );
        assert!("every:0".parse::<Refresh>().is_err());
        assert!("sometimes".parse::<Refresh>().is_err());
    }
}
