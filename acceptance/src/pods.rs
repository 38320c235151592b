//! Pods that really run, on the harness's real node (kubelet, containerd, CNI, kube-proxy,
//! CoreDNS, kube-router): builders for busybox pods and helpers to exec into them, wait for them
//! and talk to them.
//!
//! Every pod runs the busybox image the harness imported into the node's containerd
//! (`KUBESPACES_BUSYBOX_IMAGE`; there is no registry to pull from) and is pinned to a real node,
//! so the scheduler never hands it to kwok's fake node, where nothing would run.

use std::{
    collections::BTreeMap,
    io::Write,
    process::{Output, Stdio},
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Node, Pod, PodSpec, ResourceRequirements, Service, ServiceAccount},
};
use kube::{
    Api, Client,
    api::{ListParams, ObjectMeta},
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{Env, tenant_yaml, var, wait_for, wait_gone, wait_ready};
use kubespaces_operator::names;

/// The port every web server pod ([`httpd_spec`]) listens on.
pub const HTTP_PORT: u16 = 8080;

/// Annotation kwok puts on the nodes it fakes.
const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// Printed by [`http_get_from`] when busybox nc could not connect at all.
const NO_CONNECTION: &str = "kubespaces-acceptance: no connection";

/// Container waiting reasons that waiting does not cure: a wait fails at once with them (and
/// says why) instead of timing out without a clue.
const STUCK_REASONS: [&str; 8] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "CrashLoopBackOff",
];

impl Env {
    /// The busybox image the harness imported into the node's containerd.
    pub fn busybox_image(&self) -> String {
        var("KUBESPACES_BUSYBOX_IMAGE").expect(
            "KUBESPACES_BUSYBOX_IMAGE (set by the harness once the cluster has a real node \
             with the busybox image imported)",
        )
    }

    /// `kubectl exec` of `cmd` in `ns/pod`; the caller decides what a failure means.
    pub fn exec(&self, ns: &str, pod: &str, cmd: &[&str]) -> Output {
        let mut args = vec!["-n", ns, "exec", pod, "--"];
        args.extend_from_slice(cmd);
        self.kubectl(&args, None)
    }

    /// `kubectl exec` of `cmd` in `ns/pod`, failing the test if it fails; returns stdout.
    pub fn exec_ok(&self, ns: &str, pod: &str, cmd: &[&str]) -> String {
        let out = self.exec(ns, pod, cmd);
        assert!(
            out.status.success(),
            "kubectl -n {ns} exec {pod} -- {} failed: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// kubectl against `server` as the holder of `token` and nothing else (no admin credential
    /// from KUBECONFIG), trusting `ca_pem`: to see what a token taken from a pod is worth.
    pub fn kubectl_with_token(
        &self,
        server: &str,
        ca_pem: &str,
        token: &str,
        args: &[&str],
    ) -> Output {
        let dir = std::env::temp_dir().join(format!(
            "kubespaces-token-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        let ca = dir.join("ca.crt");
        let kubeconfig = dir.join("kubeconfig");
        write_private(&ca, ca_pem);
        write_private(
            &kubeconfig,
            &format!(
                "apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: \"{server}\"
    certificate-authority: \"{ca}\"
users:
- name: token-holder
  user:
    token: \"{token}\"
contexts:
- name: token-holder
  context: {{cluster: cluster, user: token-holder}}
current-context: token-holder
",
                ca = ca.display()
            ),
        );
        let path = kubeconfig.to_string_lossy().into_owned();
        let mut all = vec!["--kubeconfig", path.as_str()];
        all.extend_from_slice(args);
        let out = self.kubectl(&all, None);
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    /// Runs `script` with `sh -c` in `ns/pod`, failing the test if it fails; returns stdout.
    pub fn sh_ok(&self, ns: &str, pod: &str, script: &str) -> String {
        self.exec_ok(ns, pod, &["sh", "-c", script])
    }
}

/// Retries `check` every half second until it returns `Ok`, and fails after `timeout` with the
/// last `Err`: for checks from inside pods, where what was seen last explains a failure.
pub async fn retry_until<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    retry_until_async(what, timeout, || std::future::ready(check())).await
}

/// [`retry_until`] for a check that is itself async.
pub async fn retry_until_async<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(seen) => assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Writes `content` to a new file only the current user can read (it may hold a credential).
fn write_private(path: &std::path::Path, content: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(content.as_bytes()))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn is_ready_node(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The names of the Ready nodes that really run containers (every node kwok does not fake).
/// Waits for one: the harness's node may still be registering when the first test starts.
pub async fn real_nodes(client: &Client) -> Vec<String> {
    let nodes: Api<Node> = Api::all(client.clone());
    wait_for(
        "a Ready node that is not kwok's (these tests need the harness's real node)",
        Duration::from_secs(120),
        || async {
            let names: Vec<String> = nodes
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .filter(|n| {
                    !n.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(KWOK_NODE_ANNOTATION))
                })
                .filter(is_ready_node)
                .filter_map(|n| n.metadata.name)
                .collect();
            (!names.is_empty()).then_some(names)
        },
    )
    .await
}

/// The spec of a pod that runs `script` with busybox's `sh -c` on one of `nodes`, knows its own
/// name (`$POD_NAME`), states no resources (the namespace's LimitRange fills them in) and stops
/// within a second when deleted (busybox as PID 1 ignores SIGTERM), so namespaces go quickly.
pub fn busybox_spec(image: &str, nodes: &[String], script: &str) -> PodSpec {
    serde_json::from_value(json!({
        "securityContext": restricted_pod(),
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": nodes}
            ]}]
        }}},
        "terminationGracePeriodSeconds": 1,
        "containers": [{
            "name": "main",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", script],
            "securityContext": restricted_container(),
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        }],
    }))
    .expect("a valid busybox pod spec")
}

