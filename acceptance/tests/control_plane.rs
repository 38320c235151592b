//! Every tenant gets its own Kubernetes (issue 8): the real vCluster from the pinned chart,
//! reached at its public URL through the platform Gateway, with the kubeconfig the operator
//! hands out — used exactly as a user would, with kubectl and nothing else.

use std::time::Duration;

use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        core::v1::{Pod, ResourceQuota, Service},
        node::v1::RuntimeClass,
        rbac::v1::PolicyRule,
    },
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use kubespaces_acceptance::{
    Env,
    control_planes::{inventory_of, labelled_objects, pinned_digest, vcluster_flags},
    operator::{OperatorProcess, least_privileged_kubeconfig, sharded_tenant},
    pods::{self, delete_tenant, leftovers, retry_until},
    tenant_cluster::{in_tenant, owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_yaml, wait_for, wait_ready,
};
use kubespaces_operator::{
    api::{KUBECONFIG_SECRET, Tenant, TenantSpec},
    build::access,
    conditions, names,
};

const READY_WITHIN: Duration = Duration::from_secs(300);

fn quantity_milli(q: Option<&Quantity>) -> i128 {
    q.and_then(|q| kubespaces_operator::quantity::parse(&q.0).ok())
        .map_or(0, |n| n.0 / 1_000_000)
}

#[tokio::test]
async fn a_tenant_gets_its_own_kubernetes_at_its_public_url() {
    let env = Env::get();
    let domain = platform_var("KUBESPACES_DOMAIN");
    let client = env.client().await;
    let tenants = env.tenants().await;
    let name = "team-atlas";
    let ns = names::namespace(name);
    if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
        delete_tenant(&env, name).await;
    }
    // The Tenant of SPEC §1, with kubectl only.
    env.apply(&tenant_yaml(
        name,
        "alice@example.com",
        "8",
        "16Gi",
        Some("50Gi"),
    ));
    let tenant = wait_ready(&tenants, name, READY_WITHIN).await;
    let status = tenant.status.clone().expect("a status");
    let api = format!("https://{name}.api.{domain}:443");
    assert_eq!(
        status.endpoints.and_then(|e| e.api).as_deref(),
        Some(api.as_str())
    );
    let secret_ref = status
        .kubeconfig_secret_ref
        .expect("status.kubeconfigSecretRef");
    assert_eq!(
        (secret_ref.name.as_str(), secret_ref.namespace.as_str()),
        (KUBECONFIG_SECRET, ns.as_str())
    );
    let cp = status.control_plane.expect("status.controlPlane");
    assert_eq!(cp.chart_version.as_deref(), Some("0.36.1"));
    assert!(
        cp.chart_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    assert!(
        cp.kubernetes_version
            .as_deref()
            .is_some_and(|v| v.starts_with("v1.")),
        "{cp:?}"
    );
    for type_ in conditions::CONTROL_PLANE_READINESS {
        let c = tenant
            .condition(type_)
            .unwrap_or_else(|| panic!("condition {type_}"));
        assert_eq!(c.status, "True", "{type_}: {}", c.message);
    }

    // Exactly the kubeconfig from the Secret: the tenant's own control plane answers.
    let (kubeconfig, handed_out) = owner_kubeconfig(&env, name).await;
    assert!(
        handed_out.contains(&api),
        "the kubeconfig names {api}:\n{handed_out}"
    );
    let namespaces = in_tenant(&env, &kubeconfig, &["get", "ns", "-o", "name"]).await;
    assert!(namespaces.contains("namespace/kube-system"), "{namespaces}");
    assert!(
        !namespaces.contains("kubespaces-system") && !namespaces.contains(&ns),
        "the tenant sees its own namespaces, not the host's: {namespaces}"
    );
    in_tenant(&env, &kubeconfig, &["get", "nodes"]).await;
    let can = in_tenant(&env, &kubeconfig, &["auth", "can-i", "*", "*"]).await;
    assert_eq!(can.trim(), "yes", "cluster-admin inside the tenant");
    // ... while on the host the owner still owns only her namespace.
    for (args, want) in [
        (
            vec!["auth", "can-i", "create", "deployments", "-n", ns.as_str()],
            "yes",
        ),
        (vec!["auth", "can-i", "list", "namespaces"], "no"),
        (
            vec!["auth", "can-i", "get", "pods", "-n", "kubespaces-system"],
            "no",
        ),
        (vec!["auth", "can-i", "create", "clusterroles"], "no"),
    ] {
        let mut args = args.clone();
        args.extend(["--as", "alice@example.com"]);
        let out = env.kubectl(&args, None);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "host: kubectl {}",
            args.join(" ")
        );
    }

    // Inside the tenant: a Deployment runs as a real pod in the host namespace, on the quota.
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &ns);
    let used_cpu = |q: &ResourceQuota| {
        quantity_milli(
            q.status
                .as_ref()
                .and_then(|s| s.used.as_ref()?.get("requests.cpu")),
        )
    };
    let before = used_cpu(&quotas.get(names::QUOTA).await.expect("the quota"));
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: hello, namespace: default}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: hello}}}}\n  template:\n    metadata: {{labels: {{app: hello}}}}\n    spec:\n      securityContext: {}\n      containers:\n      - name: hello\n        image: {}\n        imagePullPolicy: IfNotPresent\n        securityContext: {}\n        command: [sh, -c, 'echo hello from the tenant; exec sleep 3600']\n        resources: {{requests: {{cpu: 250m, memory: 64Mi}}, limits: {{cpu: 250m, memory: 64Mi}}}}\n",
        pods::RESTRICTED_POD,
        env.busybox_image(),
        pods::RESTRICTED_CONTAINER,
    );
    let out = owner_kubectl(&env, &kubeconfig, &["apply", "-f", "-"], Some(&deployment));
    assert!(out.status.success(), "apply in the tenant: {}", text(&out));
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let host_pod = wait_for(
        "the tenant's pod running in the host namespace",
        Duration::from_secs(120),
        || async {
            pods.list(&ListParams::default())
                .await
                .ok()?
                .into_iter()
                .find(|p| {
                    let n = p.name_any();
                    n.starts_with("hello-")
                        && n.ends_with("-x-default-x-vcluster")
                        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                })
        },
    )
    .await;
    let after = wait_for(
        "the quota to count the tenant's pod",
        Duration::from_secs(60),
        || async {
            let used = used_cpu(&quotas.get(names::QUOTA).await.ok()?);
            (used >= before + 250).then_some(used)
        },
    )
    .await;
    println!(
        "host pod {} runs; quota requests.cpu used {before}m -> {after}m",
        host_pod.name_any()
    );
    // The syncer copies the host pod's status into the tenant a moment after the host pod runs.
    retry_until(
        "the tenant to see its pod running",
        Duration::from_secs(60),
        || {
            let args = [
                "get",
                "pods",
                "-l",
                "app=hello",
                "-o",
                "jsonpath={.items[*].status.phase}",
            ];
            let out = owner_kubectl(&env, &kubeconfig, &args, None);
            let phases = text(&out);
            (phases.trim() == "Running").then_some(()).ok_or(phases)
        },
    )
    .await;

    // Drift: the control plane's StatefulSet and Service deleted by hand come back.
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let old_set = sets.get("vcluster").await.expect("the StatefulSet").uid();
    let old_svc = services.get("vcluster").await.expect("the Service").uid();
    env.kubectl_ok(
        &[
            "-n",
            &ns,
            "delete",
            "statefulset/vcluster",
            "service/vcluster",
            "--wait=false",
        ],
        None,
    );
    wait_for(
        "the StatefulSet and Service restored",
        Duration::from_secs(60),
        || async {
            let set = sets.get_opt("vcluster").await.ok()??.uid();
            let svc = services.get_opt("vcluster").await.ok()??.uid();
            (set != old_set && svc != old_svc).then_some(())
        },
    )
    .await;
    wait_ready(&tenants, name, READY_WITHIN).await;
    in_tenant(&env, &kubeconfig, &["get", "ns"]).await;

    // Revocation: deleting the owner's ServiceAccount inside the tenant makes the handed-out
    // kubeconfig fail with 401; a reconcile then issues a new one that works.
    let out = owner_kubectl(
        &env,
        &kubeconfig,
        &[
            "-n",
            "kube-system",
            "delete",
            "serviceaccount",
            "kubespaces-owner",
        ],
        None,
    );
    assert!(out.status.success(), "revoke: {}", text(&out));
    // (The tenant API caches authentications for a few seconds: refused within them.)
    retry_until(
        "the revoked kubeconfig refused",
        Duration::from_secs(30),
        || {
            let refused = owner_kubectl(&env, &kubeconfig, &["get", "ns"], None);
            if !refused.status.success() && text(&refused).contains("Unauthorized") {
                Ok(())
            } else {
                Err(text(&refused))
            }
        },
    )
    .await;
    env.kubectl_ok(
        &[
            "annotate",
            "tenant",
            name,
            "--overwrite",
            &format!(
                "reconcile.fluxcd.io/requestedAt=revoked-{}",
                std::process::id()
            ),
        ],
        None,
    );
    let renewed = wait_for(
        "a new tenant kubeconfig",
        Duration::from_secs(60),
        || async {
            let (path, text) = owner_kubeconfig(&env, name).await;
            (text != handed_out).then_some(path)
        },
    )
    .await;
    in_tenant(&env, &renewed, &["get", "ns"]).await;

    // Delete: every object the tenant had is gone — namespaced, cluster-scoped, claims, volumes.
    delete_tenant(&env, name).await;
    sweep(&env, name, &ns);
}

