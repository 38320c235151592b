//! Acceptance: the real `terraform` (or `tofu`, via `TF_ACC_TERRAFORM_PATH`) driving this
//! provider against a real API server with the KubeSpaces operator running.
//!
//! Run with the cluster from `make up` (or any cluster whose `KUBECONFIG` has the operator):
//!     TF_ACC=1 cargo test -p terraform-provider-kubespaces --test acceptance -- --ignored
//! Each test has a fresh directory with its own `TF_CLI_CONFIG_FILE`; the provider is loaded
//! through `dev_overrides` from this build, except in the test of `init` from a mirror.
//! Tests run in parallel against one cluster and one operator: each uses tenant names of its
//! own (with the process id) and touches nothing else.

#[path = "acceptance/cluster.rs"]
mod cluster;
#[path = "acceptance/control_plane_stand_in.rs"]
mod control_plane_stand_in;
#[path = "acceptance/service_account.rs"]
mod service_account;
#[path = "acceptance/workspace.rs"]
mod workspace;

use std::process::{Command, Stdio};
use std::time::Duration;

use cluster::{
    HOLD_MESSAGE, NamespaceHold, namespace_exists, namespaces, reconcile_now, tenants, wait_gone,
    wait_namespace_gone,
};
use kube::Api;
use kubespaces_operator::{conditions, names};
use workspace::{Workspace, collapsed};

fn tenant_tf(name: &str, cpu: &str) -> String {
    tenant_tf_with(name, cpu, "")
}

