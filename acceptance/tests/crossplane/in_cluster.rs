//! Crossplane running in the cluster, for tests/crossplane.rs: `acceptance/harness/crossplane.sh`
//! installs it from its own chart with images built from its pinned module, and the composition
//! function from its package; the guard uninstalls it.

use std::{process::Command, time::Duration};

use kubespaces_acceptance::{Env, wait_for};
use serde_json::Value;

use super::render::tool;

/// Crossplane's identity, as its chart installs it.
pub const SERVICE_ACCOUNT: &str = "system:serviceaccount:crossplane-system:crossplane";

/// Crossplane installed in the cluster; uninstalled on drop, whatever the test did.
pub struct Crossplane {
    state: String,
}

impl Crossplane {
    pub fn install() -> Crossplane {
        // The last of what build-tools.sh --with crossplane links (make test builds it while the
        // first tests run).
        tool("function-patch-and-transform-package");
        let state =
            std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE (set by the harness)");
        let crossplane = Crossplane { state };
        crossplane.run("install");
        crossplane
    }

    fn run(&self, command: &str) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/harness/crossplane.sh");
        let status = Command::new(script)
            .args([command, &self.state])
            .status()
            .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
        assert!(status.success(), "crossplane.sh {command} failed: {status}");
    }
}

impl Drop for Crossplane {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A second panic would abort the test binary: the first one's message is the one
            // to read, and a failed uninstall says why on stderr.
            let _ = std::panic::catch_unwind(|| self.run("uninstall"));
        } else {
            self.run("uninstall");
        }
    }
}

/// `kubectl get WHAT -o json` (WHAT: a kind and a name, and maybe `-n NAMESPACE`), or None while
/// it does not exist.
pub fn get(env: &Env, what: &[&str]) -> Option<Value> {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend(["-o", "json"]);
    let out = env.kubectl(&args, None);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("kubectl -o json"))
}

/// The status and reason of `object`'s condition `type_`.
pub fn condition(object: &Value, type_: &str) -> Option<(String, String)> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

/// Waits until `kind`/`name` has its condition `type_` True; returns the object.
pub async fn wait_condition(
    env: &Env,
    kind: &str,
    name: &str,
    type_: &str,
    timeout: Duration,
) -> Value {
    wait_for(&format!("{kind} {name} {type_}=True"), timeout, || async {
        let object = get(env, &[kind, name])?;
        (condition(&object, type_)?.0 == "True").then_some(object)
    })
    .await
}

/// Waits until WHAT (as for [`get`]) is gone.
pub async fn wait_absent(env: &Env, what: &[&str], timeout: Duration) {
    wait_for(&format!("{} gone", what.join(" ")), timeout, || async {
        get(env, what).is_none().then_some(())
    })
    .await
}