/// Nothing of the deleted tenant anywhere ([`leftovers`]).
fn sweep(env: &Env, tenant: &str, ns: &str) {
    let left = leftovers(env, tenant, ns);
    assert!(left.is_empty(), "left of tenant {tenant}: {left:?}");
}

#[tokio::test]
async fn a_chart_that_is_not_the_pinned_one_installs_nothing_until_the_pin_is_fixed() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let shard = "chart-pin";
    let name = "pinned-chart";
    if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
        delete_tenant(&env, name).await;
    }
    let pinned = pinned_digest();
    let flags = |digest: &str| vcluster_flags(digest, &[]);
    let wrong = format!("sha256:{}", "0".repeat(64));
    let mut operator = start_operator(&env, shard, &flags(&wrong)).await;
    tenants
        .create(
            &Default::default(),
            &sharded_tenant(
                name,
                TenantSpec::new("bob@example.com", "2", "4Gi", None),
                shard,
            ),
        )
        .await
        .expect("create the tenant");
    let failed = wait_for(
        "the tenant to stall on the chart digest",
        Duration::from_secs(60),
        || async {
            let t = tenants.get_opt(name).await.ok()??;
            let stalled = t.condition(conditions::STALLED)?;
            (stalled.status == "True").then(|| (t.clone(), stalled.clone()))
        },
    )
    .await;
    assert_eq!(
        failed.0.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed")
    );
    assert_eq!(failed.1.reason, "ChartDigestMismatch");
    assert!(
        failed.1.message.contains(&wrong) && failed.1.message.contains(&pinned),
        "{}",
        failed.1.message
    );
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &names::namespace(name));
    assert!(
        sets.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty(),
        "nothing of the chart installed"
    );
    operator.kill();
    let mut operator = start_operator(&env, shard, &flags(&pinned)).await;
    let ready = wait_ready(&tenants, name, READY_WITHIN).await;
    assert!(ready.condition(conditions::STALLED).is_none());
    operator.assert_every_request_listed().await;
    delete_tenant(&env, name).await;
    operator.kill();
}

