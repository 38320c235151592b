//! The portal in a real headless Chromium (the system's Debian package, over the DevTools
//! protocol), for the portal's test and benchmark: launching it, reading the page, screenshots
//! at a desktop and a phone width, and an accessibility check with axe-core (its npm package,
//! pinned and cached under ~/.cache/kubespaces/npm/, fetched with `npm pack` on first use).

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use chromiumoxide::{
    Browser, BrowserConfig, Page,
    cdp::{
        browser_protocol::{
            emulation::SetDeviceMetricsOverrideParams, page::CaptureScreenshotFormat,
        },
        js_protocol::runtime::EvaluateParams,
    },
    page::ScreenshotParams,
};
use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::wait_for;

/// The axe-core release the check runs, and the SHA-256 of its `axe.min.js`.
pub const AXE_VERSION: &str = "4.14.1";
const AXE_SHA256: &str = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c";

/// The widths every page is looked at: a laptop's and a phone's (390 px).
pub const WIDTHS: [(i64, i64, bool); 2] = [(1280, 900, false), (390, 844, true)];

fn chromium() -> String {
    let path = std::env::var("KUBESPACES_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&path).exists(),
        "{path} not found: the portal's test needs Chromium (Debian: apt-get install chromium; or \
         set KUBESPACES_CHROMIUM)"
    );
    path
}

/// A headless Chromium with a fresh profile; dropped, it is closed and the profile removed.
pub struct Chromium {
    pub browser: Browser,
    events: tokio::task::JoinHandle<()>,
    profile: PathBuf,
}

