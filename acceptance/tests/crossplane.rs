//! Crossplane v2 composing Tenants: `examples/crossplane/` (XRD, Composition, Function, XR) and
//! the chart's aggregated ClusterRole, tested with Crossplane itself: running in the cluster for
//! the live path, and its render engine for every phase of a Tenant.
//!
//! Renders go through the real `crossplane internal render` of Crossplane v2.3.4 (one reconcile
//! of the real composite reconciler on an in-memory client), fed by `xp-render` (which only turns
//! YAML files into its protobuf request and its answer into JSON), calling the real
//! function-patch-and-transform, run here as a process in insecure mode on loopback. All three are
//! built from their pinned Go modules by `build-tools.sh --with crossplane`.
//!
//! - `xr_readiness_follows_the_tenant_in_every_phase`: the composed Tenant as observed in each
//!   phase captured from the real cluster (`examples/health/testdata`) decides whether the XR is
//!   Ready; the Tenant's connection Secret reaches the XR's. Prints the verdict table.
//! - `the_composed_tenant_passes_the_crds_validation`: the Tenant the composition makes is
//!   accepted by the installed CRD (server-side apply, dry run, strict field validation), keeps
//!   every field, and bad XR input is refused by the API server with the CRD's messages.
//! - `the_render_commands_of_the_docs_work`: the command block of docs/crossplane.md, "Render it
//!   yourself", run as written (on a free port instead of 9443).
//! - `crossplane_in_the_cluster_composes_a_ready_tenant_and_its_kubeconfig`: Crossplane itself,
//!   installed in the cluster from its own chart (`acceptance/harness/crossplane.sh`, images built
//!   from the same pinned module, the function installed by Crossplane's package manager from its
//!   package), composes a Tenant from an XR through the chart's ClusterRole aggregated into
//!   Crossplane's; a real operator with tenant control planes makes it Ready, and the XR gets
//!   Ready with a Secret whose kubeconfig reaches the tenant.

// Its helpers, in a directory Cargo does not take for a test of its own.
#[path = "crossplane/in_cluster.rs"]
mod in_cluster;
#[path = "crossplane/render.rs"]
mod render;

use std::{
    net::TcpListener,
    process::{Command, Stdio},
    time::Duration,
};

use in_cluster::{Crossplane, SERVICE_ACCOUNT, get, wait_absent, wait_condition};
use k8s_openapi::ByteString;
use kube::api::DeleteParams;
use kubespaces_acceptance::{
    Env,
    control_planes::{pinned_digest, vcluster_flags},
    operator::{
        OperatorProcess, SHARD_LABEL, bind_connection_secrets, least_privileged_kubeconfig,
    },
    tenant_cluster::{assert_reaches_tenant, private_kubeconfig},
    wait_for, wait_gone,
};
use kubespaces_operator::{
    api::{SecretReference, Tenant},
    kubeconfig, names,
    reconcile::connection,
};
use render::{
    Function, dry_run_apply, example, example_xr, first_render, read_yaml, render, repo,
    scratch_dir,
};
use serde_json::{Value, json};

/// The phases captured by tests/health.rs, in the order of the verdict table.
const PHASES: [&str; 7] = [
    "new",
    "provisioning",
    "ready",
    "updated",
    "failed",
    "paused",
    "deleting",
];
/// The phases in which the tenant had been Ready, so that its kubeconfig (and its copy in the
/// connection Secret) exists.
const WITH_SECRET: [&str; 4] = ["ready", "updated", "paused", "deleting"];
const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\n# the tenant kubeconfig\n";

