//! A tenant's page: its phase as a badge, its progress as a live checklist, how to use it (URLs
//! and commands with copy buttons, the kubeconfig download), its sleep (*Sleep* or *Wake*), its
//! quota, its control plane, its recent Events, and its deletion (typed confirmation, then the
//! teardown, live). One script follows the live stream and copies the server's view of the
//! tenant into the page.

use super::{
    badge, checklist::progress, esc, events::events, form::described, hidden, quota,
    sleep::sleep_section,
};
use crate::{tenant_events::RecentEvent, tenant_view::TenantView};

/// Follows the tenant's live stream and copies each view into the page (text only: conditions,
/// messages and Events are tenant-influenced; only what differs from the page, so an update
/// costs the browser what changed, and a selection or a screen reader's place elsewhere stays),
/// refetches the Events when the tenant changes
/// (not for the stream's first event, the version the page was rendered from),
/// and runs the copy buttons. A constant: the CSP allows it by its hash; the tenant's name
/// reaches it through the HTML-escaped `data-tenant` attribute.
pub const TENANT_SCRIPT: &str = "(()=>{const $=id=>document.getElementById(id);const name=$('tenant').dataset.tenant;\
const mk=(tag,cls,text)=>{const e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=text;return e;};\
const hide=(id,yes)=>{const e=$(id);if(e.hidden!==yes)e.hidden=yes;};\
const text=(id,s)=>{const e=$(id);if(e.textContent!==s)e.textContent=s;};\
const last={};const fresh=(k,x)=>{const s=JSON.stringify(x);if(last[k]===s)return false;last[k]=s;return true;};\
const word=s=>s.charAt(0).toUpperCase()+s.slice(1);\
const show=(v,waiting)=>{text('phase',v.phase);const p=$('phase');const c='badge phase-'+v.phase;if(p.className!==c)p.className=c;\
text('waiting',waiting?('Waiting for '+waiting):'');\
if(fresh('checks',v.checks)){$('checklist').replaceChildren(...v.checks.map(c=>{const li=mk('li',c.state);li.dataset.type=c.type;li.dataset.status=c.status;\
if(c.state==='blocking')li.setAttribute('aria-current','step');\
li.append(mk('span','state',word(c.state)),mk('strong','label',c.label),mk('span','reason',c.reason),mk('span','message',c.message));return li;}));}\
hide('checklist-empty',v.checks.length>0);hide('teardown',!v.teardown);hide('delete',!!v.teardown);\
hide('sleep',!!v.teardown);hide('sleep-form',v.sleepAction!=='sleep');hide('wake-form',v.sleepAction!=='wake');\
text('sleep-message',v.sleepMessage);hide('sleep-message',!v.sleepMessage);\
if(v.teardown){text('teardown-reason',v.teardown.reason);text('teardown-message',v.teardown.message);}\
for(const k of ['api','apps']){text(k,v[k]);hide(k+'-row',!v[k]);}hide('endpoints-pending',!!v.api);\
if(fresh('quota',v.quota)){$('quota-rows').replaceChildren(...v.quota.map(b=>{const tr=mk('tr');tr.dataset.key=b.key;tr.dataset.used=b.used;tr.dataset.hard=b.hard;\
const th=mk('th',null,b.label);th.scope='row';const td=mk('td');\
if(b.hardValue>0){const m=mk('meter');m.min=0;m.max=b.hardValue;m.value=b.usedValue;m.setAttribute('aria-label',b.label+' used');td.append(m);}\
td.append(mk('span','figure',b.used+' of '+b.hard+(b.hardValue>0?'':' (none allowed)')));tr.append(th,td);return tr;}));}\
hide('quota-empty',v.quota.length>0);hide('quota-region',v.quota.length===0);\
if(fresh('footprint',v.footprint)){$('footprint').replaceChildren(...v.footprint.flatMap(s=>{const dd=mk('dd',null,s.amount);dd.dataset.key=s.key;return [mk('dt',null,s.label),dd];}));}\
text('chart-version',v.chartVersion||'not known yet');text('kubernetes-version',v.kubernetesVersion||'not known yet');};\
let queued=false;\
const events=()=>{if(queued)return;queued=true;setTimeout(()=>{queued=false;\
fetch('/tenants/'+encodeURIComponent(name)+'/events',{headers:{accept:'application/json'}}).then(r=>r.ok?r.json():Promise.reject(r.status)).then(list=>{\
$('events').replaceChildren(...list.map(e=>{const li=mk('li');li.dataset.reason=e.reason;const t=mk('time',null,e.when);t.dateTime=e.time;\
li.append(t,mk('span','event-type',e.type),' ',mk('strong',null,e.reason),' ',mk('span','note',e.note));if(e.count>1)li.append(' (×'+e.count+')');return li;}));\
hide('events-empty',list.length>0);hide('events-error',true);}).catch(()=>{});},1000);};\
const es=new EventSource('/portal/events?name='+encodeURIComponent(name));\
es.addEventListener('applied',e=>{const d=JSON.parse(e.data);const t=$('tenant');const changed=t.dataset.version!==d.view.version;\
show(d.view,d.waiting);t.dataset.version=d.view.version;if(changed)events();});\
es.addEventListener('deleted',()=>{const p=$('phase');p.textContent='Deleted';p.className='badge phase-Deleted';\
$('waiting').textContent='';hide('teardown',false);hide('delete',true);hide('sleep',true);$('teardown-reason').textContent='Gone';\
$('teardown-message').textContent='the tenant and everything in it are deleted';});\
es.addEventListener('expired',e=>{es.close();$('waiting').textContent=e.data;});\
document.querySelectorAll('button[data-copy]').forEach(b=>b.addEventListener('click',()=>{const text=$(b.dataset.copy).textContent;\
const said=ok=>{$('copy-status').textContent=ok?('Copied: '+text):'Could not copy: select the text and copy it';};\
if(navigator.clipboard)navigator.clipboard.writeText(text).then(()=>said(true),()=>said(false));else said(false);}));})();";

