//! Preparing a run: the settings, the server's administrator, the mail
//! users with their mail files, and the documents prefilled into each
//! Inbox.
//!
//! For a server the tool starts, all of it is done embedded, before the
//! server starts, through the engine's bulk path: each mail file's
//! documents go in as batches of foreign notes (one transaction and one
//! log fsync per batch, `Database::put_foreign_batch`, as the router
//! delivers) and one folder change per batch, with one thread per core.
//! Against `--server` the same happens over the native protocol, one
//! request per document. Durability: every batch is durable when it
//! returns; the embedded store is closed (flushed and checkpointed)
//! before the server opens the directory.

use super::args::MailArgs;
use super::content::{self, mail_file, user_name};
use crate::local::LocalStore;
use crate::store::Store;
use client::Client;
use mail::NewPerson;
use nsf::{ForeignAttachment, ForeignContent, ForeignNote, OriginatorId, Timestamp, Unid};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The server administrator the driver signs in as.
pub const ADMIN: &str = "loadadmin";
pub const ADMIN_PW: &str = "load-admin-password-1";

/// Bytes of content per prefill batch (a transaction well inside the log).
const BATCH_BYTES: usize = 8 << 20;

/// What the prefill made.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Prepared {
    pub users: usize,
    pub docs: u64,
    pub attachments: u64,
    pub content_bytes: u64,
    pub seconds: f64,
}

/// The data directory's settings: `mail.boxes`, and the log off when
/// `logging` is false.
pub fn write_settings(data: &Path, mailboxes: u32, logging: bool) -> Result<(), String> {
    std::fs::create_dir_all(data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let mut toml = format!("[mail]\nboxes = {mailboxes}\n");
    if !logging {
        toml.push_str("\n[translog]\nenabled = false\n");
    }
    std::fs::write(data.join("folio.toml"), toml).map_err(|e| format!("folio.toml: {e}"))?;
    let users = server::auth::UserStore::open(Arc::new(storage::backend::FsBackend), data)
        .map_err(|e| e.to_string())?;
    users
        .add_user(ADMIN, ADMIN_PW, true)
        .map_err(|e| e.to_string())
}

/// Creates `users` mail users in `data` and prefills their Inboxes,
/// embedded (no server may be running on it). With `logged_inbox` each
/// Inbox is redefined as a logged folder first (`viewlog.rs`).
pub fn prepare_local(
    data: &Path,
    a: &MailArgs,
    users: usize,
    logged_inbox: bool,
) -> Result<Prepared, String> {
    let started = Instant::now();
    let store = LocalStore::open(data, None).map_err(|e| e.to_string())?;
    let mut people = Vec::with_capacity(users);
    for i in 0..users {
        let new = NewPerson {
            name: user_name(i),
            aliases: Vec::new(),
            server_user: None,
        };
        let person = store.create_mail_user(&new).map_err(|e| e.to_string())?;
        if logged_inbox {
            super::viewlog::log_inbox(store.engine(), store.views(), &person)?;
        }
        people.push(person);
    }
    // The mail boxes exist before the server starts, so its router
    // watches them from its first pass.
    for b in 0..a.mailboxes {
        let path = mail::box_path(b, a.mailboxes);
        mail::open_box(store.engine(), store.views(), &path).map_err(|e| format!("{path}: {e}"))?;
    }
    let totals = Totals::default();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (engine, views) = (store.engine().as_ref(), store.views());
    let failed: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (people, totals) = (&people, &totals);
                s.spawn(move || -> Result<(), String> {
                    for (i, p) in people.iter().enumerate().skip(t).step_by(threads) {
                        let db =
                            mail::open_mail_file(engine, views, p).map_err(|e| e.to_string())?;
                        let mut rng = StdRng::seed_from_u64(a.seed ^ (i as u64) << 20);
                        prefill_file(&db, views, a, i, users, &mut rng, totals)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a prefill thread panicked".into()))
                    .err()
            })
            .collect()
    });
    if let Some(e) = failed.into_iter().next() {
        return Err(format!("prefill: {e}"));
    }
    store.close().map_err(|e| e.to_string())?;
    Ok(totals.prepared(users, started))
}

#[derive(Default)]
struct Totals {
    docs: AtomicU64,
    attachments: AtomicU64,
    bytes: AtomicU64,
}