#[tokio::test]
async fn a_tenant_with_the_longest_name_works_end_to_end() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let name = format!("l{}", "o".repeat(names::MAX_TENANT_NAME_LEN - 1));
    if matches!(tenants.get_opt(&name).await, Ok(Some(_))) {
        delete_tenant(&env, &name).await;
    }
    env.apply(&tenant_yaml(&name, "carol@example.com", "2", "4Gi", None));
    let tenant: Tenant = wait_ready(&tenants, &name, READY_WITHIN).await;
    assert!(tenant.status.and_then(|s| s.endpoints?.api).is_some());
    let (kubeconfig, _) = owner_kubeconfig(&env, &name).await;
    let can = in_tenant(&env, &kubeconfig, &["auth", "can-i", "*", "*"]).await;
    assert_eq!(can.trim(), "yes");
    delete_tenant(&env, &name).await;
    sweep(&env, &name, &names::namespace(&name));
}

/// A test-owned operator for `shard`, under the chart's roles, with `flags`.
async fn start_operator(env: &Env, shard: &str, flags: &[String]) -> OperatorProcess {
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    OperatorProcess::start_least_privileged(&env.client().await, env.operator_bin(), shard, &args)
        .await
}

/// Creates a Tenant of `owner` (2 CPUs, 4Gi) for the test operator of `shard` and waits until it
/// is Ready.
async fn create_ready(tenants: &Api<Tenant>, name: &str, owner: &str, shard: &str) -> Tenant {
    tenants
        .create(
            &Default::default(),
            &sharded_tenant(name, TenantSpec::new(owner, "2", "4Gi", None), shard),
        )
        .await
        .expect("create the tenant");
    wait_ready(tenants, name, READY_WITHIN).await
}

