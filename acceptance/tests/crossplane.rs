//! Crossplane v2 composing Tenants: `examples/crossplane/` (XRD, Composition, Function, XR) and
//! the chart's aggregated ClusterRole, tested with Crossplane's own engine.
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
//! - `a_tenant_applied_as_composed_makes_the_xr_ready_with_its_connection_secret`: the composed
//!   Tenant, applied to the cluster, is made Ready by a real operator, which writes its
//!   connection Secret; rendering with those live objects observed makes the XR Ready and gives
//!   it the kubeconfig.
//! - `the_render_commands_of_the_docs_work`: the command block of docs/crossplane.md, "Render it
//!   yourself", run as written (on a free port instead of 9443).
//! - `crossplane_may_manage_tenants_through_the_aggregated_clusterrole`: the chart's ClusterRole
//!   is aggregated into a role selecting Crossplane's label, and whoever holds that role may
//!   do what Crossplane does with Tenants, and no more.

// Its helpers, in a directory Cargo does not take for a test of its own.
#[path = "crossplane/render.rs"]
mod render;

use std::{
    net::TcpListener,
    process::{Command, Stdio},
    time::Duration,
};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    operator::{
        OperatorProcess, SHARD_LABEL, bind_connection_secrets, least_privileged_kubeconfig,
    },
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::{SecretReference, Tenant},
    conditions::CONNECTION_SECRET_READY,
    kubeconfig, names,
    reconcile::connection,
};
use render::{
    Function, dry_run_apply, example, example_xr, first_render, render, repo, scratch_dir,
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

const TEST_NS: &str = "kubespaces-test-crossplane";
const AGGREGATE: &str = "kubespaces-test:crossplane";
const CHART_ROLE: &str = "kubespaces:crossplane";
const VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// A ClusterRole aggregating every ClusterRole with Crossplane's label, as Crossplane's chart
/// installs it, bound to a ServiceAccount that stands for Crossplane.
fn crossplane_stand_in() -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: {TEST_NS}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: crossplane
  namespace: {TEST_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {AGGREGATE}
aggregationRule:
  clusterRoleSelectors:
    - matchLabels:
        rbac.crossplane.io/aggregate-to-crossplane: "true"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {AGGREGATE}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {AGGREGATE}
subjects:
  - kind: ServiceAccount
    name: crossplane
    namespace: {TEST_NS}
"#
    )
}