/// One `kubespaces_tenant.t`, with `extra` (arguments or blocks) at the end of its body.
fn tenant_tf_with(name: &str, cpu: &str, extra: &str) -> String {
    format!(
        "resource \"kubespaces_tenant\" \"t\" {{\n  name   = \"{name}\"\n  owner  = \"alice@example.com\"\n  cpu    = \"{cpu}\"\n  memory = \"1Gi\"\n{extra}}}\n"
    )
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn lifecycle() {
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
    wait_gone(&api, &renamed).await;
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

/// The cpu the tenant's ResourceQuota enforces.
async fn quota_cpu(tenant: &str) -> String {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let client = kube::Client::try_default().await.unwrap();
    let quota = Api::<ResourceQuota>::namespaced(client, &names::namespace(tenant))
        .get(names::QUOTA)
        .await
        .unwrap();
    quota.spec.unwrap().hard.unwrap()["requests.cpu"].0.clone()
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn invalid_configuration_fails_at_plan_on_the_attribute() {
    let ws = Workspace::new("invalid");
    ws.write(&tenant_tf("acc-invalid", "lots").replace("alice@example.com", "alice"));
    let out = ws.run(&["plan"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each diagnostic names its attribute and quotes its line.
    assert!(stderr.contains("Invalid cpu"), "{stderr}");
    assert!(stderr.contains("cpu    = \"lots\""), "{stderr}");
    assert!(stderr.contains("Invalid owner"), "{stderr}");
    assert!(stderr.contains("owner  = \"alice\""), "{stderr}");
    assert!(stderr.contains("is not an email address"), "{stderr}");
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn interrupt_during_apply_keeps_the_tenant_in_state() {
    use std::os::unix::process::CommandExt;
    let ws = Workspace::new("sigint");
    let api = tenants().await;
    let name = format!("acc-int-{}", std::process::id());
    ws.write(&tenant_tf(&name, "1"));
    // Its own process group, like a terminal's foreground job: Ctrl-C reaches Terraform
    // and the provider alike.
    let mut child = ws
        .command(&["apply", "-auto-approve"])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if api.get_opt(&name).await.unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pgid = format!("-{}", child.id());
    Command::new("kill")
        .args(["-INT", "--", &pgid])
        .status()
        .unwrap();
    child.wait().unwrap();
    assert!(
        api.get_opt(&name).await.unwrap().is_some(),
        "the tenant was created"
    );
    let state = ws.ok(&["state", "list"]);
    assert!(
        state.contains("kubespaces_tenant.t"),
        "and recorded: {state}"
    );
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn failed_create_leaves_a_tainted_tenant_that_the_next_apply_replaces() {
    use k8s_openapi::api::core::v1::Namespace;
    let ws = Workspace::new("tainted");
    let api = tenants().await;
    let namespaces = namespaces().await;
    let name = format!("acc-taint-{}", std::process::id());
    // A namespace of the tenant's name that KubeSpaces did not create: the operator refuses
    // it (NamespaceConflict) and the tenant fails permanently.
    let squatter: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": names::namespace(&name)}
    }))
    .unwrap();
    namespaces
        .create(&Default::default(), &squatter)
        .await
        .unwrap();

    ws.write(&tenant_tf(&name, "1"));
    let out = ws.run(&["apply", "-auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = collapsed(&out.stderr);
    assert!(
        stderr.contains(&format!("Tenant \"{name}\" failed")),
        "{stderr}"
    );
    assert!(
        stderr.contains("already exists"),
        "the operator's reason: {stderr}"
    );
    assert!(
        ws.ok(&["show"]).contains("(tainted)"),
        "kept in state, tainted"
    );
    assert!(
        api.get_opt(&name).await.unwrap().is_some(),
        "and not leaked"
    );

    namespaces
        .delete(&names::namespace(&name), &Default::default())
        .await
        .unwrap();
    wait_namespace_gone(&names::namespace(&name)).await;
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn create_timeout_leaves_a_tainted_tenant_that_the_next_apply_replaces() {
    let ws = Workspace::new("timeout");
    let api = tenants().await;
    let name = format!("acc-hold-{}", std::process::id());
    let namespace = names::namespace(&name);
    // Provisioning genuinely stuck: the API server refuses the tenant's namespace, so the
    // operator keeps retrying and the tenant never gets Ready.
    let hold = NamespaceHold::new(
        &format!("kubespaces-acc-hold-{}", std::process::id()),
        &namespace,
    )
    .await;

    ws.write(&tenant_tf_with(
        &name,
        "1",
        "  timeouts {\n    create = \"5s\"\n  }\n",
    ));
    let out = ws.run(&["apply", "-auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = collapsed(&out.stderr);
    assert!(
        stderr.contains(&format!("Timed out waiting for tenant \"{name}\"")),
        "{stderr}"
    );
    assert!(stderr.contains("Not Ready after 5s"), "{stderr}");
    assert!(
        stderr.contains(HOLD_MESSAGE),
        "the error gives the operator's reason: {stderr}"
    );
    assert!(
        ws.ok(&["show"]).contains("(tainted)"),
        "kept in state, tainted"
    );
    let stuck = api.get_opt(&name).await.unwrap().expect("and not leaked");
    let synced = stuck
        .condition(conditions::SYNCED)
        .map(|c| c.message.as_str());
    assert!(
        synced.is_some_and(|m| m.contains(HOLD_MESSAGE)),
        "stuck because of the hold: {synced:?}"
    );
    assert!(!namespace_exists(&namespace).await, "the hold held");

    hold.release().await;
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());

    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
    wait_namespace_gone(&namespace).await;
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn init_installs_the_provider_from_a_filesystem_mirror() {
    let out = Command::new(workspace::BIN)
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        workspace::PROVIDER_VERSION,
        "mirrored under the version the provider reports"
    );
    let ws = Workspace::with_filesystem_mirror("mirror");
    let api = tenants().await;
    let name = format!("acc-mirror-{}", std::process::id());

    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["init"]);
    let lock = std::fs::read_to_string(ws.dir.join(".terraform.lock.hcl"))
        .expect("init writes the dependency lock file");
    let lock = collapsed(lock.as_bytes());
    assert!(
        workspace::PROVIDER_HOSTS
            .iter()
            .any(|h| lock.contains(&format!("provider \"{h}/kubespaces/kubespaces\""))),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("version = \"{}\"", workspace::PROVIDER_VERSION)),
        "{lock}"
    );
    assert!(lock.contains("\"h1:"), "a hash of the package: {lock}");

    ws.ok(&["apply", "-auto-approve"]);
    assert_eq!(ws.state_value("kubespaces_tenant.t", "phase"), "Ready");
    assert!(api.get(&name).await.unwrap().is_ready());
    assert_eq!(ws.plan_code(), 0, "plan after apply is empty");
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
}

/// Endpoints and kubeconfig flow from the Tenant's status to Terraform outputs, through the
/// resource and the data source.
///
/// Stand-in: the operator does not run tenant control planes yet, so nothing publishes
/// `status.endpoints` or `status.kubeconfigSecretRef`. The test plays that part
/// ([`control_plane_stand_in`]): it writes a kubeconfig Secret in the tenant's namespace and
/// merge-patches the status subresource under its own field manager, which is all the provider
/// reads. It also checks that the operator's own status writes keep those fields, as they must
/// once the control plane publishes them for real.
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

    let published = control_plane_stand_in::publish(&name).await;
    // The operator's next status write (made on request here) keeps what the control plane
    // published.
    reconcile_now(&api, &name).await;
    let status = api.get(&name).await.unwrap().status.unwrap_or_default();
    assert_eq!(status.endpoints, Some(published.endpoints()));
    assert_eq!(status.kubeconfig_secret_ref, Some(published.secret_ref()));

    ws.ok(&["apply", "-refresh-only", "-auto-approve"]);
    let outputs = ws.outputs();
    assert_eq!(outputs["api"], published.api.as_str());
    assert_eq!(
        outputs["apps"],
        format!("*.{name}.apps.example.com"),
        "a domain, not a URL"
    );
    assert_eq!(outputs["kubeconfig"], published.kubeconfig.as_str());
    assert_eq!(outputs["data_api"], published.api.as_str());
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(outputs["kubeconfig"].as_str().unwrap()).unwrap();
    assert_eq!(
        kubeconfig.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.as_deref()),
        Some(published.api.as_str()),
        "the kubeconfig names the tenant API"
    );
    assert_eq!(ws.plan_code(), 0, "plan after refresh is empty");

    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
    wait_namespace_gone(&names::namespace(&name)).await;
}

/// The provider configured from the environment alone, as CI systems do it: `KUBE_HOST`,
/// `KUBE_TOKEN` and `KUBE_CLUSTER_CA_CERT_DATA`, for a ServiceAccount that may manage Tenants and
/// nothing else. The token reaches neither Terraform's log nor its state.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn host_token_and_ca_from_the_environment_with_least_privilege() {
    let pid = std::process::id();
    let api = tenants().await;
    let name = format!("acc-env-{pid}");
    let identity = service_account::TenantManager::new(&format!("kubespaces-acc-tf-{pid}")).await;
    let cluster = service_account::connection();
    let mut ws = Workspace::new("env");
    ws.set_env("KUBE_HOST", &cluster.host);
    ws.set_env("KUBE_TOKEN", &identity.token);
    ws.set_env("KUBE_CLUSTER_CA_CERT_DATA", &cluster.ca);
    // No kubeconfig to fall back on.
    ws.set_env("KUBECONFIG", "/nonexistent/kubeconfig");
    let log = ws.dir.join("terraform.log");
    ws.set_env("TF_LOG", "trace");
    ws.set_env("TF_LOG_PATH", &log.display().to_string());
    ws.write_with_provider_config("", &tenant_tf(&name, "1"));

    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());
    assert_eq!(ws.plan_code(), 0);
    ws.write_with_provider_config("", &tenant_tf(&name, "2"));
    ws.ok(&["apply", "-auto-approve"]);
    assert_eq!(api.get(&name).await.unwrap().spec.resources.cpu.0, "2");
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(api.get_opt(&name).await.unwrap().is_none());

    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("ReadResource"),
        "the trace log covers the provider's calls"
    );
    assert!(!log.contains(&identity.token), "the token is not logged");
    let state = std::fs::read_to_string(ws.dir.join("terraform.tfstate")).unwrap();
    assert!(!state.contains(&identity.token), "nor kept in state");
}

/// `examples/terraform` as a user runs it: both tenants Ready, the outputs filled, and on
/// destroy the `Orphan` tenant leaves its namespace behind while the other takes it along.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn the_example_configuration_applies_and_destroys() {
    let ws = Workspace::new("example");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/terraform");
    for file in std::fs::read_dir(&example).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "tf") {
            std::fs::copy(&path, ws.dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let api = tenants().await;
    let kubeconfig = format!("kubeconfig={}", std::env::var("KUBECONFIG").unwrap());
    ws.ok(&["apply", "-auto-approve", "-var", &kubeconfig]);
    for name in ["team-atlas", "team-borealis"] {
        assert!(api.get(name).await.unwrap().is_ready(), "{name} is Ready");
    }
    assert_eq!(
        ws.outputs()["namespaces"],
        serde_json::json!([
            names::namespace("team-atlas"),
            names::namespace("team-borealis")
        ])
    );

    ws.ok(&["destroy", "-auto-approve", "-var", &kubeconfig]);
    for name in ["team-atlas", "team-borealis"] {
        assert!(api.get_opt(name).await.unwrap().is_none(), "{name} is gone");
    }
    wait_namespace_gone(&names::namespace("team-atlas")).await;
    let orphaned = names::namespace("team-borealis");
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

/// Pointed at an API server that does not serve Tenants (another cluster, a wrong context; here
/// a path on the right server where nothing is served), the provider says so instead of taking
/// the tenants for deleted: the plan fails and the state keeps them, and destroy forgets nothing.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn a_cluster_without_the_tenant_api_is_an_error_not_an_empty_cluster() {
    let pid = std::process::id();
    let api = tenants().await;
    let name = format!("acc-wrong-{pid}");
    // The kubeconfig's own user: only someone allowed to ask is told 404.
    let cluster = service_account::connection();
    let ws = Workspace::new("wrong");
    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["apply", "-auto-approve"]);

    let ca_path = ws.dir.join("ca.pem");
    std::fs::write(&ca_path, &cluster.ca).unwrap();
    ws.write_with_provider_config(
        &format!(
            "  host                   = \"{}/not-the-kubernetes-api\"\n  token                  = \"{}\"\n  cluster_ca_certificate = file(\"{}\")\n",
            cluster.host,
            cluster.admin_token,
            ca_path.display()
        ),
        &tenant_tf(&name, "1"),
    );
    for command in [&["plan"][..], &["destroy", "-auto-approve"][..]] {
        let out = ws.run(command);
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let stderr = collapsed(&out.stderr);
        assert!(
            stderr.contains("does not serve the Tenant API"),
            "{command:?}: {stderr}"
        );
        assert!(
            ws.ok(&["state", "list"]).contains("kubespaces_tenant.t"),
            "{command:?} keeps the tenant in state"
        );
    }
    assert!(
        api.get(&name).await.unwrap().is_ready(),
        "and it is untouched"
    );

    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(api.get_opt(&name).await.unwrap().is_none());
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
