//! The install guide, `docs/install.md`, run as written against the shared cluster's release
//! (`acceptance/harness/chart.sh install`): from its Verify section on, every ` ```console ` block
//! in order, in a directory holding the chart packaged as `make dist` packages it. That is a
//! tenant with its own control plane, an upgrade with the saved values, `helm uninstall` with the
//! tenant's API still answering, and a reinstall that takes the tenant back, applies a change and
//! tears it down.
//!
//! Besides what the page shows, while KubeSpaces is uninstalled: nothing of the release is left but
//! what it keeps on purpose (each object annotated `helm.sh/resource-policy: keep`, and the pods
//! and ReplicaSet of the kept waker), the tenant's
//! owner keeps the access the kept ClusterRole gives, and a kept guard still refuses what it
//! refuses with the operator running (a RoleBinding that grants the tenant namespace to everyone).
//!
//! It uninstalls the shared operator and server, so it is `#[ignore]`d in a plain `cargo test` and
//! `make test` runs it with `--ignored` before the other tests start. Whatever fails, it installs
//! the release again with the values it saved before the uninstall.

use std::{path::Path, time::Duration};

use kubespaces_acceptance::{
    Env,
    doc_console::{Session, ToolDir, parse, repo_root},
    pods,
    release::{NAMESPACE, RELEASE, chart_version, helm},
    tenant_cluster::platform_var,
};

const PAGE: &str = "docs/install.md";
/// The tenant the page creates.
const TENANT: &str = "team-lyra";
/// Above the longest wait the page gives itself (`--timeout=5m`).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(330);

/// Every object of any listable kind labelled as the release's: "kind/name" and whether Helm was
/// told to keep it, or it belongs to one that is (the kept waker's ReplicaSet and pods: the
/// garbage collector keeps what a live owner controls).
fn release_objects(env: &Env) -> Vec<(String, bool)> {
    let kinds = env.kubectl_ok(&["api-resources", "--verbs=list", "-o", "name"], None);
    let kinds: Vec<&str> = kinds.lines().filter(|k| !k.is_empty()).collect();
    let selector = format!("app.kubernetes.io/instance={RELEASE}");
    let list = env.kubectl_ok(
        &["get", &kinds.join(","), "-A", "-l", &selector, "-o", "json"],
        None,
    );
    let list: serde_json::Value = serde_json::from_str(&list).expect("kubectl's JSON");
    let items = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let uid = |o: &serde_json::Value| o["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let kept_policy =
        |o: &&serde_json::Value| o["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep";
    // A kept Service's Endpoints, which the endpoints controller labels like it, owner or not.
    let kept_services: Vec<(&str, &str)> = items
        .iter()
        .filter(kept_policy)
        .filter(|o| o["kind"] == "Service")
        .map(|o| {
            let m = &o["metadata"];
            (
                m["namespace"].as_str().unwrap_or_default(),
                m["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let mut kept: std::collections::HashSet<String> = items
        .iter()
        .filter(|o| {
            let m = &o["metadata"];
            let endpoints_of_kept = o["kind"] == "Endpoints"
                && kept_services.contains(&(
                    m["namespace"].as_str().unwrap_or_default(),
                    m["name"].as_str().unwrap_or_default(),
                ));
            kept_policy(o) || endpoints_of_kept
        })
        .map(uid)
        .collect();
    // Owners before what they own, however deep (Deployment, ReplicaSet, Pod).
    loop {
        let owned_by_kept: Vec<String> = items
            .iter()
            .filter(|o| !kept.contains(&uid(o)))
            .filter(|o| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r["uid"].as_str().is_some_and(|u| kept.contains(u)))
                    })
            })
            .map(uid)
            .collect();
        if owned_by_kept.is_empty() {
            break;
        }
        kept.extend(owned_by_kept);
    }
    items
        .iter()
        .map(|o| {
            let name = format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            );
            (name, kept.contains(&uid(o)))
        })
        .collect()
}

/// What the page's uninstall must leave, and do while no operator runs.
async fn check_uninstalled(env: &Env) {
    // The Deployments' pods and ReplicaSets go shortly after them (garbage collection).
    let left = pods::retry_until(
        "only the kept objects of the release to be left",
        Duration::from_secs(90),
        || {
            let objects = release_objects(env);
            let not_kept: Vec<&str> = objects
                .iter()
                .filter(|(_, kept)| !*kept)
                .map(|(n, _)| n.as_str())
                .collect();
            match not_kept.is_empty() {
                true => Ok(objects),
                false => Err(format!("left but not kept: {not_kept:?}")),
            }
        },
    )
    .await;
    let names: Vec<&str> = left.iter().map(|(n, _)| n.as_str()).collect();
    for kept in [
        "ClusterRole/kubespaces:tenant-owner",
        "MutatingAdmissionPolicy/kubespaces-tenant-finalizer",
        "ValidatingAdmissionPolicy/kubespaces-tenant-role-bindings",
        "ValidatingAdmissionPolicyBinding/kubespaces-tenant-role-bindings",
        // Every tenant API route goes through it.
        "Deployment/kubespaces-waker",
        "Service/kubespaces-waker",
    ] {
        assert!(names.contains(&kept), "{kept} was not kept: {names:?}");
    }
    println!("left by the uninstall, all kept on purpose: {names:?}");

    let ns = kubespaces_operator::names::namespace(TENANT);
    let owner = "alice@example.com";
    let can = env.kubectl(
        &[
            "auth",
            "can-i",
            "create",
            "deployments",
            "-n",
            &ns,
            "--as",
            owner,
        ],
        None,
    );
    assert!(
        can.status.success(),
        "the owner lost access to {ns} with KubeSpaces uninstalled: {}",
        String::from_utf8_lossy(&can.stdout)
    );
    // The owner's own role, which RBAC lets the owner grant: only the guard stands in the way.
    let everyone = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: everyone\n  namespace: {ns}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {}}}\nsubjects:\n  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:authenticated}}\n",
        kubespaces_operator::names::OWNER_CLUSTER_ROLE
    );
    let refused = env.kubectl(&["create", "-f", "-", "--as", owner], Some(&everyone));
    let _ = env.kubectl(
        &[
            "delete",
            "rolebinding",
            "everyone",
            "-n",
            &ns,
            "--ignore-not-found",
        ],
        None,
    );
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && why.contains(kubespaces_operator::names::ROLE_BINDING_GUARD),
        "with KubeSpaces uninstalled, the owner bound {ns} to everyone: {why}"
    );
}

