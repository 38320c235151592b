#!/usr/bin/env bash
# crossplane.sh install|uninstall STATE_DIR — Crossplane v2 running in the cluster in STATE_DIR,
# installed from its own Helm chart (cluster/charts/crossplane of its pinned module) with the images
# images.sh crossplane builds, plus the composition function docs/crossplane.md's Composition
# uses (function-patch-and-transform), installed by Crossplane's package manager from its package.
# For tests/crossplane.rs; binaries and upstream files: build-tools.sh --with crossplane.
#
# No registry is reachable here, so the function's package comes through Crossplane's package
# cache: a ConfigMap holding the entry xp-package wrote, mounted as the cache by upstream's chart
# (packageCache.configMap). The Function names the package by digest (which needs no registry to
# resolve) with packagePullPolicy Never, and a DeploymentRuntimeConfig runs it from the package
# image images.sh imported into the node. Crossplane's webhooks are off (webhooks.enabled=false):
# this cluster runs no admission webhook (cert-manager's neither), and the XRD and Composition the
# tests apply are validated by the composite reconciler itself.
#
#   install    idempotent; waits until Crossplane, its RBAC manager and the Function are ready.
#              Prints the Function's name.
#   uninstall  removes every XRD and Composition (with them the XRs), the Function, then the
#              release, Crossplane's CRDs and its namespace, and waits until they are gone.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=crossplane

[ $# -eq 2 ] || die "usage: $0 install|uninstall STATE_DIR"
CMD=$1
STATE=$(cd "$2" && pwd)
# shellcheck disable=SC1091
. "$STATE/env"
K=$KUBESPACES_KUBECTL
BIN=$KUBESPACES_BIN
NS=crossplane-system
RELEASE=crossplane
FUNCTION=function-patch-and-transform
RUNTIME_CONFIG=kubespaces-local-images
CACHE_CONFIGMAP=crossplane-package-cache
helm_() { "$BIN/helm" --kubeconfig "$KUBECONFIG" "$@"; }

install() {
  local t0=$SECONDS lines xp_v fn_v pkg_tarball ref cache_file
  lines=$("$HARNESS_DIR/images.sh" crossplane "$STATE")
  xp_v=$(awk '$1 == "crossplane" {print $2}' <<<"$lines")
  fn_v=$(awk -v f="$FUNCTION" '$1 == f {print $2}' <<<"$lines")
  pkg_tarball=$(awk -v f="$FUNCTION" '$1 == f {print $3}' <<<"$lines")
  ref=$(cat "$pkg_tarball.ref")
  cache_file=$(find "$pkg_tarball.cache" -name '*.gz' | head -1)
  [ -n "$cache_file" ] || die "no package cache entry in $pkg_tarball.cache"

  $K create namespace "$NS" --dry-run=client -o yaml | $K apply -f - >/dev/null
  # The cache as Crossplane's package manager stores it: <id>.gz, one file per package.
  $K -n "$NS" create configmap "$CACHE_CONFIGMAP" --from-file="$cache_file" --dry-run=client -o yaml \
    | $K apply --server-side --force-conflicts -f - >/dev/null
  log "helm upgrade --install $RELEASE (Crossplane $xp_v)"
  helm_ upgrade --install "$RELEASE" "$BIN/crossplane-cluster/charts/crossplane" -n "$NS" \
    --set image.repository=localhost/kubespaces/crossplane --set-string image.tag="$xp_v" \
    --set image.pullPolicy=Never --set webhooks.enabled=false \
    --set packageCache.configMap="$CACHE_CONFIGMAP" --wait --timeout 5m >/dev/null
  $K -n "$NS" rollout status deployment/crossplane deployment/crossplane-rbac-manager --timeout=5m >/dev/null

  # The package's image as the function's container (Crossplane would run the package's name,
  # which no registry serves here).
  $K apply -f - >/dev/null <<EOF
apiVersion: pkg.crossplane.io/v1beta1
kind: DeploymentRuntimeConfig
metadata:
  name: $RUNTIME_CONFIG
spec:
  deploymentTemplate:
    spec:
      selector: {}
      template:
        spec:
          containers:
            - name: package-runtime
              image: localhost/kubespaces/$FUNCTION:$fn_v
              imagePullPolicy: Never
---
apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: $FUNCTION
spec:
  package: $ref
  packagePullPolicy: Never
  runtimeConfigRef:
    name: $RUNTIME_CONFIG
EOF
  log "waiting for the Function to be installed and healthy"
  $K wait "function.pkg.crossplane.io/$FUNCTION" --for=condition=Installed --timeout=3m >/dev/null
  $K wait "function.pkg.crossplane.io/$FUNCTION" --for=condition=Healthy --timeout=3m >/dev/null
  log "Crossplane $xp_v and $FUNCTION ready in $((SECONDS - t0))s"
  echo "$FUNCTION"
}

uninstall() {
  local crds kind
  # First what was composed with it, while Crossplane still runs to finalize it: deleting an XRD
  # deletes its XRs and their kind (composed Tenants are deleted in turn; their operator finalizes
  # them). Left for later, their finalizers would hold the CRDs' deletion forever.
  for kind in compositeresourcedefinitions compositions; do
    if $K get crd "$kind.apiextensions.crossplane.io" >/dev/null 2>&1; then
      $K delete "$kind.apiextensions.crossplane.io" --all --wait=true --timeout=3m >/dev/null
    fi
  done
  $K delete --ignore-not-found --wait=true --timeout=3m "function.pkg.crossplane.io/$FUNCTION" \
    "deploymentruntimeconfig.pkg.crossplane.io/$RUNTIME_CONFIG" >/dev/null 2>&1 || true
  helm_ uninstall "$RELEASE" -n "$NS" --wait --ignore-not-found >/dev/null
  # Helm leaves CRDs; `core init` installed them, so they are Crossplane's own groups.
  crds=$($K get crd -o name | grep -E '\.crossplane\.io$' || true)
  # With Crossplane gone nothing removes its finalizers from what is left of its kinds (a
  # FunctionRevision, the package Lock: a CI run under load left both when the Function's
  # deletion outlasted Crossplane), and they would hold the CRDs' deletion forever.
  local crd ns name
  for crd in $crds; do
    $K get "${crd#*/}" -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' 2>/dev/null \
      | while read -r ns name; do
          [ -n "$name" ] || { name=$ns; ns=; }
          [ -n "$name" ] || continue
          $K patch "${crd#*/}" "$name" ${ns:+-n "$ns"} --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
        done
  done
  # shellcheck disable=SC2086
  # (kubectl's --timeout does not bound the wait for a CRD's finalizer: timeout does.)
  [ -z "$crds" ] || timeout 180 $K delete --wait=true $crds >/dev/null \
    || die "Crossplane's CRDs are not gone after 3 min: $($K get crd -o name | grep -E '\.crossplane\.io$' | tr '\n' ' ')"
  $K delete namespace "$NS" --ignore-not-found --wait=true --timeout=3m >/dev/null
  log "Crossplane uninstalled"
}

case $CMD in
  install) install ;;
  uninstall) uninstall ;;
  *) die "usage: $0 install|uninstall STATE_DIR" ;;
esac
