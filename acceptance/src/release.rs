//! The shared cluster's KubeSpaces release, as the harness installs it (`chart.sh install`), and
//! what the install and upgrade tests do to it with Helm.

use std::{path::Path, process::Output};

use crate::{Env, doc_console::repo_root, tenant_cluster::platform_var};

/// Where the harness installs the chart (chart.sh's defaults; docs/install.md names them).
pub const RELEASE: &str = "kubespaces";
pub const NAMESPACE: &str = "kubespaces-system";

/// The chart's version, which names its package (`kubespaces-<version>.tgz`).
pub fn chart_version() -> String {
    let chart = std::fs::read_to_string(repo_root().join("charts/kubespaces/Chart.yaml"))
        .expect("charts/kubespaces/Chart.yaml");
    chart
        .lines()
        .find_map(|l| l.strip_prefix("version: "))
        .expect("the chart's version")
        .trim()
        .to_owned()
}

pub fn helm(args: &[&str]) -> Output {
    std::process::Command::new(platform_var("KUBESPACES_HELM"))
        .args(args)
        .output()
        .expect("run helm")
}

/// The release's chart version as Helm records it (`helm list`).
pub fn installed_chart() -> String {
    let out = helm(&[
        "list",
        "-n",
        NAMESPACE,
        "-f",
        &format!("^{RELEASE}$"),
        "-o",
        "json",
    ]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    list[0]["chart"].as_str().unwrap_or_default().to_owned()
}

/// `helm upgrade` of the release to `chart` with the saved values and `extra`, then every
/// replica of both Deployments rolled out.
pub fn upgrade_to(env: &Env, chart: &str, saved: &Path, extra: &[String]) -> Result<(), String> {
    let saved = saved.to_string_lossy();
    let mut args = vec![
        "upgrade",
        RELEASE,
        chart,
        "-n",
        NAMESPACE,
        "-f",
        &saved,
        "--wait",
        "--timeout",
        "5m",
    ];
    args.extend(extra.iter().map(String::as_str));
    let out = helm(&args);
    if !out.status.success() {
        return Err(format!(
            "helm upgrade to {chart}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for deployment in [format!("{RELEASE}-operator"), format!("{RELEASE}-server")] {
        let out = env.kubectl(
            &[
                "-n",
                NAMESPACE,
                "rollout",
                "status",
                &format!("deployment/{deployment}"),
                "--timeout=180s",
            ],
            None,
        );
        if !out.status.success() {
            return Err(format!(
                "{deployment} did not roll out: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// The images both Deployments run, "operator-image server-image".
pub fn running_images(env: &Env) -> String {
    env.kubectl_ok(
        &[
            "-n",
            NAMESPACE,
            "get",
            "deployment",
            &format!("{RELEASE}-operator"),
            &format!("{RELEASE}-server"),
            "-o",
            "jsonpath={.items[*].spec.template.spec.containers[0].image}",
        ],
        None,
    )
}
