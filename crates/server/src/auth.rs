//! Server users: who may connect, and how they prove it.
//!
//! A user has a name, an argon2id password hash, an administrator flag
//! (full access to every database, whatever its ACL) and any number of API
//! tokens. All of it lives in one small file, `<data>/users.json`, written
//! atomically (temporary file, sync, rename, directory sync; design.md I9)
//! and readable by its owner only, since it holds password hashes.
//!
//! ```text
//!   users.json ──load──▶ Users { records, by_name, by_token }
//!        ▲                  │
//!        │ save (atomic)    ├─ verify_password ─ cache hit? ──▶ User
//!        │                  │                    miss: argon2 (tens of ms)
//!   add_user, set_password, ├─ verify_token ── SHA-256(token) ──▶ sessions
//!   remove_user, tokens     │                                   ▶ API tokens
//!                           └─ login ──▶ session token (memory only)
//! ```
//!
//! Why it is built this way:
//!
//! - **Secrets are never stored.** Passwords are stored as PHC strings
//!   (`$argon2id$v=19$m=…`, the argon2 crate's default parameters and a
//!   random salt); tokens (`folio_` + 32 random bytes in base64url) as their
//!   SHA-256. A token has enough entropy that a fast hash is enough, and a
//!   fast hash lets every request check one.
//! - **Unknown users cost the same as known ones.** A failed login says
//!   "wrong user name or password" either way, and a name that does not
//!   exist is checked against a dummy hash, so neither the answer nor its
//!   timing tells an attacker which names exist.
//! - **A cache of recent successes.** HTTP clients using Basic
//!   authentication send the password with every request; paying argon2
//!   each time would cap a server at a few dozen requests per second per
//!   core. Successful checks are remembered under SHA-256(name ‖ 0 ‖
//!   password ‖ per-process salt) — never the password itself — in a
//!   bounded map. An entry remembers the password hash it was checked
//!   against and counts only while that is still the user's hash, so a
//!   password change or removal (here or in another process) invalidates it.
//!   Session tokens are tied to the password hash the same way.
//! - **One check at a time per name and password.** A client opening a
//!   pool of connections, or many clients reconnecting after a restart,
//!   present the same credentials at the same instant, before any check has
//!   filled the cache: each would pay argon2 (tens of milliseconds of CPU
//!   and 19 MiB of memory). Checks of the same cache key take turns instead,
//!   and each looks at the cache again when its turn comes, so a storm of
//!   identical logins costs one hash. Failures are not cached, so identical
//!   wrong passwords are checked one after another, never in parallel.
//! - **Another process may change the file.** `folio user add` works while
//!   the server runs. Before answering, the store compares the file's
//!   fingerprint (length, modification time and inode: cheap; or, on a
//!   backend that is not the real file system, the content's hash) with the
//!   one it loaded, and reloads when it differs. A file that no longer
//!   parses fails every check (closed, not open) with an error naming it.
//!   Changes are made on the freshly reloaded state, so two processes lose
//!   an update only if they write within the same instant (last writer wins;
//!   the file is never torn, each writer has its own temporary file).
//!
//! File format (`version` 1; unknown fields are errors):
//!
//! ```json
//! {
//!   "format": "folio-users",
//!   "version": 1,
//!   "users": [
//!     {
//!       "name": "Alice Smith",
//!       "admin": true,
//!       "created": "2026-11-21T10:00:00.000000Z",
//!       "password": "$argon2id$v=19$m=19456,t=2,p=1$…$…",
//!       "tokens": [
//!         { "label": "backup", "sha256": "<64 hex digits>", "created": "…" }
//!       ]
//!     }
//!   ]
//! }
//! ```

use crate::{ServerError, ServerResult};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine as _;
use nsf::Timestamp;
use parking_lot::{Mutex, MutexGuard};
use rand::rngs::OsRng;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use storage::backend::{read_file, write_all_at};
use storage::{Backend, OpenMode};

/// The users file's name in the data directory.
pub const USERS_FILE: &str = "users.json";
/// Every token (API or session) starts with this.
pub const TOKEN_PREFIX: &str = "folio_";
/// What a client gives where a password goes, told apart once, where it
/// comes in (a protocol Hello, an HTTP `Authorization: Basic` header): a
/// password, or an API or session token in its place. Tokens start with
/// [`TOKEN_PREFIX`], which no password may.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// A password, checked against the user's argon2 hash (slow on a
    /// cache miss: run it on a worker thread).
    Password(String),
    /// A token, checked by its SHA-256 (fast).
    Token(String),
}

impl Secret {
    /// The secret `text` is.
    pub fn parse(text: String) -> Secret {
        if text.starts_with(TOKEN_PREFIX) {
            Secret::Token(text)
        } else {
            Secret::Password(text)
        }
    }
}

/// Never shows the secret itself.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Secret::Password(_) => "Password(…)",
            Secret::Token(_) => "Token(…)",
        })
    }
}

/// Shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest password accepted, in characters.
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// Longest user name or token label, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// How long a session token from [`UserStore::login`] stays valid unless
/// configured otherwise.
pub const DEFAULT_SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

const FORMAT: &str = "folio-users";
const VERSION: u32 = 1;
const TOKEN_BYTES: usize = 32;
const CACHE_CAPACITY: usize = 1024;
const MAX_SESSIONS: usize = 65_536;
const BAD_CREDENTIALS: &str = "wrong user name or password";
const BAD_TOKEN: &str = "invalid or expired token";

/// An authenticated server user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The name as it was registered (lookups ignore case).
    pub name: String,
    /// A server administrator: full access to every database.
    pub admin: bool,
}

/// What [`UserStore::list_users`] tells about a user (no secrets).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// The name as it was registered.
    pub name: String,
    /// A server administrator.
    pub admin: bool,
    /// When the user was added (RFC 3339).
    pub created: String,
    /// How many API tokens the user has.
    pub tokens: usize,
    /// Their labels, in creation order.
    pub token_labels: Vec<String>,
}

/// The time source for session expiry (monotonic; injectable in tests).
type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// The server's users, backed by `<data>/users.json`. Shared by all
/// connections (`Arc<UserStore>`); every method takes `&self`.
pub struct UserStore {
    backend: Arc<dyn Backend>,
    path: PathBuf,
    session_lifetime: Duration,
    clock: Clock,
    /// Per-process salt of the verification cache's keys.
    cache_salt: [u8; 32],
    /// A hash of a random password, checked for names that do not exist.
    dummy_hash: OnceLock<String>,
    /// Password hashes checked so far (what the cache saves, and what an
    /// unknown name must cost like a known one).
    hash_checks: std::sync::atomic::AtomicU64,
    /// Password checks under way, by cache key (see the module docs).
    checking: Mutex<HashMap<[u8; 32], Arc<Mutex<()>>>>,
    state: Mutex<State>,
}

struct State {
    users: Users,
    /// The fingerprint of the file `users` was loaded from.
    loaded: Fingerprint,
    cache: HashMap<[u8; 32], CachedLogin>,
    sessions: HashMap<[u8; 32], Session>,
}

/// A successful password check: valid while `password` is still the
/// user's hash.
struct CachedLogin {
    user_key: String,
    password: String,
}

/// A login session: valid until `expires`, and while `password` is still
/// the user's hash.
struct Session {
    user_key: String,
    password: String,
    expires: Instant,
}

