//! The portal: server-rendered pages, no front-end build step. Login is the OIDC authorization
//! code flow with PKCE (S256), state and nonce; the session lives on the server, the browser
//! holds only its random id in an HttpOnly, Secure, SameSite=Lax cookie. Every form carries the
//! session's CSRF token. The tenant page follows the live stream (EventSource) so its phase moves
//! without a reload. Sessions are in memory: one replica, and a restart logs everyone out.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use axum::{
    Form, Router,
    extract::{FromRequestParts, Path, Query, State},
    http::{HeaderMap, StatusCode, header, request::Parts},
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
};
use base64::Engine;
use kubespaces_api::api::Tenant;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tracing::{info, warn};

use crate::{
    auth::Identity,
    error::ApiError,
    routes::{self, AppState, CreateTenant},
};

const SESSION_COOKIE: &str = "ks_session";
const LOGIN_COOKIE: &str = "ks_login";
const LOGIN_TTL: Duration = Duration::from_secs(600);

struct Session {
    identity: Identity,
    csrf: String,
    expires: Instant,
}

struct PendingLogin {
    verifier: String,
    nonce: String,
    redirect_uri: String,
    created: Instant,
}

#[derive(Deserialize, Clone)]
struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

pub struct Portal {
    public_url: Option<String>,
    sessions: Mutex<HashMap<String, Session>>,
    logins: Mutex<HashMap<String, PendingLogin>>,
    endpoints: tokio::sync::OnceCell<Endpoints>,
    http: reqwest::Client,
}

fn random() -> String {
    let mut bytes = [0u8; 32];
    // The OS random source; without one no secure session can be made, so fail loudly.
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("no OS random numbers for session ids: {e}");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
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
    pub fn new(public_url: Option<String>) -> Portal {
        Portal {
            public_url: public_url.map(|u| u.trim_end_matches('/').to_owned()),
            sessions: Mutex::new(HashMap::new()),
            logins: Mutex::new(HashMap::new()),
            endpoints: tokio::sync::OnceCell::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
        }
    }

    async fn endpoints(&self, issuer: &str) -> Result<Endpoints, ApiError> {
        self.endpoints
            .get_or_try_init(|| async {
                let url = format!("{issuer}/.well-known/openid-configuration");
                let fail = |e: reqwest::Error| {
                    ApiError::Unavailable(format!("the OIDC issuer is not reachable: {e}"))
                };
                self.http
                    .get(&url)
                    .send()
                    .await
                    .map_err(fail)?
                    .json()
                    .await
                    .map_err(fail)
            })
            .await
            .cloned()
    }

    fn session(&self, headers: &HeaderMap) -> Option<(Identity, String)> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = self.sessions.lock().ok()?;
        match sessions.get(&id) {
            Some(s) if s.expires > Instant::now() => Some((s.identity.clone(), s.csrf.clone())),
            Some(_) => {
                sessions.remove(&id);
                None
            }
            None => None,
        }
    }
}

/// The logged-in browser: its identity and CSRF token. Without a session: to the login page.
pub struct Browser {
    identity: Identity,
    csrf: String,
}

impl FromRequestParts<AppState> for Browser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match state.portal.session(&parts.headers) {
            Some((identity, csrf)) => Ok(Browser { identity, csrf }),
            None if parts.uri.path().starts_with("/portal/events") => {
                Err(StatusCode::UNAUTHORIZED.into_response())
            }
            None => Err(Redirect::to("/login").into_response()),
        }
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/login", get(login))
        .route("/auth/callback", get(callback))
        .route("/logout", post(logout))
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

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#111;background:#fff;line-height:1.5}\
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
    let endpoints = tenant.status.as_ref().and_then(|s| s.endpoints.as_ref());
    let api = endpoints.and_then(|e| e.api.clone()).unwrap_or_default();
    let apps = endpoints.and_then(|e| e.apps.clone()).unwrap_or_default();
    let n = esc(&name);
    let body = format!(
        "<h1>{n}</h1><p>Phase: <span class=\"phase\" id=\"phase\" aria-live=\"polite\">{}</span></p>\
<p id=\"waiting\" aria-live=\"polite\"></p><p>API: <code id=\"api\">{}</code></p>\
<p>Apps: <code id=\"apps\">{}</code></p><p>Owner: {}</p>\
<p><a class=\"button\" id=\"kubeconfig\" href=\"/tenants/{n}/kubeconfig\" download=\"{n}.kubeconfig\">Download kubeconfig</a></p>\
<p><a href=\"/\">All tenants</a></p>\
<script>\
const es=new EventSource('/portal/events?name='+encodeURIComponent({name_js}));\
es.addEventListener('applied',e=>{{const t=JSON.parse(e.data);const s=t.status||{{}};\
document.getElementById('phase').textContent=s.phase||'Pending';\
document.getElementById('api').textContent=(s.endpoints||{{}}).api||'';\
document.getElementById('apps').textContent=(s.endpoints||{{}}).apps||'';\
const c=(s.conditions||[]).find(c=>c.status!=='True'&&!['Reconciling','Stalled','Synced','Ready'].includes(c.type));\
document.getElementById('waiting').textContent=c?('Waiting for '+c.type+': '+(c.message||c.reason)):'';}});\
es.addEventListener('deleted',()=>{{document.getElementById('phase').textContent='Deleted';}});\
</script>",
        esc(phase(&tenant)),
        esc(&api),
        esc(&apps),
        esc(&tenant.spec.owner),
        name_js = serde_json::to_string(&name)
            .unwrap_or_default()
            .replace('<', "\\u003c"),
    );
    page(&name, Some(&b), &body).into_response()
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