/// What the `restricted` Pod Security Standard requires of a pod, which tenant namespaces (and
/// every namespace inside a tenant's vCluster) enforce: a pod without it is refused. In YAML, for
/// manifests written out: `securityContext:` [`RESTRICTED_POD`] on the pod and
/// [`RESTRICTED_CONTAINER`] on each container.
pub const RESTRICTED_POD: &str = "{runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: {type: RuntimeDefault}}";
pub const RESTRICTED_CONTAINER: &str =
    "{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}";

/// [`RESTRICTED_POD`] as JSON.
pub fn restricted_pod() -> serde_json::Value {
    serde_yaml::from_str(RESTRICTED_POD).expect("a valid pod security context")
}

/// [`RESTRICTED_CONTAINER`] as JSON.
pub fn restricted_container() -> serde_json::Value {
    serde_yaml::from_str(RESTRICTED_CONTAINER).expect("a valid container security context")
}

/// Requests and limits small enough for the pods of every test at once on a 2-core node, and
/// large enough for busybox.
pub fn small_resources() -> ResourceRequirements {
    serde_json::from_value(json!({
        "requests": {"cpu": "10m", "memory": "16Mi"},
        "limits": {"cpu": "200m", "memory": "64Mi"},
    }))
    .expect("valid resources")
}

/// The page a web server pod named `pod` serves (see [`httpd_spec`]).
pub fn page_of(pod: &str) -> String {
    format!("hello from {pod}")
}

/// A web server: writes [`page_of`] its pod to /tmp/www, says so on stdout, then becomes busybox httpd
/// on [`HTTP_PORT`] (`exec`, so httpd is the container's PID 1). Ready once the port accepts
/// connections, so Services send traffic only to pods that serve.
pub fn httpd_spec(image: &str, nodes: &[String]) -> PodSpec {
    let script = format!(
        "mkdir -p /tmp/www && echo \"{page}\" >/tmp/www/index.html && echo \"serving $POD_NAME on \
         port {HTTP_PORT}\" && exec httpd -f -p {HTTP_PORT} -h /tmp/www",
        page = page_of("$POD_NAME"),
    );
    let mut spec = busybox_spec(image, nodes, &script);
    let main = &mut spec.containers[0];
    main.resources = Some(small_resources());
    main.ports = Some(vec![
        serde_json::from_value(json!({"name": "http", "containerPort": HTTP_PORT}))
            .expect("a valid container port"),
    ]);
    main.readiness_probe = Some(
        serde_json::from_value(json!({"tcpSocket": {"port": HTTP_PORT}, "periodSeconds": 2}))
            .expect("a valid probe"),
    );
    spec
}

