//! The portal in a real headless Chromium (the system's Debian package, over the DevTools
//! protocol): log in on Dex's page (authorization code + PKCE), see a bad quantity refused with
//! the CRD's message, create a tenant, watch its phase reach Ready without a reload, download
//! the kubeconfig, and see a deletion made elsewhere appear on the open page. (The shared
//! operator often has the tenant Ready before its page has loaded, so the deletion is the
//! transition this test can always watch live.) A screenshot of each step goes to
//! target/acceptance/screenshots/.

use std::{path::PathBuf, time::Duration};

use chromiumoxide::{
    Browser, BrowserConfig, Page, cdp::browser_protocol::page::CaptureScreenshotFormat,
    page::ScreenshotParams,
};
use futures::StreamExt;
use kube::api::DeleteParams;
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, PASSWORD, Server},
    tenant_cluster::{assert_reaches_tenant, private_kubeconfig},
    wait_for, wait_gone,
};

fn chromium() -> String {
    let path = std::env::var("KUBESPACES_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} not found: the portal's test needs Chromium (Debian: apt-get install chromium; or \
         set KUBESPACES_CHROMIUM)"
    );
    path
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/acceptance/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(page: &Page, name: &str) {
    let png = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .full_page(true)
                .build(),
        )
        .await
        .expect("screenshot");
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
}

async fn eval_string(page: &Page, js: &str) -> String {
    page.evaluate(js)
        .await
        .unwrap_or_else(|e| panic!("{js}: {e}"))
        .into_value::<String>()
        .unwrap_or_default()
}

/// Types `text` into the field, once the page that has it has settled (redirect chains replace
/// the document under a lookup).
async fn fill(page: &Page, selector: &str, text: &str) {
    wait_for(
        &format!("field {selector}"),
        Duration::from_secs(20),
        || async {
            let el = page.find_element(selector).await.ok()?;
            // Clear what was there (the form keeps the last input after an error).
            page.evaluate(format!("document.querySelector(\"{selector}\").value=''"))
                .await
                .ok()?;
            el.click().await.ok()?;
            el.type_str(text).await.ok()?;
            let now = eval_string_opt(
                page,
                &format!("document.querySelector(\"{selector}\").value"),
            )
            .await?;
            (now == text).then_some(())
        },
    )
    .await
}

async fn eval_string_opt(page: &Page, js: &str) -> Option<String> {
    page.evaluate(js).await.ok()?.into_value::<String>().ok()
}

async fn submit_and_wait(page: &Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page.wait_for_navigation().await.unwrap();
}