#[tokio::test]
async fn a_value_change_updates_the_control_plane_in_place_and_prunes_what_it_dropped() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let shard = "values-change";
    let name = "values-change";
    if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
        delete_tenant(&env, name).await;
    }
    let dir = std::env::var("KUBESPACES_STATE")
        .map_or_else(|_| std::env::temp_dir(), std::path::PathBuf::from);
    let before_values = dir.join("values-change-before.yaml");
    let after_values = dir.join("values-change-after.yaml");
    std::fs::write(
        &before_values,
        "controlPlane:\n  advanced:\n    podDisruptionBudget:\n      enabled: true\n",
    )
    .expect("values file");
    std::fs::write(
        &after_values,
        "controlPlane:\n  statefulSet:\n    labels:\n      kubespaces.io/test-value: changed\n",
    )
    .expect("values file");
    let mut operator = start_operator(
        &env,
        shard,
        &vcluster_flags(&pinned_digest(), &[&before_values]),
    )
    .await;
    let ready = create_ready(&tenants, name, "dave@example.com", shard).await;
    let before = labelled_objects(&env, name);
    assert!(
        before
            .iter()
            .any(|(k, _)| k == "PodDisruptionBudget/vcluster"),
        "the first values render a PodDisruptionBudget: {before:?}"
    );
    let inventory = inventory_of(ready);
    assert!(
        inventory
            .iter()
            .any(|e| e.contains("/PodDisruptionBudget/")),
        "{inventory:?}"
    );
    operator.kill();
    // The inventory in the status loses the PodDisruptionBudget (as when the operator stopped
    // between an apply and its status write): the sweep by the rendered-chart label still
    // finds it.
    let kept: Vec<&String> = inventory
        .iter()
        .filter(|e| !e.contains("/PodDisruptionBudget/"))
        .collect();
    tenants
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"controlPlane": {"objects": kept}}})),
        )
        .await
        .expect("drop the PodDisruptionBudget from the inventory");

    // A new operator (as after a chart upgrade) with other values: the StatefulSet is updated
    // in place, the PodDisruptionBudget pruned, nothing else added or left behind.
    let mut operator = start_operator(
        &env,
        shard,
        &vcluster_flags(&pinned_digest(), &[&after_values]),
    )
    .await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &names::namespace(name));
    wait_for(
        "the StatefulSet to carry the new value",
        Duration::from_secs(120),
        || async {
            let set = sets.get_opt("vcluster").await.ok()??;
            (set.labels()
                .get("kubespaces.io/test-value")
                .map(String::as_str)
                == Some("changed"))
            .then_some(())
        },
    )
    .await;
    let after = wait_for(
        "the PodDisruptionBudget pruned",
        Duration::from_secs(60),
        || async {
            let now = labelled_objects(&env, name);
            (!now
                .iter()
                .any(|(k, _)| k.starts_with("PodDisruptionBudget/")))
            .then_some(now)
        },
    )
    .await;
    let expected: Vec<(String, String)> = before
        .iter()
        .filter(|(k, _)| !k.starts_with("PodDisruptionBudget/"))
        .cloned()
        .collect();
    assert_eq!(
        after, expected,
        "the same objects (same uids: updated in place), minus the one dropped"
    );
    let ready = wait_ready(&tenants, name, READY_WITHIN).await;
    let inventory = inventory_of(ready);
    assert!(
        !inventory
            .iter()
            .any(|e| e.contains("/PodDisruptionBudget/")),
        "{inventory:?}"
    );
    operator.assert_every_request_listed().await;
    delete_tenant(&env, name).await;
    operator.kill();
}

