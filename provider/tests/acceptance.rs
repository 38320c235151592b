//! Acceptance: the real `terraform` (or `tofu`, via `TF_ACC_TERRAFORM_PATH`) driving this
//! provider against a real API server with the KubeSpaces operator running.
//!
//! Run with the cluster from `make up` (or any cluster whose `KUBECONFIG` has the operator):
//!     TF_ACC=1 cargo test -p terraform-provider-kubespaces --test acceptance -- --ignored
//! Each test has a fresh directory with its own `TF_CLI_CONFIG_FILE`; the provider is loaded
//! through `dev_overrides` from this build, except in the test of `init` from a mirror.
//! Tests run in parallel against one cluster and one operator: each uses tenant names of its
//! own (with the process id) and touches nothing else.
//!
//! The tests: [`lifecycle`], [`failures`], [`installation`]. Their tools: a Terraform working
//! directory ([`workspace`]), the cluster seen from the test ([`cluster`]) and a
//! least-privilege identity ([`service_account`]). The tenants get their own control planes
//! from the operator, as for any user: the endpoints and kubeconfigs the tests read are real.

#[path = "acceptance/cluster.rs"]
mod cluster;
#[path = "acceptance/service_account.rs"]
mod service_account;
#[path = "acceptance/workspace.rs"]
mod workspace;

#[path = "acceptance/failures.rs"]
mod failures;
#[path = "acceptance/installation.rs"]
mod installation;
#[path = "acceptance/lifecycle.rs"]
mod lifecycle;

use std::process::{Command, Stdio};

use cluster::{
    HOLD_MESSAGE, NamespaceHold, WAIT, kubectl, namespace_exists, namespaces, published_kubeconfig,
    tenants, wait_namespace_gone, write_private,
};
use kube::Api;
use kubespaces_acceptance::wait_gone;
use kubespaces_api::{api::KUBECONFIG_SECRET, conditions, names};
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
