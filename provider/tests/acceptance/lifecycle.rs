//! What a tenant goes through under Terraform: create, refresh, import, update, replacement,
//! drift, outputs, destroy; and the example configuration as a user runs it.

use super::*;

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn apply_refresh_import_update_replace_destroy() {
    let ws = Workspace::new("lifecycle");
    let api = tenants().await;
    let name = format!("acc-{}", std::process::id());
    let renamed = format!("{name}-b");

    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["apply", "-auto-approve"]);
    assert_eq!(ws.state_value("kubespaces_tenant.t", "phase"), "Ready");
    let live = api.get(&name).await.unwrap();
    assert!(live.is_ready(), "Ready at the current generation");
    assert_eq!(ws.plan_code(), 0, "plan after apply is empty");
    ws.ok(&["apply", "-refresh-only", "-auto-approve"]);
    assert_eq!(ws.plan_code(), 0, "plan after refresh is empty");

    // Import gives the same state back (timeouts aside: they live only in configuration).
    let without_timeouts = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("timeouts");
        v
    };
    let applied = without_timeouts(ws.resource_values("kubespaces_tenant.t"));
    ws.ok(&["state", "rm", "kubespaces_tenant.t"]);
    ws.ok(&["import", "kubespaces_tenant.t", &name]);
    assert_eq!(
        without_timeouts(ws.resource_values("kubespaces_tenant.t")),
        applied
    );
    assert_eq!(ws.plan_code(), 0, "plan after import is empty");

    // Same quota in other notation: nothing to do. Another quota: in place.
    ws.write(&tenant_tf(&name, "1000m"));
    assert_eq!(ws.plan_code(), 0);
    ws.write(&tenant_tf(&name, "2"));
    assert_eq!(ws.planned_actions("kubespaces_tenant.t"), vec!["update"]);
    ws.ok(&["apply", "-auto-approve"]);
    let live = api.get(&name).await.unwrap();
    assert_eq!(live.spec.resources.cpu.0, "2");
    assert!(live.is_ready());
    assert_eq!(quota_cpu(&name).await, "2", "the quota follows");
    assert_eq!(ws.plan_code(), 0);

    // A new name replaces the tenant.
    ws.write(&tenant_tf(&renamed, "2"));
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "the old tenant is gone"
    );
    assert!(api.get(&renamed).await.unwrap().is_ready());

    // Deleted behind Terraform's back: the next plan creates it again.
    api.delete(&renamed, &Default::default()).await.unwrap();
    wait_gone(&api, &renamed, WAIT).await;
    assert_eq!(ws.planned_actions("kubespaces_tenant.t"), vec!["create"]);
    ws.ok(&["apply", "-auto-approve"]);

    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&renamed).await.unwrap().is_none(),
        "destroy waits until gone"
    );
    assert!(
        !namespace_exists(&names::namespace(&renamed)).await,
        "the namespace is gone too"
    );
}

/// The cpu the tenant's ResourceQuota enforces for the tenant's own workloads: its hard
/// `requests.cpu` less what the tenant's control plane takes (`status.controlPlane.footprint`),
/// in whole cores when whole, else in millicores.
async fn quota_cpu(tenant: &str) -> String {
    use k8s_openapi::api::core::v1::ResourceQuota;
    use kubespaces_api::quantity;
    let client = kube::Client::try_default().await.unwrap();
    let quota = Api::<ResourceQuota>::namespaced(client, &names::namespace(tenant))
        .get(names::QUOTA)
        .await
        .unwrap();
    let hard = quota.spec.unwrap().hard.unwrap()["requests.cpu"].0.clone();
    let footprint = tenants()
        .await
        .get(tenant)
        .await
        .unwrap()
        .status
        .and_then(|s| s.control_plane)
        .and_then(|c| c.footprint.get("requests.cpu").cloned())
        .map_or("0".to_owned(), |q| q.0);
    let milli = |q: &str| quantity::parse(q).unwrap().0 / 1_000_000;
    let own = milli(&hard) - milli(&footprint);
    if own % 1000 == 0 {
        (own / 1000).to_string()
    } else {
        format!("{own}m")
    }
}

