//! The portal in a real headless Chromium against a real tenant (a vCluster, on the shared
//! operator), asserted from the DOM: log in on Dex's page, see the platform's bounds and a
//! refused create's message next to the field it names; create a tenant and watch its checklist
//! change live, condition by condition, until Ready (and a second tab's list follow it); the
//! quota bars equal `status.quota` read with kube; the copied `kubespaces tenant kubeconfig
//! <name> --merge` runs and the copied kubectl command reaches the tenant; the kubeconfig
//! download works; the recent Events are those recorded on the Tenant; the delete confirmation
//! refuses a wrong name and deletes with the right one, whose teardown shows live. Every page
//! of ours passes axe-core with no serious or critical violation, is reachable by keyboard
//! where it matters, and fits a 390 px screen; screenshots at 1280 and 390 px go to
//! target/acceptance/screenshots/.

use std::{collections::BTreeMap, path::PathBuf, process::Stdio, time::Duration};

use chromiumoxide::Page;
use k8s_openapi::{api::events::v1::Event, jiff::Timestamp};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams},
};
use kubespaces_acceptance::{
    Env,
    browser::{
        Chromium, assert_accessible, axe_source, eval_json, eval_string, eval_string_opt, fill,
        log_in, shots, submit_and_wait,
    },
    oidc::{Dex, Server, server_account_client},
    tenant_cluster::{assert_reaches_tenant, private_kubeconfig},
    wait_for, wait_gone,
};
use kubespaces_operator::{
    api::Tenant,
    names::{SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION},
    quantity,
};
use serde_json::{Value, json};
use tokio::process::Command;

const NAME: &str = "portal-demo";

/// Marks the document (a reload would drop the mark) and records, on every change of the
/// tenant page, its checklist (`Type=Status`, `!` on the blocking item), its phase and the
/// Events shown, each when it differs from the last recorded.
const RECORDER: &str = "window.__kept=true;\
window.__state=()=>[...document.querySelectorAll('#checklist li')].map(li=>li.dataset.type+'='+li.dataset.status+(li.classList.contains('blocking')?'!':'')).join(' ');\
window.__states=[window.__state()];window.__phases=[document.getElementById('phase').textContent];window.__reasons=[];\
new MutationObserver(()=>{const s=window.__state();if(window.__states[window.__states.length-1]!==s)window.__states.push(s);\
const p=document.getElementById('phase').textContent;if(window.__phases[window.__phases.length-1]!==p)window.__phases.push(p);\
for(const li of document.querySelectorAll('#events li'))if(!window.__reasons.includes(li.dataset.reason))window.__reasons.push(li.dataset.reason);})\
.observe(document.getElementById('tenant'),{childList:true,characterData:true,subtree:true,attributes:true});'recording'";

/// The summary conditions, which the checklist leaves out.
const SUMMARY: [&str; 5] = [
    "Ready",
    "Synced",
    "Reconciling",
    "Stalled",
    "DeletionBlocked",
];

async fn text_of(page: &Page, selector: &str) -> Option<String> {
    eval_string_opt(
        page,
        &format!("document.querySelector(\"{selector}\").textContent"),
    )
    .await
}

async fn attribute(page: &Page, selector: &str, name: &str) -> String {
    eval_string(
        page,
        &format!("String(document.querySelector(\"{selector}\").getAttribute('{name}'))"),
    )
    .await
}

/// One recorded checklist state: (type, status, marked blocking).
fn items(state: &str) -> Vec<(String, String, bool)> {
    state
        .split_whitespace()
        .map(|item| {
            let blocking = item.ends_with('!');
            let (t, s) = item.trim_end_matches('!').split_once('=').unwrap();
            (t.to_owned(), s.to_owned(), blocking)
        })
        .collect()
}

