#!/usr/bin/env bash
# cluster-up.sh STATE_DIR — starts a real local Kubernetes whose state lives in STATE_DIR: etcd,
# kube-apiserver, the CRDs from operator/manifests, kube-controller-manager, kube-scheduler, and
# its nodes: a real node (node-up.sh: containerd, kubelet, kube-proxy, kube-router, CoreDNS) and/or
# a kwok node that only simulates pods, and with a real node the platform's Gateway (gateway.sh:
# Traefik, the Gateway API CRDs, hosts-sync for /etc/hosts) and cert-manager (cert-manager.sh: the
# controller as a pod, ClusterIssuer kubespaces-apps-ca). Everything runs in the cluster's own network namespace
# (node-lib.sh); the API server answers at https://<node address>:6443 from this machine.
# Needs root (network namespace, iptables, mounts, cgroups).
#
# Writes STATE_DIR/kubeconfig (0600), STATE_DIR/env (export lines for KUBECONFIG,
# KUBESPACES_KUBECTL, KUBESPACES_BIN, KUBESPACES_STATE, ...) and STATE_DIR/operator.env (the
# operator's settings, lib.sh), there KUBESPACES_STORAGE_CLASS: the default StorageClass,
# local-path with a real node, kwok-volume on a kwok-only cluster. Idempotent: if
# this STATE_DIR already has a healthy cluster it only says so; leftovers of a dead one are cleaned
# up first. The steps marked (harness.md §N) follow that section of the recipe in
# ../shared/reference/harness.md, beside this checkout (not in the repository).
#
# Env: KUBESPACES_BIN (skip build-tools.sh and use these binaries),
#      KUBESPACES_CRD_DIRS (extra colon-separated dirs of *.yaml applied together with the CRDs),
#      KUBESPACES_MANIFESTS ("all" (default): every operator/manifests/*.yaml but the operator's own
#      RBAC (operator-*.yaml, which only the chart's ServiceAccount uses); "crds": only the
#      CustomResourceDefinitions, when the chart installs the rest (make test, make up)),
#      KUBESPACES_KCM_QPS / KUBESPACES_KCM_BURST (kube-controller-manager client rate, 100/200),
#      KUBESPACES_NODES (which nodes: "real" (default), "kwok" (benchmarks: no pods run), or
#      "real,kwok"; with both, the kwok node is tainted so only pods that ask for it go there).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$(dirname "$0")/node-lib.sh"
LOG_PREFIX=cluster-up

[ $# -eq 1 ] || die "usage: $0 STATE_DIR"
STATE=$(abspath "$1")
NODES=${KUBESPACES_NODES:-real}
case ",$NODES," in *,real,*) REAL=true ;; *) REAL=false ;; esac
case ",$NODES," in *,kwok,*) KWOK=true ;; *) KWOK=false ;; esac
$REAL || $KWOK || die "KUBESPACES_NODES=$NODES: name real, kwok or both"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
$KWOK && COMPONENTS+=(kwok)
$REAL && COMPONENTS+=(containerd kubelet kube-proxy kube-router)
$REAL && COMPONENTS+=(hosts-sync)   # gateway.sh
T0=$(date +%s.%N)
elapsed() { python3 -c "import time;print(f'{time.time()-$T0:.1f}s')"; }

ensure_runtime_tools
ensure_node_tools

# One cluster-up/down at a time per state dir (two `make up` in parallel must not race).
exec 9>"$STATE/.lock"
flock 9

healthy() {
  local n
  for n in "${COMPONENTS[@]}"; do pid_alive "$STATE" "$n" >/dev/null || return 1; done
  [ -f "$STATE/kubeconfig" ] && [ -f "$STATE/env" ] || return 1
  # shellcheck disable=SC1091
  (. "$STATE/env" && "$KUBESPACES_KUBECTL" get --raw=/readyz >/dev/null 2>&1)
}

if healthy; then
  log "a cluster is already running in $STATE (nothing to do)"
  exit 0
fi
if [ -d "$STATE/run" ] && [ -n "$(ls -A "$STATE/run" 2>/dev/null)" ]; then
  log "cleaning up the leftovers of a previous cluster in $STATE"
  "$HARNESS_DIR/cluster-down.sh" --locked "$STATE"
fi

