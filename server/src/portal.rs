//! The portal: server-rendered pages, no front-end build step. Login ([`login`]) is the OIDC
//! authorization code flow with PKCE (S256), state and nonce; the session lives on the server,
//! the browser holds only its random id in an HttpOnly, Secure, SameSite=Lax cookie. Every form
//! carries the session's CSRF token. The tenant page follows the live stream (EventSource) so
//! its phase moves without a reload. Sessions are in memory: one replica, and a restart logs
//! everyone out. The one inline script and the one inline style are constants, so the
//! Content-Security-Policy can allow exactly them by hash ([`crate::headers`]).

mod login;

use std::{
    collections::HashMap,
    num::NonZeroUsize,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use axum::{
    Form, Router,
    extract::{FromRequestParts, Path, Query, State},
    http::{HeaderMap, StatusCode, header, request::Parts},
    response::{Html, IntoResponse, Redirect, Response, sse::Event},
    routing::{get, post},
};
use kubespaces_api::api::Tenant;
use serde::Deserialize;

use crate::{
    auth::Identity,
    metrics::Metrics,
    pending::Pending,
    public_url::PublicUrl,
    routes::{self, AppState, CreateTenant},
    streams::{Until, Waiting, changes_stream},
};

const SESSION_COOKIE: &str = "ks_session";
const LOGIN_COOKIE: &str = "ks_login";

struct Session {
    identity: Identity,
    csrf: String,
    expires: Instant,
}

pub struct Portal {
    public_url: PublicUrl,
    login_ttl: Duration,
    sessions: Mutex<HashMap<String, Session>>,
    logins: Mutex<Pending<login::PendingLogin>>,
    metrics: Arc<Metrics>,
    endpoints: tokio::sync::OnceCell<login::Endpoints>,
    http: reqwest::Client,
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn set_cookie(name: &str, value: &str, max_age: u64) -> String {
    format!("{name}={value}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age={max_age}")
}

impl Portal {
    /// `max_pending_logins` and `login_ttl` bound what unauthenticated `/login` requests can
    /// make the server keep.
    pub fn new(
        public_url: PublicUrl,
        max_pending_logins: NonZeroUsize,
        login_ttl: Duration,
        metrics: Arc<Metrics>,
    ) -> Portal {
        Portal {
            public_url,
            login_ttl,
            sessions: Mutex::new(HashMap::new()),
            logins: Mutex::new(Pending::new(max_pending_logins, login_ttl)),
            metrics,
            endpoints: tokio::sync::OnceCell::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
        }
    }

    // A panic while a lock was held cannot leave these maps half-changed (no code under the
    // locks panics), so a poisoned lock is used as it is rather than taking the portal down.
    fn lock_sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_logins(&self) -> MutexGuard<'_, Pending<login::PendingLogin>> {
        self.logins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops expired pending logins, so the metrics read now are current.
    pub fn expire_logins(&self) {
        let mut logins = self.lock_logins();
        let expired = logins.expire(Instant::now());
        self.metrics.pending_logins_expired.inc_by(expired as u64);
        self.metrics.pending_logins.set(logins.len() as i64);
    }

    /// The logged-in browser's identity and CSRF token, if its session is still on: checked on
    /// every request, so a session ends the moment it expires ([`login`] ends it with its
    /// token at the latest).
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<(Identity, String)> {
        let id = cookie(headers, SESSION_COOKIE)?;
        self.live_session(&id)
            .map(|s| (s.identity.clone(), s.csrf.clone()))
    }

    fn live_session(&self, id: &str) -> Option<SessionView> {
        let mut sessions = self.lock_sessions();
        match sessions.get(id) {
            Some(s) if s.expires > Instant::now() => Some(SessionView {
                identity: s.identity.clone(),
                csrf: s.csrf.clone(),
                expires: s.expires,
            }),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    /// Is the session still on (not expired, not logged out)?
    fn session_alive(&self, id: &str) -> bool {
        self.live_session(id).is_some()
    }
}

struct SessionView {
    identity: Identity,
    csrf: String,
    expires: Instant,
}

/// The logged-in browser: its identity and CSRF token. Without a session: to the login page.
pub struct Browser {
    identity: Identity,
    csrf: String,
}

/// The logged-in browser's session, for its live stream: which session, until when.
struct BrowserSession {
    identity: Identity,
    id: String,
    expires: Instant,
}

impl FromRequestParts<AppState> for BrowserSession {
    type Rejection = StatusCode;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, StatusCode> {
        let id = cookie(&parts.headers, SESSION_COOKIE).ok_or(StatusCode::UNAUTHORIZED)?;
        let session = state
            .portal
            .live_session(&id)
            .ok_or(StatusCode::UNAUTHORIZED)?;
        Ok(BrowserSession {
            identity: session.identity,
            id,
            expires: session.expires,
        })
    }
}

impl FromRequestParts<AppState> for Browser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match state.portal.session(&parts.headers) {
            Some((identity, csrf)) => Ok(Browser { identity, csrf }),
            None => Err(Redirect::to("/login").into_response()),
        }
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/login", get(login::login))
        .route("/auth/callback", get(login::callback))
        .route("/logout", post(login::logout))
        .route("/tenants", post(create))
        .route("/tenants/{name}", get(tenant_page))
        .route("/tenants/{name}/kubeconfig", get(download))
        .route("/portal/events", get(events))
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The portal's one stylesheet, inline in every page; the CSP allows it by its hash.
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#111;background:#fff;line-height:1.5}\
header{background:#123;color:#fff;padding:.75rem 1rem;display:flex;justify-content:space-between;align-items:center;flex-wrap:wrap}\
header a,header button{color:#fff}main{max-width:60rem;margin:auto;padding:1rem}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem;border-bottom:1px solid #ccc}\
label{display:block;margin-top:.6rem;font-weight:600}input{font-size:1rem;padding:.35rem;width:100%;max-width:20rem;border:1px solid #555}\
button,.button{font-size:1rem;padding:.45rem .9rem;margin-top:.8rem;background:#0b5;color:#000;border:2px solid #063;cursor:pointer;text-decoration:none;display:inline-block}\
a:focus,button:focus,input:focus{outline:3px solid #f90;outline-offset:2px}\
.error{color:#a00;font-weight:600}.phase{font-size:1.5rem;font-weight:700}\
@media(max-width:40rem){th:nth-child(3),td:nth-child(3){display:none}}";

fn page(title: &str, who: Option<&Browser>, body: &str) -> Html<String> {
    let bar = match who {
        Some(b) => format!(
            "<span>{}</span><form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Log out</button></form>",
            esc(&b.identity.email),
            esc(&b.csrf)
        ),
        None => String::new(),
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{} · KubeSpaces</title><style>{STYLE}</style></head><body><header><a href=\"/\"><strong>KubeSpaces</strong></a>{bar}</header><main>{body}</main></body></html>",
        esc(title)
    ))
}

fn phase(t: &Tenant) -> &str {
    t.phase().unwrap_or("Pending")
}

async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some((identity, csrf)) = state.portal.session(&headers) else {
        return page(
            "Welcome",
            None,
            "<h1>KubeSpaces</h1><p>Your own Kubernetes. Log in to see and create your tenants.</p><a class=\"button\" href=\"/login\">Log in</a>",
        )
        .into_response();
    };
    let browser = Browser { identity, csrf };
    list_page(&state, &browser, None, None).into_response()
}

fn list_page(
    state: &AppState,
    b: &Browser,
    error: Option<&str>,
    form: Option<&NewTenant>,
) -> Html<String> {
    let tenants = state.tenants.list(|t| b.identity.may_access(&t.spec.owner));
    let rows: String = tenants
        .iter()
        .map(|t| {
            let name = t.metadata.name.as_deref().unwrap_or("");
            format!(
                "<tr><td><a href=\"/tenants/{n}\">{n}</a></td><td>{}</td><td>{}</td></tr>",
                esc(phase(t)),
                esc(&t.spec.owner),
                n = esc(name)
            )
        })
        .collect();
    let table = if tenants.is_empty() {
        "<p>No tenants yet.</p>".to_owned()
    } else {
        format!(
            "<table><caption>Your tenants</caption><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Phase</th><th scope=\"col\">Owner</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    };
    let value = |f: fn(&NewTenant) -> &str| form.map(f).map(esc).unwrap_or_default();
    let alert = error
        .map(|e| {
            format!(
                "<p class=\"error\" role=\"alert\" id=\"form-error\">{}</p>",
                esc(e)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<h1>Tenants</h1>{table}<h2 id=\"new\">New tenant</h2>{alert}<form method=\"post\" action=\"/tenants\" aria-labelledby=\"new\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<label for=\"name\">Name</label><input id=\"name\" name=\"name\" required value=\"{}\" aria-describedby=\"name-help\"><small id=\"name-help\">Lowercase letters, digits and '-', starting with a letter.</small>\
<label for=\"cpu\">CPU</label><input id=\"cpu\" name=\"cpu\" required value=\"{}\" placeholder=\"e.g. 8 or 500m\">\
<label for=\"memory\">Memory</label><input id=\"memory\" name=\"memory\" required value=\"{}\" placeholder=\"e.g. 16Gi\">\
<label for=\"storage\">Storage (optional)</label><input id=\"storage\" name=\"storage\" value=\"{}\" placeholder=\"e.g. 50Gi\">\
<button type=\"submit\">Create tenant</button></form>",
        value(|f| &f.name),
        value(|f| &f.cpu),
        value(|f| &f.memory),
        value(|f| &f.storage),
        csrf = esc(&b.csrf),
    );
    page("Tenants", Some(b), &body)
}

#[derive(Deserialize)]
struct NewTenant {
    csrf: String,
    name: String,
    cpu: String,
    memory: String,
    #[serde(default)]
    storage: String,
}

async fn create(
    State(state): State<AppState>,
    b: Browser,
    Form(form): Form<NewTenant>,
) -> Response {
    if form.csrf != b.csrf {
        return (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response();
    }
    let request = CreateTenant {
        name: form.name.trim().to_owned(),
        cpu: form.cpu.trim().to_owned(),
        memory: form.memory.trim().to_owned(),
        storage: Some(form.storage.trim().to_owned()).filter(|s| !s.is_empty()),
        owner: None,
    };
    let name = request.name.clone();
    match routes::create_tenant(&state, &b.identity, request).await {
        Ok(_) => Redirect::to(&format!("/tenants/{name}")).into_response(),
        Err(e) => {
            let status = e.status();
            (
                status,
                list_page(&state, &b, Some(&e.to_string()), Some(&form)),
            )
                .into_response()
        }
    }
}

async fn tenant_page(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
) -> Response {
    let tenant = match routes::visible(&state, &b.identity, &name) {
        Ok(t) => t,
        Err(e) => {
            return (
                e.status(),
                page(
                    "Not found",
                    Some(&b),
                    &format!("<p>{}</p>", esc(&e.to_string())),
                ),
            )
                .into_response();
        }
    };
    page(&name, Some(&b), &tenant_body(&name, &tenant)).into_response()
}

/// The tenant page follows the live stream with this script. It is a constant (the tenant's
/// name reaches it through the `data-tenant` attribute, HTML-escaped) so the CSP can allow it by
/// its hash and nothing else can run.
pub const TENANT_SCRIPT: &str = "const p=document.getElementById('phase');\
const es=new EventSource('/portal/events?name='+encodeURIComponent(p.dataset.tenant));\
es.addEventListener('applied',e=>{const t=JSON.parse(e.data);const s=t.status||{};\
p.textContent=s.phase||'Pending';\
document.getElementById('api').textContent=(s.endpoints||{}).api||'';\
document.getElementById('apps').textContent=(s.endpoints||{}).apps||'';\
document.getElementById('waiting').textContent=t.waiting?('Waiting for '+t.waiting):'';});\
es.addEventListener('deleted',()=>{p.textContent='Deleted';});\
es.addEventListener('expired',e=>{es.close();document.getElementById('waiting').textContent=e.data;});";

fn tenant_body(name: &str, tenant: &Tenant) -> String {
    let endpoints = tenant.status.as_ref().and_then(|s| s.endpoints.as_ref());
    let api = endpoints.and_then(|e| e.api.clone()).unwrap_or_default();
    let apps = endpoints.and_then(|e| e.apps.clone()).unwrap_or_default();
    let n = esc(name);
    format!(
        "<h1>{n}</h1><p>Phase: <span class=\"phase\" id=\"phase\" data-tenant=\"{n}\" aria-live=\"polite\">{}</span></p>\
<p id=\"waiting\" aria-live=\"polite\"></p><p>API: <code id=\"api\">{}</code></p>\
<p>Apps: <code id=\"apps\">{}</code></p><p>Owner: {}</p>\
<p><a class=\"button\" id=\"kubeconfig\" href=\"/tenants/{n}/kubeconfig\" download=\"{n}.kubeconfig\">Download kubeconfig</a></p>\
<p><a href=\"/\">All tenants</a></p><script>{TENANT_SCRIPT}</script>",
        esc(phase(tenant)),
        esc(&api),
        esc(&apps),
        esc(&tenant.spec.owner),
    )
}

async fn download(State(state): State<AppState>, b: Browser, Path(name): Path<String>) -> Response {
    match routes::tenant_kubeconfig(&state, &b.identity, &name).await {
        Ok(data) => routes::kubeconfig_download(&name, data),
        Err(e) => (
            e.status(),
            page(
                "Kubeconfig",
                Some(&b),
                &format!(
                    "<p class=\"error\" role=\"alert\">{}</p>",
                    esc(&e.to_string())
                ),
            ),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
struct EventsQuery {
    name: Option<String>,
}

/// The tenant page's live stream: counted among the user's streams, and ended with the session
/// (its expiry, at the latest its token's, or a logout) by an `expired` event the page shows.
async fn events(
    State(state): State<AppState>,
    b: BrowserSession,
    Query(q): Query<EventsQuery>,
) -> Response {
    let slot = match state.streams.acquire(&b.identity.email) {
        Ok(slot) => slot,
        Err(e) => return e.into_response(),
    };
    let portal = state.portal.clone();
    let id = b.id;
    let until = Until {
        deadline: tokio::time::Instant::from_std(b.expires),
        still: Some(Box::new(move || portal.session_alive(&id))),
        last: Event::default()
            .event("expired")
            .data("your session has ended: log in again to follow this tenant"),
    };
    changes_stream(&state, b.identity, q.name, until, Waiting::Included, slot).into_response()
}

#[cfg(test)]
mod tests {
    use kubespaces_api::api::TenantSpec;

    use super::*;
    use crate::headers::{content_security_policy, csp_hash};

    /// The text of every inline `<tag>…</tag>` in `html`.
    fn inline(html: &str, tag: &str) -> Vec<String> {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        html.split(open.as_str())
            .skip(1)
            .map(|rest| {
                rest.split(close.as_str())
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// ` on<letters>=`: an inline event handler, which the CSP would block.
    fn has_inline_handler(html: &str) -> bool {
        html.match_indices(" on").any(|(at, _)| {
            let rest = &html[at + 3..];
            let letters = rest.chars().take_while(char::is_ascii_alphabetic).count();
            letters > 0 && rest[letters..].starts_with('=')
        })
    }

    #[test]
    fn every_inline_script_and_style_is_allowed_by_the_csp() {
        let browser = Browser {
            identity: Identity {
                email: "alice@example.com".into(),
                groups: vec![],
                admin: false,
                valid_until: 0,
            },
            csrf: "token".into(),
        };
        let name = "team-<x>";
        let tenant = Tenant::new(name, TenantSpec::new("alice@example.com", "1", "1Gi", None));
        let welcome = page("Welcome", None, "<p>Log in</p>").0;
        let tenant_page = page(name, Some(&browser), &tenant_body(name, &tenant)).0;
        let csp = content_security_policy();
        for html in [&welcome, &tenant_page] {
            let (scripts, styles) = (inline(html, "script"), inline(html, "style"));
            assert_eq!(styles, vec![STYLE]);
            for source in scripts.iter().chain(&styles) {
                assert!(
                    csp.contains(&csp_hash(source)),
                    "the CSP ({csp}) does not allow inline {source:?}"
                );
            }
            assert!(!has_inline_handler(html), "{html}");
            assert!(!html.contains(" style="), "{html}");
            assert!(!html.contains("javascript:"), "{html}");
        }
        // The tenant page's one script, unchanged by the tenant; the name reaches it as data.
        assert_eq!(inline(&tenant_page, "script"), vec![TENANT_SCRIPT]);
        assert!(tenant_page.contains("data-tenant=\"team-&lt;x&gt;\""));
        assert!(
            has_inline_handler("<a onclick=\"x()\">"),
            "the check itself"
        );
    }
}