impl Totals {
    fn add(&self, docs: u64, attachments: u64, bytes: u64) {
        self.docs.fetch_add(docs, Ordering::Relaxed);
        self.attachments.fetch_add(attachments, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn prepared(&self, users: usize, started: Instant) -> Prepared {
        Prepared {
            users,
            docs: self.docs.load(Ordering::Relaxed),
            attachments: self.attachments.load(Ordering::Relaxed),
            content_bytes: self.bytes.load(Ordering::Relaxed),
            seconds: started.elapsed().as_secs_f64(),
        }
    }
}

/// A prefilled document: its items and perhaps one attachment.
struct Doc {
    items: Vec<nsf::Item>,
    attachment: Option<(String, Vec<u8>)>,
}

impl Doc {
    fn draw(rng: &mut impl Rng, a: &MailArgs, user: usize, users: usize) -> Doc {
        let from = user_name(rng.gen_range(0..users));
        let items = content::delivered_memo(rng, &from, &user_name(user), a.max_doc_kib);
        let attachment =
            (rng.gen_range(0..100) < a.attach_percent).then(|| content::attachment(rng));
        Doc { items, attachment }
    }

    fn bytes(&self) -> usize {
        let items: usize = self.items.iter().map(|i| value_bytes(&i.value)).sum();
        items + self.attachment.as_ref().map_or(0, |(_, b)| b.len())
    }
}

/// About how many bytes a value holds (text as its length).
fn value_bytes(v: &nsf::ItemValue) -> usize {
    use nsf::ItemValue as V;
    match v {
        V::Text(s) | V::RichText(s) => s.len(),
        V::TextList(l) => l.iter().map(String::len).sum(),
        _ => 8,
    }
}

/// Puts `--docs` documents into user `user`'s mail file and its Inbox, in
/// batches of about [`BATCH_BYTES`].
fn prefill_file(
    db: &Arc<nsf::Database>,
    views: &views::Views,
    a: &MailArgs,
    user: usize,
    users: usize,
    rng: &mut StdRng,
    totals: &Totals,
) -> Result<(), String> {
    let mut batch: Vec<ForeignNote> = Vec::new();
    let (mut bytes, mut atts) = (0usize, 0u64);
    for k in 0..a.docs {
        let doc = Doc::draw(rng, a, user, users);
        bytes += doc.bytes();
        atts += u64::from(doc.attachment.is_some());
        batch.push(foreign(doc));
        if bytes >= BATCH_BYTES || k + 1 == a.docs {
            let n = batch.len() as u64;
            store_batch(db, views, std::mem::take(&mut batch))?;
            totals.add(n, atts, bytes as u64);
            (bytes, atts) = (0, 0);
        }
    }
    Ok(())
}

fn foreign(doc: Doc) -> ForeignNote {
    let now = Timestamp::now();
    ForeignNote {
        oid: OriginatorId {
            unid: Unid::random(),
            seq_num: 1,
            seq_time: now,
        },
        created: now,
        modified: now,
        deleted: false,
        items: doc.items,
        attachments: doc
            .attachment
            .map(|(name, bytes)| ForeignAttachment {
                name,
                mime: "application/octet-stream".into(),
                content: ForeignContent::Bytes(bytes),
            })
            .into_iter()
            .collect(),
        revisions: Vec::new(),
    }
}

/// One transaction of notes, then one change of the Inbox folder.
fn store_batch(
    db: &Arc<nsf::Database>,
    views: &views::Views,
    notes: Vec<ForeignNote>,
) -> Result<(), String> {
    let unids: Vec<Unid> = notes.iter().map(|n| n.oid.unid).collect();
    for r in db.put_foreign_batch(notes) {
        r.map_err(|e| format!("{}: {e}", db.path()))?;
    }
    views
        .folder_add(db, mail::INBOX, &unids)
        .map_err(|e| format!("{}: Inbox: {e}", db.path()))
}

/// Creates the users on the server at the other end of `clients` and
/// prefills their Inboxes over the native protocol. A user already there
/// (from an earlier run) is used as it is, not prefilled again.
pub async fn prepare_remote(
    clients: &[Client],
    a: &MailArgs,
    users: usize,
) -> Result<Prepared, String> {
    let started = Instant::now();
    let totals = Arc::new(Totals::default());
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        let (client, a, totals) = (client.clone(), a.clone(), totals.clone());
        let step = clients.len();
        tasks.spawn(async move {
            for i in (c..users).step_by(step) {
                match client.create_mail_user(&user_name(i), &[], None).await {
                    Ok(_) => {}
                    Err(e) if e.is_conflict() => continue,
                    Err(e) => return Err(format!("creating {}: {e}", user_name(i))),
                }
                let mut rng = StdRng::seed_from_u64(a.seed ^ (i as u64) << 20);
                prefill_remote(&client, &a, i, users, &mut rng, &totals)
                    .await
                    .map_err(|e| format!("prefilling {}: {e}", mail_file(i)))?;
            }
            Ok::<(), String>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.map_err(|e| e.to_string())??;
    }
    Ok(totals.prepared(users, started))
}

async fn prefill_remote(
    client: &Client,
    a: &MailArgs,
    user: usize,
    users: usize,
    rng: &mut StdRng,
    totals: &Totals,
) -> Result<(), client::ClientError> {
    let (db, _) = client.open_database(&mail_file(user)).await?;
    let mut unids = Vec::new();
    for _ in 0..a.docs {
        let doc = Doc::draw(rng, a, user, users);
        let bytes = doc.bytes() as u64;
        let json = nsf::items_to_json(&doc.items).to_string();
        let meta = client.create_document(db, &json).await?;
        if let Some((name, content)) = &doc.attachment {
            let size = Some(content.len() as u64);
            client
                .put_attachment(
                    db,
                    meta.unid,
                    name,
                    "application/octet-stream",
                    size,
                    content.as_slice(),
                )
                .await?;
        }
        totals.add(1, u64::from(doc.attachment.is_some()), bytes);
        unids.push(meta.unid);
    }
    client.folder_add(db, mail::INBOX, &unids).await?;
    client.close_database(db).await
}
