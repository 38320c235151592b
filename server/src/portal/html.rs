//! The portal's HTML: server-rendered pages, no front-end build step. The one inline script and
//! the one inline style are constants, so the Content-Security-Policy can allow exactly them by
//! hash ([`crate::headers`]). Every form carries the session's CSRF token.

use std::sync::Arc;

use axum::response::Html;
use kubespaces_api::api::Tenant;
use serde::Deserialize;

use super::session::Browser;

/// `text` as HTML text or attribute value.
pub fn esc(text: &str) -> String {
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

/// A whole page: `body` under the header bar, which names the logged-in browser and carries
/// its logout form.
pub fn page(title: &str, who: Option<&Browser>, body: &str) -> Html<String> {
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

/// The home page of a logged-in browser: the `tenants` it may see and the form of a new one
/// (after a refused create: its `error` and what the `form` asked for).
pub fn list_page(
    tenants: &[Arc<Tenant>],
    b: &Browser,
    error: Option<&str>,
    form: Option<&NewTenant>,
) -> Html<String> {
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

/// The new-tenant form, as the home page renders it and posts it.
#[derive(Deserialize)]
pub struct NewTenant {
    pub csrf: String,
    pub name: String,
    pub cpu: String,
    pub memory: String,
    #[serde(default)]
    pub storage: String,
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

/// The tenant page's content: what it is and where, following the live stream.
pub fn tenant_body(name: &str, tenant: &Tenant) -> String {
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