/// A pod that only sleeps: a shell inside the cluster network to run commands in with exec.
pub fn shell_spec(image: &str, nodes: &[String]) -> PodSpec {
    let mut spec = busybox_spec(image, nodes, "exec sleep 86400");
    spec.containers[0].resources = Some(small_resources());
    spec
}

/// A pod named `name` with `labels` and `spec`.
pub fn pod(name: &str, labels: &[(&str, &str)], spec: PodSpec) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels_map(labels)),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        ..Pod::default()
    }
}

fn labels_map(labels: &[(&str, &str)]) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A Deployment `name` of `replicas` pods with `spec`, labelled and selected by `app=<name>`.
pub fn deployment(name: &str, replicas: i32, spec: PodSpec) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }))
    .expect("a valid Deployment")
}

/// A ClusterIP Service `name` in front of the pods labelled `app=<name>`: `port` to their
/// [`HTTP_PORT`].
pub fn cluster_ip_service(name: &str, port: u16) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": name},
            "ports": [{"name": "http", "port": port, "targetPort": HTTP_PORT}],
        },
    }))
    .expect("a valid Service")
}

/// Whether the pod is Running and Ready and not being deleted.
pub fn is_running_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A one-line account of a pod for failure messages: phase, node and each container's state.
pub fn describe(pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or("?");
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("unscheduled");
    let status = pod.status.clone().unwrap_or_default();
    let containers = serde_json::to_string(&status.container_statuses).unwrap_or_default();
    let conditions = serde_json::to_string(&status.conditions).unwrap_or_default();
    format!(
        "{name} on {node}: phase {:?}, conditions {conditions}, containers {containers}",
        status.phase
    )
}

/// Why the pod can never start, if a container waits for a reason that waiting does not cure.
fn stuck(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        STUCK_REASONS.contains(&reason).then(|| {
            format!(
                "container {} is {reason}: {}",
                c.name,
                waiting.message.as_deref().unwrap_or("")
            )
        })
    })
}