/// Installs the release again with `values` if it is not installed (a step between the uninstall
/// and the reinstall failed): every later test needs it.
fn reinstall_if_gone(chart: &Path, values: &Path) {
    if helm(&["status", RELEASE, "-n", NAMESPACE]).status.success() {
        return;
    }
    let chart = chart.to_string_lossy();
    let values = values.to_string_lossy();
    let out = helm(&[
        "install",
        RELEASE,
        &chart,
        "-n",
        NAMESPACE,
        "-f",
        &values,
        "--wait",
        "--timeout",
        "5m",
    ]);
    assert!(
        out.status.success(),
        "reinstalling {RELEASE} after a failure failed too: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
#[ignore = "uninstalls the shared operator and server: make test runs it alone, with --ignored (run-tests.sh)"]
async fn uninstall_keeps_every_tenant_and_a_reinstall_takes_them_back() {
    let env = Env::get();
    let markdown = std::fs::read_to_string(repo_root().join(PAGE)).expect(PAGE);
    let commands = parse(&markdown).unwrap_or_else(|e| panic!("{PAGE}: {e}"));
    let has = |s: &str| commands.iter().any(|c| c.script.starts_with(s));
    assert!(
        commands.len() >= 12
            && has("helm upgrade")
            && has("helm uninstall")
            && has("helm install")
            && has("kubectl delete tenant"),
        "{PAGE} has too few runnable commands: {commands:#?}"
    );

    // The directory the page's commands run in: the chart packaged as make dist packages it.
    let dir = std::env::temp_dir().join(format!("kubespaces-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory for the page");
    let chart = repo_root().join("charts/kubespaces");
    let package = helm(&[
        "package",
        &chart.to_string_lossy(),
        "-d",
        &dir.to_string_lossy(),
    ]);
    assert!(
        package.status.success(),
        "helm package: {}",
        String::from_utf8_lossy(&package.stderr)
    );
    let packaged = dir.join(format!("kubespaces-{}.tgz", chart_version()));
    assert!(
        packaged.exists(),
        "helm package wrote no {}",
        packaged.display()
    );
    assert!(
        markdown.contains(&format!("kubespaces-{}.tgz", chart_version())),
        "{PAGE} names another package than {}",
        packaged.display()
    );
    // Saved first, so that a failure anywhere can install the release again.
    let saved = dir.join("saved-values.yaml");
    let values = helm(&["get", "values", RELEASE, "-n", NAMESPACE, "-o", "yaml"]);
    assert!(
        values.status.success(),
        "helm get values: the release is not installed"
    );
    std::fs::write(&saved, &values.stdout).expect("save the release's values");

    let helm_bin = platform_var("KUBESPACES_HELM");
    let tools = ToolDir::new("install", &[("kubectl", &env.kubectl), ("helm", &helm_bin)]);
    pods::delete_tenant(&env, TENANT).await;
    let session = Session {
        page: PAGE,
        dir: &dir,
        path: tools.path(),
        timeout: COMMAND_TIMEOUT,
    };
    let mut failure = None;
    for command in &commands {
        if let Err(why) = session.step(command).await {
            failure = Some(why);
            break;
        }
        if command.script.starts_with("helm uninstall") {
            // A failed check must still reach the reinstall below.
            let checked = tokio::spawn({
                let env = Env::get();
                async move { check_uninstalled(&env).await }
            })
            .await;
            if let Err(panic) = checked {
                failure = Some(format!(
                    "after {PAGE}:{}'s uninstall: {panic}",
                    command.line
                ));
                break;
            }
        }
    }
    reinstall_if_gone(&packaged, &saved);
    pods::delete_tenant(&env, TENANT).await;
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(failure) = failure {
        panic!("{failure}");
    }
    println!("{PAGE}: {} commands ran as written", commands.len());
}
