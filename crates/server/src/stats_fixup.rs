//! Fixup in `show stats` / `GET /stats`: databases fixed up since the
//! server started, the last one and when, failed databases detached from
//! the log (I29) and waiting for fixup, and which fixed-up databases need
//! a new backup (their instance id changed, so no earlier backup applies).

use nsf::FixupState;
use protocol::{StatValue, Statistic};

/// The `fixup.*` statistics.
pub(crate) fn fixup_stats(f: &FixupState) -> Vec<Statistic> {
    let stat = |name: &str, value: StatValue| Statistic {
        name: format!("fixup.{name}"),
        value,
    };
    let (last, last_time) = match &f.last {
        Some((path, at)) => (path.clone(), at.to_rfc3339()),
        None => (String::new(), String::new()),
    };
    let backup = if f.backup_needed.is_empty() {
        "no".to_string()
    } else {
        format!(
            "yes: take a new backup of {} (fixup gave them new instance ids; older backups and log records do not apply)",
            f.backup_needed.join(", ")
        )
    };
    vec![
        stat("databases_fixed", StatValue::Count(f.fixed_up)),
        stat("last_database", StatValue::Text(last)),
        stat("last_time", StatValue::Text(last_time)),
        stat("databases_detached", StatValue::Count(f.detached)),
        stat("databases_needing_fixup", StatValue::Count(f.needing_fixup)),
        stat("backup_needed", StatValue::Text(backup)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_database_asks_for_a_backup() {
        let quiet = fixup_stats(&FixupState::default());
        assert!(quiet
            .iter()
            .any(|s| s.name == "fixup.backup_needed" && s.value == StatValue::Text("no".into())));
        let fixed = fixup_stats(&FixupState {
            fixed_up: 1,
            last: Some(("a.fdb".into(), nsf::Timestamp(0))),
            backup_needed: vec!["a.fdb".into()],
            ..FixupState::default()
        });
        let text = |n: &str| {
            fixed
                .iter()
                .find(|s| s.name == n)
                .map(|s| s.value.clone())
                .unwrap()
        };
        assert_eq!(text("fixup.databases_fixed"), StatValue::Count(1));
        assert_eq!(text("fixup.last_database"), StatValue::Text("a.fdb".into()));
        match text("fixup.backup_needed") {
            StatValue::Text(t) => assert!(t.starts_with("yes") && t.contains("a.fdb"), "{t}"),
            other => panic!("{other:?}"),
        }
    }
}