/// How a version of the users file is recognised without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fingerprint {
    Absent,
    Stat {
        len: u64,
        modified: Option<SystemTime>,
        inode: u64,
    },
    Content([u8; 32]),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    format: String,
    version: u32,
    users: Vec<UserRecord>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserRecord {
    name: String,
    admin: bool,
    created: String,
    password: String,
    tokens: Vec<TokenRecord>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenRecord {
    label: String,
    sha256: String,
    created: String,
}

/// The loaded users with their lookup indexes.
#[derive(Clone, Default)]
struct Users {
    records: Vec<UserRecord>,
    /// Lower-cased name → index in `records`.
    by_name: HashMap<String, usize>,
    /// SHA-256 of a token → index in `records`.
    by_token: HashMap<[u8; 32], usize>,
}

impl Users {
    /// Builds the indexes, checking everything a hand-edited file could get
    /// wrong. The error is the reason, without the file's name.
    fn new(records: Vec<UserRecord>) -> Result<Users, String> {
        let mut users = Users {
            records,
            ..Users::default()
        };
        for (i, r) in users.records.iter().enumerate() {
            let at = |reason: String| format!("user {} ({:?}): {reason}", i + 1, r.name);
            validate_name(&r.name).map_err(at)?;
            if users.by_name.insert(user_key(&r.name), i).is_some() {
                return Err(at(
                    "a user of that name (ignoring case) comes earlier".into()
                ));
            }
            PasswordHash::new(&r.password)
                .map_err(|e| at(format!("password is not a PHC hash string: {e}")))?;
            Timestamp::parse_rfc3339(&r.created)
                .ok_or_else(|| at(format!("created {:?} is not an RFC 3339 time", r.created)))?;
            let mut labels = Vec::new();
            for t in &r.tokens {
                let hash = parse_hex32(&t.sha256).ok_or_else(|| {
                    at(format!("token {:?}: sha256 is not 64 hex digits", t.label))
                })?;
                validate_label(&t.label).map_err(at)?;
                let label = t.label.to_lowercase();
                if labels.contains(&label) {
                    return Err(at(format!("two tokens labelled {:?}", t.label)));
                }
                labels.push(label);
                if users.by_token.insert(hash, i).is_some() {
                    return Err(at(format!("token {:?} is listed twice", t.label)));
                }
            }
        }
        Ok(users)
    }

    fn get(&self, name: &str) -> Option<&UserRecord> {
        self.by_name.get(&user_key(name)).map(|&i| &self.records[i])
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut UserRecord> {
        self.by_name
            .get(&user_key(name))
            .map(|&i| &mut self.records[i])
    }

    fn to_file(&self) -> UsersFile {
        UsersFile {
            format: FORMAT.into(),
            version: VERSION,
            users: self.records.clone(),
        }
    }
}

impl UserRecord {
    fn user(&self) -> User {
        User {
            name: self.name.clone(),
            admin: self.admin,
        }
    }
}

impl UserStore {
    /// Opens the users of `data_dir` (none if `users.json` is absent). A
    /// file that cannot be read or parsed is an error naming it.
    pub fn open(backend: Arc<dyn Backend>, data_dir: &Path) -> ServerResult<UserStore> {
        let mut cache_salt = [0u8; 32];
        OsRng.fill_bytes(&mut cache_salt);
        let store = UserStore {
            backend,
            path: data_dir.join(USERS_FILE),
            session_lifetime: DEFAULT_SESSION_LIFETIME,
            clock: Arc::new(Instant::now),
            cache_salt,
            dummy_hash: OnceLock::new(),
            hash_checks: Default::default(),
            checking: Mutex::new(HashMap::new()),
            state: Mutex::new(State {
                users: Users::default(),
                loaded: Fingerprint::Absent,
                cache: HashMap::new(),
                sessions: HashMap::new(),
            }),
        };
        let (users, loaded) = store.load()?;
        {
            let mut st = store.state.lock();
            st.users = users;
            st.loaded = loaded;
        }
        Ok(store)
    }

    /// Sets how long session tokens from [`login`](Self::login) stay valid.
    pub fn with_session_lifetime(mut self, lifetime: Duration) -> UserStore {
        self.session_lifetime = lifetime;
        self
    }

    /// The users file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds a user. The name must be new (ignoring case) and valid: 1 to 64
    /// letters, digits, `.`, `_`, `@`, `-`, and spaces inside. The password
    /// needs at least 8 characters.
    pub fn add_user(&self, name: &str, password: &str, admin: bool) -> ServerResult<()> {
        validate_name(name).map_err(ServerError::BadRequest)?;
        validate_password(password)?;
        let password = hash_password(password)?;
        let mut st = self.current()?;
        if st.users.get(name).is_some() {
            return Err(ServerError::UserExists(name.to_string()));
        }
        let mut records = st.users.records.clone();
        records.push(UserRecord {
            name: name.to_string(),
            admin,
            created: Timestamp::now().to_rfc3339(),
            password,
            tokens: Vec::new(),
        });
        self.commit(&mut st, records)
    }

    /// Replaces a user's password. Cached verifications and sessions of the
    /// old password stop counting.
    pub fn set_password(&self, name: &str, password: &str) -> ServerResult<()> {
        validate_password(password)?;
        let password = hash_password(password)?;
        let mut st = self.current()?;
        let mut users = st.users.clone();
        let record = users
            .get_mut(name)
            .ok_or_else(|| ServerError::NoSuchUser(name.to_string()))?;
        record.password = password;
        self.commit(&mut st, users.records)?;
        st.forget(&user_key(name));
        Ok(())
    }

    /// Removes a user with their tokens and sessions.
    pub fn remove_user(&self, name: &str) -> ServerResult<()> {
        let mut st = self.current()?;
        let key = user_key(name);
        let i = *st
            .users
            .by_name
            .get(&key)
            .ok_or_else(|| ServerError::NoSuchUser(name.to_string()))?;
        let mut records = st.users.records.clone();
        records.remove(i);
        self.commit(&mut st, records)?;
        st.forget(&key);
        Ok(())
    }

    /// All users, sorted by name (ignoring case).
    pub fn list_users(&self) -> ServerResult<Vec<UserInfo>> {
        let st = self.current()?;
        let mut list: Vec<UserInfo> = st
            .users
            .records
            .iter()
            .map(|r| UserInfo {
                name: r.name.clone(),
                admin: r.admin,
                created: r.created.clone(),
                tokens: r.tokens.len(),
                token_labels: r.tokens.iter().map(|t| t.label.clone()).collect(),
            })
            .collect();
        list.sort_by_key(|u| user_key(&u.name));
        Ok(list)
    }

    /// Checks a user's password. The error never tells whether the user
    /// exists, and takes about as long either way.
    pub fn verify_password(&self, name: &str, password: &str) -> ServerResult<User> {
        let cache_key = self.cache_key(name, password);
        if let Some(user) = self.current()?.cached(&cache_key, name) {
            return Ok(user);
        }
        let turn = self.checking.lock().entry(cache_key).or_default().clone();
        let result = {
            let _turn = turn.lock();
            self.check_password(cache_key, name, password)
        };
        let mut checking = self.checking.lock();
        // The map's reference and ours: nobody else waits for this key.
        if Arc::strong_count(&turn) == 2 {
            checking.remove(&cache_key);
        }
        result
    }

    /// [`verify_password`](Self::verify_password) on its turn: the cache
    /// again (the check before may have filled it), else argon2.
    fn check_password(
        &self,
        cache_key: [u8; 32],
        name: &str,
        password: &str,
    ) -> ServerResult<User> {
        let known_hash = {
            let mut st = self.current()?;
            if let Some(user) = st.cached(&cache_key, name) {
                return Ok(user);
            }
            st.users.get(name).map(|r| r.password.clone())
        };
        // Hashing takes tens of milliseconds: not under the lock.
        let checked = known_hash.as_deref().unwrap_or_else(|| self.dummy_hash());
        self.hash_checks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !password_matches(checked, password) || known_hash.is_none() {
            return Err(ServerError::Unauthenticated(BAD_CREDENTIALS.into()));
        }
        let mut st = self.state.lock();
        // The password may have changed while it was being checked.
        let user = match st.users.get(name) {
            Some(r) if r.password == checked => r.user(),
            _ => return Err(ServerError::Unauthenticated(BAD_CREDENTIALS.into())),
        };
        st.remember(
            cache_key,
            CachedLogin {
                user_key: user_key(name),
                password: checked.to_string(),
            },
        );
        Ok(user)
    }

    /// Checks a password and starts a session: returns a token valid for
    /// the session lifetime (kept in memory only; a restart ends sessions).
    pub fn login(&self, name: &str, password: &str) -> ServerResult<String> {
        let user = self.verify_password(name, password)?;
        let token = new_token();
        let mut st = self.current()?;
        let record = st
            .users
            .get(&user.name)
            .ok_or_else(|| ServerError::Unauthenticated(BAD_CREDENTIALS.into()))?;
        let session = Session {
            user_key: user_key(&record.name),
            password: record.password.clone(),
            expires: (self.clock)() + self.session_lifetime,
        };
        st.start_session(token_hash(&token), session, (self.clock)());
        Ok(token)
    }

    /// Ends the session of a token from [`login`](Self::login) (nothing if
    /// it is not one).
    pub fn logout(&self, token: &str) {
        self.state.lock().sessions.remove(&token_hash(token));
    }

    /// Creates an API token for a user, labelled (unique per user, ignoring
    /// case). Returns the token: it is stored only as a hash, so this is
    /// the one time it can be shown.
    pub fn create_token(&self, name: &str, label: &str) -> ServerResult<String> {
        validate_label(label).map_err(ServerError::BadRequest)?;
        let token = new_token();
        let mut st = self.current()?;
        let mut users = st.users.clone();
        let record = users
            .get_mut(name)
            .ok_or_else(|| ServerError::NoSuchUser(name.to_string()))?;
        if find_label(record, label).is_some() {
            return Err(ServerError::BadRequest(format!(
                "user {:?} already has a token labelled {label:?}",
                record.name
            )));
        }
        record.tokens.push(TokenRecord {
            label: label.to_string(),
            sha256: to_hex(&token_hash(&token)),
            created: Timestamp::now().to_rfc3339(),
        });
        self.commit(&mut st, users.records)?;
        Ok(token)
    }

    /// Checks a token: an API token or a session token from
    /// [`login`](Self::login).
    pub fn verify_token(&self, token: &str) -> ServerResult<User> {
        let hash = token_hash(token);
        let now = (self.clock)();
        let mut st = self.current()?;
        if let Some(s) = st.sessions.get(&hash) {
            let current = st
                .users
                .by_name
                .get(&s.user_key)
                .map(|&i| &st.users.records[i])
                .filter(|r| r.password == s.password && now < s.expires);
            if let Some(r) = current {
                return Ok(r.user());
            }
            st.sessions.remove(&hash);
            return Err(ServerError::Unauthenticated(BAD_TOKEN.into()));
        }
        match st.users.by_token.get(&hash) {
            Some(&i) => Ok(st.users.records[i].user()),
            None => Err(ServerError::Unauthenticated(BAD_TOKEN.into())),
        }
    }

    /// Revokes a user's API token by its label.
    pub fn revoke_token(&self, name: &str, label: &str) -> ServerResult<()> {
        let mut st = self.current()?;
        let mut users = st.users.clone();
        let record = users
            .get_mut(name)
            .ok_or_else(|| ServerError::NoSuchUser(name.to_string()))?;
        let i = find_label(record, label).ok_or_else(|| {
            ServerError::NotFound(format!(
                "user {:?} has no token labelled {label:?}",
                record.name
            ))
        })?;
        record.tokens.remove(i);
        self.commit(&mut st, users.records)
    }

    /// Locks the state, first reloading it if the file changed.
    fn current(&self) -> ServerResult<MutexGuard<'_, State>> {
        let mut st = self.state.lock();
        if self.fingerprint()? != st.loaded {
            let (users, loaded) = self.load()?;
            st.users = users;
            st.loaded = loaded;
        }
        Ok(st)
    }

    /// Writes `records` as the new file, then makes them the state. On
    /// failure nothing changes.
    fn commit(&self, st: &mut State, records: Vec<UserRecord>) -> ServerResult<()> {
        let users = Users::new(records).map_err(ServerError::Internal)?;
        let json = serde_json::to_vec_pretty(&users.to_file())
            .map_err(|e| ServerError::Internal(format!("encoding users: {e}")))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        self.backend
            .create_dir_all(dir)
            .and_then(|()| write_secret_file(self.backend.as_ref(), &self.path, &json))
            .map_err(|e| self.file_error(format!("cannot write: {e}")))?;
        st.users = users;
        st.loaded = self.fingerprint()?;
        Ok(())
    }

    /// Reads and parses the file; the fingerprint is taken first, so a
    /// change racing with the read is seen on the next check.
    fn load(&self) -> ServerResult<(Users, Fingerprint)> {
        let fingerprint = self.fingerprint()?;
        let bytes = match read_file(self.backend.as_ref(), &self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok((Users::default(), fingerprint))
            }
            Err(e) => return Err(self.file_error(format!("cannot read: {e}"))),
        };
        let users = parse_users(&bytes).map_err(|reason| self.file_error(reason))?;
        Ok((users, fingerprint))
    }

    fn fingerprint(&self) -> ServerResult<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(Fingerprint::Stat {
                len: m.len(),
                modified: m.modified().ok(),
                inode: m.ino(),
            }),
            // Not on the real file system (or gone): ask the backend.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match read_file(self.backend.as_ref(), &self.path) {
                    Ok(bytes) => Ok(Fingerprint::Content(Sha256::digest(&bytes).into())),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Fingerprint::Absent),
                    Err(e) => Err(self.file_error(format!("cannot read: {e}"))),
                }
            }
            Err(e) => Err(self.file_error(format!("cannot inspect: {e}"))),
        }
    }

    fn file_error(&self, reason: String) -> ServerError {
        ServerError::File {
            path: self.path.display().to_string(),
            reason,
        }
    }

    fn cache_key(&self, name: &str, password: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(user_key(name).as_bytes());
        h.update([0u8]);
        h.update(password.as_bytes());
        h.update(self.cache_salt);
        h.finalize().into()
    }

    fn dummy_hash(&self) -> &str {
        self.dummy_hash.get_or_init(|| {
            let mut random = [0u8; 24];
            OsRng.fill_bytes(&mut random);
            hash_password(&to_hex(&random)).expect("hashing with default parameters")
        })
    }
}

