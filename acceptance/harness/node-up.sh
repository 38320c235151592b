#!/usr/bin/env bash
# node-up.sh STATE_DIR — the real node of the cluster in STATE_DIR, run by cluster-up.sh once the
# control plane answers: containerd (+ runc, CNI bridge), the images (images.sh), the kubelet,
# kube-proxy (iptables), kube-router (NetworkPolicy only), CoreDNS and local-path-provisioner (the
# default StorageClass local-path, KUBESPACES_STORAGE_CLASS in STATE/operator.env). All in the cluster's
# network namespace (node-lib.sh), with the cluster's own containerd root, cgroup root and CNI state.
# Recipe and traps: ../shared/reference/real-node.md, beside this checkout (not in the repository).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$(dirname "$0")/node-lib.sh"
LOG_PREFIX=node-up

[ $# -eq 1 ] || die "usage: $0 STATE_DIR"
STATE=$(cd "$1" && pwd)
BIN=${KUBESPACES_BIN:?KUBESPACES_BIN (the directory of the built binaries)}
# shellcheck disable=SC1091
. "$STATE/run/node.env"
node_exec_init
# shellcheck disable=SC1091
. "$STATE/env"
P="$STATE/pki"
N="$STATE/node"
K="$BIN/kubectl"
API="https://$NODE_IP:6443"
SOCK="$N/containerd/containerd.sock"
mkdir -p "$N/containerd/root" "$N/cni/net.d" "$N/kubelet" "$N/pod-logs"
alive() { pid_alive "$STATE" "$1" >/dev/null || die "$1 exited during start-up (log: $STATE/logs/$1.log)"; }

# ---------------------------------------------------------------- containerd + runc + CNI
# restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot lower a container's
# oom_score_adj below containerd's own. Sandbox network namespaces are mounted under containerd's
# state dir (not /run/netns), so teardown finds exactly this node's. Every registry is a closed
# loopback port: an image that was not imported fails at once instead of leaving the machine.
mkdir -p "$N/containerd/certs.d"
for host in _default docker.io registry.k8s.io ghcr.io quay.io gcr.io localhost; do
  mkdir -p "$N/containerd/certs.d/$host"
  printf 'server = "http://127.0.0.1:1"\n[host."http://127.0.0.1:1"]\n  capabilities = ["pull", "resolve"]\n' \
    >"$N/containerd/certs.d/$host/hosts.toml"
done
SHIM_DIR=/run/kubespaces/$NODE_ID/s   # shim sockets: a short path (108-byte limit), ours alone
cat >"$N/containerd/config.toml" <<EOF
version = 4
root = "$N/containerd/root"
state = "$N/containerd/state"
imports = []
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[plugins.'io.containerd.server.v1.grpc']
  address = "$SOCK"
[plugins.'io.containerd.server.v1.ttrpc']
  address = "$SOCK.ttrpc"
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = "$SHIM_DIR"
[plugins.'io.containerd.transfer.v1.local']
  config_path = "$N/containerd/certs.d"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/kubespaces/pause:1"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$N/containerd/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$N/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$N/cni/net.d"
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
# The pod network: the bridge node-lib.sh made, host-local addresses, no masquerading (nothing is
# beyond the node to masquerade for), portmap for hostPort.
cat >"$N/cni/net.d/10-kubespaces.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kubespaces",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true,
     "hairpinMode": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": "$N/cni/ipam",
              "ranges": [[{"subnet": "$NODE_POD_CIDR", "gateway": "$NODE_BRIDGE_IP"}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
log "starting containerd"
# PATH: containerd finds its runc shim (containerd-shim-runc-v2) next to it.
start_bg "$STATE" containerd "${NODE_EXEC[@]}" env PATH="$BIN:$PATH" "$BIN/containerd" --config "$N/containerd/config.toml"
wait_for containerd 30 "$BIN/ctr" --address "$SOCK" version || { alive containerd; die "containerd does not answer"; }

# "NAME TAG TARBALL ID" per image (images.sh); the names below come from it.
IMAGES=$(KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" import "$STATE")
image_ref() { awk -v n="$1" '$1 == n {print "localhost/kubespaces/" $1 ":" $2}' <<<"$IMAGES"; }

# ---------------------------------------------------------------- credentials and RBAC
# kubeconfig_for NAME: a kubeconfig with the client certificate pki/NAME.crt.
kubeconfig_for() {
  (
    umask 077
    cat >"$N/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$API", certificate-authority: "$P/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$P/$1.crt", client-key: "$P/$1.key"}
contexts:
- name: local
  context: {cluster: local, user: $1}
current-context: local
EOF
  )
}
for c in kubelet kube-proxy kube-router; do kubeconfig_for "$c"; done
"$K" apply --server-side --field-manager=kubespaces-harness -f "$HARNESS_DIR/manifests/node-rbac.yaml" >&2

# ---------------------------------------------------------------- kubelet
# cgroup v1 here (failCgroupV1: false), cgroupfs driver, this node's own cgroup root. Anonymous
# access off, webhook authn/authz, a serving certificate the API server verifies. Pods get cluster
# DNS; pods with dnsPolicy Default get a resolv.conf pointing at their own loopback, never at the
# machine's resolver. Image garbage collection and disk eviction stay out of the way of a dev box.
printf 'nameserver 127.0.0.1\noptions ndots:1\n' >"$N/resolv.conf"
cat >"$N/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$NODE_CGROUP
containerRuntimeEndpoint: unix://$SOCK
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
clusterDomain: cluster.local
clusterDNS: [$NODE_DNS_IP]
resolvConf: $N/resolv.conf
podLogsDir: $N/pod-logs
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Disk thresholds absolute: 1% of this machine's 252 GB filesystem (quota-limited, often < 3 GB
# free) put the node under DiskPressure and evicted pods while gigabytes were still free.
evictionHard: {memory.available: 100Mi, nodefs.available: 256Mi, nodefs.inodesFree: 1%, imagefs.available: 256Mi}
serializeImagePulls: false
maxPods: 110
EOF
sysctls_record "$STATE"
# The kubelet wants its cgroup root to exist in every hierarchy; a new v1 cpuset cgroup takes no
# process until its cpus and memory nodes are set (copied from the root).
for d in /sys/fs/cgroup/*/; do
  [ -f "$d/cgroup.procs" ] || continue
  mkdir -p "$d$NODE_CGROUP"
  if [ -f "$d/cpuset.cpus" ]; then
    cat "$d/cpuset.cpus" >"$d$NODE_CGROUP/cpuset.cpus"
    cat "$d/cpuset.mems" >"$d$NODE_CGROUP/cpuset.mems"
  fi
done
log "starting kubelet ($NODE_NAME)"
start_bg "$STATE" kubelet "${NODE_EXEC[@]}" "$BIN/kubelet" --config="$N/kubelet.yaml" \
  --kubeconfig="$N/kubelet.kubeconfig" --root-dir="$N/kubelet" \
  --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1

# ---------------------------------------------------------------- kube-proxy (iptables)
# conntrack limits and timeouts at 0: kube-proxy leaves the machine's (global) sysctls alone.
cat >"$N/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $N/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $NODE_POD_CIDR
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
log "starting kube-proxy"
start_bg "$STATE" kube-proxy "${NODE_EXEC[@]}" "$BIN/kube-proxy" --config="$N/kube-proxy.yaml" --v=1

node_ready() {
  alive kubelet
  [ "$("$K" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
wait_for "node $NODE_NAME Ready" 90 node_ready || die "node $NODE_NAME not Ready (log: $STATE/logs/kubelet.log)"
node_untainted() { ! "$K" get node "$NODE_NAME" -o jsonpath='{.spec.taints}' | grep -q not-ready; }
wait_for "node $NODE_NAME untainted" 60 node_untainted || die "node $NODE_NAME still tainted not-ready"

# ---------------------------------------------------------------- kube-router (NetworkPolicy)
# Firewall only: no routing (one node) and no service proxy (kube-proxy does that). It looks up
# its node at start, so it starts once the kubelet has registered the node.
log "starting kube-router (NetworkPolicy enforcement)"
start_bg "$STATE" kube-router "${NODE_EXEC[@]}" "$BIN/kube-router" --kubeconfig="$N/kube-router.kubeconfig" \
  --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false \
  --hostname-override="$NODE_NAME" --enable-ipv4=true --enable-ipv6=false \
  --service-cluster-ip-range="$NODE_SERVICE_CIDR" --health-port=20244 --metrics-port=0 --v=1

proxy_healthy() { alive kube-proxy; in_node curl -fsS http://127.0.0.1:10256/healthz; }
wait_for kube-proxy 60 proxy_healthy || die "kube-proxy not healthy (log: $STATE/logs/kube-proxy.log)"
router_healthy() { alive kube-router; in_node curl -fsS http://127.0.0.1:20244/healthz; }
wait_for kube-router 60 router_healthy || die "kube-router not healthy (log: $STATE/logs/kube-router.log)"

# ---------------------------------------------------------------- dynamic volumes
# local-path-provisioner and the default StorageClass local-path: a PVC gets a directory under
# STATE/node/local-path (removed with the cluster) once its pod is scheduled. Started here, waited
# for after CoreDNS, so the two start together.
LPP_IMAGE=$(image_ref local-path-provisioner)
[ -n "$LPP_IMAGE" ] || die "no local-path-provisioner image: $BIN predates it (run acceptance/harness/build-tools.sh and use its directory)"
mkdir -p "$N/local-path"
sed -e "s#@IMAGE@#$LPP_IMAGE#" -e "s#@HELPER_IMAGE@#$(image_ref busybox)#" -e "s#@VOLUME_DIR@#$N/local-path#" \
  "$HARNESS_DIR/manifests/local-path/local-path.yaml" \
  | "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2

# ---------------------------------------------------------------- CoreDNS
sed -e "s#@COREDNS_IMAGE@#$(image_ref coredns)#" -e "s#@DNS_IP@#$NODE_DNS_IP#" "$HARNESS_DIR/manifests/coredns.yaml" \
  | "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2
wait_for "CoreDNS" 90 "$K" -n kube-system rollout status deployment/coredns --timeout=1s \
  || die "CoreDNS did not become available ($K -n kube-system describe pods -l k8s-app=kube-dns)"
wait_for "local-path-provisioner" 90 "$K" -n local-path-storage rollout status deployment/local-path-provisioner --timeout=1s \
  || die "local-path-provisioner did not become available ($K -n local-path-storage describe pods)"
operator_setting "$STATE" KUBESPACES_STORAGE_CLASS local-path
env_set "$STATE/env" KUBESPACES_BUSYBOX_IMAGE "$(image_ref busybox)"
env_set "$STATE/env" KUBESPACES_KUBECTL_IMAGE "$(image_ref kubectl)"
log "node $NODE_NAME ready: pods run (containerd $("$BIN/ctr" --address "$SOCK" version 2>/dev/null | awk '/Version:/ {print $2; exit}'))"
