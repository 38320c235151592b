#!/usr/bin/env bash
# dev-up.sh — `make up`: a local KubeSpaces for development in .kubespaces/dev/ (gitignored).
# Builds or looks up the cached cluster binaries and helm, starts the cluster (control plane + a
# real node, applying the CRDs), builds the release operator and its image, installs the chart
# (charts/kubespaces: the operator as two pods in kubespaces-system), and prints what to do next.
# Idempotent: a healthy cluster is left alone, and the chart is upgraded in place (a rebuilt
# operator has a new image name, so its pods roll; an unchanged one changes nothing).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-up
STATE="$REPO_ROOT/.kubespaces/dev"
mkdir -p "$STATE"

ensure_runtime_tools
ensure_node_tools
ensure_go
ensure_rust

BIN=$("$HARNESS_DIR/build-tools.sh" --with helm --with vcluster)
log "building the operator (cargo build --release -p kubespaces-operator)"
(cd "$REPO_ROOT" && cargo build --release -p kubespaces-operator)

# Only the CRDs before kube-controller-manager starts; the chart installs everything else.
KUBESPACES_MANIFESTS=crds KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cluster-up.sh" "$STATE"
# An operator process started by an older `make up` (operator.sh) would reconcile alongside the pods.
"$HARNESS_DIR/operator.sh" stop "$STATE"
if ! KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" install "$STATE"; then
  log "the operator did not start; the cluster keeps running (make down stops it)"
  exit 1
fi

rel=${STATE#"$REPO_ROOT/"}
cat <<EOF

KubeSpaces is running locally (state and logs in $rel/, stop with: make down).
The cluster has a real node (containerd, kubelet, kube-proxy, CoreDNS): pods really run.

  . $rel/env                          # KUBECONFIG and friends
  alias kubectl=$BIN/kubectl        # or any kubectl >= 1.36
  kubectl apply -f examples/tenant.yaml
  kubectl get tenants
  kubectl -n kubespaces-tenant-team-atlas run hello --image=\$KUBESPACES_BUSYBOX_IMAGE \\
    --image-pull-policy=IfNotPresent --restart=Never -- echo hello from a real pod
  kubectl -n kubespaces-tenant-team-atlas logs hello
  kubectl -n kubespaces-system get pods,lease     # the operator: two pods, one holds the Lease
  kubectl -n kubespaces-system logs -f --prefix -l app.kubernetes.io/component=operator

Stop everything with: make down
EOF