/// Polls the pods matching `selection` until `check` accepts them, failing at once if one of
/// them can never start and, on timeout, with how each pod looked last.
pub async fn wait_pods<T>(
    pods: &Api<Pod>,
    selection: &ListParams,
    what: &str,
    timeout: Duration,
    mut check: impl FnMut(&[Pod]) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last: Vec<Pod> = Vec::new();
    loop {
        if let Ok(list) = pods.list(selection).await {
            let mut items = list.items;
            items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            if let Some(why) = items.iter().find_map(|p| stuck(p).map(|s| (p, s))) {
                panic!("waiting for {what}: {}\n{}", why.1, describe(why.0));
            }
            if let Some(v) = check(&items) {
                return v;
            }
            last = items;
        }
        if tokio::time::Instant::now() >= deadline {
            let seen: Vec<String> = last.iter().map(describe).collect();
            panic!(
                "timed out after {timeout:?} waiting for {what}; pods seen:\n{}",
                seen.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until `count` pods labelled `selector` are Running and Ready, and returns them.
pub async fn wait_running_ready(
    pods: &Api<Pod>,
    selector: &str,
    count: usize,
    timeout: Duration,
) -> Vec<Pod> {
    wait_pods(
        pods,
        &ListParams::default().labels(selector),
        &format!("{count} Running and Ready pods labelled {selector}"),
        timeout,
        |items| {
            let ready: Vec<Pod> = items
                .iter()
                .filter(|p| is_running_ready(p))
                .cloned()
                .collect();
            (ready.len() == count).then_some(ready)
        },
    )
    .await
}

/// Waits until the pod `name` satisfies `check` (see [`wait_pods`]).
pub async fn wait_pod<T>(
    pods: &Api<Pod>,
    name: &str,
    what: &str,
    timeout: Duration,
    mut check: impl FnMut(&Pod) -> Option<T>,
) -> T {
    wait_pods(
        pods,
        &ListParams::default().fields(&format!("metadata.name={name}")),
        &format!("pod {name} to be {what}"),
        timeout,
        |items| items.first().and_then(&mut check),
    )
    .await
}

/// Waits until the pod `name` is Running and Ready, and returns it.
pub async fn wait_pod_running(pods: &Api<Pod>, name: &str, timeout: Duration) -> Pod {
    wait_pod(pods, name, "Running and Ready", timeout, |p| {
        is_running_ready(p).then(|| p.clone())
    })
    .await
}

/// The pod's IP, which a Running pod on a real node has.
pub fn pod_ip(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_else(|| panic!("pod has no IP: {}", describe(pod)))
}

/// Waits until pods can be created in `ns`: the default ServiceAccount (without it admission
/// refuses pods) and the cluster CA bundle (mounted into every pod) exist.
pub async fn wait_namespace_ready_for_pods(client: &Client, ns: &str) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    wait_for(
        &format!("the default ServiceAccount and kube-root-ca.crt in {ns}"),
        Duration::from_secs(60),
        || async {
            let sa = accounts.get_opt("default").await.ok()??;
            let ca = config_maps.get_opt("kube-root-ca.crt").await.ok()??;
            Some((sa, ca))
        },
    )
    .await;
}

/// A fresh Ready tenant `name` (one left over from an earlier, failed run is deleted first),
/// owned by `owner`, whose namespace is ready for pods. Returns the namespace.
pub async fn fresh_tenant(env: &Env, name: &str, owner: &str, cpu: &str, memory: &str) -> String {
    let tenants = env.tenants().await;
    if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
        delete_tenant(env, name).await;
    }
    env.apply(&tenant_yaml(name, owner, cpu, memory, None));
    // (Ready includes the tenant's own control plane.)
    let tenant = wait_ready(&tenants, name, Duration::from_secs(300)).await;
    let ns = tenant
        .status
        .and_then(|s| s.namespace)
        .expect("a Ready tenant reports its namespace");
    wait_namespace_ready_for_pods(&env.client().await, &ns).await;
    ns
}

/// Deletes the tenant `name` and waits until it is gone, with its namespace and pods.
pub async fn delete_tenant(env: &Env, name: &str) {
    env.kubectl_ok(
        &[
            "delete",
            "tenant",
            name,
            "--ignore-not-found",
            "--wait=false",
        ],
        None,
    );
    wait_gone(&env.tenants().await, name, Duration::from_secs(180)).await;
}

/// What is left anywhere of the deleted tenant `tenant` (its namespace `ns`): its namespace, any
/// object of any listable type in any namespace or cluster-wide that carries its label (what the
/// operator made outside the namespace: roles, bindings, routes, certificates), and volumes bound
/// to one of its claims. Empty when the teardown was complete.
pub fn leftovers(env: &Env, tenant: &str, ns: &str) -> Vec<String> {
    let kinds = env.kubectl_ok(&["api-resources", "--verbs=list", "-o", "name"], None);
    let kinds: Vec<&str> = kinds.lines().filter(|k| !k.is_empty()).collect();
    let label = format!("{}={tenant}", names::TENANT_LABEL);
    let get = |args: &[&str]| {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "name", "--ignore-not-found"]);
        env.kubectl_ok(&all, None)
    };
    let mut left: Vec<String> = get(&["namespace", ns])
        .lines()
        .chain(get(&[&kinds.join(","), "-A", "-l", &label]).lines())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let claims = env.kubectl_ok(
        &[
            "get",
            "pv",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.claimRef.namespace}{\"\\n\"}{end}",
        ],
        None,
    );
    left.extend(
        claims
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, claim_ns)| *claim_ns == ns)
            .map(|(pv, _)| format!("persistentvolume/{pv} (bound to a claim in {ns})")),
    );
    // The namespace itself is also listed by its label.
    left.sort();
    left.dedup();
    left
}

/// An HTTP/1.0 GET of `/` at `host:port` made from inside `ns/pod` with busybox nc: `Ok` with the
/// response, or `Err` with nc's complaint when no connection could be made (refused, timed out
/// after 2 s, name not resolved). A failing `kubectl exec` fails the test, so `Err` always means
/// the network said no.
pub fn http_get_from(
    env: &Env,
    ns: &str,
    pod: &str,
    host: &str,
    port: u16,
) -> Result<String, String> {
    let script = format!(
        r"printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 {host} {port} 2>&1 || echo '{NO_CONNECTION}'"
    );
    let out = env.sh_ok(ns, pod, &script);
    if out.contains(NO_CONNECTION) {
        Err(out)
    } else {
        Ok(out)
    }
}

