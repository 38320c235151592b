#!/usr/bin/env bash
# dev-up.sh — `make up`: a local KubeSpaces for development in .kubespaces/dev/ (gitignored).
# Builds or looks up the cached cluster binaries, starts the cluster (control plane + a real node,
# applying the CRDs), builds and starts the operator in the background, and prints what to do next.
# Idempotent: a healthy cluster and an up-to-date running operator are left alone.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-up
STATE="$REPO_ROOT/.kubespaces/dev"
mkdir -p "$STATE"

ensure_runtime_tools
ensure_go
ensure_rust

BIN=$("$HARNESS_DIR/build-tools.sh")
log "building the operator (cargo build -p kubespaces-operator)"
(cd "$REPO_ROOT" && cargo build -p kubespaces-operator)

KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cluster-up.sh" "$STATE"
if ! KUBESPACES_OPERATOR_BIN="$REPO_ROOT/target/debug/kubespaces-operator" \
     "$HARNESS_DIR/operator.sh" start "$STATE"; then
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
  tail -f $rel/logs/operator.log

Stop everything with: make down
EOF