fn can_i(env: &Env, user: &str, verb: &str, resource: &str, subresource: &str) -> bool {
    let sub = format!("--subresource={subresource}");
    let out = env.kubectl(&["auth", "can-i", verb, resource, &sub, "--as", user], None);
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

#[tokio::test]
async fn crossplane_may_manage_tenants_through_the_aggregated_clusterrole() {
    let env = Env::get();
    // The chart's role: Crossplane's label, Tenants, the seven verbs, nothing else.
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

    env.apply(&crossplane_stand_in());
    // kube-controller-manager's aggregation controller copies the labelled roles' rules in.
    wait_for(
        "the chart's rules aggregated into the Crossplane stand-in role",
        Duration::from_secs(60),
        || async {
            let r: Value = serde_json::from_str(
                &env.kubectl_ok(&["get", "clusterrole", AGGREGATE, "-o", "json"], None),
            )
            .ok()?;
            r["rules"]
                .as_array()?
                .iter()
                .any(|rule| rule["resources"] == json!(["tenants"]))
                .then_some(())
        },
    )
    .await;

    let sa = format!("system:serviceaccount:{TEST_NS}:crossplane");
    for verb in VERBS {
        assert!(
            can_i(&env, &sa, verb, "tenants.kubespaces.io", ""),
            "Crossplane may not {verb} tenants"
        );
    }
    // Crossplane never writes a Tenant's status: the operator does.
    assert!(!can_i(
        &env,
        &sa,
        "update",
        "tenants.kubespaces.io",
        "status"
    ));

    // Crossplane's identity may apply the Tenant the composition makes.
    let function = Function::start();
    let tenant = first_render(&function, &example_xr()).tenant().clone();
    dry_run_apply(&env, &tenant, Some(&sa))
        .unwrap_or_else(|e| panic!("Crossplane may not apply the composed Tenant: {e}"));

    for (kind, name) in [
        ("clusterrolebinding", AGGREGATE),
        ("clusterrole", AGGREGATE),
        ("namespace", TEST_NS),
    ] {
        // Waits until each is gone: a next run must not find the namespace terminating.
        env.kubectl_ok(&["delete", kind, name], None);
    }
}

const LIVE_SHARD: &str = "crossplane";
const LIVE_NS: &str = "kubespaces-test-crossplane-secrets";

#[tokio::test]
async fn a_tenant_applied_as_composed_makes_the_xr_ready_with_its_connection_secret() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {LIVE_NS}\n"
    ));
    // An operator of its own, allowed to write connection Secrets in LIVE_NS (as the chart's
    // tenants.connectionSecretNamespaces does it).
    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    bind_connection_secrets(&client, &kubeconfig, LIVE_NS).await;
    let _operator = OperatorProcess::start_as(
        env.operator_bin(),
        LIVE_SHARD,
        &["--connection-secret-namespaces", LIVE_NS],
        Some(kubeconfig.path.clone()),
    )
    .await;

    let function = Function::start();
    let mut xr = example_xr();
    let name = "xp-live";
    xr["metadata"]["name"] = json!(name);
    xr["spec"]["writeConnectionSecretToRef"] =
        json!({"name": format!("{name}-kubeconfig"), "namespace": LIVE_NS});
    let _ = tenants.delete(name, &DeleteParams::default()).await;
    wait_gone(&tenants, name, Duration::from_secs(60)).await;

    // What Crossplane would apply, for this test's operator. Without the owner reference: the
    // XR it names does not exist here (Crossplane is not installed), and the garbage collector
    // must not take the Tenant for an orphan.
    let mut tenant = first_render(&function, &xr).tenant().clone();
    tenant["metadata"]["labels"][SHARD_LABEL] = json!(LIVE_SHARD);
    tenant["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    env.kubectl_ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=apiextensions.crossplane.io/composed",
            "-f",
            "-",
        ],
        Some(&tenant.to_string()),
    );
    wait_ready(&tenants, name, Duration::from_secs(90)).await;

    // The tenant control plane publishes its kubeconfig (here the test does, in its place), and
    // a reconcile is requested (the operator does not watch Secrets): the operator copies its CA
    // and token, with the tenant's API URL.
    let published = kubeconfig::tenant_kubeconfig(
        "elsewhere",
        "https://elsewhere.example.com:443",
        "Q0E=",
        "xp-live-token",
    );
    let kubeconfig_text = published.as_bytes();
    let source = Secret {
        metadata: ObjectMeta {
            name: Some("tenant-kubeconfig".into()),
            namespace: Some(names::namespace(name)),
            ..ObjectMeta::default()
        },
        data: Some([("config".to_owned(), ByteString(kubeconfig_text.to_vec()))].into()),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(client.clone(), &names::namespace(name))
        .create(&PostParams::default(), &source)
        .await
        .expect("the tenant kubeconfig");
    tenants
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {
                "reconcile.fluxcd.io/requestedAt": "crossplane"}}})),
        )
        .await
        .expect("request a reconcile");
    wait_for(
        "ConnectionSecretReady Written",
        Duration::from_secs(60),
        || async {
            let t = tenants.get_opt(name).await.ok().flatten()?;
            t.condition(CONNECTION_SECRET_READY)
                .filter(|c| c.reason == "Written")
                .map(|_| ())
        },
    )
    .await;

    // Render with the live Tenant and its connection Secret as Crossplane would observe them.
    let live: Value =
        serde_json::from_str(&env.kubectl_ok(&["get", "tenant", name, "-o", "json"], None))
            .unwrap();
    let target = &tenant["spec"]["writeConnectionSecretToRef"];
    let secret: Value = serde_json::from_str(&env.kubectl_ok(
        &[
            "get",
            "secret",
            "-n",
            target["namespace"].as_str().unwrap(),
            target["name"].as_str().unwrap(),
            "-o",
            "json",
        ],
        None,
    ))
    .unwrap();
    let r = render(&function, &xr, &[live], std::slice::from_ref(&secret));
    assert_eq!(r.code, 0, "render failed:\n{}", r.stderr);
    assert_eq!(
        r.xr_condition("Ready"),
        ("True".to_owned(), "Available".to_owned()),
        "{:#}",
        r.xr()
    );
    assert_eq!(r.xr()["status"]["tenant"]["phase"], "Ready");
    assert_eq!(
        r.xr()["status"]["tenant"]["namespace"],
        json!(names::namespace(name))
    );
    let xr_secret = r.composed("Secret").expect("the XR's connection Secret");
    assert_eq!(
        (
            &xr_secret["metadata"]["namespace"],
            &xr_secret["metadata"]["name"]
        ),
        (&json!(LIVE_NS), &json!(format!("{name}-kubeconfig")))
    );
    // The XR's Secret carries exactly the operator's copy: the tenant's CA and token.
    let copied: ByteString =
        serde_json::from_value(xr_secret["data"]["kubeconfig"].clone()).expect("data.kubeconfig");
    let written: ByteString = serde_json::from_value(secret["data"]["kubeconfig"].clone())
        .expect("the copy's kubeconfig");
    assert_eq!(copied, written);
    let credential = kubeconfig::parse(&String::from_utf8_lossy(&copied.0))
        .expect("a kubeconfig as KubeSpaces writes them");
    assert_eq!(
        credential.auth,
        kubeconfig::Auth::Token("xp-live-token".into())
    );
    println!(
        "live Tenant {name}: XR Ready=True, status.tenant={}, connection Secret {LIVE_NS}/{name}-kubeconfig with the tenant kubeconfig",
        r.xr()["status"]["tenant"]
    );

    tenants
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the tenant");
    wait_gone(&tenants, name, Duration::from_secs(90)).await;
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
