//! An app inside a tenant, as its owner deploys it: busybox's httpd behind a Service and an
//! HTTPRoute to the tenant's apps Gateway, and curl from this machine to its public URL (the apps
//! tests, and the upgrade test that keeps asking it).

use std::process::{Command, Output};

use kubespaces_operator::names::control_plane as cp_names;

use crate::{pods, tenant_cluster::platform_var};

/// The app: busybox's httpd answering one page, its Service, and the route for `host`.
pub fn manifests(image: &str, host: &str, answer: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: hello, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: hello}}}}
  template:
    metadata: {{labels: {{app: hello}}}}
    spec:
      securityContext: {restricted_pod}
      containers:
      - name: hello
        image: {image}
        imagePullPolicy: IfNotPresent
        securityContext: {restricted_container}
        command: [sh, -c, 'mkdir -p /tmp/www && echo "{answer}" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www']
        ports: [{{name: http, containerPort: 8080}}]
        readinessProbe: {{httpGet: {{path: /, port: http}}, periodSeconds: 1}}
        resources: {{requests: {{cpu: 50m, memory: 32Mi}}, limits: {{cpu: 100m, memory: 32Mi}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: hello, namespace: default}}
spec:
  selector: {{app: hello}}
  ports: [{{name: http, port: 80, targetPort: http}}]
---
{}"#,
        route("hello", host),
        restricted_pod = pods::RESTRICTED_POD,
        restricted_container = pods::RESTRICTED_CONTAINER,
    )
}

/// An HTTPRoute in the tenant's `default` namespace for `host`, to the tenant's apps Gateway as
/// the tenant sees it.
pub fn route(name: &str, host: &str) -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: default}}
spec:
  parentRefs: [{{name: {gateway}, namespace: {gateway_ns}}}]
  hostnames: ["{host}"]
  rules: [{{backendRefs: [{{name: hello, port: 80}}]}}]
"#,
        gateway = cp_names::APPS_GATEWAY,
        gateway_ns = cp_names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
    )
}

/// `curl` from this machine, verifying the certificate against the platform's test CA (no
/// `-k`); `extra` adds arguments (e.g. `--resolve`).
pub fn curl(url: &str, extra: &[&str]) -> Output {
    let ca = platform_var("KUBESPACES_APPS_CA_FILE");
    Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "5"])
        .args(["--cacert", &ca])
        .args(extra)
        .arg(url)
        .output()
        .expect("curl runs")
}
