//! End to end: `folio user …` on a data directory, with passwords piped on
//! standard input, checked against the server's own user store.

mod common;

use common::{fails, folio, json, ok};
use server::auth::UserStore;
use std::fs::File;
use std::sync::Arc;
use storage::backend::FsBackend;

fn store(data: &std::path::Path) -> UserStore {
    UserStore::open(Arc::new(FsBackend), data).unwrap()
}

/// The piped passwords below are used only when FOLIO_NEW_PASSWORD is unset.
fn password_env_unset() {
    assert!(
        std::env::var_os("FOLIO_NEW_PASSWORD").is_none(),
        "unset FOLIO_NEW_PASSWORD to run these tests"
    );
}

#[test]
fn users_are_added_listed_and_given_tokens() {
    password_env_unset();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    assert_eq!(
        ok(
            data,
            &["user", "add", "Alice Smith", "--admin"],
            "s3cret-pass\n"
        ),
        ""
    );
    ok(data, &["user", "add", "bob"], "bobs-password\r\n");

    let listed: Vec<_> = ok(data, &["user", "list"], "").lines().map(json).collect();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["name"], "Alice Smith");
    assert_eq!(listed[0]["admin"], true);
    assert_eq!(listed[1]["name"], "bob");
    assert_eq!(listed[1]["admin"], false);
    assert_eq!(listed[1]["tokens"], 0);

    let users = store(data);
    assert!(
        users
            .verify_password("alice smith", "s3cret-pass")
            .unwrap()
            .admin
    );
    assert!(users.verify_password("bob", "bobs-password").is_ok());

    fails(
        data,
        &["user", "add", "ALICE SMITH"],
        "another-pass\n",
        "already exists",
    );
    fails(data, &["user", "add", "carol"], "short\n", "at least 8");
    fails(
        data,
        &["user", "add", "a/b"],
        "long-enough\n",
        "only letters",
    );
    fails(data, &["user", "token", "nobody"], "", "no user");

    let token = ok(data, &["user", "token", "bob"], "");
    let token = token.trim_end();
    assert!(token.starts_with("folio_") && token.len() > 40, "{token:?}");
    assert_eq!(users.verify_token(token).unwrap().name, "bob");
    let second = ok(data, &["user", "token", "bob", "--label", "backup"], "");
    assert_ne!(second.trim_end(), token);
    let bob = json(ok(data, &["user", "list"], "").lines().nth(1).unwrap());
    assert_eq!(bob["tokens"], 2);
    assert_eq!(bob["token_labels"], json(r#"["token-1","backup"]"#));

    ok(data, &["user", "revoke", "bob", "--label", "token-1"], "");
    assert!(users.verify_token(token).is_err());
    fails(
        data,
        &["user", "revoke", "bob", "--label", "token-1"],
        "",
        "no token labelled",
    );

    ok(data, &["user", "passwd", "bob"], "a-new-password\n");
    assert!(users.verify_password("bob", "bobs-password").is_err());
    assert!(users.verify_password("bob", "a-new-password").is_ok());
    ok(data, &["user", "remove", "bob"], "");
    assert!(users.verify_password("bob", "a-new-password").is_err());
    assert_eq!(ok(data, &["user", "list"], "").lines().count(), 1);
}

#[test]
fn user_commands_work_while_the_data_directory_is_in_use() {
    password_env_unset();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    // Hold the lock a running server holds.
    let lock = File::create(data.join("folio.lock")).unwrap();
    lock.try_lock().unwrap();
    ok(data, &["user", "add", "alice"], "long-enough\n");
    assert_eq!(ok(data, &["user", "list"], "").lines().count(), 1);
    assert!(!data.join("translog").exists(), "the engine was opened");
}

#[test]
fn an_empty_directory_has_no_users_and_a_corrupt_file_is_named() {
    password_env_unset();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    assert_eq!(ok(data, &["user", "list"], ""), "");
    std::fs::write(data.join("users.json"), "{").unwrap();
    fails(data, &["user", "list"], "", "users.json");
    let o = folio(data, &["user", "add", "alice"], "long-enough\n");
    assert!(!o.status.success());
    assert_eq!(std::fs::read(data.join("users.json")).unwrap(), b"{");
}

#[test]
fn the_password_can_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_folio"))
        .arg("--data")
        .arg(dir.path())
        .args(["user", "add", "alice"])
        .env("FOLIO_NEW_PASSWORD", "from-the-env")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(store(dir.path())
        .verify_password("alice", "from-the-env")
        .is_ok());
}