/// The condition types that went from not True (or absent) to True between recorded states.
fn turned_true(states: &[String]) -> Vec<String> {
    let mut seen_unmet = std::collections::BTreeSet::new();
    let mut turned = vec![];
    for state in states {
        for (t, s, _) in items(state) {
            if s != "True" {
                seen_unmet.insert(t);
            } else if seen_unmet.contains(&t) && !turned.contains(&t) {
                turned.push(t);
            }
        }
    }
    turned
}

/// The detail conditions of the tenant as the checklist should show them, in its order.
fn detail_conditions(t: &Tenant) -> Vec<(String, String)> {
    t.conditions()
        .iter()
        .filter(|c| !SUMMARY.contains(&c.type_.as_str()))
        .map(|c| (c.type_.clone(), c.status.clone()))
        .collect()
}

fn amount(q: &str) -> f64 {
    quantity::parse(q).map_or(f64::NAN, |n| n.0 as f64 / 1e9)
}

/// The page's quota rows against `status.quota`: None when they agree, else what differs.
fn quota_mismatch(rows: &Value, t: &Tenant) -> Option<String> {
    let Some(quota) = t.status.as_ref().and_then(|s| s.quota.as_ref()) else {
        return Some("no status.quota".into());
    };
    let Some(rows) = rows.as_array() else {
        return Some(format!("no rows: {rows}"));
    };
    let keys: Vec<&str> = rows.iter().filter_map(|r| r["key"].as_str()).collect();
    let hard_keys: Vec<&str> = quota.hard.keys().map(String::as_str).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    if sorted != hard_keys {
        return Some(format!("keys {keys:?}, status.quota.hard {hard_keys:?}"));
    }
    for row in rows {
        let key = row["key"].as_str().unwrap_or_default();
        let hard = quota.hard[key].0.as_str();
        let used = quota.used.get(key).map_or("0", |q| q.0.as_str());
        let shown = (row["used"].as_str(), row["hard"].as_str());
        if shown != (Some(used), Some(hard)) {
            return Some(format!(
                "{key}: page {shown:?}, status used {used} hard {hard}"
            ));
        }
        let figure = row["figure"].as_str().unwrap_or_default();
        if !figure.starts_with(&format!("{used} of {hard}")) {
            return Some(format!("{key}: figure {figure:?}"));
        }
        let close = |a: &Value, b: f64| a.as_f64().is_some_and(|a| (a - b).abs() <= b.abs() * 1e-9);
        if amount(hard) > 0.0
            && !(close(&row["max"], amount(hard)) && close(&row["value"], amount(used)))
        {
            return Some(format!("{key}: meter {} of {}", row["value"], row["max"]));
        }
    }
    None
}

const QUOTA_ROWS: &str = "JSON.stringify([...document.querySelectorAll('#quota-rows tr')].map(tr=>{const m=tr.querySelector('meter');\
return {key:tr.dataset.key,used:tr.dataset.used,hard:tr.dataset.hard,figure:tr.querySelector('.figure').textContent,\
value:m?m.value:null,max:m?m.max:null};}))";

/// What has the focus, as [`tab_order`] names it.
const FOCUSED: &str = "(()=>{const e=document.activeElement;if(!e||e===document.body)return 'body';\
return e.id||(e.dataset.copy?'copy-'+e.dataset.copy:'')||(e.tagName+':'+(e.textContent||'').trim());})()";

/// What each Tab press focuses, once round the page (from wherever the focus is: the list
/// ends where it began).
async fn tab_order(page: &Page) -> Vec<String> {
    let body = page.find_element("body").await.unwrap();
    let mut seen: Vec<String> = vec![];
    for _ in 0..160 {
        body.press_key("Tab").await.unwrap();
        let now = eval_string(page, FOCUSED).await;
        if now == "body" {
            continue;
        }
        if let Some(at) = seen.iter().position(|s| *s == now) {
            return seen.split_off(at);
        }
        seen.push(now);
    }
    panic!("Tab never went once round the page: {seen:?}");
}