#[tokio::test]
async fn kinds_a_chart_renders_are_scoped_by_discovery_applied_once_and_torn_down() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let shard = "host-manifests";
    let name = "host-manifests";
    // A platform's values may make the chart render host objects of any kind. A RuntimeClass is
    // cluster-scoped and on no list of the operator's; a ConfigMap is namespaced.
    let runtime_class = "kubespaces-test-sandbox";
    let classes: Api<RuntimeClass> = Api::all(client.clone());
    if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
        delete_tenant(&env, name).await;
    }
    env.kubectl_ok(
        &[
            "delete",
            "runtimeclass",
            runtime_class,
            "--ignore-not-found",
        ],
        None,
    );
    let dir = std::env::var("KUBESPACES_STATE")
        .map_or_else(|_| std::env::temp_dir(), std::path::PathBuf::from);
    let values = dir.join("host-manifests.yaml");
    std::fs::write(
        &values,
        format!(
            "experimental:\n  deploy:\n    host:\n      manifests: |\n        apiVersion: node.k8s.io/v1\n        \
             kind: RuntimeClass\n        metadata:\n          name: {runtime_class}\n        handler: runc\n        \
             ---\n        apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          name: platform-extra\n        \
             data:\n          note: rendered by the platform's values\n"
        ),
    )
    .expect("values file");
    // The platform that renders a RuntimeClass grants the operator that kind beside the chart's
    // role (the chart's role has no line for it).
    let mut rules = access::operator_cluster_role().rules.unwrap_or_default();
    rules.push(PolicyRule {
        api_groups: Some(vec!["node.k8s.io".into()]),
        resources: Some(vec!["runtimeclasses".into()]),
        verbs: ["get", "create", "patch", "delete"]
            .map(String::from)
            .to_vec(),
        ..PolicyRule::default()
    });
    let kubeconfig = least_privileged_kubeconfig(&client, Some((shard, rules))).await;
    let flags = vcluster_flags(&pinned_digest(), &[&values]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let operator =
        OperatorProcess::start_as(env.operator_bin(), shard, &flags, Some(kubeconfig.path)).await;
    let ready = create_ready(&tenants, name, "erin@example.com", shard).await;
    let inventory = inventory_of(ready);
    let ns = names::namespace(name);
    for entry in [
        format!("node.k8s.io/v1/RuntimeClass//{runtime_class}"),
        format!("v1/ConfigMap/{ns}/platform-extra"),
    ] {
        assert!(inventory.contains(&entry), "{entry} in {inventory:?}");
    }
    let made = classes
        .get(runtime_class)
        .await
        .expect("the rendered RuntimeClass");
    assert_eq!(
        made.labels().get(names::TENANT_LABEL).map(String::as_str),
        Some(name)
    );

    // Ready and unchanged: reconciles read, they do not write.
    operator.poke(&env, name, 0).await;
    let settled = operator.writes().await;
    for round in 1..=3 {
        operator.poke(&env, name, round).await;
    }
    assert_eq!(
        operator.writes().await,
        settled,
        "a Ready tenant whose chart renders kinds on no list costs no writes per reconcile"
    );

    // Teardown takes the cluster-scoped object too, not only what the namespace holds.
    delete_tenant(&env, name).await;
    wait_for(
        "the rendered RuntimeClass deleted with the tenant",
        Duration::from_secs(60),
        || async { matches!(classes.get_opt(runtime_class).await, Ok(None)).then_some(()) },
    )
    .await;
}
