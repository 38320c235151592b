//! The upgrade a platform team runs, on the shared cluster's release: back to the previous
//! release first (`previous-release.sh`: its chart, operator and server, built from the commit it
//! records), tenants made under it, each with its own control plane and an app, then this
//! release as docs/install.md upgrades (the CRD applied server-side, then `helm upgrade` with the
//! same values) while probes ask each tenant's API (with the kubeconfig handed out), each app
//! and the portal. For `tests/upgrade.rs` and `make bench-upgrade`.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use kubespaces_operator::names;

use crate::{
    Env,
    doc_console::repo_root,
    pods,
    probe::{self, Probe},
    release::{NAMESPACE, RELEASE, helm, installed_chart, running_images, upgrade_to},
    tenant_app,
    tenant_cluster::{owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_yaml, wait_for, wait_ready,
};

/// The release before this one, as `previous-release.sh images` left it in the cluster's env.
pub struct Previous {
    pub version: String,
    pub chart: String,
    pub operator_tag: String,
    pub server_tag: String,
}

impl Previous {
    pub fn get() -> Previous {
        Previous {
            version: platform_var("KUBESPACES_PREVIOUS_VERSION"),
            chart: platform_var("KUBESPACES_PREVIOUS_CHART"),
            operator_tag: platform_var("KUBESPACES_PREVIOUS_OPERATOR_TAG"),
            server_tag: platform_var("KUBESPACES_PREVIOUS_SERVER_TAG"),
        }
    }
}

/// The release as it is installed now, saved before anything changes it.
#[derive(Clone)]
pub struct Saved {
    dir: PathBuf,
    pub values: PathBuf,
    pub chart: String,
    pub images: String,
}

impl Saved {
    pub fn now(env: &Env) -> Saved {
        let dir = std::env::temp_dir().join(format!("kubespaces-upgrade-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for the saved values");
        let values = dir.join("saved-values.yaml");
        let out = helm(&["get", "values", RELEASE, "-n", NAMESPACE, "-o", "yaml"]);
        assert!(
            out.status.success(),
            "helm get values: the release is not installed"
        );
        std::fs::write(&values, &out.stdout).expect("save the release's values");
        Saved {
            dir,
            values,
            chart: installed_chart(),
            images: running_images(env),
        }
    }

    /// This release again with the saved values, unless it is what is installed.
    pub fn restore(&self, env: &Env) {
        if installed_chart() != self.chart {
            let chart = repo_root().join("charts/kubespaces");
            upgrade_to(env, &chart.to_string_lossy(), &self.values, &[])
                .unwrap_or_else(|e| panic!("taking the release back to this chart: {e}"));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The previous release with the saved values, rolled out.
pub fn install_previous(env: &Env, previous: &Previous, saved: &Saved) {
    upgrade_to(
        env,
        &previous.chart,
        &saved.values,
        &[
            "--set-string".into(),
            format!("image.tag={}", previous.operator_tag),
            "--set-string".into(),
            format!("server.image.tag={}", previous.server_tag),
        ],
    )
    .unwrap_or_else(|e| panic!("installing release {}: {e}", previous.version));
    assert_eq!(
        installed_chart(),
        format!("kubespaces-{}", previous.version)
    );
    let images = running_images(env);
    assert!(
        images.contains(&previous.operator_tag) && images.contains(&previous.server_tag),
        "release {} runs {images}",
        previous.version
    );
}

/// A tenant with its own control plane and an app in it, Ready and answering.
pub struct LiveTenant {
    pub name: String,
    pub kubeconfig: String,
    pub app_url: String,
    pub answer: String,
}

impl LiveTenant {
    pub async fn create(env: &Env, name: &str) -> LiveTenant {
        let domain = platform_var("KUBESPACES_DOMAIN");
        pods::delete_tenant(env, name).await;
        env.apply(&tenant_yaml(
            name,
            "alice@example.com",
            "2",
            "4Gi",
            Some("10Gi"),
        ));
        wait_ready(&env.tenants().await, name, Duration::from_secs(300)).await;
        let (file, kubeconfig) = owner_kubeconfig(env, name).await;
        let host = format!("hello.{name}.apps.{domain}");
        let answer = format!("hello from {name}");
        let out = owner_kubectl(
            env,
            &file,
            &["apply", "-f", "-"],
            Some(&tenant_app::manifests(&env.busybox_image(), &host, &answer)),
        );
        assert!(out.status.success(), "the app of {name}: {}", text(&out));
        let app_url = format!("https://{host}/");
        wait_for(
            &format!("the app of {name} to answer"),
            Duration::from_secs(180),
            || async {
                let out = tenant_app::curl(&app_url, &[]);
                out.status.success().then_some(())
            },
        )
        .await;
        LiveTenant {
            name: name.to_owned(),
            kubeconfig,
            app_url,
            answer,
        }
    }

    /// What must not change while the platform is upgraded under the tenant: its control plane's
    /// pod (uid, restarts), its StatefulSet's generation, and its Ready condition with the time it
    /// last changed.
    pub fn marks(&self, env: &Env) -> String {
        let ns = names::namespace(&self.name);
        let get = |args: &[&str]| env.kubectl_ok(args, None);
        format!(
            "pod {}; statefulset {}; {}",
            get(&[
                "-n",
                &ns,
                "get",
                "pod",
                names::control_plane::CONTROL_PLANE_POD,
                "-o",
                "jsonpath=uid {.metadata.uid} restarts {.status.containerStatuses[*].restartCount}",
            ]),
            get(&[
                "-n",
                &ns,
                "get",
                "statefulset",
                names::control_plane::RELEASE,
                "-o",
                "jsonpath=generation {.metadata.generation}",
            ]),
            get(&[
                "get",
                "tenant",
                &self.name,
                "-o",
                "jsonpath=Ready {.status.conditions[?(@.type==\"Ready\")].status} since {.status.conditions[?(@.type==\"Ready\")].lastTransitionTime}",
            ]),
        )
    }

    /// Probes of the tenant's API and app, every `period`.
    pub async fn probes(&self, period: Duration) -> Vec<Probe> {
        let domain = platform_var("KUBESPACES_DOMAIN");
        let apps_ca = std::fs::read(platform_var("KUBESPACES_APPS_CA_FILE")).expect("a CA file");
        vec![
            probe::kube_api(
                format!("API {}.api.{domain}", self.name),
                period,
                probe::client_of(&self.kubeconfig).await,
            ),
            probe::https(
                format!("app {}", self.app_url),
                period,
                self.app_url.clone(),
                &apps_ca,
                self.answer.clone(),
            ),
        ]
    }
}

/// A probe of the portal's front page at its public door, every `period`.
pub fn portal_probe(period: Duration) -> Probe {
    let domain = platform_var("KUBESPACES_DOMAIN");
    let ca = std::fs::read(platform_var("KUBESPACES_NODE_OIDC_CA_FILE")).expect("a CA file");
    probe::https(
        format!("portal kubespaces.{domain}"),
        period,
        format!("https://kubespaces.{domain}/"),
        &ca,
        "Log in".to_owned(),
    )
}

/// As docs/install.md upgrades: the CRD first (server-side), then `helm upgrade` to this chart
/// with the saved values; returns how long helm took (to every replica rolled out). Then waits
/// until the new operator's leader has reconciled every Tenant once: the upgrade is only over for
/// the tenants once the new version has applied what it wants of them.
pub async fn upgrade_to_this_release(env: &Env, saved: &Saved) -> Duration {
    let crds = repo_root().join("charts/kubespaces/crds");
    let took = blocking(|| {
        let crds = crds.to_string_lossy();
        env.kubectl_ok(
            &["apply", "--server-side", "--force-conflicts", "-f", &crds],
            None,
        );
        let started = Instant::now();
        let chart = repo_root().join("charts/kubespaces");
        upgrade_to(env, &chart.to_string_lossy(), &saved.values, &[])
            .unwrap_or_else(|e| panic!("upgrading to this release: {e}"));
        let took = started.elapsed();
        assert_eq!(
            running_images(env),
            saved.images,
            "the images after the upgrade"
        );
        took
    });
    reconciled_by_the_new_leader(env).await;
    took
}

/// Waits until the server runs only the pods of its current template, none of them stopping,
/// and its Service's endpoints name no other: what the Gateway sends portal requests to from
/// then on. (A pod of a release without a drain stops listening at once; until it is gone, a
/// request can still reach it.)
pub async fn server_settled(env: &Env) {
    let deployment = format!("{RELEASE}-server");
    wait_for(
        "the server's previous pods gone and its endpoints only the current ones",
        Duration::from_secs(120),
        || async {
            let get = |args: &[&str]| output(env.kubectl(args, None));
            let pods = blocking(|| {
                get(&[
                    "-n",
                    NAMESPACE,
                    "get",
                    "pods",
                    "-l",
                    "app.kubernetes.io/component=server",
                    "-o",
                    "jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{\"\\n\"}{end}",
                ])
            });
            let endpoints = blocking(|| {
                get(&[
                    "-n",
                    NAMESPACE,
                    "get",
                    "endpointslices",
                    "-l",
                    &format!("kubernetes.io/service-name={deployment}"),
                    "-o",
                    "jsonpath={range .items[*].endpoints[*]}{.conditions.ready}{\"\\n\"}{end}",
                ])
            });
            let replicas = blocking(|| deployment_field(env, &deployment, "{.spec.replicas}"));
            let running: Vec<&str> = pods.lines().collect();
            let settled = running.len().to_string() == replicas
                && running.iter().all(|l| l.split_whitespace().count() == 1)
                && endpoints.lines().count().to_string() == replicas
                && endpoints.lines().all(|r| r == "true");
            settled.then_some(())
        },
    )
    .await;
}

/// The server's pods replaced one at a time (`kubectl rollout restart`), as an upgrade does, and
/// rolled out.
pub fn roll_server(env: &Env) {
    let deployment = format!("deployment/{RELEASE}-server");
    blocking(|| {
        env.kubectl_ok(&["-n", NAMESPACE, "rollout", "restart", &deployment], None);
        let status = [
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            &deployment,
            "--timeout=180s",
        ];
        env.kubectl_ok(&status, None);
    });
}

/// Runs blocking work (helm, kubectl) without stalling the probes that share this runtime: the
/// worker hands its other tasks to another first (a multi-threaded runtime).
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(work)
}

async fn reconciled_by_the_new_leader(env: &Env) {
    let tenants = env
        .tenants()
        .await
        .list(&Default::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or_default() as f64;
    wait_for(
        "the new operator's leader to reconcile every Tenant",
        Duration::from_secs(120),
        || async {
            let reconciled = blocking(|| leader_reconciled(env))?;
            (reconciled >= tenants).then_some(())
        },
    )
    .await;
}

/// How many reconciles the operator's leader has done (its metrics); None while no leader answers.
fn leader_reconciled(env: &Env) -> Option<f64> {
    let get = |args: &[&str]| output(env.kubectl(args, None));
    // The Lease the chart names (leaderElection.lease), as its Deployment tells the operator.
    let lease = deployment_field(
        env,
        &format!("{RELEASE}-operator"),
        "{.spec.template.spec.containers[0].env[?(@.name==\"KUBESPACES_LEADER_ELECT_LEASE\")].value}",
    );
    let holder = get(&[
        "-n",
        NAMESPACE,
        "get",
        "lease",
        &lease,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    let port = get(&[
        "-n",
        NAMESPACE,
        "get",
        "pod",
        &holder,
        "-o",
        "jsonpath={.spec.containers[0].ports[?(@.name==\"http\")].containerPort}",
    ]);
    if lease.is_empty() || holder.is_empty() || port.is_empty() {
        return None;
    }
    let path = format!("/api/v1/namespaces/{NAMESPACE}/pods/{holder}:{port}/proxy/metrics");
    let metrics = get(&["get", "--raw", &path]);
    Some(crate::operator::metric_sum(
        &metrics,
        "kubespaces_reconcile_total",
    ))
}

/// A field of one of the release's Deployments (a JSONPath); empty when it cannot be read.
fn deployment_field(env: &Env, deployment: &str, path: &str) -> String {
    let path = format!("jsonpath={path}");
    let args = [
        "-n",
        NAMESPACE,
        "get",
        "deployment",
        deployment,
        "-o",
        &path,
    ];
    output(env.kubectl(&args, None))
}

fn output(out: std::process::Output) -> String {
    match out.status.success() {
        true => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        false => String::new(),
    }
}