/// Presses Tab until `target` (as [`tab_order`] names it) has the focus, then Enter.
async fn activate_by_keyboard(page: &Page, target: &str) {
    let body = page.find_element("body").await.unwrap();
    for _ in 0..80 {
        body.press_key("Tab").await.unwrap();
        if eval_string(page, FOCUSED).await == target {
            body.press_key("Enter").await.unwrap();
            return;
        }
    }
    panic!("{target} is not reachable by Tab");
}

fn cli_binary() -> PathBuf {
    let path = std::env::var("KUBESPACES_CLI").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/kubespaces"),
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "{} not found: cargo test --workspace --no-run builds the CLI",
        path.display()
    );
    path
}

/// After a form's post: the page it answered with (a new document, without the recorder's mark),
/// recording in its turn.
async fn answered_and_recording(page: &Page, what: &str) {
    wait_for(what, Duration::from_secs(20), || async {
        let new = eval_string_opt(
            page,
            "String(!window.__kept&&document.getElementById('phase')!==null)",
        )
        .await?;
        (new == "true" && eval_string_opt(page, RECORDER).await? == "recording").then_some(())
    })
    .await;
}

/// The time in `annotation` of the tenant as kube reads it, once it is `since` or later.
async fn requested_since(tenants: &Api<Tenant>, annotation: &str, since: Timestamp) -> Timestamp {
    wait_for(
        &format!("{annotation} on {NAME}"),
        Duration::from_secs(10),
        || async {
            let t = tenants.get(NAME).await.ok()?;
            let at: Timestamp = t.annotations().get(annotation)?.parse().ok()?;
            (at >= since).then_some(at)
        },
    )
    .await
}

/// Sleep, then wake, from the Ready tenant's page: each button (the one the page offers) posts
/// its form, the request's annotation is on the Tenant (read with kube), and the page it
/// answers with follows the tenant live: its badge Asleep with *Wake* offered, then Waking, then
/// Ready with *Sleep* offered again.
async fn sleep_and_wake_in_the_page(page: &Page, tenants: &Api<Tenant>, axe: &str) {
    let offered = |form: &'static str| async move {
        attribute(page, &format!("#{form}-form"), "hidden").await == "null"
    };
    assert!(offered("sleep").await, "a Ready tenant is offered Sleep");
    assert!(!offered("wake").await, "and not Wake");

    let before = Timestamp::now();
    submit_and_wait(page, "#sleep-form button[type=submit]").await;
    requested_since(tenants, SLEEP_REQUESTED_ANNOTATION, before).await;
    answered_and_recording(page, "the tenant's page after Sleep").await;
    wait_for(
        "the page to show the tenant Asleep, with Wake offered",
        Duration::from_secs(300),
        || async {
            (text_of(page, "#phase").await? == "Asleep" && offered("wake").await).then_some(())
        },
    )
    .await;
    assert_eq!(
        attribute(page, "#phase", "class").await,
        "badge phase-Asleep"
    );
    assert!(!offered("sleep").await);
    // Beside it, the operator's word: the Asleep condition's message, as kube reads it.
    wait_for(
        "the page to say why the tenant sleeps",
        Duration::from_secs(30),
        || async {
            let t = tenants.get(NAME).await.ok()?;
            let message = t.condition("Asleep")?.message.clone();
            let said = text_of(page, "#sleep-message").await?;
            let shown = attribute(page, "#sleep-message", "hidden").await == "null";
            (t.phase() == Some("Asleep") && !message.is_empty() && said == message && shown)
                .then_some(())
        },
    )
    .await;
    assert_accessible(page, axe, "a sleeping tenant's page").await;
    shots(page, "05b-tenant-asleep").await;

    let before = Timestamp::now();
    submit_and_wait(page, "#wake-form button[type=submit]").await;
    requested_since(tenants, WAKE_REQUESTED_ANNOTATION, before).await;
    answered_and_recording(page, "the tenant's page after Wake").await;
    wait_for(
        "the page to show the tenant Ready again, with Sleep offered",
        Duration::from_secs(300),
        || async {
            (text_of(page, "#phase").await? == "Ready" && offered("sleep").await).then_some(())
        },
    )
    .await;
    let phases: Vec<String> =
        serde_json::from_value(eval_json(page, "JSON.stringify(window.__phases)").await).unwrap();
    assert!(
        phases.iter().any(|p| p == "Waking"),
        "Waking shown on the way, without a reload: {phases:?}"
    );
    assert_eq!(
        eval_string(page, "String(window.__kept)").await,
        "true",
        "no reload"
    );
    assert!(tenants.get(NAME).await.unwrap().is_ready());
}