/// The composed Tenant as the API server would hold it in `phase`: its spec as composed, the
/// generation, finalizers, deletion and status of the Tenant captured in that phase.
fn observed_in(composed: &Value, phase: &str) -> Value {
    let path = repo().join(format!("examples/health/testdata/{phase}.json"));
    let captured: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut t = composed.clone();
    for field in ["generation", "finalizers", "deletionTimestamp"] {
        if let Some(v) = captured["metadata"].get(field) {
            t["metadata"][field] = v.clone();
        }
    }
    t["metadata"]["uid"] = json!(format!("0000-{phase}"));
    t["metadata"]["resourceVersion"] = json!("1");
    match captured.get("status") {
        Some(status) => t["status"] = status.clone(),
        None => {
            t.as_object_mut().unwrap().remove("status");
        }
    }
    t
}

/// The Secret the operator writes for `tenant` (reconcile::connection), as Crossplane reads it.
fn connection_secret(tenant: &Value) -> Value {
    let tenant: Tenant = serde_json::from_value(tenant.clone()).expect("a Tenant");
    let target: SecretReference = tenant
        .spec
        .write_connection_secret_to_ref
        .clone()
        .expect("the composed Tenant has spec.writeConnectionSecretToRef");
    let secret = connection::desired(&tenant, &target, ByteString(KUBECONFIG.into()));
    let mut v = serde_json::to_value(secret).unwrap();
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("Secret");
    v
}

