//! `folio user …`: the server's users, managed in the data directory.
//!
//! These commands work on `<data>/users.json` alone and never open the
//! engine, so they run while the server does (the server notices the
//! change before its next check). Passwords come from `FOLIO_NEW_PASSWORD`
//! when it is set, else from the terminal without echo (asked twice), else
//! as one line of standard input, so scripts and tests can pipe them.

use crate::cli::Args;
use crate::error::{FolioError, FolioResult};
use crate::output;
use clap::Subcommand;
use server::auth::{UserInfo, UserStore};
use std::io::{self, BufRead, IsTerminal, Write};
use std::sync::Arc;
use storage::backend::FsBackend;

/// The environment variable a password is taken from.
pub const PASSWORD_ENV: &str = "FOLIO_NEW_PASSWORD";

#[derive(Subcommand, Debug)]
pub enum UserCmd {
    /// Add a server user (password from FOLIO_NEW_PASSWORD, the terminal or
    /// standard input).
    Add {
        name: String,
        /// A server administrator: full access to every database.
        #[arg(long)]
        admin: bool,
    },
    /// Change a user's password (read like add's).
    Passwd { name: String },
    /// Remove a user and their tokens.
    Remove { name: String },
    /// Print every user as a JSON line (no secrets).
    List,
    /// Create an API token and print it: it is shown this once only.
    Token {
        name: String,
        /// What the token is for (unique per user; default token-N).
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke a user's API token by its label.
    Revoke {
        name: String,
        #[arg(long)]
        label: String,
    },
}

/// Runs one `folio user` command.
pub fn run(cmd: &UserCmd, args: &Args) -> FolioResult<()> {
    let users = UserStore::open(Arc::new(FsBackend), args.data_dir())?;
    let mut out = io::stdout().lock();
    match cmd {
        UserCmd::Add { name, admin } => {
            let password = read_password(name)?;
            Ok(users.add_user(name, &password, *admin)?)
        }
        UserCmd::Passwd { name } => {
            let password = read_password(name)?;
            Ok(users.set_password(name, &password)?)
        }
        UserCmd::Remove { name } => Ok(users.remove_user(name)?),
        UserCmd::List => {
            for u in users.list_users()? {
                output::line(&mut out, &output::serialized(&u)?)?;
            }
            Ok(())
        }
        UserCmd::Token { name, label } => {
            let label = match label {
                Some(l) => l.clone(),
                None => free_label(&users.list_users()?, name),
            };
            let token = users.create_token(name, &label)?;
            output::text(&mut out, &token)
        }
        UserCmd::Revoke { name, label } => Ok(users.revoke_token(name, label)?),
    }
}

/// The first of `token-1`, `token-2`, … that `name` does not use yet.
fn free_label(users: &[UserInfo], name: &str) -> String {
    let taken: Vec<String> = users
        .iter()
        .filter(|u| u.name.to_lowercase() == name.to_lowercase())
        .flat_map(|u| u.token_labels.iter().map(|l| l.to_lowercase()))
        .collect();
    (1..)
        .map(|n| format!("token-{n}"))
        .find(|l| !taken.contains(l))
        .expect("an unused label")
}

/// The new password for `name`.
fn read_password(name: &str) -> FolioResult<String> {
    if let Ok(p) = std::env::var(PASSWORD_ENV) {
        return Ok(p);
    }
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| FolioError::io("cannot read the password from standard input", e))?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_string());
    }
    let first = prompt(&format!("Password for {name}: "))?;
    let again = prompt("Again: ")?;
    if first != again {
        return Err(FolioError::BadInput(
            "the two passwords differ; nothing changed".into(),
        ));
    }
    Ok(first)
}

/// Asks on the terminal and reads a line without echoing it.
fn prompt(question: &str) -> FolioResult<String> {
    let fail = |e: io::Error| FolioError::io("cannot read the password from the terminal", e);
    eprint!("{question}");
    io::stderr().flush().map_err(fail)?;
    let echo = EchoOff::new().map_err(fail)?;
    let mut line = String::new();
    let read = io::stdin().lock().read_line(&mut line);
    drop(echo);
    read.map_err(fail)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Turns terminal echo off (keeping the newline echoed) until dropped.
struct EchoOff {
    saved: libc::termios,
}

impl EchoOff {
    fn new() -> io::Result<EchoOff> {
        let mut saved = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills the termios it is given when it returns 0.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, saved.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: initialised by the successful tcgetattr above.
        let saved = unsafe { saved.assume_init() };
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        // SAFETY: a valid termios for the terminal on standard input.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(EchoOff { saved })
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `new`.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}
