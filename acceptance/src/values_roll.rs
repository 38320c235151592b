//! A change of what every tenant's control plane runs, as a platform team makes it: new
//! `controlPlane.vcluster.values` in a `helm upgrade` of the platform (a pod annotation here; a
//! new image or resources alike). The operator then restarts every control plane, at most
//! `controlPlane.restarts.maxAtOnce` at a time. For `make bench-upgrade`'s second half, beside
//! the same change made to one vCluster installed the plain way, by Helm from the same pinned
//! chart with the same values.

use std::time::{Duration, Instant};

use kubespaces_operator::{api::Tenant, conditions::READY, names};

use crate::{
    Env,
    doc_console::repo_root,
    release::{NAMESPACE, RELEASE, helm, upgrade_to},
    upgrade::{Saved, blocking},
    wait_for,
};

/// The pod annotation whose value each round changes.
const ANNOTATION: &str = "kubespaces.io/bench-roll";

/// The uid of the tenant's control-plane pod (empty while there is none).
pub fn control_plane_pod_uid(env: &Env, tenant: &str) -> String {
    let out = env.kubectl(
        &[
            "-n",
            &names::namespace(tenant),
            "get",
            "pod",
            names::control_plane::CONTROL_PLANE_POD,
            "-o",
            "jsonpath={.metadata.uid}",
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `controlPlane.restarts.maxAtOnce` as the release has it (the chart's default included).
pub fn max_at_once() -> u64 {
    let out = helm(&[
        "get", "values", RELEASE, "-n", NAMESPACE, "--all", "-o", "json",
    ]);
    let values: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    values["controlPlane"]["restarts"]["maxAtOnce"]
        .as_u64()
        .expect("the release's controlPlane.restarts.maxAtOnce")
}

/// `helm upgrade` of the platform (this chart, the saved values) with the annotation set to
/// `round` in the values of every tenant's vCluster; returns how long helm took (to the
/// operator's and server's replicas rolled out).
pub fn bump_platform_values(env: &Env, saved: &Saved, round: &str) -> Duration {
    let chart = repo_root().join("charts/kubespaces");
    let set = format!(
        "controlPlane.vcluster.values.controlPlane.statefulSet.pods.annotations.{}={round}",
        ANNOTATION.replace('.', "\\.")
    );
    blocking(|| {
        let started = Instant::now();
        upgrade_to(
            env,
            &chart.to_string_lossy(),
            &saved.values,
            &["--set-string".into(), set],
        )
        .unwrap_or_else(|e| panic!("helm upgrade with new vCluster values: {e}"));
        started.elapsed()
    })
}

/// Waits until every tenant runs a new control-plane pod (its uid not the one in `before`) and
/// is Ready again; returns, per tenant, how long after `since` that was seen.
pub async fn wait_rolled(
    env: &Env,
    tenants: &[String],
    before: &[String],
    since: Instant,
    within: Duration,
) -> Vec<Duration> {
    let api = env.tenants().await;
    // Written between polls, read at the end: the poll's future cannot hold it mutably.
    let rolled = std::sync::Mutex::new(vec![None; tenants.len()]);
    let seen = |i: usize| rolled.lock().map(|r| r[i].is_some()).unwrap_or(false);
    wait_for(
        "every tenant's control plane restarted with the new values and Ready",
        within,
        || async {
            for (i, name) in tenants.iter().enumerate() {
                if seen(i) {
                    continue;
                }
                let uid = blocking(|| control_plane_pod_uid(env, name));
                let ready = api
                    .get_opt(name)
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|t: Tenant| {
                        t.condition(READY).is_some_and(|c| c.status == "True")
                    });
                if !uid.is_empty()
                    && uid != before[i]
                    && ready
                    && let Ok(mut r) = rolled.lock()
                {
                    r[i] = Some(since.elapsed());
                }
            }
            (0..tenants.len()).all(seen).then_some(())
        },
    )
    .await;
    rolled
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

/// One vCluster installed by Helm alone, from the pinned chart with the values the operator
/// gives a tenant of this name (the platform's, then its own, as the operator lays them), in
/// the namespace such a tenant would have: no Tenant, no operator involved.
pub struct PlainVcluster {
    name: String,
    values: Vec<std::path::PathBuf>,
}

impl PlainVcluster {
    /// Installs it (`helm upgrade --install --wait`) and waits until it is rolled out.
    pub fn install(env: &Env, name: &str) -> PlainVcluster {
        let dir = std::env::temp_dir().join(format!("kubespaces-plain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the values");
        let platform = env.kubectl_ok(
            &[
                "-n",
                NAMESPACE,
                "get",
                "configmap",
                &format!("{RELEASE}-operator-vcluster-values"),
                "-o",
                "jsonpath={.data.values\\.yaml}",
            ],
            None,
        );
        let own = env.kubectl_ok(
            &[
                "-n",
                NAMESPACE,
                "exec",
                &format!("deployment/{RELEASE}-operator"),
                "--",
                "kubespaces-operator",
                "values",
                name,
            ],
            None,
        );
        let values = vec![dir.join("platform.yaml"), dir.join("tenant.json")];
        std::fs::write(&values[0], platform).expect("write the platform's values");
        std::fs::write(&values[1], own).expect("write the tenant's values");
        let plain = PlainVcluster {
            name: name.to_owned(),
            values,
        };
        let ns = names::namespace(name);
        env.kubectl_ok(&["create", "namespace", &ns], None);
        plain.helm_upgrade(None);
        plain
    }

    /// `helm upgrade --wait` with the annotation set to `round`; returns how long it took.
    pub fn upgrade(&self, round: &str) -> Duration {
        let started = Instant::now();
        self.helm_upgrade(Some(round));
        started.elapsed()
    }

    fn helm_upgrade(&self, round: Option<&str>) {
        let ns = names::namespace(&self.name);
        let chart = pinned_chart();
        let chart = chart.to_string_lossy();
        let mut args = vec![
            "upgrade",
            "--install",
            names::control_plane::RELEASE,
            &chart,
            "-n",
            &ns,
            "--wait",
            "--timeout",
            "5m",
        ];
        let files: Vec<String> = self
            .values
            .iter()
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        for f in &files {
            args.extend(["-f", f]);
        }
        let set = round.map(|r| {
            format!(
                "controlPlane.statefulSet.pods.annotations.{}={r}",
                ANNOTATION.replace('.', "\\.")
            )
        });
        if let Some(set) = &set {
            args.extend(["--set-string", set]);
        }
        let out = helm(&args);
        assert!(
            out.status.success(),
            "helm upgrade --install of the plain vCluster {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Uninstalls it and deletes its namespace (and with it the datastore's claim).
    pub fn remove(self, env: &Env) {
        let ns = names::namespace(&self.name);
        let _ = helm(&[
            "uninstall",
            names::control_plane::RELEASE,
            "-n",
            &ns,
            "--wait",
        ]);
        env.kubectl_ok(&["delete", "namespace", &ns, "--wait=true"], None);
        if let Some(dir) = self.values.first().and_then(|f| f.parent()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The pinned vCluster chart archive (`charts/vcluster/vcluster-<version>.tgz`, the only one).
fn pinned_chart() -> std::path::PathBuf {
    let dir = repo_root().join("charts/vcluster");
    std::fs::read_dir(&dir)
        .expect("charts/vcluster")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .expect("the pinned vCluster chart archive in charts/vcluster")
}

/// The most windows open at one moment.
pub fn most_at_once(windows: &[(Instant, Instant)]) -> usize {
    windows
        .iter()
        .map(|(start, _)| {
            windows
                .iter()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_windows() {
        let t = Instant::now();
        let at = |s| t + Duration::from_secs(s);
        assert_eq!(
            most_at_once(&[(at(0), at(2)), (at(1), at(3)), (at(3), at(4))]),
            2
        );
        assert_eq!(most_at_once(&[(at(0), at(1)), (at(1), at(2))]), 1);
    }
}