#[test]
fn xr_readiness_follows_the_tenant_in_every_phase() {
    let function = Function::start();
    let xr = example_xr();
    let first = first_render(&function, &xr);
    let composed = first.tenant().clone();
    // Nothing observed yet: the XR waits for its Tenant.
    assert_eq!(first.xr_condition("Ready").0, "False", "{:#}", first.xr());

    // phase -> (XR Ready, its reason, the Tenant phase on the XR, XR connection Secret's kubeconfig)
    let mut rows = Vec::new();
    for phase in PHASES {
        let observed = observed_in(&composed, phase);
        let required = if WITH_SECRET.contains(&phase) {
            vec![connection_secret(&observed)]
        } else {
            vec![]
        };
        let r = render(&function, &xr, &[observed], &required);
        assert_eq!(
            r.code,
            0,
            "{phase}: render failed:\n{}\nfunction log:\n{}",
            r.stderr,
            function.log_text()
        );
        assert_eq!(
            r.xr_condition("Synced").0,
            "True",
            "{phase}: XR not Synced: {:#}",
            r.xr()
        );
        let (ready, reason) = r.xr_condition("Ready");
        let tenant_phase = r
            .xr()
            .pointer("/status/tenant/phase")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned();
        let secret = r
            .composed("Secret")
            .map(|s| {
                let name = format!(
                    "{}/{}",
                    s["metadata"]["namespace"].as_str().unwrap_or_default(),
                    s["metadata"]["name"].as_str().unwrap_or_default()
                );
                let kubeconfig: Option<ByteString> =
                    serde_json::from_value(s["data"]["kubeconfig"].clone()).ok();
                let same = kubeconfig.is_some_and(|k| k.0 == KUBECONFIG.as_bytes());
                format!("{name}{}", if same { "" } else { " (kubeconfig differs)" })
            })
            .unwrap_or_else(|| "-".into());
        rows.push((phase, ready, reason, tenant_phase, secret));
    }

    println!(
        "{:<13} {:<9} {:<10} {:<13} XR connection Secret",
        "Tenant", "XR Ready", "reason", "status.tenant"
    );
    for (phase, ready, reason, tenant_phase, secret) in &rows {
        println!("{phase:<13} {ready:<9} {reason:<10} {tenant_phase:<13} {secret}");
    }

    // Ready follows the Tenant's Ready condition. A Tenant that was Ready keeps Ready=True while
    // a change waits (updated: not yet seen; paused: held), so the XR stays Ready then too:
    // Crossplane's readiness checks compare a condition, not its observedGeneration.
    let expected = [
        ("new", "False"),
        ("provisioning", "False"),
        ("ready", "True"),
        ("updated", "True"),
        ("failed", "False"),
        ("paused", "True"),
        ("deleting", "False"),
    ];
    let xr_secret = {
        let r = &xr["spec"]["writeConnectionSecretToRef"];
        format!(
            "{}/{}",
            r["namespace"].as_str().unwrap(),
            r["name"].as_str().unwrap()
        )
    };
    let mut wrong = Vec::new();
    for ((phase, want), (_, ready, reason, _, secret)) in expected.iter().zip(&rows) {
        if ready != want {
            wrong.push(format!(
                "{phase}: XR Ready={ready} ({reason}), expected {want}"
            ));
        }
        let want_secret = if WITH_SECRET.contains(phase) {
            xr_secret.as_str()
        } else {
            "-"
        };
        if secret != want_secret {
            wrong.push(format!(
                "{phase}: XR connection Secret {secret}, expected {want_secret}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "unexpected verdicts:\n{}",
        wrong.join("\n")
    );
    // What the Tenant reports reaches the XR.
    let ready_row = &rows[2];
    assert_eq!(ready_row.3, "Ready");
}

/// Every leaf of `want` is in `got` with the same value.
fn contains(got: &Value, want: &Value, path: &str, missing: &mut Vec<String>) {
    match want {
        Value::Object(m) => {
            for (k, v) in m {
                contains(&got[k], v, &format!("{path}.{k}"), missing);
            }
        }
        _ if got != want => missing.push(format!("{path}: composed {want}, stored {got}")),
        _ => {}
    }
}

#[test]
fn the_composed_tenant_passes_the_crds_validation() {
    let env = Env::get();
    let function = Function::start();
    let xr = example_xr();
    let tenant = first_render(&function, &xr).tenant().clone();
    // A Tenant of that name left by another test (the CLI walk-through's, when it failed) would
    // answer the dry runs with its field managers' conflicts instead of the CRD's verdict.
    let name = tenant["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    env.kubectl_ok(
        &[
            "delete",
            "tenant",
            &name,
            "--ignore-not-found",
            "--timeout=300s",
        ],
        None,
    );

    // The installed CRD accepts it and keeps every field (an unknown one would be refused by
    // the strict validation; a pruned one would be missing from what the server stores).
    let stored = dry_run_apply(&env, &tenant, None)
        .unwrap_or_else(|e| panic!("the API server refuses the composed Tenant: {e}\n{tenant:#}"));
    let mut missing = Vec::new();
    contains(&stored["spec"], &tenant["spec"], "spec", &mut missing);
    assert!(missing.is_empty(), "fields lost: {missing:?}");
    println!("composed Tenant accepted by the CRD (server-side dry run): {stored:#}");

    // The Tenant carries the XR's fields.
    let spec = &xr["spec"];
    assert_eq!(tenant["metadata"]["name"], xr["metadata"]["name"]);
    assert_eq!(tenant["spec"]["owner"], spec["owner"]);
    for q in ["cpu", "memory", "storage"] {
        assert_eq!(
            tenant["spec"]["resources"][q], spec[q],
            "spec.resources.{q}"
        );
    }
    assert_eq!(
        tenant["spec"]["writeConnectionSecretToRef"],
        json!({
            "name": format!("{}-tenant-connection", xr["metadata"]["name"].as_str().unwrap()),
            "namespace": spec["writeConnectionSecretToRef"]["namespace"],
        })
    );

    // Bad XR input reaches the API server, which refuses it with the CRD's messages.
    let cases = [
        ("cpu", json!("0"), "must be greater than zero"),
        ("memory", json!("lots"), "must be a Kubernetes quantity"),
        ("owner", json!("alice"), "must be an email address"),
    ];
    for (field, value, message) in cases {
        let mut bad = xr.clone();
        bad["spec"][field] = value.clone();
        let tenant = first_render(&function, &bad).tenant().clone();
        let refusal = dry_run_apply(&env, &tenant, None)
            .err()
            .unwrap_or_else(|| panic!("a Tenant with {field}={value} was accepted"));
        assert!(
            refusal.contains(message),
            "{field}={value}: refused without \"{message}\": {refusal}"
        );
        println!("{field}={value}: refused: {}", refusal.trim());
    }
    let mut long = xr.clone();
    long["metadata"]["name"] = json!("a".repeat(32));
    let tenant = first_render(&function, &long).tenant().clone();
    let refusal = dry_run_apply(&env, &tenant, None).expect_err("a 32-character Tenant name");
    assert!(refusal.contains("at most 31 characters"), "{refusal}");
}

const CHART_ROLE: &str = "kubespaces:crossplane";
const VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];
const LIVE_SHARD: &str = "crossplane";
const LIVE_NS: &str = "kubespaces-test-crossplane-secrets";
/// A vCluster starting, and Crossplane's next poll of the composed Tenant.
const CONTROL_PLANE_TIMEOUT: Duration = Duration::from_secs(300);

fn can_i(env: &Env, user: &str, verb: &str, resource: &str, subresource: &str) -> bool {
    let sub = format!("--subresource={subresource}");
    let out = env.kubectl(&["auth", "can-i", verb, resource, &sub, "--as", user], None);
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// The chart's role: Crossplane's aggregation label, Tenants, the seven verbs, nothing else.
fn assert_chart_role(env: &Env) {
    let role: Value = serde_json::from_str(
        &env.kubectl_ok(&["get", "clusterrole", CHART_ROLE, "-o", "json"], None),
    )
    .unwrap();
    assert_eq!(
        role["metadata"]["labels"]["rbac.crossplane.io/aggregate-to-crossplane"], "true",
        "{CHART_ROLE} lacks Crossplane's aggregation label"
    );
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["kubespaces.io"], "resources": ["tenants"], "verbs": VERBS}]),
        "{CHART_ROLE}'s rules"
    );
}

