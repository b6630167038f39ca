//! The mail template: the design every mail file gets at creation.
//!
//! Today an `Inbox` folder (newest first, with sender and subject) and an
//! `All Documents` view. Definitions are plain data (`views::ViewDef`), so
//! the same template serves a mail file created embedded, over the
//! network (the client sends each definition) and by the load tools.

use crate::MailResult;
use nsf::Database;
use std::sync::Arc;
use views::{ColumnDef, Sort, ViewDef, Views};

fn column(title: &str, formula: &str, sort: Sort) -> ColumnDef {
    ColumnDef {
        title: title.into(),
        formula: formula.into(),
        sort,
        case_sensitive: false,
        categorized: false,
    }
}

/// The view and folder definitions of a new mail file.
pub fn design() -> Vec<ViewDef> {
    let inbox = ViewDef::folder(
        "Inbox",
        vec![
            column("Date", "@Created", Sort::Desc),
            column("From", "From", Sort::None),
            column("Subject", "Subject", Sort::None),
        ],
    );
    let all = ViewDef::view(
        "All Documents",
        "SELECT @All",
        vec![
            column("Date", "@Modified", Sort::Desc),
            column("Subject", "Subject", Sort::None),
        ],
    );
    vec![inbox, all]
}

/// Gives a new mail file the template's design.
pub fn create_design(views: &Views, db: &Arc<Database>) -> MailResult<()> {
    for def in design() {
        views.create(db, def)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_what_the_command_line_form_spells() {
        let parsed = |s: &str| ColumnDef::parse(s).unwrap();
        let d = design();
        assert_eq!(
            d[0].columns,
            vec![
                parsed("Date=@Created:desc"),
                parsed("From=From"),
                parsed("Subject=Subject")
            ]
        );
        assert_eq!(
            d[1].columns,
            vec![parsed("Date=@Modified:desc"), parsed("Subject=Subject")]
        );
        for def in &d {
            def.check_new().unwrap();
            def.compile().unwrap();
        }
    }
}
