//! The core of the upstream conformance suite against a tenant, in every `make test` (issue 24):
//! e2e.test, built from the cluster's own Kubernetes module (`build-tools.sh --with
//! conformance`), run with nothing but the tenant's kubeconfig over the specs of what a tenant
//! relies on most. Every one of them must pass: a change that breaks conformance fails the run.
//! `make conformance` runs every spec, against a tenant and the host (docs/conformance.md).

use std::{path::Path, process::Command, time::Instant};

use kubespaces_acceptance::{
    Env, built_tool,
    control_planes::{pinned_digest, vcluster_flags},
    operator::{OperatorProcess, sharded_tenant},
    pods::delete_tenant,
    tenant_cluster::owner_kubeconfig,
    wait_ready,
};
use kubespaces_operator::api::TenantSpec;
use serde::Deserialize;

/// The specs, by their full names: custom resources, admission webhooks, watches, garbage
/// collection and quota; Deployments, a ReplicaSet, StatefulSets and a Job; Services' endpoints
/// and cluster DNS; pods, their exec and logs, the downward API, a ConfigMap (as volume and as
/// environment) and a Secret in them; a ServiceAccount's projected token and access reviews.
const CORE: &[&str] = &[
    "[sig-api-machinery] CustomResourceDefinition resources [Privileged:ClusterAdmin] Simple CustomResourceDefinition creating/deleting custom resource definition objects works [Conformance]",
    "[sig-api-machinery] CustomResourceDefinition resources [Privileged:ClusterAdmin] custom resource defaulting for requests and from storage works [Conformance]",
    "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should be able to deny pod and configmap creation [Conformance]",
    "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate configmap [Conformance]",
    "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate custom resource [Conformance]",
    "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should deny crd creation [Conformance]",
    "[sig-api-machinery] Watchers should be able to restart watching from the last resource version observed by the previous watch [Conformance]",
    "[sig-api-machinery] Garbage collector should delete RS created by deployment when not orphaning [Conformance]",
    "[sig-api-machinery] ResourceQuota should create a ResourceQuota and capture the life of a pod. [Conformance]",
    "[sig-apps] Deployment RollingUpdateDeployment should delete old pods and create new ones [Conformance]",
    "[sig-apps] Deployment deployment should support rollover [Conformance]",
    "[sig-apps] ReplicaSet should serve a basic image on each replica with a public image [Conformance]",
    "[sig-apps] StatefulSet Basic StatefulSet functionality [StatefulSetBasic] should have a working scale subresource [Conformance]",
    "[sig-apps] StatefulSet Basic StatefulSet functionality [StatefulSetBasic] should list, patch and delete a collection of StatefulSets [Conformance]",
    "[sig-apps] Job should run a job to completion when tasks sometimes fail and are locally restarted [Conformance]",
    "[sig-network] Services should serve a basic endpoint from pods [Conformance]",
    "[sig-network] Services should serve multiport endpoints from pods [Conformance]",
    "[sig-network] Services should serve endpoints on same port and different protocols [Conformance]",
    "[sig-network] DNS should provide DNS for the cluster [Conformance]",
    "[sig-network] DNS should provide DNS for services [Conformance]",
    "[sig-network] DNS should provide DNS for pods for Subdomain [Conformance]",
    "[sig-node] Pods should be submitted and removed [Conformance] [NodeConformance]",
    "[sig-node] Pods should support remote command execution over websockets [Conformance] [NodeConformance]",
    "[sig-node] Pods should support retrieving logs from the container over websockets [Conformance] [NodeConformance]",
    "[sig-node] Downward API should provide pod name, namespace and IP address as env vars [Conformance] [NodeConformance]",
    "[sig-node] ConfigMap should be consumable via the environment [Conformance] [NodeConformance]",
    "[sig-node] ConfigMap should be consumable as environment variable names with various prefixes [Conformance]",
    "[sig-storage] ConfigMap should be consumable from pods in volume [Conformance] [NodeConformance]",
    "[sig-storage] Secrets should be consumable from pods in volume [Conformance] [NodeConformance]",
    "[sig-auth] ServiceAccounts should mount projected service account token [Conformance]",
    "[sig-auth] SubjectReview should support SubjectReview API operations [Conformance]",
];

/// The tenant's operator, for this test alone: the suite's pods run as root and without the
/// restricted profile's settings, so its tenants get the `baseline` level of Pod Security, the
/// platform setting docs/conformance.md names for it.
const SHARD: &str = "conformance";