/// The example Composition, its Tenant labelled for this test's operator.
fn composition_for_the_test_operator() -> Value {
    let mut composition = read_yaml(&example("composition.yaml"));
    let base = &mut composition["spec"]["pipeline"][0]["input"]["resources"][0]["base"];
    assert_eq!(base["kind"], "Tenant", "the Composition's first resource");
    base["metadata"] = json!({"labels": {SHARD_LABEL: LIVE_SHARD}});
    composition
}

/// Crossplane itself, running in the cluster under the identity and roles its chart gives it,
/// composes a Tenant from an XTenant (the example's XRD and Composition, the function installed
/// from its package): the chart's ClusterRole aggregated into Crossplane's is all that lets it
/// manage Tenants. A real operator with tenant control planes makes the Tenant Ready and writes
/// the tenant's kubeconfig to its connection Secret; Crossplane marks the XR Ready, reports the
/// Tenant on it and composes the XR's Secret with that kubeconfig, which reaches the tenant's
/// own API. Deleting the XR deletes the Tenant.
#[tokio::test]
async fn crossplane_in_the_cluster_composes_a_ready_tenant_and_its_kubeconfig() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    assert_chart_role(&env);
    let name = "xp-live";
    let xr_kind = "xtenant.platform.example.org";
    // Leftovers of an earlier run: the XR first (Crossplane deletes what it composed).
    let _ = env.kubectl(&["delete", "--ignore-not-found", xr_kind, name], None);
    let _ = tenants.delete(name, &DeleteParams::default()).await;
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {LIVE_NS}\n"
    ));
    let crossplane = Crossplane::install();

    // An operator of its own, running tenant control planes under the chart's roles, allowed to
    // write connection Secrets in LIVE_NS (as the chart's tenants.connectionSecretNamespaces
    // does it).
    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    bind_connection_secrets(&client, &kubeconfig, LIVE_NS).await;
    let mut flags = vcluster_flags(&pinned_digest(), &[]);
    flags.extend(["--connection-secret-namespaces".into(), LIVE_NS.into()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _operator = OperatorProcess::start_as(
        env.operator_bin(),
        LIVE_SHARD,
        &flags,
        Some(kubeconfig.path.clone()),
    )
    .await;
    wait_gone(&tenants, name, CONTROL_PLANE_TIMEOUT).await;

    env.apply(&std::fs::read_to_string(example("xrd.yaml")).unwrap());
    wait_condition(
        &env,
        "compositeresourcedefinition",
        "xtenants.platform.example.org",
        "Established",
        Duration::from_secs(120),
    )
    .await;
    env.apply(&composition_for_the_test_operator().to_string());
    let mut xr = example_xr();
    xr["metadata"]["name"] = json!(name);
    xr["spec"]["writeConnectionSecretToRef"] =
        json!({"name": format!("{name}-kubeconfig"), "namespace": LIVE_NS});
    // The XR's kind is served once Crossplane has started its controller.
    wait_for(
        "the XTenant kind served",
        Duration::from_secs(120),
        || async {
            env.kubectl(&["apply", "-f", "-"], Some(&xr.to_string()))
                .status
                .success()
                .then_some(())
        },
    )
    .await;

    let ready = wait_condition(&env, xr_kind, name, "Ready", CONTROL_PLANE_TIMEOUT).await;
    let tenant = tenants.get(name).await.expect("the composed Tenant");
    // Crossplane made it: the XR controls it, and Crossplane's field manager applied it.
    let owner = tenant
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .expect("a controller of the Tenant");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("XTenant", name)
    );
    let managers: Vec<&str> = tenant
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|f| f.manager.as_deref())
        .collect();
    assert!(
        managers
            .iter()
            .any(|m| m.starts_with("apiextensions.crossplane.io")),
        "the Tenant's field managers: {managers:?}"
    );
    assert_eq!(
        tenant.condition("Ready").map(|c| c.status.as_str()),
        Some("True")
    );
    // What the XR reports of its Tenant.
    let status = tenant.status.clone().expect("the Tenant's status");
    assert_eq!(
        ready["status"]["tenant"],
        json!({
            "phase": "Ready",
            "namespace": names::namespace(name),
            "api": status.endpoints.as_ref().and_then(|e| e.api.clone()),
        }),
        "{ready:#}"
    );

    // The XR's Secret, composed by Crossplane, holds the operator's copy of the tenant
    // kubeconfig (the vCluster's own credentials), and it reaches the tenant's API.
    let xr_secret_name = format!("{name}-kubeconfig");
    let xr_secret_of = ["secret", "-n", LIVE_NS, xr_secret_name.as_str()];
    let xr_secret = wait_for(
        "the XR's connection Secret",
        Duration::from_secs(60),
        || async { get(&env, &xr_secret_of) },
    )
    .await;
    let operator_copy = get(
        &env,
        &[
            "secret",
            "-n",
            LIVE_NS,
            &format!("{name}-tenant-connection"),
        ],
    )
    .expect("the Tenant's connection Secret");
    assert_eq!(
        xr_secret["data"]["kubeconfig"], operator_copy["data"]["kubeconfig"],
        "the XR's Secret carries the Tenant's kubeconfig"
    );
    let text: ByteString =
        serde_json::from_value(xr_secret["data"]["kubeconfig"].clone()).expect("data.kubeconfig");
    let text = String::from_utf8(text.0).expect("a UTF-8 kubeconfig");
    let credential = kubeconfig::parse(&text).expect("a kubeconfig as KubeSpaces writes them");
    assert!(matches!(credential.auth, kubeconfig::Auth::Token(_)));
    let api = status.endpoints.as_ref().and_then(|e| e.api.clone());
    let server: Value = serde_yaml::from_str(&text).expect("YAML");
    assert_eq!(
        server["clusters"][0]["cluster"]["server"].as_str(),
        api.as_deref()
    );
    assert_reaches_tenant(
        &env,
        &private_kubeconfig(&format!("{name}.xr.kubeconfig"), &text),
    )
    .await;
    println!(
        "XR {name}: Ready=True, status.tenant={}, Secret {LIVE_NS}/{name}-kubeconfig reaches the tenant at {}",
        ready["status"]["tenant"],
        api.as_deref().unwrap_or_default()
    );

    // Crossplane's own identity holds the chart's rights on Tenants through the aggregation,
    // and not the status, which only the operator writes.
    for verb in VERBS {
        assert!(
            can_i(&env, SERVICE_ACCOUNT, verb, "tenants.kubespaces.io", ""),
            "Crossplane may not {verb} tenants"
        );
    }
    assert!(!can_i(
        &env,
        SERVICE_ACCOUNT,
        "update",
        "tenants.kubespaces.io",
        "status"
    ));
    // The check docs/crossplane.md gives, as written, with the cluster's kubectl.
    let docs = std::fs::read_to_string(repo().join("docs/crossplane.md")).unwrap();
    let block = sh_block(&docs, "To check that Crossplane may manage Tenants");
    let kubectl = std::env::var("KUBESPACES_KUBECTL").expect("KUBESPACES_KUBECTL (the harness's)");
    let path = format!(
        "{}:{}",
        std::path::Path::new(&kubectl).parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", block])
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "yes",
        "{block}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Deleting the XR deletes what Crossplane composed: the Tenant, then its Secret.
    env.kubectl_ok(&["delete", "--wait=false", xr_kind, name], None);
    wait_gone(&tenants, name, CONTROL_PLANE_TIMEOUT).await;
    wait_absent(&env, &[xr_kind, name], Duration::from_secs(120)).await;
    wait_absent(&env, &xr_secret_of, Duration::from_secs(60)).await;
    for (kind, object) in [
        ("composition", "xtenants.platform.example.org"),
        (
            "compositeresourcedefinition",
            "xtenants.platform.example.org",
        ),
        ("namespace", LIVE_NS),
    ] {
        env.kubectl_ok(&["delete", kind, object], None);
    }
    drop(crossplane);
}

