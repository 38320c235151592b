#!/usr/bin/env bash
# vcluster-smoke.sh STATE_DIR [RELEASE [helm args...]] — installs the pinned vCluster chart
# (charts/vcluster) into the cluster in STATE_DIR (it needs a real node) with
# manifests/vcluster/values-local.yaml and values-local-images.yaml, and proves that the vCluster works:
#   1. the images (images.sh vcluster) are imported, then `helm install` runs;
#   2. the Secret vc-RELEASE appears (the time from install is printed), the PVC is Bound;
#   3. that Secret's kubeconfig works from a pod of the host cluster as exported (Service DNS name);
#      with its server rewritten to the vCluster pod's address and kubectl run in the node's network
#      namespace: `get ns`, `get nodes`; a pod created in the vCluster runs on the host (synced),
#      and resolves a name through the vCluster's CoreDNS;
#   4. the memory of the vCluster pod: RSS per process, and its cgroup's usage.
# Release (default vc1) in namespace RELEASE. Extra helm args (e.g. --set ...) are passed on, for
# trying other values. KEEP=1 leaves the release installed; otherwise it is uninstalled and its
# namespace deleted at the end. SETTLE=N measures memory N seconds after the checks. Needs:
# build-tools.sh --with helm --with vcluster.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$(dirname "$0")/node-lib.sh"
LOG_PREFIX=vcluster-smoke

[ $# -ge 1 ] || die "usage: $0 STATE_DIR [RELEASE [helm args...]]"
STATE=$(cd "$1" && pwd); shift
REL=${1:-vc1}; [ $# -gt 0 ] && shift
NS=$REL
[ -f "$STATE/env" ] || die "$STATE/env missing: is the cluster in $STATE up? (cluster-up.sh $STATE)"
# shellcheck disable=SC1091
. "$STATE/env"
# shellcheck disable=SC1091
. "$STATE/run/node.env"
node_exec_init
K=$KUBESPACES_KUBECTL
BIN=$KUBESPACES_BIN
for b in helm vcluster kine; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing: run acceptance/harness/build-tools.sh --with helm --with vcluster"
done
CHART=$(ls "$REPO_ROOT"/charts/vcluster/vcluster-*.tgz)
VALUES="$HARNESS_DIR/manifests/vcluster/values-local.yaml"
IMAGES="$HARNESS_DIR/manifests/vcluster/values-local-images.yaml"
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }

KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" vcluster "$STATE" >/dev/null

# Unless KEEP=1, the release and its namespace go at the end, also when a check failed.
cleanup() {
  local rc=$?
  trap - ERR
  if [ "${KEEP:-}" != 1 ]; then
    "$BIN/helm" uninstall "$REL" -n "$NS" --wait >/dev/null 2>&1 || true
    "$K" delete namespace "$NS" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true
    rm -f "$STATE/vc-$REL.kubeconfig"
    log "uninstalled $REL and deleted namespace $NS"
  fi
  exit "$rc"
}
trap cleanup EXIT
log "helm install $REL $(basename "$CHART") -n $NS $*"
t0=$(now)
"$BIN/helm" install "$REL" "$CHART" -n "$NS" --create-namespace -f "$VALUES" -f "$IMAGES" \
  --set "exportKubeConfig.server=https://$REL.$NS.svc:443" \
  --set "controlPlane.proxy.extraSANs={$REL.$NS.svc,$REL.$NS.svc.cluster.local}" "$@" >&2
secret() { "$K" -n "$NS" get secret "vc-$REL" -o jsonpath='{.data.config}' | grep -q .; }
if ! wait_for "Secret vc-$REL" 240 secret; then
  "$K" -n "$NS" get pods,pvc -o wide >&2 || true
  "$K" -n "$NS" describe pods >&2 || true
  "$K" -n "$NS" logs "statefulset/$REL" --all-containers --tail=40 >&2 || true
  die "no Secret vc-$REL after 240 s"
fi
T_SECRET=$(since "$t0")
log "Secret vc-$REL after ${T_SECRET}s"
[ "$("$K" -n "$NS" get pvc "data-$REL-0" -o jsonpath='{.status.phase}')" = Bound ] \
  || die "PVC data-$REL-0 is not Bound"
log "PVC data-$REL-0 Bound: $("$K" -n "$NS" get pvc "data-$REL-0" -o jsonpath='{.spec.volumeName} ({.spec.storageClassName})')"

# The kubeconfig as exported (server https://RELEASE.NAMESPACE.svc:443), used from a pod of the
# host cluster, as the operator would: through cluster DNS and the Service.
"$K" -n "$NS" run smoke-kubeconfig --image="$KUBESPACES_KUBECTL_IMAGE" --image-pull-policy=IfNotPresent \
  --restart=Never --overrides='{"spec": {"volumes": [{"name": "kc", "secret": {"secretName": "vc-'"$REL"'"}}],
    "containers": [{"name": "smoke-kubeconfig", "image": "'"$KUBESPACES_KUBECTL_IMAGE"'",
      "command": ["kubectl", "--kubeconfig=/kc/config", "get", "namespaces", "-o", "name"],
      "volumeMounts": [{"name": "kc", "mountPath": "/kc"}]}]}}' >/dev/null