BIN=${KUBESPACES_BIN:-}
if [ -z "$BIN" ]; then
  ensure_go
  if $KWOK; then BIN=$("$HARNESS_DIR/build-tools.sh" --with kwok); else BIN=$("$HARNESS_DIR/build-tools.sh"); fi
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  [ -e "$BIN/$b" ] || die "missing $BIN/$b (run acceptance/harness/build-tools.sh)"
done
if $KWOK; then
  for b in kwok kwok-stages.yaml; do
    [ -e "$BIN/$b" ] || die "missing $BIN/$b (run acceptance/harness/build-tools.sh --with kwok)"
  done
fi
K="$BIN/kubectl"

# Fresh state, but keep the directory itself (it may hold the lock and the caller's files) and the
# node's image store (STATE/node/containerd/root: a cache, so a warm start imports no image).
rm -rf "$STATE/pki" "$STATE/logs" "$STATE/run" "$STATE/kubeconfig" "$STATE/kube-controller-manager.kubeconfig" "$STATE/env" "$STATE/scheduler.yaml" \
  "$STATE/operator.env" "$STATE/apps-ca.crt"
if [ -d "$STATE/node/containerd/root" ]; then
  find "$STATE/node" -mindepth 1 -maxdepth 1 ! -name containerd -exec rm -rf {} +
  find "$STATE/node/containerd" -mindepth 1 -maxdepth 1 ! -name root -exec rm -rf {} +
fi
P="$STATE/pki"; L="$STATE/logs"
mkdir -p "$P" "$L" "$STATE/run"
chmod 700 "$P"

# The network namespace and its link: every port below is the namespace's own.
net_up "$STATE"
log "node namespace $NODE_NS, node address $NODE_IP (link $NODE_LINK)"
ETCD_PORT=2379; ETCD_PEER=2380; API_PORT=6443; KCM_PORT=10257; SCHED_PORT=10259; KWOK_PORT=10247
API="https://$NODE_IP:$API_PORT"

# ---------------------------------------------------------------- PKI (harness.md §3.3)
# sign_cert NAME SUBJECT USAGE [SANS]: NAME.key/NAME.crt signed by the cluster CA (in the cwd).
sign_cert() {
  openssl req -new -nodes -newkey rsa:2048 -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$3"
    [ -z "${4:-}" ] || echo "subjectAltName=$4"
  } >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