/// The first ```sh block after `heading` in `markdown`.
fn sh_block<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let section = &markdown[markdown
        .find(heading)
        .unwrap_or_else(|| panic!("no section {heading}"))..];
    let start = section.find("```sh\n").expect("a ```sh block") + "```sh\n".len();
    let len = section[start..].find("```").expect("the end of the block");
    &section[start..start + len]
}

#[test]
fn the_render_commands_of_the_docs_work() {
    let docs = std::fs::read_to_string(repo().join("docs/crossplane.md")).unwrap();
    let block = sh_block(&docs, "## Render it yourself");
    assert!(block.contains("localhost:9443"), "{block}");
    // The documented port may be taken on a shared machine: the same commands on a free one,
    // with the Function's target annotation following.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let dir = scratch_dir();
    let functions = dir.join("functions.yaml");
    let text = std::fs::read_to_string(example("functions.yaml")).unwrap();
    std::fs::write(
        &functions,
        text.replace("localhost:9443", &format!("localhost:{port}")),
    )
    .unwrap();
    // When a command fails, bash stops before the block's own `kill %1`: the function would
    // then outlive the script, and keep its output open.
    let script = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n".to_owned()
        + &block
            .replace("localhost:9443", &format!("localhost:{port}"))
            .replace(
                "examples/crossplane/functions.yaml",
                functions.to_str().unwrap(),
            );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(repo())
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the docs' commands failed:\n{script}\n{stderr}"
    );
    let rendered: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON from the docs' commands ({e}):\n{stderr}"));
    assert_eq!(rendered["composedResources"][0]["kind"], "Tenant");
    assert_eq!(
        rendered["composedResources"][0]["spec"]["owner"],
        "alice@example.com"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