done_pod() { [[ "$("$K" -n "$NS" get pod smoke-kubeconfig -o jsonpath='{.status.phase}')" =~ ^(Succeeded|Failed)$ ]]; }
wait_for "pod smoke-kubeconfig" 120 done_pod || die "pod smoke-kubeconfig did not finish"
out=$("$K" -n "$NS" logs smoke-kubeconfig)
"$K" -n "$NS" delete pod smoke-kubeconfig --wait=false >/dev/null
grep -qx namespace/kube-system <<<"$out" \
  || die "the exported kubeconfig did not work from a host pod: $out"
log "exported kubeconfig ($(grep -o 'server: .*' <<<"$("$K" -n "$NS" get secret "vc-$REL" -o jsonpath='{.data.config}' | base64 -d)")) works from a host pod"

# The same kubeconfig with its server the vCluster pod's address (the node's namespace routes to the
# pod network, not to Service IPs), for kubectl run here in the node's namespace.
VK="$STATE/vc-$REL.kubeconfig"
ip=$("$K" -n "$NS" get pod "$REL-0" -o jsonpath='{.status.podIP}')
( umask 077
  "$K" -n "$NS" get secret "vc-$REL" -o jsonpath='{.data.config}' | base64 -d \
    | sed -E "s#server: https://.*#server: https://$ip:8443#" >"$VK" )
vk() { in_node "$K" --kubeconfig "$VK" "$@"; }
wait_for "the vCluster's API" 60 vk get --raw=/readyz || die "the vCluster's API does not answer at https://$ip:8443"
log "vCluster API ready after $(since "$t0")s: $(vk version -o json | sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p' | tail -1)"
vk get ns >&2
vk get nodes -o wide >&2

# A pod in the vCluster runs on the host, and resolves names through the vCluster's CoreDNS.
vk run smoke --image="$KUBESPACES_BUSYBOX_IMAGE" --image-pull-policy=IfNotPresent --restart=Never \
  --command -- sleep 3600 >&2
vk wait --for=condition=Ready pod/smoke --timeout=120s >&2 || { vk describe pod smoke >&2; die "pod smoke not Ready in the vCluster"; }
log "pod smoke Ready in the vCluster after $(since "$t0")s; on the host:"
"$K" -n "$NS" get pods -o wide >&2
host_pod=$("$K" -n "$NS" get pods -l vcluster.loft.sh/managed-by="$REL" -o name | grep smoke) \
  || die "no synced pod for smoke in host namespace $NS"
[ "$("$K" -n "$NS" get "$host_pod" -o jsonpath='{.status.phase}')" = Running ] || die "$host_pod is not Running"
vk exec smoke -- nslookup kubernetes.default.svc.cluster.local >&2 \
  || die "name resolution through the vCluster's CoreDNS failed"
log "DNS inside the vCluster works"

# Memory of the vCluster pod's processes (cgroup v1: memory.usage/stat of the pod's cgroup), after
# SETTLE seconds (default 0: right away) for figures taken at the same point of a run.
if [ "${SETTLE:-0}" -gt 0 ]; then log "measuring in ${SETTLE}s"; sleep "$SETTLE"; fi
uid=$("$K" -n "$NS" get pod "$REL-0" -o jsonpath='{.metadata.uid}')
log "RSS of the vCluster pod $REL-0 (MiB):"
total=0
for p in /proc/[0-9]*; do
  grep -q "pod$uid" "$p/cgroup" 2>/dev/null || continue
  exe=$(basename "$(readlink "$p/exe" 2>/dev/null)" 2>/dev/null) || continue
  [ "$exe" = pause ] && continue
  rss=$(awk '/^VmRSS:/ {print int($2/1024)}' "$p/status" 2>/dev/null) || continue
  [ -n "$rss" ] || continue
  printf '  %-26s %5s\n' "$exe" "$rss" >&2
  total=$((total + rss))
done
printf '  %-26s %5s\n' total "$total" >&2
cg=$(find /sys/fs/cgroup/memory -maxdepth 6 -type d -name "pod$uid" 2>/dev/null | head -1)
if [ -n "$cg" ]; then
  awk -v u="$(cat "$cg/memory.usage_in_bytes")" '$1 == "total_rss" {r=$2} $1 == "total_cache" {c=$2}
    END {printf "  pod cgroup: usage %d MiB (rss %d, cache %d)\n", u/1048576, r/1048576, c/1048576}' \
    "$cg/memory.stat" >&2
fi
cg=$(find /sys/fs/cgroup/cpuacct -maxdepth 6 -type d -name "pod$uid" 2>/dev/null | head -1)
[ -z "$cg" ] || log "CPU used by the vCluster pod since its start: $(awk '{printf "%.1f s", $1/1e9}' "$cg/cpuacct.usage")"
log "requests/limits of the syncer: $("$K" -n "$NS" get pod "$REL-0" -o jsonpath='{.spec.containers[0].resources}')"

echo "secret_seconds=$T_SECRET rss_total_mib=$total"
