//! The home page of a logged-in browser: the tenants it may see (phase badge, CPU and memory
//! used of the quota, age; the owner for admins, who see everyone's), kept live by the portal's
//! stream, and the *New tenant* form.

use axum::response::Html;

use super::{
    badge, esc,
    form::{FormBounds, NewTenant, new_tenant_form},
    hidden, page,
};
use crate::{portal::session::Browser, tenant_view::TenantView};

/// Keeps the list live from the stream of every tenant the user may see: a row per tenant,
/// updated in place (a focused link keeps its focus), added when one appears, removed when one
/// is gone. A constant: the CSP allows it by its hash; tenant text is set as text only.
pub const LIST_SCRIPT: &str = "(()=>{const t=document.getElementById('tenants');\
const body=document.getElementById('tenant-rows');const none=document.getElementById('no-tenants');\
const owners=t.dataset.owners==='1';\
const cell=c=>{const td=document.createElement('td');td.className=c;return td;};\
const use=(v,k)=>{const b=(v.quota||[]).find(q=>q.key===k);return b?b.used+' of '+b.hard:'not yet known';};\
const make=v=>{const tr=document.createElement('tr');tr.dataset.tenant=v.name;\
const th=document.createElement('th');th.scope='row';const a=document.createElement('a');\
a.href='/tenants/'+encodeURIComponent(v.name);a.textContent=v.name;th.append(a);\
const ph=cell('phase');ph.append(document.createElement('span'));\
tr.append(th,ph,cell('cpu'),cell('memory'),cell('age'));if(owners)tr.append(cell('owner'));return tr;};\
const fill=(tr,v)=>{const b=tr.querySelector('.phase span');b.className='badge phase-'+v.phase;b.textContent=v.phase;\
tr.querySelector('.cpu').textContent=use(v,'requests.cpu');tr.querySelector('.memory').textContent=use(v,'requests.memory');\
tr.querySelector('.age').textContent=v.age;const o=tr.querySelector('.owner');if(o)o.textContent=v.owner;};\
const find=n=>[...body.rows].find(r=>r.dataset.tenant===n);\
const shown=()=>{none.hidden=body.rows.length>0;t.parentElement.hidden=body.rows.length===0;};\
const es=new EventSource('/portal/events');\
es.addEventListener('applied',e=>{const v=JSON.parse(e.data).view;let r=find(v.name);\
if(!r){r=make(v);body.append(r);}fill(r,v);shown();});\
es.addEventListener('deleted',e=>{const r=find(JSON.parse(e.data).view.name);if(r)r.remove();shown();});\
es.addEventListener('expired',e=>{es.close();document.getElementById('list-status').textContent=e.data;});})();";

/// `used of hard` of quota key `key`, as the list shows it.
fn usage(view: &TenantView, key: &str) -> String {
    view.bar(key).map_or_else(
        || "not yet known".to_owned(),
        |b| format!("{} of {}", b.used, b.hard),
    )
}

/// The table's rows; the owner column only for `owners` (admins).
pub fn rows(views: &[TenantView], owners: bool) -> String {
    views
        .iter()
        .map(|v| {
            let owner = if owners {
                format!("<td class=\"owner\">{}</td>", esc(&v.owner))
            } else {
                String::new()
            };
            format!(
                "<tr data-tenant=\"{n}\"><th scope=\"row\"><a href=\"/tenants/{n}\">{n}</a></th>\
<td class=\"phase\">{}</td><td class=\"cpu\">{}</td><td class=\"memory\">{}</td><td class=\"age\">{}</td>{owner}</tr>",
                badge(&v.phase, None),
                esc(&usage(v, "requests.cpu")),
                esc(&usage(v, "requests.memory")),
                esc(&v.age),
                n = esc(&v.name),
            )
        })
        .collect()
}

/// The home page: the `views` of the tenants the browser may see, and the form (after a
/// refused create: its `error` and what the `form` asked for).
pub fn list_page(
    views: &[TenantView],
    b: &Browser,
    bounds: &FormBounds,
    error: Option<&str>,
    form: Option<&NewTenant>,
) -> Html<String> {
    let owners = b.identity.admin;
    let (caption, owner_th) = if owners {
        (
            "Every tenant (you are an admin)",
            "<th scope=\"col\">Owner</th>",
        )
    } else {
        ("Your tenants", "")
    };
    let body = format!(
        "<h1>Tenants</h1><p id=\"no-tenants\"{}>No tenants yet: create one below.</p>\
<div class=\"scroll\" role=\"region\" aria-label=\"{caption}\" tabindex=\"0\"{}>\
<table id=\"tenants\" data-owners=\"{}\"><caption>{caption}</caption><thead><tr><th scope=\"col\">Name</th>\
<th scope=\"col\">Phase</th><th scope=\"col\">CPU used</th><th scope=\"col\">Memory used</th><th scope=\"col\">Age</th>{owner_th}</tr></thead>\
<tbody id=\"tenant-rows\">{}</tbody></table></div><p id=\"list-status\" aria-live=\"polite\"></p>{}<script>{LIST_SCRIPT}</script>",
        hidden(!views.is_empty()),
        hidden(views.is_empty()),
        if owners { "1" } else { "0" },
        rows(views, owners),
        new_tenant_form(&b.csrf, bounds, form, error),
    );
    page("Tenants", Some(b), &body)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use kubespaces_api::api::{Tenant, TenantSpec};

    use super::*;

    #[test]
    fn rows_carry_phase_usage_and_age_and_the_owner_only_for_admins() {
        let mut t = Tenant::new("t<1>", TenantSpec::new("bob@example.com", "2", "4Gi", None));
        t.status = serde_json::from_value(serde_json::json!({
            "phase": "Ready",
            "quota": {"hard": {"requests.cpu": "3", "requests.memory": "5Gi"},
                      "used": {"requests.cpu": "250m"}}
        }))
        .unwrap();
        let v = TenantView::of(&t, Timestamp::UNIX_EPOCH);
        let row = rows(std::slice::from_ref(&v), true);
        assert!(
            row.contains("<a href=\"/tenants/t&lt;1&gt;\">t&lt;1&gt;</a>"),
            "{row}"
        );
        assert!(row.contains("<span class=\"badge phase-Ready\">Ready</span>"));
        assert!(
            row.contains("<td class=\"cpu\">250m of 3</td><td class=\"memory\">0 of 5Gi</td>"),
            "{row}"
        );
        assert!(row.contains("<td class=\"owner\">bob@example.com</td>"));
        assert!(!rows(&[v], false).contains("owner"));
    }
}
