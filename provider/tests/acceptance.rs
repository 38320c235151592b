//! Acceptance: the real `terraform` (or `tofu`, via `TF_ACC_TERRAFORM_PATH`) driving this
//! provider against a real API server with the KubeSpaces operator running.
//!
//! Run with the cluster from `make up` (or any cluster whose `KUBECONFIG` has the operator):
//!     TF_ACC=1 cargo test -p terraform-provider-kubespaces --test acceptance -- --ignored
//! The provider is loaded through `dev_overrides` from this build, in a fresh directory per
//! test with its own `TF_CLI_CONFIG_FILE`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use kube::Api;
use kubespaces_operator::api::Tenant;

const BIN: &str = env!("CARGO_BIN_EXE_terraform-provider-kubespaces");

struct Workspace {
    dir: PathBuf,
    terraform: String,
    kubeconfig: String,
}

impl Workspace {
    fn new(test: &str) -> Self {
        assert_eq!(
            std::env::var("TF_ACC").as_deref(),
            Ok("1"),
            "acceptance tests need TF_ACC=1"
        );
        let kubeconfig =
            std::env::var("KUBECONFIG").expect("KUBECONFIG of a cluster with the operator");
        let dir =
            std::env::temp_dir().join(format!("kubespaces-tf-acc-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let plugin_dir = Path::new(BIN).parent().unwrap().display().to_string();
        std::fs::write(
            dir.join("dev.tfrc"),
            format!(
                "provider_installation {{\n  dev_overrides {{\n    \"registry.terraform.io/kubespaces/kubespaces\" = \"{plugin_dir}\"\n    \"registry.opentofu.org/kubespaces/kubespaces\" = \"{plugin_dir}\"\n  }}\n}}\n"
            ),
        )
        .unwrap();
        let terraform =
            std::env::var("TF_ACC_TERRAFORM_PATH").unwrap_or_else(|_| "terraform".into());
        Self {
            dir,
            terraform,
            kubeconfig,
        }
    }

    fn write(&self, body: &str) {
        let provider = format!(
            "terraform {{\n  required_providers {{\n    kubespaces = {{ source = \"kubespaces/kubespaces\" }}\n  }}\n}}\nprovider \"kubespaces\" {{\n  config_path = \"{}\"\n}}\n",
            self.kubeconfig
        );
        std::fs::write(self.dir.join("main.tf"), format!("{provider}{body}")).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.terraform);
        c.args(args)
            .arg("-no-color")
            .current_dir(&self.dir)
            .env("TF_CLI_CONFIG_FILE", self.dir.join("dev.tfrc"))
            .env("TF_IN_AUTOMATION", "1")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        eprintln!(
            "$ terraform {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "terraform {args:?} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `plan -detailed-exitcode`: 0 no changes, 1 error, 2 changes.
    fn plan_code(&self) -> i32 {
        self.run(&["plan", "-detailed-exitcode"])
            .status
            .code()
            .unwrap_or(-1)
    }

    /// Actions planned for one resource, from `show -json` of a saved plan.
    fn planned_actions(&self, address: &str) -> Vec<String> {
        self.ok(&["plan", "-out=plan.out"]);
        let json: serde_json::Value =
            serde_json::from_str(&self.ok(&["show", "-json", "plan.out"])).unwrap();
        json["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["address"] == address)
            .map(|c| serde_json::from_value(c["change"]["actions"].clone()).unwrap())
            .unwrap_or_default()
    }

    fn state_value(&self, address: &str, attr: &str) -> serde_json::Value {
        let json: serde_json::Value = serde_json::from_str(&self.ok(&["show", "-json"])).unwrap();
        json["values"]["root_module"]["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["address"] == address))
            .map(|r| r["values"][attr].clone())
            .unwrap_or(serde_json::Value::Null)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = self.command(&["destroy", "-auto-approve"]).output();
    }
}

async fn tenants() -> Api<Tenant> {
    Api::all(kube::Client::try_default().await.unwrap())
}

async fn wait_gone(api: &Api<Tenant>, name: &str) {
    for _ in 0..120 {
        if api.get_opt(name).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("tenant {name} still exists");
}

fn tenant_tf(name: &str, cpu: &str) -> String {
    format!(
        "resource \"kubespaces_tenant\" \"t\" {{\n  name   = \"{name}\"\n  owner  = \"alice@example.com\"\n  cpu    = \"{cpu}\"\n  memory = \"1Gi\"\n}}\n"
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

    // Import gives the same state back.
    ws.ok(&["state", "rm", "kubespaces_tenant.t"]);
    ws.ok(&["import", "kubespaces_tenant.t", &name]);
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
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn invalid_configuration_fails_at_plan_on_the_attribute() {
    let ws = Workspace::new("invalid");
    ws.write(&tenant_tf("acc-invalid", "lots"));
    let out = ws.run(&["plan"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Invalid cpu"), "{stderr}");
    assert!(
        stderr.contains("cpu    = \"lots\""),
        "the diagnostic quotes the line: {stderr}"
    );
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
    let namespaces: Api<Namespace> = Api::all(kube::Client::try_default().await.unwrap());
    let name = format!("acc-taint-{}", std::process::id());
    // A namespace of the tenant's name that KubeSpaces did not create: the operator refuses
    // it (NamespaceConflict) and the tenant fails permanently.
    let squatter: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": kubespaces_operator::names::namespace(&name)}
    }))
    .unwrap();
    namespaces
        .create(&Default::default(), &squatter)
        .await
        .unwrap();

    ws.write(&tenant_tf(&name, "1"));
    let out = ws.run(&["apply", "-auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    // Terraform wraps diagnostics; compare with whitespace collapsed.
    let stderr = String::from_utf8_lossy(&out.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
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
        .delete(
            &kubespaces_operator::names::namespace(&name),
            &Default::default(),
        )
        .await
        .unwrap();
    // The namespace controller finishes the deletion; until then the name is still taken.
    for _ in 0..120 {
        let ns = kubespaces_operator::names::namespace(&name);
        if namespaces.get_opt(&ns).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());
}
