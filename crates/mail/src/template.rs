//! The mail template: the design every mail file gets at creation.
//!
//! ```text
//!   Inbox          folder  Date=@Created:desc, From, Subject            (the router files delivered mail here)
//!   All Documents  view    SELECT @All
//!   Drafts         view    memos and replies never posted               (no PostedDate)
//!   Sent           view    what the owner sent                          (PostedDate, no DeliveredDate)
//!   Calendar       view    SELECT Form = "Appointment", by start time
//!   (Notices)      view    SELECT Form = "Notice", by ApptUNID    (hidden: answering a meeting)
//! ```
//!
//! A mail file made before a view was added gets it on its first open
//! (`sysdb.rs` completes missing views).
//!
//! The forms (Memo, Reply, Appointment, Notice) are the message model in
//! `message.rs`; docs/mail.md lists the items each uses. Definitions are
//! plain data (`views::ViewDef`), so the same template serves a mail file
//! created embedded, over the network (the client sends each definition)
//! and by the load tools. Every view is built on first use, so a new mail
//! file costs one write per view and no index work.

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

/// The folder the router files delivered mail in.
pub const INBOX: &str = "Inbox";

/// The view and folder definitions of a new mail file.
pub fn design() -> Vec<ViewDef> {
    let inbox = ViewDef::folder(
        INBOX,
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
    let drafts = ViewDef::view(
        "Drafts",
        "SELECT (Form = \"Memo\" | Form = \"Reply\") & !@IsAvailable(PostedDate)",
        vec![
            column("Date", "@Modified", Sort::Desc),
            column("To", "SendTo", Sort::None),
            column("Subject", "Subject", Sort::None),
        ],
    );
    let sent = ViewDef::view(
        "Sent",
        "SELECT @IsAvailable(PostedDate) & !@IsAvailable(DeliveredDate)",
        vec![
            column("Date", "PostedDate", Sort::Desc),
            column("To", "SendTo", Sort::None),
            column("Subject", "Subject", Sort::None),
        ],
    );
    let calendar = ViewDef::view(
        "Calendar",
        "SELECT Form = \"Appointment\"",
        vec![
            column("Start", "StartDateTime", Sort::Asc),
            column("End", "EndDateTime", Sort::None),
            column("Subject", "Subject", Sort::None),
            column("Location", "Location", Sort::None),
        ],
    );
    let notices = ViewDef::view(
        crate::NOTICES_VIEW,
        "SELECT Form = \"Notice\"",
        vec![
            column("Meeting", "ApptUNID", Sort::Asc),
            column("Posted", "PostedDate", Sort::None),
            column("Type", "NoticeType", Sort::None),
        ],
    );
    vec![inbox, all, drafts, sent, calendar, notices]
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
        let names: Vec<&str> = d.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Inbox",
                "All Documents",
                "Drafts",
                "Sent",
                "Calendar",
                "(Notices)"
            ]
        );
        for def in &d {
            def.check_new().unwrap();
            def.compile().unwrap();
        }
    }
}
