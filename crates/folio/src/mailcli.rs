//! The `mail` commands, each written once over a [`Store`]: the
//! directory of people and their mail files (`create-user`,
//! `list-users`, `remove-user`), sending (`send`, `send --draft`) and
//! meetings (`meeting …`, `meetingcli.rs`).
//!
//! Input is checked before the store is asked: addresses parse, the body
//! on stdin is UTF-8 and within the body limit (stdin is read no further
//! than that), each file to attach opens. Over `--server` the user
//! commands run on the server (for server administrators; `remove-user
//! --delete-file` is refused there), and `send` goes through the native
//! `SendMail` request as the signed-in user (with `--attach`,
//! `SendMailFiles`: the files stream after the request).

use crate::error::{FolioError, FolioResult};
use crate::output;
use crate::store::Store;
use clap::Subcommand;
use mail::{Address, Attachment, Header, Memo, Message, NewPerson};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum MailCmd {
    /// Add a person to the directory (names.fdb) and make their mail file,
    /// mail/<short name>.fdb, from the mail template, with the person's
    /// server user as its only Manager.
    CreateUser {
        /// Full name (the short name, and so the mail file's name, is it
        /// in lowercase with dots for spaces).
        name: String,
        /// Another name mail to the person may use (repeatable).
        #[arg(long = "alias")]
        aliases: Vec<String>,
        /// The server user the person signs in as (default: NAME). Not
        /// `--user`, which names who runs a command with --server.
        #[arg(long)]
        server_user: Option<String>,
    },
    /// Print every person in the directory as JSON lines, by name.
    ListUsers,
    /// Take a person out of the directory; their mail file is kept.
    RemoveUser {
        /// Any of the person's names.
        name: String,
        /// Delete the mail file too (embedded only: a running server
        /// cannot delete a database it may have open).
        #[arg(long)]
        delete_file: bool,
    },
    /// Send a memo, its body read from stdin (Markdown), or save it as a
    /// draft in the sender's mail file.
    Send {
        /// Recipients, comma-separated (repeatable).
        #[arg(long)]
        to: Vec<String>,
        /// Copy recipients, comma-separated (repeatable).
        #[arg(long)]
        cc: Vec<String>,
        /// Blind-copy recipients, comma-separated (repeatable).
        #[arg(long)]
        bcc: Vec<String>,
        #[arg(long, default_value = "")]
        subject: String,
        /// A file to attach (repeatable).
        #[arg(long = "attach")]
        attachments: Vec<PathBuf>,
        /// Save in the sender's mail file (Drafts) instead of sending.
        #[arg(long)]
        draft: bool,
        /// The sender, a person in the directory. Embedded only (nobody
        /// is signed in there); over --server the sender is the signed-in
        /// user.
        #[arg(long)]
        from: Option<String>,
    },
    /// Meetings: create, respond, reschedule, cancel, show
    /// (`meetingcli.rs`).
    Meeting {
        /// Act as this person in the directory. Embedded only (nobody is
        /// signed in there); over --server you act as the signed-in user.
        #[arg(long, global = true)]
        from: Option<String>,
        #[command(subcommand)]
        cmd: crate::meetingcli::MeetingCmd,
    },
}

/// Runs a `mail` command over `store`.
pub fn mail(
    store: &dyn Store,
    c: &MailCmd,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> FolioResult<()> {
    match c {
        MailCmd::CreateUser {
            name,
            aliases,
            server_user,
        } => {
            let new = NewPerson {
                name: name.clone(),
                aliases: aliases.clone(),
                server_user: server_user.clone(),
            };
            output::pretty(out, &output::person(&store.create_mail_user(&new)?))
        }
        MailCmd::ListUsers => {
            for p in store.list_mail_users()? {
                output::line(out, &output::person(&p))?;
            }
            Ok(())
        }
        MailCmd::RemoveUser { name, delete_file } => {
            let removed = store.remove_mail_user(name, *delete_file)?;
            output::line(out, &output::removed_user(&removed))
        }
        MailCmd::Send {
            to,
            cc,
            bcc,
            subject,
            attachments,
            draft,
            from,
        } => {
            let mut header = Header::new(subject, &read_body(input)?);
            header.send_to = addresses(to)?;
            header.copy_to = addresses(cc)?;
            header.blind_copy_to = addresses(bcc)?;
            let msg = Message::Memo(Memo { header });
            msg.validate()?;
            let mut opened = attachments
                .iter()
                .map(|p| open_file(p.as_path()))
                .collect::<FolioResult<Vec<_>>>()?;
            let mut files: Vec<Attachment<'_>> = opened
                .iter_mut()
                .map(|(name, size, f)| Attachment {
                    name: name.clone(),
                    mime: "application/octet-stream".into(),
                    size: Some(*size),
                    content: f,
                })
                .collect();
            let sent = store.send_mail(from.as_deref(), msg, &mut files, *draft)?;
            output::line(out, &output::sent(&sent))
        }
        MailCmd::Meeting { from, cmd } => {
            crate::meetingcli::meeting(store, from.as_deref(), cmd, input, out)
        }
    }
}

/// Every address of the repeated, comma-separated lists.
fn addresses(lists: &[String]) -> FolioResult<Vec<Address>> {
    let mut out = Vec::new();
    for l in lists {
        out.extend(Address::parse_list(l)?);
    }
    Ok(out)
}

/// The body on stdin: UTF-8, at most the body limit (read no further).
pub(crate) fn read_body(input: &mut dyn Read) -> FolioResult<String> {
    let limit = mail::MAX_BODY_BYTES as u64;
    let mut bytes = Vec::new();
    input
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FolioError::io("reading standard input", e))?;
    if bytes.len() as u64 > limit {
        return Err(FolioError::BadInput(format!(
            "the body on stdin is over the limit of {limit} bytes"
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| FolioError::BadInput("the body on stdin is not UTF-8 text".into()))
}

/// A file to attach: its name, size and an open handle.
fn open_file(p: &Path) -> FolioResult<(String, u64, File)> {
    let name = crate::commands::file_name(p)?;
    let what = || format!("cannot open {}", p.display());
    let f = File::open(p).map_err(|e| FolioError::io(what(), e))?;
    let meta = f.metadata().map_err(|e| FolioError::io(what(), e))?;
    if !meta.is_file() {
        return Err(FolioError::BadInput(format!(
            "{} is not a file",
            p.display()
        )));
    }
    Ok((name, meta.len(), f))
}