client_cert() { sign_cert "$1" "$2" clientAuth; }
# umask 077: every key (CA, serving, service-account) is written 0600 from the start.
(
  umask 077
  cd "$P"
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -keyout ca.key -out ca.crt \
    -subj "/CN=kubespaces-dev-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  openssl req -new -nodes -newkey rsa:2048 -keyout apiserver.key -out apiserver.csr \
    -subj "/CN=kube-apiserver" 2>/dev/null
  cat >apiserver.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP
EOF
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
    -extfile apiserver.ext -out apiserver.crt 2>/dev/null
  # Client certificates: the API server towards kubelets, and the node's components towards the
  # API server, each with the identity RBAC and the Node authorizer know it by.
  client_cert apiserver-kubelet-client "/O=kubespaces:apiserver-kubelet-client/CN=kube-apiserver-kubelet-client"
  client_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
  client_cert kube-proxy "/CN=system:kube-proxy"
  client_cert kube-router "/CN=kubespaces:kube-router"
  # The controller-manager as itself (RBAC's system:kube-controller-manager), each controller then
  # under its own ServiceAccount (--use-service-account-credentials), as kubeadm runs it: what a
  # ReplicaSet or StatefulSet controller makes meets admission as that controller, not as an admin.
  client_cert kube-controller-manager "/CN=system:kube-controller-manager"
  # The kubelet's serving certificate, which the API server verifies (--kubelet-certificate-authority).
  sign_cert kubelet-serving "/CN=system:node:$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP"
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  # A static bearer token in system:masters: the simplest credential every client understands
  # (kubectl, kube-rs, the scheduler, kwok); system:masters bypasses RBAC.
  printf '%s,kubespaces-admin,uid-kubespaces-admin,"system:masters"\n' \
    "$(head -c24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >tokens.csv
  chmod 0644 ./*.crt sa.pub
)
TOKEN=$(cut -d, -f1 "$P/tokens.csv")

# ---------------------------------------------------------------- etcd (harness.md §2.1)
# Data on /dev/shm (tmpfs) with --unsafe-no-fsync: a throwaway cluster needs speed, not durability.
# The directory name is unique and recorded so cluster-down removes exactly this one.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  ETCD_DATA=$(mktemp -d /dev/shm/kubespaces-etcd.XXXXXX)
else
  ETCD_DATA="$STATE/etcd-data"; mkdir -p "$ETCD_DATA"; chmod 700 "$ETCD_DATA"
fi
echo "$ETCD_DATA" >"$STATE/run/etcd-data-dir"
log "starting etcd (data in $ETCD_DATA)"
start_bg "$STATE" etcd "${NODE_EXEC[@]}" "$BIN/etcd" --name=node0 --data-dir="$ETCD_DATA" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster="node0=http://127.0.0.1:$ETCD_PEER" \
  --unsafe-no-fsync --auto-compaction-retention=1 --quota-backend-bytes=4294967296 --log-level=warn

fail() {
  log "error: $*"
  print_log_tails "$STATE" 40
  "$HARNESS_DIR/cluster-down.sh" --locked "$STATE" || true
  exit 1
}
alive_or_fail() { pid_alive "$STATE" "$1" >/dev/null || fail "$1 exited during start-up (log: $L/$1.log)"; }

wait_for etcd 30 in_node curl -fsS "http://127.0.0.1:$ETCD_PORT/health" || fail "etcd did not become healthy"
log "etcd healthy after $(elapsed)"

# ---------------------------------------------------------------- kube-apiserver (harness.md §3.4)
# It listens on every address of the node's namespace (loopback, the link, the pod bridge) and
# advertises the node's address, which becomes the endpoint of the `kubernetes` Service that pods
# use. Kubelets are reached by their InternalIP only: resolving node names would ask the machine's
# resolver. Node authorizer + NodeRestriction: the kubelet gets exactly its node's permissions.
log "starting kube-apiserver on $API"
start_bg "$STATE" kube-apiserver "${NODE_EXEC[@]}" "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=0.0.0.0 --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
  --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$P/ca.crt" \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --cert-dir="$P" --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,ResourceQuota,NodeRestriction \
  --allow-privileged=true --profiling=false --v=1

api_ready() {
  alive_or_fail kube-apiserver
  curl -fsS --cacert "$P/ca.crt" -H "Authorization: Bearer $TOKEN" "$API/readyz"
}
wait_for kube-apiserver 180 api_ready || fail "kube-apiserver did not become ready"
log "kube-apiserver ready after $(elapsed)"

# ---------------------------------------------------------------- kubeconfig + env (harness.md §3.5)
(
  umask 077
  cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubespaces-local
  cluster:
    server: ${API}
    certificate-authority-data: $(base64 -w0 <"$P/ca.crt")
users:
- name: kubespaces-admin
  user:
    token: ${TOKEN}
contexts:
- name: kubespaces-local
  context: {cluster: kubespaces-local, user: kubespaces-admin, namespace: default}
current-context: kubespaces-local
EOF
)
export KUBECONFIG="$STATE/kubeconfig"
(
  umask 077
  cat >"$STATE/kube-controller-manager.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubespaces-local
  cluster: {server: "${API}", certificate-authority: "$P/ca.crt"}
users:
- name: kube-controller-manager
  user: {client-certificate: "$P/kube-controller-manager.crt", client-key: "$P/kube-controller-manager.key"}
contexts:
- name: kubespaces-local
  context: {cluster: kubespaces-local, user: kube-controller-manager}
current-context: kubespaces-local
EOF
)
{
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG"
  printf 'export KUBESPACES_KUBECTL=%q\n' "$K"
  printf 'export KUBESPACES_BIN=%q\n' "$BIN"
  printf 'export KUBESPACES_STATE=%q\n' "$STATE"
  printf 'export KUBESPACES_NODE_NETNS=%q\n' "$NODE_NS"
  printf 'export KUBESPACES_NODE_IP=%q\n' "$NODE_IP"
} >"$STATE/env"

# ---------------------------------------------------------------- CRDs, before kcm (harness.md §3.6)
# kcm's garbage collector and quota controller re-read discovery only every 30 s, so CRDs must be
# Established before kcm starts for owner-reference GC and quota counting to see them at once.
# Server-side apply: large CRDs exceed the client-side last-applied annotation limit.
CRD_DIRS=("$REPO_ROOT/operator/manifests")
# Gateway API (standard channel, build-tools.sh copies it from the pinned module) where the Gateway runs.
$REAL && CRD_DIRS+=("$BIN/gateway-api-crds")
# cert-manager's CRDs (cert-manager.sh applies them too: it also runs on its own).
$REAL && [ -d "$BIN/cert-manager-crds" ] && CRD_DIRS+=("$BIN/cert-manager-crds")
if [ -n "${KUBESPACES_CRD_DIRS:-}" ]; then
  IFS=: read -r -a extra <<<"$KUBESPACES_CRD_DIRS"
  CRD_DIRS+=("${extra[@]}")
fi
manifests=()
MANIFESTS=${KUBESPACES_MANIFESTS:-all}
case $MANIFESTS in all|crds) ;; *) die "KUBESPACES_MANIFESTS=$MANIFESTS: all or crds" ;; esac
for d in "${CRD_DIRS[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*.yaml; do
    [ -f "$f" ] || continue
    if [ "$d" = "$REPO_ROOT/operator/manifests" ]; then
      case $MANIFESTS/$(basename "$f") in
        all/operator-*) continue ;;
        crds/*) grep -q '^kind: CustomResourceDefinition' "$f" || continue ;;
      esac
    fi
    manifests+=("$f")
  done
done
if [ ${#manifests[@]} -gt 0 ]; then
  log "applying ${#manifests[@]} manifest(s): ${manifests[*]#"$REPO_ROOT/"}"
  args=(); for f in "${manifests[@]}"; do args+=(-f "$f"); done
  "$K" apply --server-side --force-conflicts --field-manager=kubespaces-harness "${args[@]}" >&2 \
    || fail "kubectl apply of the manifests failed"
  if [ -n "$("$K" get crd -o name 2>/dev/null)" ]; then
    "$K" wait --for=condition=Established crd --all --timeout=60s >&2 || fail "CRDs not Established"
  fi
  # Established is not usable yet: for a few seconds more, creates of the new kind are answered
  # 503 ("Resource kind ... not found") until the API server has the CRD's schema for field
  # management and admission. Ready means a Tenant can be created: try one (server-side dry run).
  if "$K" get crd tenants.kubespaces.io >/dev/null 2>&1; then
    tenant_creatable() { "$K" create --dry-run=server -f "$REPO_ROOT/examples/tenant.yaml" >/dev/null; }
    # After a time-out, one more try shows the API server's refusal.
    wait_for "Tenants to be creatable" 30 tenant_creatable || tenant_creatable \
      || fail "Tenants cannot be created 30 s after the CRD was Established"
  fi
  log "manifests applied after $(elapsed)"
else
  log "no manifests in operator/manifests yet (skipping CRDs)"
fi

# ---------------------------------------------------------------- kube-controller-manager (§3.7)
# Client rate 100/200 (kcm's default is 20/30): every new namespace costs kcm ~3 writes (default
# ServiceAccount, kube-root-ca.crt, quota status), and at the default a burst of tenants queues.
# KUBESPACES_KCM_QPS/KUBESPACES_KCM_BURST override it (e.g. to see whether kcm bounds a benchmark).
# All controllers: namespace deletion, GC, quota status, workload controllers, SA tokens (needs the
# SA private key), root CA publisher, node lifecycle (removes the not-ready taint kwok nodes start with).
log "starting kube-controller-manager"
start_bg "$STATE" kube-controller-manager "${NODE_EXEC[@]}" "$BIN/kube-controller-manager" \
  --kubeconfig="$STATE/kube-controller-manager.kubeconfig" --leader-elect=false --controllers='*' \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
  --kube-api-qps="${KUBESPACES_KCM_QPS:-100}" --kube-api-burst="${KUBESPACES_KCM_BURST:-200}" \
  --profiling=false --v=1

# ---------------------------------------------------------------- kube-scheduler (§3.8)
# kwok only handles pods that already have spec.nodeName, so a real scheduler binds them. With
# --config the deprecated --kubeconfig/--leader-elect flags would be ignored: both live in the file.
cat >"$STATE/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ${KUBECONFIG}
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
EOF
log "starting kube-scheduler"
start_bg "$STATE" kube-scheduler "${NODE_EXEC[@]}" "$BIN/kube-scheduler" --config="$STATE/scheduler.yaml" \
  --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --profiling=false --v=1

healthz() { alive_or_fail "$1"; in_node curl -fsSk "https://127.0.0.1:$2/healthz"; }
wait_for kube-controller-manager 60 healthz kube-controller-manager "$KCM_PORT" || fail "kube-controller-manager not healthy"
wait_for kube-scheduler 60 healthz kube-scheduler "$SCHED_PORT" || fail "kube-scheduler not healthy"
log "kube-controller-manager and kube-scheduler healthy after $(elapsed)"
default_sa() { "$K" -n default get serviceaccount default; }
wait_for "default ServiceAccount" 60 default_sa || fail "no default ServiceAccount"

# ---------------------------------------------------------------- the real node (node-up.sh)
if $REAL; then
  KUBESPACES_BIN="$BIN" "$HARNESS_DIR/node-up.sh" "$STATE" || fail "the node did not come up"
  log "node $NODE_NAME Ready after $(elapsed)"
fi

# ---------------------------------------------------------------- the Gateway (gateway.sh)
# Traefik on the node as the platform's Gateway (kubespaces-gateway/kubespaces, *.api.<domain>),
# and hosts-sync, which makes the routes' hostnames resolve on this machine. Writes the
# KUBESPACES_DOMAIN and KUBESPACES_*GATEWAY* lines of STATE_DIR/env.
if $REAL; then
  { [ -d "$BIN/gateway-api-crds" ] && [ -x "$BIN/traefik" ]; } || fail "missing $BIN/traefik or $BIN/gateway-api-crds (run acceptance/harness/build-tools.sh)"
  KUBESPACES_BIN="$BIN" "$HARNESS_DIR/gateway.sh" up "$STATE" || fail "the Gateway did not come up"
  log "Gateway Programmed after $(elapsed)"
fi

# ---------------------------------------------------------------- cert-manager (cert-manager.sh)
# The controller as a pod on the node, and the offline issuer chain (SelfSigned -> CA) behind
# ClusterIssuer kubespaces-apps-ca. Writes STATE_DIR/apps-ca.crt and the KUBESPACES_APPS_* lines
# of STATE_DIR/env.
if $REAL; then
  KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cert-manager.sh" up "$STATE" || fail "cert-manager did not come up"
  log "ClusterIssuer kubespaces-apps-ca Ready after $(elapsed)"
fi

# ---------------------------------------------------------------- kwok (harness.md §4)
# Stages come from the pinned kwok module (assembled by build-tools.sh): node initialize + lease
# heartbeat, pod ready/complete/delete, and the volume stages that provision and bind PVs for PVCs
# of the `kwok-volume` StorageClass. --node-lease-duration-seconds=40 is required with the lease
# heartbeat stage, else nodes go NotReady after the grace period. kwok manages only the nodes
# annotated as fake: never the real one.
if $KWOK; then
  log "starting kwok"
  start_bg "$STATE" kwok "${NODE_EXEC[@]}" "$BIN/kwok" --kubeconfig="$KUBECONFIG" --config="$BIN/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.245.0.0/16 --node-ip=10.245.0.1 \
    --node-lease-duration-seconds=40 --server-address="127.0.0.1:$KWOK_PORT"

  # The default StorageClass served by kwok's volume stages (PVCs without a class get it, like on a
  # real cluster, so StatefulSets with volumeClaimTemplates schedule). Only on a kwok-only cluster:
  # a real pod cannot mount a volume kwok pretends to provision.
  if ! $REAL; then
    "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2 <<'EOF' || fail "StorageClass apply failed"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: kwok-volume
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kwok.x-k8s.io/volume
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
    operator_setting "$STATE" KUBESPACES_STORAGE_CLASS kwok-volume
  fi

  # One fake node, big enough for the benchmark (up to 1000 tenants, each with a control-plane pod).
  # Next to a real node it is tainted: only pods that tolerate kwok.x-k8s.io/node go there.
  taints="[]"
  $REAL && taints='[{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]'
  "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2 <<EOF || fail "node apply failed"
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-0
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
spec:
  taints: $taints
status:
  allocatable: {cpu: "1000", memory: 4Ti, pods: "10000"}
  capacity: {cpu: "1000", memory: 4Ti, pods: "10000"}
EOF

  node_ready() {
    alive_or_fail kwok
    [ "$("$K" get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
  }
  # TaintNodesByCondition adds node.kubernetes.io/not-ready at creation; kcm's node-lifecycle
  # controller removes it once kwok reports Ready. Pods only schedule after that.
  node_untainted() { ! "$K" get node kwok-node-0 -o jsonpath='{.spec.taints}' | grep -q not-ready; }
  wait_for "node kwok-node-0 Ready" 60 node_ready || fail "kwok-node-0 not Ready"
  wait_for "node kwok-node-0 untainted" 60 node_untainted || fail "kwok-node-0 still tainted"
fi

log "cluster ready in $STATE after $(elapsed)  (KUBECONFIG=$KUBECONFIG)"