/// A GET of `/` at 127.0.0.1:`port` (Host `localhost`, 10 s timeout, no proxy), from the test
/// process itself: the status and the body, or why no answer came.
pub async fn local_http_get(port: u16) -> Result<(u16, String), String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .get(format!("http://127.0.0.1:{port}/"))
        .header(reqwest::header::HOST, "localhost")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| e.to_string())?;
    Ok((status, body))
}

/// The addresses busybox `nslookup` printed for `name` (the answer's `Address:` lines, not the
/// server's own).
pub fn nslookup_addresses(output: &str, name: &str) -> Vec<String> {
    let mut in_answer = false;
    let mut addresses = Vec::new();
    for line in output.lines() {
        if let Some(answered) = line.strip_prefix("Name:") {
            in_answer = answered.trim() == name;
        } else if let Some(address) = line.strip_prefix("Address:") {
            if in_answer {
                addresses.push(address.trim().to_owned());
            }
        } else if line.trim().is_empty() {
            in_answer = false;
        }
    }
    addresses
}

/// The local port in kubectl port-forward's `Forwarding from 127.0.0.1:PORT -> REMOTE` line.
fn forwarded_port(line: &str, remote_port: u16) -> Option<u16> {
    let (local, remote) = line
        .trim()
        .strip_prefix("Forwarding from 127.0.0.1:")?
        .split_once(" -> ")?;
    (remote.trim() == remote_port.to_string())
        .then(|| local.parse().ok())
        .flatten()
}

/// A running `kubectl port-forward` to a pod, forwarding a free local port; killed by
/// [`stop`](Self::stop), or when dropped if the test fails first.
pub struct PortForward {
    child: tokio::process::Child,
    pub local_port: u16,
}

impl PortForward {
    /// Starts `kubectl port-forward pod/<pod> :<remote_port>` and waits until it listens.
    pub async fn start(env: &Env, ns: &str, pod: &str, remote_port: u16) -> PortForward {
        let target = format!("pod/{pod}");
        let ports = format!(":{remote_port}");
        let mut child = tokio::process::Command::new(&env.kubectl)
            .args(["-n", ns, "port-forward", &target, &ports])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", env.kubectl));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let local_port = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines
                .next_line()
                .await
                .expect("read kubectl port-forward output")
            {
                if let Some(port) = forwarded_port(&line, remote_port) {
                    return Some(port);
                }
            }
            None
        })
        .await
        .expect("kubectl port-forward to say where it listens within 60 s")
        .unwrap_or_else(|| panic!("kubectl port-forward {target} exited before forwarding"));
        // kubectl prints a line per connection: keep reading so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        PortForward { child, local_port }
    }

    /// Kills kubectl and waits for it to exit.
    pub async fn stop(mut self) {
        self.child.kill().await.expect("kill kubectl port-forward");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_port_is_read_from_kubectl_port_forward() {
        assert_eq!(
            forwarded_port("Forwarding from 127.0.0.1:41235 -> 8080", 8080),
            Some(41235)
        );
        assert_eq!(
            forwarded_port("Forwarding from [::1]:41235 -> 8080", 8080),
            None
        );
        assert_eq!(
            forwarded_port("Forwarding from 127.0.0.1:41235 -> 9090", 8080),
            None
        );
        assert_eq!(forwarded_port("Handling connection for 8080", 8080), None);
    }

    #[test]
    fn nslookup_answers_are_told_from_the_server_line() {
        // busybox 1.35 with search domains: the short name resolves through the first one and
        // the others answer NXDOMAIN.
        let out = "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n\
                   Name:\tweb.ns.svc.cluster.local\nAddress: 10.96.7.8\n\n\
                   ** server can't find web.svc.cluster.local: NXDOMAIN\n\n";
        assert_eq!(
            nslookup_addresses(out, "web.ns.svc.cluster.local"),
            vec!["10.96.7.8".to_owned()]
        );
        assert!(nslookup_addresses(out, "web.svc.cluster.local").is_empty());
    }
}