impl State {
    /// The user of a cached successful check, if it still counts.
    fn cached(&mut self, key: &[u8; 32], name: &str) -> Option<User> {
        let entry = self.cache.get(key)?;
        let valid = entry.user_key == user_key(name);
        let user = self
            .users
            .by_name
            .get(&entry.user_key)
            .map(|&i| &self.users.records[i])
            .filter(|r| valid && r.password == entry.password)
            .map(UserRecord::user);
        if user.is_none() {
            self.cache.remove(key);
        }
        user
    }

    fn remember(&mut self, key: [u8; 32], login: CachedLogin) {
        if self.cache.len() >= CACHE_CAPACITY && !self.cache.contains_key(&key) {
            // An arbitrary victim: the map's order is randomly seeded.
            if let Some(victim) = self.cache.keys().next().copied() {
                self.cache.remove(&victim);
            }
        }
        self.cache.insert(key, login);
    }

    fn start_session(&mut self, hash: [u8; 32], session: Session, now: Instant) {
        self.sessions.retain(|_, s| s.expires > now);
        if self.sessions.len() >= MAX_SESSIONS {
            let oldest = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(h, _)| *h);
            if let Some(h) = oldest {
                self.sessions.remove(&h);
            }
        }
        self.sessions.insert(hash, session);
    }

    /// Drops cached checks and sessions of a user whose password changed or
    /// who was removed (they would no longer count anyway; this frees them).
    fn forget(&mut self, key: &str) {
        self.cache.retain(|_, c| c.user_key != key);
        self.sessions.retain(|_, s| s.user_key != key);
    }
}

