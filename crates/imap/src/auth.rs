//! Signing in: LOGIN and AUTHENTICATE PLAIN (RFC 4616, with or without
//! an initial response), against the server's own users through
//! [`crate::Accounts`].
//!
//! Passwords travel in the clear in both, so neither is accepted on a
//! connection that is not TLS, unless it is loopback or the settings
//! allow it (`imap.plaintext_login`); CAPABILITY then says
//! `LOGINDISABLED`. A wrong user and a wrong password get the same answer
//! (`NO [AUTHENTICATIONFAILED]`), so names cannot be probed; each refusal
//! is answered after a pause that grows with the session's refusals, and
//! the fifth ends the session (`Session::login_refused`).

use crate::session::{Session, State};
use crate::store::LoginRefused;
use imap_next::imap_types::auth::{AuthMechanism, AuthenticateData};
use imap_next::imap_types::core::{AString, Tag};
use imap_next::imap_types::response::{Code, CodeOther, Status};
use imap_next::imap_types::secret::Secret;
use imap_next::types::CommandAuthenticate;

/// The one answer to a refused sign-in, whatever was wrong.
pub(crate) const REFUSED: &str = "wrong user name or password";

pub(crate) fn login(
    s: &mut Session,
    tag: Tag<'static>,
    user: AString<'static>,
    password: Secret<AString<'static>>,
) {
    if !matches!(s.state, State::NotAuthenticated) {
        return s.bad(tag, "already signed in");
    }
    if !s.transport.may_send_passwords(&s.limits) {
        return s.no(
            tag,
            Some(code("PRIVACYREQUIRED")),
            "plaintext sign-in is refused without TLS: use STARTTLS or the TLS port",
        );
    }
    let user = String::from_utf8_lossy(user.as_ref()).into_owned();
    let password = String::from_utf8_lossy(password.declassify().as_ref()).into_owned();
    match sign_in(s, &user, &password) {
        Ok(()) => {
            let caps = s.capabilities();
            let code = Code::Capability(crate::session::vec1(caps));
            s.ok(tag, Some(code), "signed in")
        }
        Err((code, text)) => {
            s.no(tag, Some(code), &text);
            s.end_if_refused_too_often();
        }
    }
}

pub(crate) fn authenticate(s: &mut Session, cmd: CommandAuthenticate) {
    let tag = cmd.tag;
    if !matches!(s.state, State::NotAuthenticated) {
        return finish(s, Status::bad(Some(tag), None, "already signed in"));
    }
    if cmd.mechanism != AuthMechanism::Plain {
        return finish(
            s,
            Status::no(Some(tag), None, "only AUTHENTICATE PLAIN is offered"),
        );
    }
    if !s.transport.may_send_passwords(&s.limits) {
        return finish(
            s,
            Status::no(
                Some(tag),
                Some(code("PRIVACYREQUIRED")),
                "plaintext sign-in is refused without TLS: use STARTTLS or the TLS port",
            ),
        );
    }
    match cmd.initial_response {
        Some(initial) => plain(s, tag, initial.declassify()),
        None => {
            s.authenticating = Some(tag);
            s.continue_authenticate();
        }
    }
}

pub(crate) fn authenticate_data(s: &mut Session, data: AuthenticateData<'static>) {
    let Some(tag) = s.authenticating.take() else {
        return;
    };
    match data {
        AuthenticateData::Continue(bytes) => plain(s, tag, bytes.declassify()),
        AuthenticateData::Cancel => {
            finish(s, Status::bad(Some(tag), None, "AUTHENTICATE cancelled"))
        }
    }
}

/// `[authzid] NUL authcid NUL password`; an authzid, if given, must be
/// the user (nobody signs in as another here).
fn plain(s: &mut Session, tag: Tag<'static>, bytes: &[u8]) {
    let parts: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
    let [authz, user, password] = parts[..] else {
        return finish(
            s,
            Status::bad(Some(tag), None, "PLAIN wants authzid NUL user NUL password"),
        );
    };
    let user = String::from_utf8_lossy(user).into_owned();
    let password = String::from_utf8_lossy(password).into_owned();
    if !authz.is_empty() && authz != user.as_bytes() {
        return finish(
            s,
            Status::no(
                Some(tag),
                Some(code("AUTHORIZATIONFAILED")),
                "signing in as another user is not allowed",
            ),
        );
    }
    let status = match sign_in(s, &user, &password) {
        Ok(()) => Status::ok(Some(tag), None, "signed in"),
        Err((code, text)) => Status::no(Some(tag), Some(code), text),
    };
    finish(s, status);
    s.end_if_refused_too_often();
}

fn sign_in(s: &mut Session, user: &str, password: &str) -> Result<(), (Code<'static>, String)> {
    match s.accounts.login(user, password) {
        Ok(store) => {
            s.state = State::Authenticated(store);
            Ok(())
        }
        Err(LoginRefused::BadCredentials) => {
            s.login_refused();
            Err((code("AUTHENTICATIONFAILED"), REFUSED.to_string()))
        }
        Err(LoginRefused::NoMailFile) => Err((
            code("AUTHORIZATIONFAILED"),
            "this user has no mail file on this server".to_string(),
        )),
        Err(LoginRefused::Unavailable(why)) => {
            Err((code("UNAVAILABLE"), format!("cannot sign in now: {why}")))
        }
    }
}

fn finish<E: std::fmt::Debug>(s: &mut Session, status: Result<Status<'static>, E>) {
    let status = status.expect("valid status text");
    s.finish_authenticate(status);
}

/// A response code by name (RFC 5530 codes imap-types has no variant for).
pub(crate) fn code(name: &'static str) -> Code<'static> {
    Code::Other(CodeOther::unvalidated(name.as_bytes()))
}