#[tokio::test]
async fn log_in_create_watch_ready_and_download_in_chromium() {
    let env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let tenants = env.tenants().await;
    let _ = tenants
        .delete("portal-demo", &DeleteParams::default())
        .await;
    wait_gone(&tenants, "portal-demo", Duration::from_secs(600)).await;

    let profile = tempfile_dir();
    let config = BrowserConfig::builder()
        .chrome_executable(chromium())
        .no_sandbox()
        .user_data_dir(&profile)
        .window_size(1100, 900)
        .arg("--disable-gpu")
        .build()
        .expect("browser config");
    let (mut browser, mut handler) = Browser::launch(config).await.expect("launch Chromium");
    let events = tokio::spawn(async move { while handler.next().await.is_some() {} });

    // The landing page, then Dex's login page through /login (code flow with PKCE).
    let page = browser.new_page(server.url.clone()).await.unwrap();
    page.wait_for_navigation().await.unwrap();
    shot(&page, "01-landing").await;
    submit_and_wait(&page, "a.button").await;
    let url = wait_for("Dex's login page", Duration::from_secs(20), || async {
        let url = eval_string_opt(&page, "location.href").await?;
        (url.starts_with(&dex.issuer) && page.find_element("input[name=login]").await.is_ok())
            .then_some(url)
    })
    .await;
    println!("Dex's page: {url}");
    shot(&page, "02-dex-login").await;
    fill(&page, "input[name=login]", "alice@example.com").await;
    fill(&page, "input[name=password]", PASSWORD).await;
    submit_and_wait(&page, "button[type=submit]").await;
    // Back on the portal, logged in.
    wait_for(
        "the portal's tenant list",
        Duration::from_secs(20),
        || async {
            let body = eval_string_opt(&page, "document.body.innerText").await?;
            body.contains("alice@example.com").then_some(())
        },
    )
    .await;
    assert!(
        eval_string(&page, "location.href")
            .await
            .starts_with(&server.url)
    );
    let cookie_js = eval_string(&page, "document.cookie").await;
    assert!(
        !cookie_js.contains("ks_session"),
        "the session cookie is HttpOnly: {cookie_js:?}"
    );
    shot(&page, "03-logged-in").await;

    // A bad quantity: the CRD's own message, on the form.
    fill(&page, "#name", "portal-demo").await;
    fill(&page, "#cpu", "lots").await;
    fill(&page, "#memory", "1Gi").await;
    submit_and_wait(&page, "form[action='/tenants'] button").await;
    let error = wait_for(
        "the form's error message",
        Duration::from_secs(20),
        || async {
            eval_string_opt(&page, "document.getElementById('form-error').innerText").await
        },
    )
    .await;
    assert!(error.contains("must be a Kubernetes quantity"), "{error}");
    shot(&page, "04-validation-message").await;

    // Create it for real; the tenant page follows its phase live.
    fill(&page, "#cpu", "1").await;
    submit_and_wait(&page, "form[action='/tenants'] button").await;
    wait_for("the tenant's page", Duration::from_secs(20), || async {
        let url = eval_string_opt(&page, "location.href").await?;
        let has_phase =
            eval_string_opt(&page, "document.getElementById('phase').textContent").await;
        (url.ends_with("/tenants/portal-demo") && has_phase.is_some()).then_some(())
    })
    .await;
    // Mark this document and record every phase shown: a reload would drop both.
    page.evaluate(
        "window.__kept=true; window.__phases=[document.getElementById('phase').textContent];\
         new MutationObserver(()=>window.__phases.push(document.getElementById('phase').textContent))\
         .observe(document.getElementById('phase'),{childList:true,characterData:true,subtree:true});",
    )
    .await
    .unwrap();
    shot(&page, "05-tenant-created").await;
    let phases = wait_for(
        "the phase to reach Ready on the page",
        Duration::from_secs(600),
        || async {
            let phase =
                eval_string_opt(&page, "document.getElementById('phase').textContent").await?;
            if phase != "Ready" {
                return None;
            }
            Some(eval_string(&page, "JSON.stringify(window.__phases)").await)
        },
    )
    .await;
    assert_eq!(
        eval_string(&page, "String(window.__kept)").await,
        "true",
        "the same document: no reload"
    );
    println!("phases shown without a reload: {phases}");
    let phases: Vec<String> = serde_json::from_str(&phases).expect("the phases' JSON");
    assert_ne!(
        phases.first().map(String::as_str),
        Some("Ready"),
        "the page showed the tenant before it was Ready, then Ready without a reload: {phases:?}"
    );
    // Its public URLs, live too: the API, and the apps where the platform exposes apps.
    let shown = |id: &'static str| {
        let page = &page;
        async move {
            eval_string(
                page,
                &format!("document.getElementById('{id}').textContent"),
            )
            .await
        }
    };
    let platform_has = |var: &str| std::env::var(var).is_ok_and(|v| !v.is_empty());
    if platform_has("KUBESPACES_API_GATEWAY") {
        assert!(shown("api").await.starts_with("https://portal-demo.api."));
    }
    if platform_has("KUBESPACES_APPS_CLUSTER_ISSUER") {
        assert!(
            shown("apps")
                .await
                .starts_with("https://*.portal-demo.apps.")
        );
    }
    shot(&page, "06-ready").await;

    // The kubeconfig download: a link to an attachment, fetched with the page's own session; a
    // Ready tenant has one, and it works: kubectl with exactly that file answers from the tenant.
    let download = eval_string(
        &page,
        "fetch(document.getElementById('kubeconfig').href).then(async r=>JSON.stringify(\
         {status:r.status,disposition:r.headers.get('content-disposition')||'',body:await r.text()}))",
    )
    .await;
    let download: serde_json::Value = serde_json::from_str(&download).expect("the fetch's JSON");
    assert_eq!(download["status"], 200, "{download}");
    assert_eq!(
        download["disposition"], "attachment; filename=\"portal-demo.kubeconfig\"",
        "{download}"
    );
    let kubeconfig = private_kubeconfig(
        "portal-demo.kubeconfig",
        download["body"].as_str().expect("the kubeconfig's text"),
    );
    assert_reaches_tenant(&env, &kubeconfig).await;
    page.find_element("#kubeconfig")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    shot(&page, "07-kubeconfig").await;

    // Live, deterministically: the tenant is deleted behind the page's back (kubectl's way);
    // the open page shows it without a reload.
    tenants
        .delete("portal-demo", &DeleteParams::default())
        .await
        .unwrap();
    let phase = wait_for(
        "the page to show the deletion",
        Duration::from_secs(600),
        || async {
            let phase =
                eval_string_opt(&page, "document.getElementById('phase').textContent").await?;
            matches!(phase.as_str(), "Deleting" | "Deleted").then_some(phase)
        },
    )
    .await;
    assert_eq!(
        eval_string(&page, "String(window.__kept)").await,
        "true",
        "no reload"
    );
    println!(
        "then, without a reload: {phase}; all shown: {}",
        eval_string(&page, "JSON.stringify(window.__phases)").await
    );
    shot(&page, "08-deleted-live").await;

    browser.close().await.ok();
    events.abort();
    let _ = std::fs::remove_dir_all(&profile);
    let _ = tenants
        .delete("portal-demo", &DeleteParams::default())
        .await;
    wait_gone(&tenants, "portal-demo", Duration::from_secs(600)).await;
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubespaces-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