async fn events(
    State(state): State<AppState>,
    b: Browser,
    Query(q): Query<EventsQuery>,
) -> Response {
    routes::changes_stream(&state, b.identity, q.name).into_response()
}

fn redirect_uri(state: &AppState, headers: &HeaderMap) -> String {
    match &state.portal.public_url {
        Some(url) => format!("{url}/auth/callback"),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("127.0.0.1");
            format!("http://{host}/auth/callback")
        }
    }
}

async fn login(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let endpoints = state.portal.endpoints(state.verifier.issuer()).await?;
    let (login_state, verifier, nonce) = (random(), random(), random());
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let redirect = redirect_uri(&state, &headers);
    if let Ok(mut logins) = state.portal.logins.lock() {
        logins.retain(|_, l| l.created.elapsed() < LOGIN_TTL);
        logins.insert(
            login_state.clone(),
            PendingLogin {
                verifier,
                nonce: nonce.clone(),
                redirect_uri: redirect.clone(),
                created: Instant::now(),
            },
        );
    }
    let mut url = reqwest::Url::parse(&endpoints.authorization_endpoint).map_err(|e| {
        ApiError::Unavailable(format!(
            "the issuer's authorization endpoint is invalid: {e}"
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &state.config.oidc_client_id)
        .append_pair("redirect_uri", &redirect)
        .append_pair("scope", &state.config.oidc_scopes.join(" "))
        .append_pair("state", &login_state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    Ok((
        [(
            header::SET_COOKIE,
            set_cookie(LOGIN_COOKIE, &login_state, LOGIN_TTL.as_secs()),
        )],
        Redirect::to(url.as_str()),
    )
        .into_response())
}

#[derive(Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    id_token: String,
}

async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Result<Response, ApiError> {
    let refused = || ApiError::Forbidden("the login could not be completed; log in again".into());
    if let Some(error) = q.error {
        warn!(%error, "the issuer refused the login");
        return Err(refused());
    }
    let (Some(code), Some(login_state)) = (q.code, q.state) else {
        return Err(refused());
    };
    // The state must be the one this browser was given (login CSRF).
    if cookie(&headers, LOGIN_COOKIE).as_deref() != Some(login_state.as_str()) {
        return Err(refused());
    }
    let pending = state
        .portal
        .logins
        .lock()
        .ok()
        .and_then(|mut l| l.remove(&login_state))
        .filter(|l| l.created.elapsed() < LOGIN_TTL)
        .ok_or_else(refused)?;
    let endpoints = state.portal.endpoints(state.verifier.issuer()).await?;
    let response = state
        .portal
        .http
        .post(&endpoints.token_endpoint)
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &pending.redirect_uri),
            ("client_id", &state.config.oidc_client_id),
            ("code_verifier", &pending.verifier),
        ])
        .send()
        .await
        .map_err(|e| ApiError::Unavailable(format!("the OIDC issuer is not reachable: {e}")))?;
    if !response.status().is_success() {
        warn!(status = %response.status(), "the code exchange failed");
        return Err(refused());
    }
    let tokens: TokenResponse = response.json().await.map_err(|_| refused())?;
    let identity = state.verifier.verify(&tokens.id_token).await.map_err(|e| {
        info!(reason = %e, "refused a portal login token");
        ApiError::Unauthorized
    })?;
    // The nonce ties the ID token to this login (replay).
    let nonce = tokens
        .id_token
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|c| c.get("nonce").and_then(|n| n.as_str()).map(str::to_owned));
    if nonce.as_deref() != Some(pending.nonce.as_str()) {
        return Err(refused());
    }
    let session = random();
    let ttl = Duration::from_secs(8 * 3600);
    if let Ok(mut sessions) = state.portal.sessions.lock() {
        sessions.retain(|_, s| s.expires > Instant::now());
        sessions.insert(
            session.clone(),
            Session {
                identity: identity.clone(),
                csrf: random(),
                expires: Instant::now() + ttl,
            },
        );
    }
    info!(caller = %identity.email, "portal login");
    let mut response = Redirect::to("/").into_response();
    let headers = response.headers_mut();
    for c in [
        set_cookie(SESSION_COOKIE, &session, ttl.as_secs()),
        set_cookie(LOGIN_COOKIE, "", 0),
    ] {
        if let Ok(v) = c.parse() {
            headers.append(header::SET_COOKIE, v);
        }
    }
    Ok(response)
}

#[derive(Deserialize)]
struct LogoutForm {
    csrf: String,
}

async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    b: Browser,
    Form(f): Form<LogoutForm>,
) -> Response {
    if f.csrf != b.csrf {
        return (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response();
    }
    if let (Some(id), Ok(mut sessions)) = (
        cookie(&headers, SESSION_COOKIE),
        state.portal.sessions.lock(),
    ) {
        sessions.remove(&id);
    }
    (
        [(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0))],
        Redirect::to("/"),
    )
        .into_response()
}