impl Chromium {
    pub async fn launch() -> Chromium {
        let profile = std::env::temp_dir().join(format!(
            "kubespaces-chromium-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&profile).unwrap();
        let config = BrowserConfig::builder()
            .chrome_executable(chromium())
            .no_sandbox()
            .user_data_dir(&profile)
            .window_size(1280, 900)
            .arg("--disable-gpu")
            .build()
            .expect("browser config");
        let (browser, mut handler) = Browser::launch(config).await.expect("launch Chromium");
        let events = tokio::spawn(async move { while handler.next().await.is_some() {} });
        Chromium {
            browser,
            events,
            profile,
        }
    }

    pub async fn close(mut self) {
        self.browser.close().await.ok();
        self.browser.wait().await.ok();
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.events.abort();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// The value of `js` as a string (panics when it throws).
pub async fn eval_string(page: &Page, js: &str) -> String {
    page.evaluate(js)
        .await
        .unwrap_or_else(|e| panic!("{js}: {e}"))
        .into_value::<String>()
        .unwrap_or_default()
}

/// The value of `js` as a string, None when it throws or is no string (the page is changing).
pub async fn eval_string_opt(page: &Page, js: &str) -> Option<String> {
    page.evaluate(js).await.ok()?.into_value::<String>().ok()
}

/// The value of `js` (which returns JSON text) parsed.
pub async fn eval_json(page: &Page, js: &str) -> serde_json::Value {
    let text = eval_string(page, js).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{js} gave no JSON ({e}): {text}"))
}

/// Types `text` into the field, once the page that has it has settled (redirect chains replace
/// the document under a lookup).
pub async fn fill(page: &Page, selector: &str, text: &str) {
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

/// Clicks `selector` and waits for the navigation it starts.
pub async fn submit_and_wait(page: &Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .click()
        .await
        .unwrap();
    page.wait_for_navigation().await.unwrap();
}

/// Where screenshots go: target/acceptance/screenshots/.
pub fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/acceptance/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn set_width(page: &Page, (width, height, mobile): (i64, i64, bool)) {
    page.execute(SetDeviceMetricsOverrideParams::new(
        width, height, 1.0, mobile,
    ))
    .await
    .expect("set the viewport");
}

/// Screenshots of the page at each of [`WIDTHS`] (`<name>-1280.png`, `<name>-390.png`), and,
/// at each, the check that nothing is wider than the screen (no sideways scrolling: readable at
/// 390 px). Back at the first width after.
pub async fn shots(page: &Page, name: &str) {
    for width in WIDTHS {
        set_width(page, width).await;
        let png = page
            .screenshot(
                ScreenshotParams::builder()
                    .format(CaptureScreenshotFormat::Png)
                    .full_page(true)
                    .build(),
            )
            .await
            .expect("screenshot");
        std::fs::write(screenshots().join(format!("{name}-{}.png", width.0)), png).unwrap();
        let overflow = eval_string(
            page,
            "String(document.documentElement.scrollWidth - document.documentElement.clientWidth)",
        )
        .await;
        assert_eq!(
            overflow, "0",
            "{name} at {} px is wider than the screen (by {overflow} px)",
            width.0
        );
    }
    set_width(page, WIDTHS[0]).await;
}

/// axe-core's script, from the cache (fetched with `npm pack` the first time), checked against
/// its pinned digest.
pub fn axe_source() -> String {
    let home = std::env::var("HOME").expect("HOME");
    let dir = PathBuf::from(home)
        .join(".cache/kubespaces/npm")
        .join(format!("axe-core-{AXE_VERSION}"));
    let file = dir.join("axe.min.js");
    if !file.exists() {
        let download = dir.join(format!("download-{}", std::process::id()));
        std::fs::create_dir_all(&download).unwrap();
        let packed = Command::new("npm")
            .args(["pack", "--silent", &format!("axe-core@{AXE_VERSION}")])
            .arg("--pack-destination")
            .arg(&download)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("npm (axe-core comes from its npm package)");
        assert!(packed.success(), "npm pack axe-core@{AXE_VERSION} failed");
        let tarball = download.join(format!("axe-core-{AXE_VERSION}.tgz"));
        let untar = Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&download)
            .arg("package/axe.min.js")
            .status()
            .expect("tar");
        assert!(untar.success(), "unpack {}", tarball.display());
        std::fs::rename(download.join("package/axe.min.js"), &file).unwrap();
        let _ = std::fs::remove_dir_all(&download);
    }
    let source = std::fs::read(&file).unwrap();
    let digest: String = Sha256::digest(&source)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        digest,
        AXE_SHA256,
        "{} is not axe-core {AXE_VERSION}'s axe.min.js: remove it to fetch it again",
        file.display()
    );
    String::from_utf8(source).expect("axe.min.js is UTF-8")
}

/// axe-core's violations of impact "serious" or "critical" on the page as it is now, each as
/// `id (impact): help [targets]`. The script is evaluated over the DevTools protocol, which the
/// page's CSP does not govern (the portal allows no script but its own).
pub async fn axe_violations(page: &Page, axe: &str) -> Vec<String> {
    let load = EvaluateParams::builder()
        .expression(format!("{axe}\n;'axe loaded'"))
        .build()
        .expect("evaluate params");
    page.evaluate_expression(load).await.expect("load axe-core");
    let found = eval_json(
        page,
        "axe.run(document,{resultTypes:['violations']}).then(r=>JSON.stringify(r.violations\
         .filter(v=>v.impact==='serious'||v.impact==='critical')\
         .map(v=>v.id+' ('+v.impact+'): '+v.help+' '+JSON.stringify(v.nodes.map(n=>n.target.join(' '))))))",
    )
    .await;
    serde_json::from_value(found).expect("a list of strings")
}

/// Asserts axe-core finds nothing serious or critical on the page (`what` names it).
pub async fn assert_accessible(page: &Page, axe: &str, what: &str) {
    let violations = axe_violations(page, axe).await;
    assert!(
        violations.is_empty(),
        "axe-core {AXE_VERSION} on {what}: {violations:#?}"
    );
    println!("axe-core {AXE_VERSION}: {what}: no serious or critical violation");
}

/// From the portal's welcome page: *Log in*, then Dex's password page (`issuer`) as `email`,
/// back on the portal's list, logged in.
pub async fn log_in(page: &Page, issuer: &str, email: &str) {
    submit_and_wait(page, "a.button").await;
    wait_for("Dex's login page", Duration::from_secs(20), || async {
        let url = eval_string_opt(page, "location.href").await?;
        (url.starts_with(issuer) && page.find_element("input[name=login]").await.is_ok())
            .then_some(())
    })
    .await;
    fill(page, "input[name=login]", email).await;
    fill(page, "input[name=password]", crate::oidc::PASSWORD).await;
    submit_and_wait(page, "button[type=submit]").await;
    wait_for("the portal's list", Duration::from_secs(20), || async {
        let body = eval_string_opt(page, "document.body.innerText").await?;
        body.contains(email).then_some(())
    })
    .await;
}