fn parse_users(bytes: &[u8]) -> Result<Users, String> {
    let file: UsersFile =
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid users file: {e}"))?;
    if file.format != FORMAT {
        return Err(format!("format is {:?}, expected {FORMAT:?}", file.format));
    }
    if file.version != VERSION {
        return Err(format!(
            "version {} is not supported (this server reads version {VERSION})",
            file.version
        ));
    }
    Users::new(file.users)
}

/// Case-insensitive lookup key of a user name.
fn user_key(name: &str) -> String {
    name.to_lowercase()
}

fn validate_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(format!(
            "user name {name:?} must have 1 to {MAX_NAME_CHARS} characters"
        ));
    }
    if name.starts_with(' ') || name.ends_with(' ') {
        return Err(format!(
            "user name {name:?} must not start or end with a space"
        ));
    }
    match name
        .chars()
        .find(|&c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '@' | '-' | ' ')))
    {
        Some(c) => Err(format!(
            "user name {name:?} has {c:?}: only letters, digits, '.', '_', '@', '-' and spaces are allowed"
        )),
        None => Ok(()),
    }
}

fn validate_label(label: &str) -> Result<(), String> {
    let chars = label.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || label.chars().any(char::is_control) {
        return Err(format!(
            "token label {label:?} must have 1 to {MAX_NAME_CHARS} characters and no control characters"
        ));
    }
    Ok(())
}