/// The commands a user copies: merge the kubeconfig with the CLI (its context is named after
/// the tenant: `cli/src/kubeconfig.rs`), then use that context.
pub fn commands(name: &str) -> (String, String) {
    (
        format!("kubespaces tenant kubeconfig {name} --merge"),
        format!("kubectl --context {name} get ns"),
    )
}

/// A line to copy: `text` in a `<code id>` and its copy button.
fn copyable(id: &str, what: &str, text: &str, row: Option<&str>) -> String {
    let (open, label) = match row {
        Some(label) => (
            format!(
                "<div class=\"cmd\" id=\"{id}-row\"{}>",
                hidden(text.is_empty())
            ),
            format!("<span>{label}</span>"),
        ),
        None => ("<div class=\"cmd\">".to_owned(), String::new()),
    };
    format!(
        "{open}{label}<code id=\"{id}\">{}</code><button type=\"button\" class=\"copy\" data-copy=\"{id}\" aria-label=\"Copy {what}\">Copy</button></div>",
        esc(text)
    )
}

/// The deletion form: type the tenant's name, then *Delete tenant* (POST, with the CSRF token);
/// `error` after a wrong name. Hidden while the tenant is being deleted.
fn delete_form(name: &str, csrf: &str, deleting: bool, error: Option<&str>) -> String {
    let n = esc(name);
    let (describedby, invalid, error) = described("confirm", error, true);
    format!(
        "<section id=\"delete\" aria-labelledby=\"delete-h\"{}><h2 id=\"delete-h\">Delete this tenant</h2>\
<p>Deleting removes the tenant's namespace, its control plane and everything in them. It cannot be undone.</p>\
<form method=\"post\" action=\"/tenants/{n}/delete\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<div class=\"field\"><label for=\"confirm\">Tenant name</label><input id=\"confirm\" name=\"confirm\" autocomplete=\"off\" aria-describedby=\"{describedby}\"{invalid}>\
<span class=\"hint\" id=\"confirm-hint\">Type <strong>{n}</strong> to confirm.</span>{error}</div>\
<div class=\"actions\"><button type=\"submit\" class=\"danger\">Delete tenant</button></div></form></section>",
        hidden(deleting),
        esc(csrf),
    )
}