/// One spec of ginkgo's JSON report (`--ginkgo.json-report`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Spec {
    container_hierarchy_texts: Option<Vec<String>>,
    leaf_node_text: String,
    leaf_node_type: String,
    state: String,
    #[serde(default)]
    failure: Option<Failure>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Failure {
    message: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Suite {
    spec_reports: Vec<Spec>,
}

impl Spec {
    fn name(&self) -> String {
        let mut parts = self.container_hierarchy_texts.clone().unwrap_or_default();
        parts.push(self.leaf_node_text.clone());
        parts.join(" ")
    }
}

/// A regular expression (ginkgo's focus is one) that matches the spec named `text` and no other:
/// what ginkgo matches starts with the suite's name, then the spec's.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    format!("(^| ){out}$")
}

#[tokio::test]
async fn a_tenant_passes_the_core_of_the_conformance_suite() {
    let env = Env::get();
    // One build-tools.sh step links e2e.test, agnhost, then agnhost's porter files; images.sh
    // needs all three.
    let e2e = built_tool("e2e.test", "conformance");
    built_tool("agnhost-porter", "conformance");
    let state = std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE (set by the harness)");
    // The images the suite's pods run, in the node under the suite's names.
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness");
    let images = Command::new(harness.join("images.sh"))
        .args(["conformance", &state])
        .output()
        .expect("run images.sh conformance");
    assert!(
        images.status.success(),
        "images.sh conformance: {}",
        String::from_utf8_lossy(&images.stderr)
    );

    let mut flags = vcluster_flags(&pinned_digest(), &[]);
    flags.push("--pod-security=baseline".into());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let client = env.client().await;
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &flags).await;
    let tenants = env.tenants().await;
    let name = "conformance-core";
    delete_tenant(&env, name).await;
    let spec = TenantSpec::new("conformance@example.com", "4", "8Gi", Some("10Gi"));
    tenants
        .create(&Default::default(), &sharded_tenant(name, spec, SHARD))
        .await
        .expect("create the tenant");
    wait_ready(&tenants, name, std::time::Duration::from_secs(300)).await;
    let (kubeconfig, _) = owner_kubeconfig(&env, name).await;

    let report = Path::new(&state).join("conformance-core");
    let _ = std::fs::remove_dir_all(&report);
    std::fs::create_dir_all(&report).expect("the report's directory");
    let json = report.join("report.json");
    let log = report.join("e2e.log");
    let mut e2e = Command::new(e2e);
    e2e.arg(format!("--kubeconfig={}", kubeconfig.display()))
        // A hung spec stops the suite after 20 min (it takes about 4), not ginkgo's default hour.
        .args([
            "--provider=skeleton",
            "--ginkgo.no-color",
            "--ginkgo.timeout=20m",
        ])
        .arg(format!("--kubectl-path={}", env.kubectl))
        .arg(format!("--report-dir={}", report.display()))
        .arg(format!("--ginkgo.json-report={}", json.display()))
        .args(
            CORE.iter()
                .map(|s| format!("--ginkgo.focus={}", literal(s))),
        )
        .env(
            "KUBE_TEST_REPO_LIST",
            harness.join("manifests/conformance-registries.yaml"),
        )
        .stdout(std::fs::File::create(&log).expect("the suite's log"))
        .stderr(std::fs::File::create(log.with_extension("err")).expect("the suite's log"));
    let started = Instant::now();
    let status = e2e.status().expect("run e2e.test");
    let wall = started.elapsed();

    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no report in {} ({e}): see {}",
            json.display(),
            log.display()
        )
    });
    let suites: Vec<Suite> = serde_json::from_str(&text).expect("ginkgo's JSON report");
    let specs: Vec<&Spec> = suites
        .iter()
        .flat_map(|s| &s.spec_reports)
        .filter(|s| s.leaf_node_type == "It" && s.state != "skipped")
        .collect();
    let mut failed = vec![];
    for want in CORE {
        match specs.iter().find(|s| s.name() == *want) {
            Some(s) if s.state == "passed" => {}
            Some(s) => failed.push(format!(
                "{want}: {}: {}",
                s.state,
                s.failure.as_ref().map_or("", |f| f.message.as_str())
            )),
            None => failed.push(format!("{want}: not run (renamed or gone from the suite?)")),
        }
    }
    println!(
        "conformance core: {} of {} specs passed in {:.0} s on tenant {name} (e2e.test {status}; log {})",
        CORE.len() - failed.len(),
        CORE.len(),
        wall.as_secs_f64(),
        log.display()
    );
    assert!(
        failed.is_empty(),
        "the tenant failed conformance specs:\n{}",
        failed.join("\n")
    );
    assert!(status.success(), "e2e.test failed: see {}", log.display());
    delete_tenant(&env, name).await;
    operator.kill();
}