/// A change made behind Terraform's back (`kubectl edit`) shows as drift on the attribute it
/// touched, and the next apply puts the configuration back, in place.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn drift_made_outside_terraform_is_planned_back() {
    use kube::api::{Patch, PatchParams};
    let ws = Workspace::new("drift");
    let api = tenants().await;
    let name = format!("acc-drift-{}", std::process::id());
    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["apply", "-auto-approve"]);

    let edit = serde_json::json!({"spec": {"resources": {"cpu": "3"}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    assert_eq!(ws.planned_actions("kubespaces_tenant.t"), vec!["update"]);
    let plan = collapsed(ws.ok(&["plan"]).as_bytes());
    assert!(plan.contains(r#"~ cpu = "3" -> "1""#), "{plan}");
    ws.ok(&["apply", "-auto-approve"]);
    let live = api.get(&name).await.unwrap();
    assert_eq!(live.spec.resources.cpu.0, "1");
    assert!(live.is_ready());
    assert_eq!(quota_cpu(&name).await, "1");
    assert_eq!(ws.plan_code(), 0);
}

/// Endpoints and kubeconfig flow from the Tenant's status to Terraform outputs, through the
/// resource and the data source: the tenant's own control plane publishes them, and the
/// kubeconfig Terraform outputs answers from it.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn endpoints_and_kubeconfig_flow_to_outputs() {
    let ws = Workspace::new("outputs");
    let api = tenants().await;
    let name = format!("acc-out-{}", std::process::id());
    ws.write(&format!(
        "{}{}",
        tenant_tf(&name, "1"),
        r#"
data "kubespaces_tenant" "d" {
  name = kubespaces_tenant.t.name
}
output "api" {
  value = kubespaces_tenant.t.api_endpoint
}
output "apps" {
  value = kubespaces_tenant.t.apps_domain
}
output "kubeconfig" {
  value     = kubespaces_tenant.t.kubeconfig
  sensitive = true
}
output "data_api" {
  value = data.kubespaces_tenant.d.api_endpoint
}
"#
    ));
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());

    // Ready means the control plane answers: its endpoint and kubeconfig are published.
    let domain =
        std::env::var("KUBESPACES_DOMAIN").expect("KUBESPACES_DOMAIN (the cluster's base domain)");
    let api_url = format!("https://{name}.api.{domain}:443");
    let status = api.get(&name).await.unwrap().status.unwrap_or_default();
    assert_eq!(
        status.endpoints.and_then(|e| e.api).as_deref(),
        Some(api_url.as_str())
    );
    let secret_ref = status
        .kubeconfig_secret_ref
        .expect("status.kubeconfigSecretRef");
    let published = published_kubeconfig(&secret_ref.namespace, &secret_ref.name).await;

    ws.ok(&["apply", "-refresh-only", "-auto-approve"]);
    let outputs = ws.outputs();
    assert_eq!(outputs["api"], api_url.as_str());
    // The tenant's apps domain, where the platform exposes apps (else null).
    if std::env::var("KUBESPACES_APPS_CLUSTER_ISSUER").is_ok_and(|v| !v.is_empty()) {
        assert_eq!(outputs["apps"], format!("*.{name}.apps.{domain}").as_str());
    } else {
        assert!(outputs["apps"].is_null(), "{}", outputs["apps"]);
    }
    assert_eq!(outputs["kubeconfig"], published.as_str());
    assert_eq!(outputs["data_api"], api_url.as_str());
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(outputs["kubeconfig"].as_str().unwrap()).unwrap();
    assert_eq!(
        kubeconfig.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.as_deref()),
        Some(api_url.as_str()),
        "the kubeconfig names the tenant API"
    );
    // With exactly the kubeconfig Terraform outputs, the tenant's own API answers.
    let file = ws.dir.join("tenant.kubeconfig");
    write_private(&file, outputs["kubeconfig"].as_str().unwrap());
    // The tenant shows a node once a pod of its own (its CoreDNS) is scheduled on it, which
    // may follow Ready by a moment.
    let nodes = kubespaces_acceptance::wait_for("a node in the tenant", WAIT, || async {
        let nodes = kubectl(&[
            "--kubeconfig",
            file.to_str().unwrap(),
            "get",
            "nodes",
            "-o",
            "name",
        ]);
        nodes.starts_with("node/").then_some(nodes)
    })
    .await;
    println!("the tenant's nodes: {nodes}");
    let namespaces = kubectl(&[
        "--kubeconfig",
        file.to_str().unwrap(),
        "get",
        "ns",
        "-o",
        "name",
    ]);
    assert!(
        !namespaces.contains(&names::namespace(&name)),
        "answered by the tenant, not the host: {namespaces}"
    );
    assert_eq!(ws.plan_code(), 0, "plan after refresh is empty");

    // A status that points at any other Secret is not followed: the refresh warns, naming it,
    // and the kubeconfig stays the one the operator's Secret held. (The tenant is paused first:
    // the operator would otherwise put its own reference back at once.)
    use kube::api::{Patch, PatchParams};
    let pause =
        serde_json::json!({"metadata": {"annotations": {names::PAUSED_ANNOTATION: "true"}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&pause))
        .await
        .unwrap();
    kubespaces_acceptance::wait_for("the operator to see the pause", WAIT, || async {
        let t = api.get(&name).await.ok()?;
        (t.condition(conditions::SYNCED)?.reason == "ReconcilePaused").then_some(())
    })
    .await;
    let elsewhere = serde_json::json!({"status": {"kubeconfigSecretRef": {
        "name": "kubeconfig", "namespace": "kube-system",
    }}});
    let params = PatchParams {
        field_manager: Some("kubespaces-acceptance-status-edit".to_owned()),
        ..PatchParams::default()
    };
    api.patch_status(&name, &params, &Patch::Merge(&elsewhere))
        .await
        .unwrap();
    let out = ws.run(&["apply", "-refresh-only", "-auto-approve"]);
    assert!(out.status.success());
    let said = collapsed(&[out.stdout, out.stderr].concat());
    assert!(
        said.contains("Could not read the tenant kubeconfig")
            && said.contains("kube-system/kubeconfig"),
        "{said}"
    );
    assert_eq!(ws.outputs()["kubeconfig"], published.as_str());
    let resume = serde_json::json!({"metadata": {"annotations": {names::PAUSED_ANNOTATION: null}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&resume))
        .await
        .unwrap();

    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
    wait_namespace_gone(&names::namespace(&name)).await;
}

/// `examples/terraform` as a user runs it: both tenants Ready, the outputs filled, and on
/// destroy the `Orphan` tenant leaves its namespace behind while the other takes it along.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn the_example_configuration_applies_and_destroys() {
    let ws = Workspace::new("example");
    // The example as shipped, but for its tenant names: the shared test cluster already has a
    // team-atlas (the SPEC's Tenant, from the operator's tests).
    let pid = std::process::id();
    let (atlas, borealis) = (format!("acc-atlas-{pid}"), format!("acc-borealis-{pid}"));
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/terraform");
    for file in std::fs::read_dir(&example).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "tf") {
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text
                .replace("\"team-atlas\"", &format!("\"{atlas}\""))
                .replace("\"team-borealis\"", &format!("\"{borealis}\""));
            std::fs::write(ws.dir.join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let main_tf = std::fs::read_to_string(ws.dir.join("main.tf")).unwrap();
    assert!(main_tf.contains(&atlas) && main_tf.contains(&borealis));
    let api = tenants().await;
    let kubeconfig = format!("kubeconfig={}", std::env::var("KUBECONFIG").unwrap());
    ws.ok(&["apply", "-auto-approve", "-var", &kubeconfig]);
    for name in [&atlas, &borealis] {
        assert!(api.get(name).await.unwrap().is_ready(), "{name} is Ready");
    }
    assert_eq!(
        ws.outputs()["namespaces"],
        serde_json::json!([names::namespace(&atlas), names::namespace(&borealis)])
    );

    ws.ok(&["destroy", "-auto-approve", "-var", &kubeconfig]);
    for name in [&atlas, &borealis] {
        assert!(api.get_opt(name).await.unwrap().is_none(), "{name} is gone");
    }
    wait_namespace_gone(&names::namespace(&atlas)).await;
    let orphaned = names::namespace(&borealis);
    assert!(
        namespace_exists(&orphaned).await,
        "deletion_policy = \"Orphan\" keeps the namespace"
    );
    namespaces()
        .await
        .delete(&orphaned, &Default::default())
        .await
        .unwrap();
    wait_namespace_gone(&orphaned).await;
}