/// The tenant page's content. `events` are the recent Events (or why they could not be
/// read); `login` the CLI's login command for this server; `delete_error` after a refused
/// confirmation.
pub fn tenant_body(
    view: &TenantView,
    waiting: &str,
    events_list: &Result<Vec<RecentEvent>, String>,
    csrf: &str,
    login: &str,
    delete_error: Option<&str>,
) -> String {
    let n = esc(&view.name);
    let (merge, kubectl) = commands(&view.name);
    let waiting = if waiting.is_empty() {
        String::new()
    } else {
        format!("Waiting for {waiting}")
    };
    format!(
        "<div id=\"tenant\" data-tenant=\"{n}\" data-version=\"{}\"><h1>{n} {}</h1><p class=\"muted\">Owner {}{}</p>\
{}\
<section aria-labelledby=\"use-h\"><h2 id=\"use-h\">Use it</h2>\
<p id=\"endpoints-pending\"{}>Its URLs appear here once its control plane is exposed.</p>{}{}\
<p>Merge its kubeconfig into yours with the CLI (once logged in: <code>{}</code>), then use its context:</p>{}{}\
<p><a class=\"button\" id=\"kubeconfig\" href=\"/tenants/{n}/kubeconfig\" download=\"{n}.kubeconfig\">Download kubeconfig</a></p>\
<p id=\"copy-status\" class=\"muted\" role=\"status\"></p></section>\
{}{}{}{}{}<p><a href=\"/\">All tenants</a></p><script>{TENANT_SCRIPT}</script></div>",
        esc(&view.version),
        badge(&view.phase, Some("phase")),
        esc(&view.owner),
        if view.age.is_empty() {
            String::new()
        } else {
            format!(", created {} ago", esc(&view.age))
        },
        progress(&waiting, &view.checks, view.teardown.as_ref()),
        hidden(!view.api.is_empty()),
        copyable("api", "the API URL", &view.api, Some("API")),
        copyable("apps", "the apps URL", &view.apps, Some("Apps")),
        esc(login),
        copyable("cmd-merge", "the kubeconfig command", &merge, None),
        copyable("cmd-kubectl", "the kubectl command", &kubectl, None),
        sleep_section(view, csrf),
        quota::quota(view),
        quota::control_plane(view),
        events(events_list),
        delete_form(&view.name, csrf, view.teardown.is_some(), delete_error),
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use kubespaces_api::api::{Tenant, TenantSpec};

    use super::*;

    fn view(name: &str) -> TenantView {
        TenantView::of(
            &Tenant::new(name, TenantSpec::new("alice@example.com", "1", "1Gi", None)),
            Timestamp::UNIX_EPOCH,
        )
    }

    #[test]
    fn the_page_offers_the_exact_commands_and_the_typed_deletion() {
        let html = tenant_body(
            &view("team-atlas"),
            "",
            &Ok(vec![]),
            "tok",
            "kubespaces login --server https://k.example.com",
            None,
        );
        assert!(html.contains("<code id=\"cmd-merge\">kubespaces tenant kubeconfig team-atlas --merge</code><button type=\"button\" class=\"copy\" data-copy=\"cmd-merge\""), "{html}");
        assert!(
            html.contains("<code id=\"cmd-kubectl\">kubectl --context team-atlas get ns</code>")
        );
        assert!(
            html.contains("<div class=\"cmd\" id=\"api-row\" hidden>"),
            "no URL yet: no row"
        );
        assert!(html.contains("<form method=\"post\" action=\"/tenants/team-atlas/delete\"><input type=\"hidden\" name=\"csrf\" value=\"tok\">"));
        assert!(
            html.contains("<section id=\"delete\" aria-labelledby=\"delete-h\"><h2"),
            "shown: not being deleted"
        );
        assert!(html.contains("<span class=\"badge phase-Pending\" id=\"phase\">Pending</span>"));
        let refused = tenant_body(
            &view("team-atlas"),
            "",
            &Ok(vec![]),
            "tok",
            "",
            Some("type team-atlas"),
        );
        assert!(
            refused
                .contains("aria-describedby=\"confirm-hint confirm-error\" aria-invalid=\"true\""),
            "{refused}"
        );
    }

    #[test]
    fn every_element_the_script_names_is_on_the_page() {
        let html = tenant_body(&view("team-atlas"), "", &Ok(vec![]), "tok", "", None);
        let named: Vec<&str> = ["$('", "hide('", "text('"]
            .iter()
            .flat_map(|call| TENANT_SCRIPT.split(call).skip(1))
            .filter_map(|rest| rest.split_once('\'').map(|(id, _)| id))
            .collect();
        for id in [
            "sleep",
            "sleep-form",
            "wake-form",
            "sleep-message",
            "delete",
        ] {
            assert!(named.contains(&id), "the script follows #{id}");
        }
        for id in named {
            assert!(
                html.contains(&format!(" id=\"{id}\"")),
                "#{id} is not on the page"
            );
        }
    }

    #[test]
    fn the_name_reaches_the_script_only_as_escaped_data() {
        let html = tenant_body(&view("x\"><script>"), "", &Ok(vec![]), "tok", "", None);
        assert!(html.contains("data-tenant=\"x&quot;&gt;&lt;script&gt;\""));
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the page's own script"
        );
    }
}