fn validate_password(password: &str) -> ServerResult<()> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(ServerError::BadRequest(format!(
            "the password must have at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(ServerError::BadRequest(format!(
            "the password must have at most {MAX_PASSWORD_CHARS} characters"
        )));
    }
    // Clients send a token where a password goes; the prefix tells which.
    if password.starts_with(TOKEN_PREFIX) {
        return Err(ServerError::BadRequest(format!(
            "the password must not start with {TOKEN_PREFIX:?} (that marks a token)"
        )));
    }
    Ok(())
}

fn find_label(record: &UserRecord, label: &str) -> Option<usize> {
    let label = label.to_lowercase();
    record
        .tokens
        .iter()
        .position(|t| t.label.to_lowercase() == label)
}

fn hash_password(password: &str) -> ServerResult<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| ServerError::Internal(format!("hashing a password: {e}")))
}

fn password_matches(phc: &str, password: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    OsRng.fill_bytes(&mut bytes);
    format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The CSRF token of a session (the console's cookie sessions): derived
/// from the session token, so the server keeps nothing more, and one-way,
/// so it does not reveal the session token to script that reads it.
pub fn csrf_token(session_token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"folio-csrf\0");
    h.update(session_token.as_bytes());
    to_hex(&h.finalize()[..16])
}

/// Whether `given` is the CSRF token of `session_token`, compared in
/// time that does not depend on where they differ.
pub fn csrf_matches(session_token: &str, given: &str) -> bool {
    let want = csrf_token(session_token);
    want.len() == given.len()
        && want
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Creates or replaces a file holding secrets (password hashes, a private
/// key): atomically and durably like `storage::backend::write_file_atomic`
/// (design.md I9), readable by its owner only from before the first byte is
/// written, and under a temporary name of its own so that two processes
/// writing at once never mix their bytes.
pub(crate) fn write_secret_file(backend: &dyn Backend, path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{:016x}.tmp", OsRng.next_u64()));
    let f = backend.open(&tmp, OpenMode::CreateNew)?;
    let written = restrict_mode(&tmp, 0o600)
        .and_then(|()| write_all_at(f.as_ref(), data, 0))
        .and_then(|()| f.sync_data());
    drop(f);
    // I9: the temporary file is durable before it replaces the old one,
    // and the rename is durable once the directory is synced.
    let renamed = written.and_then(|()| backend.rename(&tmp, path));
    if let Err(e) = renamed {
        let _ = backend.remove_file(&tmp);
        return Err(e);
    }
    backend.sync_dir(dir)
}

/// Sets the mode of a file or directory on the real file system (0o600,
/// 0o700: its owner's only). A backend that is not the real file system has
/// no modes: a path it holds is not found here, and there is nothing to set.
pub(crate) fn restrict_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, FsBackend, MemBackend};

    const PW: &str = "correct horse";

    fn mem_store() -> (Arc<MemBackend>, UserStore) {
        let mem = Arc::new(MemBackend::new());
        let store = UserStore::open(mem.clone(), Path::new("/mem/data")).unwrap();
        (mem, store)
    }

    fn unauthenticated(r: ServerResult<User>) -> String {
        match r {
            Err(ServerError::Unauthenticated(m)) => m,
            other => panic!("expected Unauthenticated, got {other:?}"),
        }
    }

    /// A secret is told apart once, by its prefix, and never printed.
    #[test]
    fn a_secret_is_a_token_by_its_prefix_and_never_shown() {
        let (_, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        let token = store.login("alice", PW).unwrap();
        let as_token = Secret::parse(token.clone());
        assert_eq!(as_token, Secret::Token(token.clone()));
        assert_eq!(Secret::parse(PW.into()), Secret::Password(PW.into()));
        for s in [as_token, Secret::parse(PW.into())] {
            let shown = format!("{s:?}");
            assert!(!shown.contains(&token) && !shown.contains(PW), "{shown}");
        }
    }

    #[test]
    fn add_then_verify_password() {
        let (_mem, store) = mem_store();
        store.add_user("Alice Smith", PW, true).unwrap();
        store.add_user("bob", "bobs password", false).unwrap();
        let alice = store.verify_password("alice smith", PW).unwrap();
        assert_eq!(
            alice,
            User {
                name: "Alice Smith".into(),
                admin: true
            }
        );
        assert!(!store.verify_password("bob", "bobs password").unwrap().admin);
        let names: Vec<_> = store
            .list_users()
            .unwrap()
            .into_iter()
            .map(|u| u.name)
            .collect();
        assert_eq!(names, ["Alice Smith", "bob"]);
    }

    #[test]
    fn wrong_password_and_unknown_user_look_the_same() {
        let (_mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        let wrong = unauthenticated(store.verify_password("alice", "not the password"));
        let unknown = unauthenticated(store.verify_password("mallory", PW));
        let invalid = unauthenticated(store.verify_password("", PW));
        assert_eq!(wrong, unknown);
        assert_eq!(wrong, invalid);
        assert!(!wrong.contains("alice") && !unknown.contains("mallory"));
    }

    fn checks(store: &UserStore) -> u64 {
        store.hash_checks.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn concurrent_identical_logins_cost_one_hash_and_wrong_ones_each_cost_one() {
        let (_mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        let before = checks(&store);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| store.verify_password("alice", PW).unwrap());
            }
        });
        assert_eq!(checks(&store) - before, 1);
        assert!(store.checking.lock().is_empty(), "no turn left behind");

        let before = checks(&store);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| unauthenticated(store.verify_password("alice", "wrong")));
            }
        });
        assert_eq!(checks(&store) - before, 3, "failures are never shared");
        assert!(store.checking.lock().is_empty());
    }

    #[test]
    fn unknown_user_costs_a_hash() {
        let (_mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        for name in ["alice", "nobody", ""] {
            let before = checks(&store);
            unauthenticated(store.verify_password(name, "not the password"));
            assert_eq!(checks(&store), before + 1, "{name:?} checks one hash");
        }
    }

    #[test]
    fn duplicates_are_refused_ignoring_case() {
        let (_mem, store) = mem_store();
        store.add_user("Alice", PW, false).unwrap();
        for name in ["Alice", "alice", "ALICE"] {
            assert!(matches!(
                store.add_user(name, PW, false),
                Err(ServerError::UserExists(n)) if n == name
            ));
        }
        assert_eq!(store.list_users().unwrap().len(), 1);
    }

    #[test]
    fn bad_names_and_passwords_are_refused() {
        let (_mem, store) = mem_store();
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        for name in [
            "",
            " alice",
            "alice ",
            "a/b",
            "a:b",
            "tab\there",
            long.as_str(),
        ] {
            assert!(
                matches!(
                    store.add_user(name, PW, false),
                    Err(ServerError::BadRequest(_))
                ),
                "{name:?} accepted"
            );
        }
        for name in [
            "Jürgen Müller",
            "a.b_c@d-e",
            "x",
            &"y".repeat(MAX_NAME_CHARS),
        ] {
            store.add_user(name, PW, false).unwrap();
        }
        assert!(matches!(
            store.add_user("short", "1234567", false),
            Err(ServerError::BadRequest(m)) if m.contains("at least 8")
        ));
        store.add_user("eight", "12345678", false).unwrap();
        assert!(matches!(
            store.add_user("tokenlike", "folio_password", false),
            Err(ServerError::BadRequest(m)) if m.contains("marks a token")
        ));
    }

    #[test]
    fn api_tokens_verify_until_revoked_and_survive_reopen() {
        let (mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        let token = store.create_token("alice", "backup").unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(token.len(), TOKEN_PREFIX.len() + 43);
        assert_eq!(store.verify_token(&token).unwrap().name, "alice");
        assert!(matches!(
            store.create_token("alice", "Backup"),
            Err(ServerError::BadRequest(m)) if m.contains("already has a token")
        ));
        assert!(matches!(
            store.create_token("nobody", "x"),
            Err(ServerError::NoSuchUser(_))
        ));
        unauthenticated(store.verify_token("folio_not-a-token"));
        unauthenticated(store.verify_token(""));

        let stored = String::from_utf8(mem.file_bytes(store.path()).unwrap()).unwrap();
        assert!(
            !stored.contains(&token[TOKEN_PREFIX.len()..]),
            "token stored in clear"
        );
        assert!(!stored.contains(PW), "password stored in clear");

        let reopened = UserStore::open(mem.clone(), Path::new("/mem/data")).unwrap();
        assert_eq!(reopened.verify_token(&token).unwrap().name, "alice");
        assert_eq!(reopened.list_users().unwrap()[0].token_labels, ["backup"]);

        store.revoke_token("alice", "BACKUP").unwrap();
        unauthenticated(store.verify_token(&token));
        unauthenticated(reopened.verify_token(&token));
        assert!(matches!(
            store.revoke_token("alice", "backup"),
            Err(ServerError::NotFound(_))
        ));
    }

    #[test]
    fn sessions_expire_and_end_with_the_password() {
        let (_mem, store) = mem_store();
        let offset = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let clock_offset = offset.clone();
        let mut store = store.with_session_lifetime(Duration::from_secs(60));
        store.clock =
            Arc::new(move || start + Duration::from_secs(clock_offset.load(Ordering::SeqCst)));
        store.add_user("alice", PW, true).unwrap();
        unauthenticated(
            store
                .login("alice", "wrong password")
                .map(|_| unreachable!()),
        );

        let token = store.login("alice", PW).unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert!(store.verify_token(&token).unwrap().admin);
        offset.store(59, Ordering::SeqCst);
        store.verify_token(&token).unwrap();
        offset.store(60, Ordering::SeqCst);
        unauthenticated(store.verify_token(&token));

        let token = store.login("alice", PW).unwrap();
        store.logout(&token);
        unauthenticated(store.verify_token(&token));

        let token = store.login("alice", PW).unwrap();
        store.set_password("alice", "another password").unwrap();
        unauthenticated(store.verify_token(&token));

        let token = store.login("alice", "another password").unwrap();
        store.remove_user("alice").unwrap();
        unauthenticated(store.verify_token(&token));
    }

    #[test]
    fn set_password_invalidates_the_cache() {
        let (_mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        store.verify_password("alice", PW).unwrap();
        let before = checks(&store);
        for _ in 0..3 {
            store.verify_password("alice", PW).unwrap();
        }
        assert_eq!(checks(&store), before, "answered from the cache");

        store.set_password("alice", "new password").unwrap();
        unauthenticated(store.verify_password("alice", PW));
        store.verify_password("alice", "new password").unwrap();
        assert!(matches!(
            store.set_password("nobody", "new password"),
            Err(ServerError::NoSuchUser(_))
        ));
        store.remove_user("alice").unwrap();
        unauthenticated(store.verify_password("alice", "new password"));
    }

    #[test]
    fn another_store_on_the_same_directory_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let server = UserStore::open(Arc::new(FsBackend), dir.path()).unwrap();
        let cli = UserStore::open(Arc::new(FsBackend), dir.path()).unwrap();
        cli.add_user("alice", PW, false).unwrap();
        server.verify_password("alice", PW).unwrap();

        // Same length file, possibly the same modification time: the rename
        // still gives it a new inode.
        cli.set_password("alice", "new password").unwrap();
        unauthenticated(server.verify_password("alice", PW));
        server.verify_password("alice", "new password").unwrap();

        let token = cli.create_token("alice", "ci").unwrap();
        assert_eq!(server.verify_token(&token).unwrap().name, "alice");
        server.revoke_token("alice", "ci").unwrap();
        unauthenticated(cli.verify_token(&token));

        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(server.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "temporary files left behind");
    }

    #[test]
    fn another_store_on_the_same_memory_backend_is_noticed() {
        let (mem, server) = mem_store();
        let cli = UserStore::open(mem.clone(), Path::new("/mem/data")).unwrap();
        cli.add_user("alice", PW, false).unwrap();
        server.verify_password("alice", PW).unwrap();
        cli.set_password("alice", "new password").unwrap();
        unauthenticated(server.verify_password("alice", PW));
        cli.remove_user("alice").unwrap();
        unauthenticated(server.verify_password("alice", "new password"));
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let (mem, store) = mem_store();
        store.add_user("alice", PW, false).unwrap();
        let path = store.path().to_path_buf();
        let good = mem.file_bytes(&path).unwrap();
        let cases: [(&[u8], &str); 5] = [
            (b"{not json", "not a valid users file"),
            (br#"{"format":"x","version":1,"users":[]}"#, "format"),
            (br#"{"format":"folio-users","version":9,"users":[]}"#, "version 9"),
            (
                br#"{"format":"folio-users","version":1,"users":[],"extra":1}"#,
                "unknown field",
            ),
            (
                br#"{"format":"folio-users","version":1,"users":[{"name":"a","admin":false,"created":"2026-01-01T00:00:00Z","password":"plain","tokens":[]}]}"#,
                "PHC",
            ),
        ];
        for (bytes, needle) in cases {
            mem.set_file_bytes(&path, bytes.to_vec());
            let err = UserStore::open(mem.clone(), Path::new("/mem/data"))
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("/mem/data/users.json"), "{err}");
            assert!(err.contains(needle), "{needle:?} not in {err}");
            // A running store refuses to authenticate rather than go on.
            assert!(matches!(
                store.verify_password("alice", PW),
                Err(ServerError::File { .. })
            ));
        }
        mem.set_file_bytes(&path, good);
        store.verify_password("alice", PW).unwrap();
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let mem: Arc<dyn Backend> = Arc::new(MemBackend::new());
        let faulty = Arc::new(FaultBackend::new(mem.clone()));
        let store = UserStore::open(faulty.clone(), Path::new("/mem/data")).unwrap();
        store.add_user("alice", PW, false).unwrap();
        faulty.add_rule(FaultRule {
            sticky: true,
            ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
        });
        let err = store.add_user("bob", PW, false).unwrap_err();
        assert!(matches!(err, ServerError::File { .. }), "{err}");
        unauthenticated(store.verify_password("bob", PW));
        assert!(store.create_token("alice", "x").is_err());
        faulty.clear_rules();
        assert_eq!(store.list_users().unwrap().len(), 1);
        assert_eq!(mem.read_dir(Path::new("/mem/data")).unwrap().len(), 1);
        let reopened = UserStore::open(mem, Path::new("/mem/data")).unwrap();
        assert_eq!(reopened.list_users().unwrap()[0].tokens, 0);
    }
}