#[tokio::test]
async fn a_team_sees_its_tenant_come_alive_uses_it_and_deletes_it_in_chromium() {
    let env = Env::get();
    let dex = Dex::get();
    let server = Server::start_with(
        &dex.issuer,
        &dex.client_id,
        server_account_client().await,
        Duration::from_secs(30),
        |c| {
            c.limits.max_tenant_cpu = Some("8".parse().unwrap());
            c.limits.max_tenant_memory = Some("16Gi".parse().unwrap());
        },
    )
    .await;
    let tenants = env.tenants().await;
    let _ = tenants.delete(NAME, &DeleteParams::default()).await;
    wait_gone(&tenants, NAME, Duration::from_secs(600)).await;
    let axe = axe_source();
    let chromium = Chromium::launch().await;

    // The welcome page, then Dex's login page through /login (code flow with PKCE).
    let page = chromium.browser.new_page(server.url.clone()).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    assert_eq!(text_of(&page, "a.button").await.as_deref(), Some("Log in"));
    assert_accessible(&page, &axe, "the welcome page").await;
    shots(&page, "01-welcome").await;
    log_in(&page, &dex.issuer, "alice@example.com").await;
    let cookie_js = eval_string(&page, "document.cookie").await;
    assert!(!cookie_js.contains("ks_session"), "HttpOnly: {cookie_js:?}");

    // The list and the form: the platform's bounds before submit, each hint under its input,
    // the button apart from the last field.
    let bounds = text_of(&page, "#bounds").await.unwrap();
    assert!(
        bounds.starts_with("One tenant may have at most 8 CPU, 16Gi memory"),
        "{bounds}"
    );
    assert!(
        text_of(&page, "#cpu-hint")
            .await
            .unwrap()
            .contains("At most 8 on this platform")
    );
    let layout = eval_json(
        &page,
        "(()=>{const r=id=>document.getElementById(id).getBoundingClientRect();\
         const b=document.querySelector(\"form[action='/tenants'] button\").getBoundingClientRect();\
         return JSON.stringify({input:r('name').bottom,hint:r('name-hint').top,last:r('storage-hint').bottom,button:b.top});})()",
    )
    .await;
    assert!(
        layout["hint"].as_f64() >= layout["input"].as_f64(),
        "the hint is under its input: {layout}"
    );
    assert!(
        layout["button"].as_f64().unwrap() >= layout["last"].as_f64().unwrap() + 12.0,
        "the button stands apart from the last field: {layout}"
    );
    assert_accessible(&page, &axe, "the tenant list").await;
    shots(&page, "02-list").await;

    // Refused creates: the message next to the field it names (the CRD's, then the server's
    // bound), the field marked invalid and described by it.
    for (cpu, said) in [
        ("lots", "must be a Kubernetes quantity"),
        ("100", "the most is 8"),
    ] {
        fill(&page, "#name", NAME).await;
        fill(&page, "#cpu", cpu).await;
        fill(&page, "#memory", "1Gi").await;
        submit_and_wait(&page, "form[action='/tenants'] button").await;
        // The page before stays until the answer replaces it: wait for this refusal's words.
        wait_for(
            &format!("{said:?} next to the cpu field"),
            Duration::from_secs(20),
            || async {
                text_of(&page, "#cpu-error")
                    .await?
                    .contains(said)
                    .then_some(())
            },
        )
        .await;
        assert_eq!(attribute(&page, "#cpu", "aria-invalid").await, "true");
        assert_eq!(
            attribute(&page, "#cpu", "aria-describedby").await,
            "cpu-hint cpu-error"
        );
        assert_eq!(attribute(&page, "#memory", "aria-invalid").await, "null");
    }
    assert_accessible(&page, &axe, "a refused form").await;
    shots(&page, "03-refused-form").await;

    // A second tab on the list: the new tenant must appear there and turn Ready live.
    let list = chromium.browser.new_page(server.url.clone()).await.unwrap();
    list.wait_for_navigation().await.unwrap();
    list.evaluate("window.__kept=true").await.unwrap();
    // Keys go to the tab in front: the first one again.
    page.bring_to_front().await.unwrap();

    // Create it for real; its page follows it live.
    fill(&page, "#cpu", "1").await;
    submit_and_wait(&page, "form[action='/tenants'] button").await;
    wait_for("the tenant's page", Duration::from_secs(20), || async {
        let url = eval_string_opt(&page, "location.href").await?;
        let recording = eval_string_opt(&page, RECORDER).await?;
        (url.ends_with(&format!("/tenants/{NAME}")) && recording == "recording").then_some(())
    })
    .await;
    assert_accessible(&page, &axe, "a tenant's page, provisioning").await;
    shots(&page, "04-tenant-provisioning").await;
    wait_for(
        "the phase to reach Ready on the page",
        Duration::from_secs(600),
        || async { (text_of(&page, "#phase").await? == "Ready").then_some(()) },
    )
    .await;
    assert_eq!(
        eval_string(&page, "String(window.__kept)").await,
        "true",
        "no reload"
    );
    let states: Vec<String> =
        serde_json::from_value(eval_json(&page, "JSON.stringify(window.__states)").await).unwrap();
    let phases: Vec<String> =
        serde_json::from_value(eval_json(&page, "JSON.stringify(window.__phases)").await).unwrap();
    println!(
        "checklist states shown without a reload:\n  {}",
        states.join("\n  ")
    );
    println!("phases: {phases:?}");
    let turned = turned_true(&states);
    assert!(
        turned.len() >= 2,
        "the checklist changed live through at least two conditions before Ready: {turned:?} in {states:#?}"
    );
    assert_ne!(
        phases.first().map(String::as_str),
        Some("Ready"),
        "{phases:?}"
    );
    // In every state shown, the one item marked blocking is the first one not done.
    for state in &states {
        let items = items(state);
        let first_unmet = items
            .iter()
            .position(|(t, s, _)| s != "True" && t != "ConnectionSecretReady");
        let marked: Vec<usize> = (0..items.len()).filter(|i| items[*i].2).collect();
        assert_eq!(
            marked,
            first_unmet.into_iter().collect::<Vec<_>>(),
            "{state}"
        );
    }

    // At Ready: the checklist is the status's detail conditions, in its order, all done; the
    // bars are status.quota; the footprint is the control plane's.
    // The page may be a write behind kube's read: compare until they agree, for at most a
    // minute, then say what still differs.
    let give_up = tokio::time::Instant::now() + Duration::from_secs(60);
    let (tenant, rows) = wait_for(
        "the page to show the tenant's status as kube reads it",
        Duration::from_secs(90),
        || async {
            let t = tenants.get(NAME).await.ok()?;
            let shown = eval_string(&page, "window.__state()").await;
            let checks: Vec<(String, String)> =
                items(&shown).into_iter().map(|(t, s, _)| (t, s)).collect();
            let rows = eval_json(&page, QUOTA_ROWS).await;
            let differs = match quota_mismatch(&rows, &t) {
                _ if checks != detail_conditions(&t) => Some(format!(
                    "checklist {checks:?}, status {:?}",
                    detail_conditions(&t)
                )),
                Some(bars) => Some(format!("bars: {bars}")),
                None => None,
            };
            match differs {
                None => Some(Ok((t, rows))),
                Some(d) if tokio::time::Instant::now() > give_up => Some(Err(d)),
                Some(_) => None,
            }
        },
    )
    .await
    .unwrap_or_else(|differs| panic!("the page does not show the tenant's status: {differs}"));
    assert!(detail_conditions(&tenant).iter().all(|(_, s)| s == "True"));
    let keys: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    for key in [
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "pods",
        "services",
        "configmaps",
    ] {
        assert!(keys.contains(&key), "a bar for {key}: {keys:?}");
    }
    println!("bars equal to status.quota: {rows}");
    let status = tenant.status.clone().unwrap();
    let footprint: BTreeMap<String, String> = serde_json::from_value(
        eval_json(
            &page,
            "JSON.stringify(Object.fromEntries([...document.querySelectorAll('#footprint dd')].map(d=>[d.dataset.key,d.textContent])))",
        )
        .await,
    )
    .unwrap();
    let expected: BTreeMap<String, String> = status
        .control_plane
        .as_ref()
        .map(|c| {
            c.footprint
                .iter()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect()
        })
        .unwrap_or_default();
    assert!(!expected.is_empty(), "a vCluster has a footprint");
    assert_eq!(footprint, expected);
    let api = status
        .endpoints
        .as_ref()
        .and_then(|e| e.api.clone())
        .unwrap();
    assert_eq!(text_of(&page, "#api").await.unwrap(), api);
    assert_accessible(&page, &axe, "a tenant's page, Ready").await;
    shots(&page, "05-tenant-ready").await;
    // Before anything of the test's connects to the tenant's API (a later connection would undo
    // the sleep request): sleep and wake from the page; everything below runs on the woken tenant.
    sleep_and_wake_in_the_page(&page, &tenants, &axe).await;

    // The list in the other tab followed: the row came and turned Ready without a reload, with
    // the CPU used of the quota.
    wait_for(
        "the list's row to show Ready",
        Duration::from_secs(60),
        || async {
            let t = tenants.get(NAME).await.ok()?;
            let q = t.status?.quota?;
            let cpu = format!(
                "{} of {}",
                q.used.get("requests.cpu").map_or("0", |q| q.0.as_str()),
                q.hard["requests.cpu"].0
            );
            let row = format!("#tenant-rows tr[data-tenant='{NAME}']");
            let phase = text_of(&list, &format!("{row} .phase span")).await?;
            (phase == "Ready" && text_of(&list, &format!("{row} .cpu")).await? == cpu).then_some(())
        },
    )
    .await;
    assert_eq!(
        eval_string(&list, "String(window.__kept)").await,
        "true",
        "no reload"
    );
    // Alice sees only her own tenants: no owner column.
    assert_eq!(
        eval_string(
            &list,
            "String(document.querySelector('#tenant-rows .owner'))"
        )
        .await,
        "null"
    );
    list.close().await.ok();

    // An admin sees everyone's, with each one's owner; in a browser of their own (one session
    // cookie per browser).
    let admins = Chromium::launch().await;
    let admin = admins.browser.new_page(server.url.clone()).await.unwrap();
    admin.wait_for_navigation().await.unwrap();
    log_in(&admin, &dex.issuer, "admin@example.com").await;
    let row = format!("#tenant-rows tr[data-tenant='{NAME}']");
    assert_eq!(
        text_of(&admin, &format!("{row} .owner")).await.as_deref(),
        Some("alice@example.com"),
        "the admin's list names the owner"
    );
    assert_eq!(
        text_of(&admin, "#tenants thead th:last-child")
            .await
            .as_deref(),
        Some("Owner")
    );
    assert_accessible(&admin, &axe, "an admin's tenant list").await;
    admins.close().await;

    // The Events shown are those the operator recorded on this Tenant.
    let events: Api<Event> = Api::namespaced(env.client().await, "default");
    let uid = tenant.uid().unwrap();
    let recorded = || async {
        let mut reasons: Vec<String> = events
            .list(&ListParams::default().fields(&format!("regarding.uid={uid}")))
            .await
            .ok()?
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect();
        reasons.sort();
        Some(reasons)
    };
    wait_for("the page's Events to be the Tenant's", Duration::from_secs(30), || async {
        let mut shown: Vec<String> = serde_json::from_value(
            eval_json(&page, "JSON.stringify([...document.querySelectorAll('#events li')].map(li=>li.dataset.reason))").await,
        )
        .ok()?;
        shown.sort();
        shown.dedup();
        let mut kube = recorded().await?;
        kube.dedup();
        (shown == kube).then_some(())
    })
    .await;

    // Keyboard: every control is reached by Tab; the copy buttons work from the keyboard.
    page.evaluate(
        "window.__copied=[];Object.defineProperty(navigator,'clipboard',{configurable:true,\
         value:{writeText:t=>{window.__copied.push(t);return Promise.resolve();}}});'hooked'",
    )
    .await
    .unwrap();
    let order = tab_order(&page).await;
    println!("tab order: {order:?}");
    for control in [
        "copy-api",
        "copy-cmd-merge",
        "copy-cmd-kubectl",
        "kubeconfig",
        "confirm",
    ] {
        assert!(
            order.iter().any(|o| o == control),
            "{control} reachable by Tab: {order:?}"
        );
    }
    assert!(
        order.iter().any(|o| o == "BUTTON:Delete tenant"),
        "{order:?}"
    );
    activate_by_keyboard(&page, "copy-cmd-merge").await;
    activate_by_keyboard(&page, "copy-cmd-kubectl").await;
    let copied: Vec<String> = wait_for("the copies", Duration::from_secs(10), || async {
        let c: Vec<String> =
            serde_json::from_value(eval_json(&page, "JSON.stringify(window.__copied)").await)
                .ok()?;
        (c.len() == 2).then_some(c)
    })
    .await;
    assert_eq!(
        copied,
        [
            format!("kubespaces tenant kubeconfig {NAME} --merge"),
            format!("kubectl --context {NAME} get ns")
        ]
    );
    assert_eq!(
        text_of(&page, "#copy-status").await.unwrap(),
        format!("Copied: {}", copied[1])
    );

    // The copied commands, run: the CLI (logged in as alice to this server) merges the
    // kubeconfig, and the kubectl command reaches the tenant through the merged context.
    let home = std::env::temp_dir().join(format!("kubespaces-portal-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("config")).unwrap();
    std::fs::create_dir_all(home.join("kube")).unwrap();
    let tokens = dex
        .token_response("alice@example.com", &dex.client_id)
        .await;
    let credentials = json!({
        "server": server.url, "issuer": dex.issuer, "clientId": dex.client_id,
        "idToken": tokens["id_token"], "refreshToken": tokens["refresh_token"],
    });
    std::fs::write(
        home.join("config/credentials.json"),
        credentials.to_string(),
    )
    .unwrap();
    let words: Vec<&str> = copied[0].split_whitespace().collect();
    assert_eq!(words[0], "kubespaces");
    // Async: the server under test answers from this test's own runtime.
    let merged = Command::new(cli_binary())
        .args(&words[1..])
        .env("KUBESPACES_CONFIG_DIR", home.join("config"))
        .env("KUBECONFIG", home.join("kube/config"))
        .env_remove("KUBESPACES_SERVER")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        merged.status.success(),
        "{}: {}",
        copied[0],
        String::from_utf8_lossy(&merged.stderr)
    );
    let words: Vec<&str> = copied[1].split_whitespace().collect();
    assert_eq!(words[0], "kubectl");
    let namespaces = wait_for(
        "the copied kubectl command to reach the tenant",
        Duration::from_secs(60),
        || async {
            let out = Command::new(&env.kubectl)
                .args(&words[1..])
                .env("KUBECONFIG", home.join("kube/config"))
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output()
                .await
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        },
    )
    .await;
    assert!(
        namespaces.lines().any(|l| l.starts_with("default ")),
        "{namespaces}"
    );
    let _ = std::fs::remove_dir_all(&home);

    // The kubeconfig download: an attachment, fetched with the page's own session, that works.
    let download = eval_json(
        &page,
        "fetch(document.getElementById('kubeconfig').href).then(async r=>JSON.stringify(\
         {status:r.status,disposition:r.headers.get('content-disposition')||'',body:await r.text()}))",
    )
    .await;
    assert_eq!(download["status"], 200, "{download}");
    assert_eq!(
        download["disposition"],
        format!("attachment; filename=\"{NAME}.kubeconfig\"")
    );
    let kubeconfig = private_kubeconfig(
        &format!("{NAME}.kubeconfig"),
        download["body"].as_str().expect("the kubeconfig's text"),
    );
    assert_reaches_tenant(&env, &kubeconfig).await;

    // Delete: a wrong name is refused next to the field and deletes nothing.
    fill(&page, "#confirm", "portal-dem").await;
    submit_and_wait(&page, "#delete button[type=submit]").await;
    let refusal = wait_for(
        "the confirmation's error",
        Duration::from_secs(20),
        || async { text_of(&page, "#confirm-error").await },
    )
    .await;
    assert!(
        refusal.contains("is not this tenant's name: type portal-demo"),
        "{refusal}"
    );
    assert_eq!(attribute(&page, "#confirm", "aria-invalid").await, "true");
    assert_eq!(
        attribute(&page, "#confirm", "aria-describedby").await,
        "confirm-hint confirm-error"
    );
    let still = tenants.get(NAME).await.unwrap();
    assert!(
        still.metadata.deletion_timestamp.is_none(),
        "a wrong name deletes nothing"
    );
    assert_accessible(&page, &axe, "a refused deletion").await;
    shots(&page, "06-delete-refused").await;

    // The right name deletes it; the page shows the teardown live, then the end.
    fill(&page, "#confirm", NAME).await;
    submit_and_wait(&page, "#delete button[type=submit]").await;
    wait_for("the deletion", Duration::from_secs(20), || async {
        let t = tenants.get_opt(NAME).await.ok()?;
        t.is_none_or(|t| t.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await;
    // The page the deletion answers with (the one before had the refusal).
    wait_for(
        "the tenant's page after the deletion",
        Duration::from_secs(20),
        || async {
            let answered = eval_string_opt(
                &page,
                "String(document.getElementById('confirm-error')===null&&!window.__kept)",
            )
            .await?;
            (answered == "true" && eval_string_opt(&page, RECORDER).await? == "recording")
                .then_some(())
        },
    )
    .await;
    let phase = wait_for(
        "the teardown on the page",
        Duration::from_secs(30),
        || async {
            let phase = text_of(&page, "#phase").await?;
            let shown = attribute(&page, "#teardown", "hidden").await == "null";
            (matches!(phase.as_str(), "Deleting" | "Deleted") && shown).then_some(phase)
        },
    )
    .await;
    println!("phase after the deletion: {phase}");
    assert_eq!(
        attribute(&page, "#delete", "hidden").await,
        "",
        "no second deletion offered"
    );
    println!(
        "teardown: {}: {}",
        text_of(&page, "#teardown-reason").await.unwrap(),
        text_of(&page, "#teardown-message").await.unwrap()
    );
    shots(&page, "07-deleting").await;
    wait_for(
        "the page to show the tenant gone",
        Duration::from_secs(600),
        || async { (text_of(&page, "#phase").await? == "Deleted").then_some(()) },
    )
    .await;
    let phases = eval_string(&page, "JSON.stringify(window.__phases)").await;
    let reasons = eval_string(&page, "JSON.stringify(window.__reasons)").await;
    println!("after the deletion, without a reload: phases {phases}, events {reasons}");
    assert_eq!(
        eval_string(&page, "String(window.__kept)").await,
        "true",
        "no reload"
    );
    assert!(
        reasons.contains("\"Deleting\""),
        "the Deleting Event was shown: {reasons}"
    );
    shots(&page, "08-deleted").await;

    chromium.close().await;
    wait_gone(&tenants, NAME, Duration::from_secs(600)).await;
}
