//! `--view-logging`: the same workload with every Inbox's index unlogged
//! (the template's default) and logged, on identical fresh data.
//!
//! A view's logging is fixed when it is defined (its catalog flag), so
//! the "on" run redefines each new mail file's Inbox as logged before
//! anything is filed in it: the empty folder is deleted and defined again
//! from the template with `logged` set. Both steps are ordinary logged
//! index transactions (durable when they return); the prefill that
//! follows fills the logged folder exactly as it fills the unlogged one.

use mail::{Person, INBOX};
use nsf::Engine;
use views::Views;

/// Redefines `person`'s (still empty) Inbox as a logged folder.
pub fn log_inbox(engine: &Engine, views: &Views, person: &Person) -> Result<(), String> {
    let db = mail::open_mail_file(engine, views, person).map_err(|e| e.to_string())?;
    let mut def = mail::design()
        .into_iter()
        .find(|d| d.name == INBOX)
        .ok_or("the mail template has no Inbox")?;
    def.logged = true;
    let name = &person.mail_file;
    views
        .delete(&db, INBOX)
        .map_err(|e| format!("{name}: deleting the unlogged Inbox: {e}"))?;
    views
        .create(&db, def)
        .map_err(|e| format!("{name}: defining a logged Inbox: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::LocalStore;
    use crate::store::Store;
    use mail::NewPerson;

    fn inbox_logged(store: &LocalStore, person: &mail::Person) -> bool {
        let db = mail::open_mail_file(store.engine(), store.views(), person).unwrap();
        let inbox = store.views().open(&db, INBOX).unwrap();
        inbox.definition().logged
    }

    #[test]
    fn an_inbox_is_unlogged_from_the_template_and_logged_once_redefined() {
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalStore::open(tmp.path(), None).unwrap();
        let new = |name: &str| NewPerson {
            name: name.into(),
            aliases: Vec::new(),
            server_user: None,
        };
        let plain = store.create_mail_user(&new("Plain User")).unwrap();
        let logged = store.create_mail_user(&new("Logged User")).unwrap();
        log_inbox(store.engine(), store.views(), &logged).unwrap();
        assert!(!inbox_logged(&store, &plain));
        assert!(inbox_logged(&store, &logged));
        let db = mail::open_mail_file(store.engine(), store.views(), &logged).unwrap();
        let inbox = store.views().open(&db, INBOX).unwrap();
        let template = mail::design()
            .into_iter()
            .find(|d| d.name == INBOX)
            .unwrap();
        assert_eq!(inbox.definition().columns, template.columns);
        assert_eq!(inbox.definition().kind, template.kind);
    }
}
