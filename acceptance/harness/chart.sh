#!/usr/bin/env bash
# chart.sh — the Helm chart charts/kubespaces, with the helm built from its pinned module
# (acceptance/tools/helm, build-tools.sh --with helm).
#
#   chart.sh check
#       helm lint --strict; helm template renders every manifest the operator generates
#       (operator/manifests/*.yaml, reached through the chart's symlinks: one source); every
#       operator setting (KUBESPACES_* of its flags) is set by the Deployment; both Deployments'
#       replicas prefer different nodes and spread over zones by default; with `registry` set,
#       every image (the tenants' vCluster images too) comes from it; helm package carries
#       the manifests' content; values.schema.json refuses bad values with a message naming them.
#       Needs no cluster.
#   chart.sh install STATE_DIR [helm args]
#       builds the operator's image from the release binary (target/release/kubespaces-operator,
#       build it first; KUBESPACES_OPERATOR_BINARY names another build: make test's is the debug
#       build its tests run), imports it into the node of the cluster in STATE_DIR (images.sh operator),
#       then `helm upgrade --install kubespaces charts/kubespaces -n kubespaces-system
#       --create-namespace --wait` with registry=localhost and that image's tag, and waits until
#       every replica is Ready. On a cluster with the platform Gateway (KUBESPACES_API_GATEWAY in
#       its operator.env) every Tenant gets a vCluster: the vCluster images are imported (the
#       chart's tenantImages must name them) and the chart gets the Gateway, the domain, the
#       StorageClass and manifests/vcluster/values-local.yaml (not its -images.yaml); elsewhere
#       controlPlane.kind=none. Where the cluster's Dex answers pods (dex.sh start STATE_DIR node)
#       and cert-manager issues, the server too: its image from the release binary
#       (KUBESPACES_SERVER_BINARY names another build; images.sh server), that Dex as its issuer
#       (its CA as server.oidc.caBundle) and its door at https://kubespaces.<domain> through the
#       Gateway; elsewhere server.enabled=false. Adds KUBESPACES_OPERATOR_NAMESPACE, KUBESPACES_OPERATOR_RELEASE and
#       KUBESPACES_OPERATOR_IMAGE to STATE_DIR/env and KUBESPACES_HELM to STATE_DIR/operator.env
#       (lib.sh). Idempotent: an unchanged binary gives the same image name, and helm changes
#       nothing.
#   chart.sh logs STATE_DIR
#       writes the operator pods' and the server pods' logs (current and previous containers) to
#       STATE_DIR/logs/operator-pods.log and server-pods.log.
#   chart.sh healthy STATE_DIR
#       succeeds while the Deployment has all its replicas Ready and no operator container's
#       last restart followed a crash (make test). A last exit with code 1 is accepted: the
#       operator exits so when it loses the Lease, but also on any error returned from main, and
#       only the last termination of each container is read.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=chart

CHART="$REPO_ROOT/charts/kubespaces"
RELEASE=${KUBESPACES_OPERATOR_RELEASE:-kubespaces}
# The platform values of tenant vClusters on this machine (local images; why each: in the file).
VCLUSTER_VALUES="$HARNESS_DIR/manifests/vcluster/values-local.yaml"
NAMESPACE=${KUBESPACES_OPERATOR_NAMESPACE:-kubespaces-system}
DEPLOYMENT="$RELEASE-operator"
SELECTOR="app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=operator"
USAGE="usage: $0 check | install STATE_DIR [helm args] | logs STATE_DIR | healthy STATE_DIR"
[ $# -ge 1 ] || die "$USAGE"
cmd=$1; shift

bin_dir() {
  if [ -n "${KUBESPACES_BIN:-}" ] && [ -x "$KUBESPACES_BIN/helm" ]; then echo "$KUBESPACES_BIN"
  else "$HARNESS_DIR/build-tools.sh" --with helm; fi
}
# Helm says, on stderr, for every symlink it follows: the chart's links are deliberate.
helm_() { "$HELM" "$@" 2> >(grep -v 'found symbolic link in path' >&2 || true); }

# "KIND NAME" of every object of a YAML stream on stdin.
kinds_names() {
  awk 'function flush() { if (k != "" && n != "") print k, n; k = ""; n = "" }
       /^---/ { flush(); next }
       /^kind:/ { k = $2 }
       /^metadata:/ { m = 1; next }
       /^[^ #]/ { m = 0 }
       m && /^  name:/ { n = $2 }
       END { flush() }'
}

load_state() {
  { [ $# -ge 1 ] && [ -d "$1" ]; } || die "$USAGE"
  STATE=$(cd "$1" && pwd)
  [ -f "$STATE/env" ] || die "$STATE/env missing: is the cluster in $STATE up? (cluster-up.sh $STATE)"
  # shellcheck disable=SC1091
  . "$STATE/env"
  # The Gateway, apps and storage settings, passed to the chart as values.
  load_operator_settings "$STATE"
  K=$KUBESPACES_KUBECTL
}

check() {
  local out bad expect
  BIN=$(bin_dir); HELM="$BIN/helm"
  # The server needs its issuer: without one the chart refuses, naming the value.
  if out=$(helm_ template "$RELEASE" "$CHART" 2>&1); then die "the chart rendered a server without an issuer"; fi
  grep -qF 'server.oidc.issuer is required' <<<"$out" || die "without an issuer, helm did not name server.oidc.issuer: $out"
  # Every other check renders the chart with an issuer (and the settings set only when given).
  local oidc=(--set-string server.oidc.issuer=https://dex.example.com/dex --set-string server.oidc.clientId=kubespaces)
  log "helm lint --strict"
  helm_ lint --strict "$CHART" "${oidc[@]}" >/dev/null || { helm_ lint --strict "$CHART" "${oidc[@]}" >&2 || true; die "helm lint failed"; }
  out=$(helm_ template "$RELEASE" "$CHART" -n "$NAMESPACE" --include-crds "${oidc[@]}")
  # Every object of every generated manifest is in the chart, under its own kind and name (the
  # connection-secret Role only where connection Secrets are allowed, so render one such too).
  local rendered missing
  rendered=$({ kinds_names <<<"$out"
               helm_ template "$RELEASE" "$CHART" -n "$NAMESPACE" "${oidc[@]}" \
                 --set 'tenants.connectionSecretNamespaces={crossplane-system}' | kinds_names
             } | sort -u)
  missing=$(for f in "$REPO_ROOT"/operator/manifests/*.yaml; do kinds_names <"$f"; done | sort -u \
            | comm -23 - <(echo "$rendered"))
  [ -z "$missing" ] || die "the chart renders none of: $(echo "$missing" | tr '\n' ';') (link the manifest from charts/kubespaces/files/ and include it)"
  # Every operator setting (a clap argument with an environment variable) is set by the chart;
  # the waker's (operator/src/waker) by its Deployment.
  local settings unset
  settings=$(helm_ template "$RELEASE" "$CHART" --set-string operator.selector=x --show-only templates/deployment.yaml "${oidc[@]}")
  unset=$(grep -rhoE 'env = "KUBESPACES_[A-Z_]+"' --exclude-dir=waker "$REPO_ROOT/operator/src" | cut -d'"' -f2 | sort -u \
          | while read -r var; do grep -q -- "- name: $var\$" <<<"$settings" || echo "$var"; done)
  [ -z "$unset" ] || die "operator settings the chart does not set: $(echo "$unset" | tr '\n' ' ')(add a value, its schema and the env entry in templates/deployment.yaml)"
  settings=$(helm_ template "$RELEASE" "$CHART" --show-only templates/waker.yaml "${oidc[@]}")
  unset=$(grep -rhoE 'env = "KUBESPACES_[A-Z_]+"' "$REPO_ROOT/operator/src/waker" | cut -d'"' -f2 | sort -u \
          | while read -r var; do grep -q -- "- name: $var\$" <<<"$settings" || echo "$var"; done)
  [ -z "$unset" ] || die "waker settings the chart does not set: $(echo "$unset" | tr '\n' ' ')(add a value, its schema and the env entry in templates/waker.yaml)"
  # Every server setting likewise, by the server's Deployment (those set only when given, given).
  settings=$(helm_ template "$RELEASE" "$CHART" --show-only templates/server-deployment.yaml "${oidc[@]}" \
             --set-string server.oidc.adminGroup=admins --set-string server.oidc.caBundle="-----BEGIN CERTIFICATE-----" \
             --set 'server.limits.creatorGroups={creators}' \
             --set-string tenants.maxima.cpu=8 --set-string tenants.maxima.memory=8Gi --set-string tenants.maxima.storage=8Gi)
  unset=$(grep -rhoE 'env = "KUBESPACES_[A-Z_]+"' "$REPO_ROOT/server/src" | cut -d'"' -f2 | sort -u \
          | while read -r var; do grep -q -- "- name: $var\$" <<<"$settings" || echo "$var"; done)
  [ -z "$unset" ] || die "server settings the chart does not set: $(echo "$unset" | tr '\n' ' ')(add a value under server, its schema and the env entry in templates/server-deployment.yaml)"
  # Placement: by default each Deployment's replicas prefer different nodes and spread over zones
  # without ever staying Pending for it; a value of its own replaces the spread.
  local dep values spread
  for dep in deployment:operator server-deployment:server; do
    values=${dep#*:}; [ "$values" = operator ] && values="" || values="$values."; dep=${dep%:*}
    spread=$(helm_ template "$RELEASE" "$CHART" --show-only "templates/$dep.yaml" "${oidc[@]}")
    for expect in 'topologyKey: kubernetes.io/hostname' 'topologyKey: topology.kubernetes.io/zone' \
                  'whenUnsatisfiable: ScheduleAnyway' 'matchLabelKeys: [pod-template-hash]'; do
      grep -qF -- "$expect" <<<"$spread" || die "templates/$dep.yaml: no '$expect' by default"
    done
    spread=$(helm_ template "$RELEASE" "$CHART" --show-only "templates/$dep.yaml" "${oidc[@]}" \
             --set "${values}topologySpreadConstraints[0].maxSkew=2" \
             --set-string "${values}topologySpreadConstraints[0].topologyKey=example.com/rack" \
             --set-string "${values}topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule")
    { grep -qF 'topologyKey: example.com/rack' <<<"$spread" && ! grep -qF 'topology.kubernetes.io/zone' <<<"$spread"; } \
      || die "templates/$dep.yaml: ${values}topologySpreadConstraints does not replace the default spread"
  done
  # registry: every image of the platform and of its tenants' vClusters comes from it, none from
  # where the defaults name (ghcr.io, localhost).
  local reg=registry.example.com:5000/platform images
  out=$(helm_ template "$RELEASE" "$CHART" "${oidc[@]}" --set-string registry="$reg/")
  images=$(grep -oE '(image|registry|repository): .*' <<<"$out" | tr -d '"' | sort -u)
  for expect in "image: $reg/kubespaces/operator:" "image: $reg/kubespaces/server:" \
                "image: $reg/kubespaces/coredns:" "registry: $reg" "repository: kubespaces/vcluster" \
                "repository: kubespaces/kubernetes"; do
    grep -qF -- "$expect" <<<"$images" || die "with registry=$reg/, nothing rendered '$expect': $images"
  done
  ! grep -E 'ghcr.io|localhost' <<<"$images" || die "with registry=$reg/, images still come from elsewhere"
  # helm package follows the symlinks: the archive holds the CRD's content, not a link.
  local pkg
  pkg=$(mktemp -d)
  helm_ package "$CHART" -d "$pkg" >/dev/null
  tar -xmzf "$pkg"/kubespaces-*.tgz -C "$pkg"
  cmp -s "$pkg/kubespaces/crds/tenants.kubespaces.io.yaml" "$REPO_ROOT/operator/manifests/tenants.kubespaces.io.yaml" \
    || die "the packaged chart does not carry operator/manifests/tenants.kubespaces.io.yaml"
  rm -rf "$pkg"
  # The schema: a wrong value is refused, and the message names it.
  for bad in tenants.podSecurity.level=strict operator.concurrency=0 tenants.egress.except[0]=10.0.0.1/8x \
             server.limits.createRate=10/day server.replicaCount=0 registry=https://registry.example.com \
             tenantImages.vcluster=kubespaces/vcluster; do
    expect="/${bad%%=*}"; expect=${expect//./\/}; expect=${expect//\[/\/}; expect=${expect//\]/}
    if out=$(helm_ template "$RELEASE" "$CHART" "${oidc[@]}" --set "$bad" 2>&1); then
      die "the values schema accepted $bad"
    fi
    grep -qF "'$expect'" <<<"$out" || die "refusing $bad, helm did not name $expect: $out"
  done
  log "chart checked: lint clean, every generated manifest rendered, every operator setting set, replicas spread, images from the registry, package complete, schema refuses bad values"
}

install() {
  load_state "$@"; shift
  BIN=$(bin_dir); HELM="$BIN/helm"
  local op=${KUBESPACES_OPERATOR_BINARY:-$REPO_ROOT/target/release/kubespaces-operator} image t0=$SECONDS
  [ -x "$op" ] || die "$op not found: cargo build --release -p kubespaces-operator"
  image=$(KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" operator "$STATE" "$op")
  # Tenant control planes where the cluster has what they need (a real node with the platform
  # Gateway and a volume provisioner): the local images and the Gateway's addresses.
  local cp=(--set-string controlPlane.kind=none)
  # The platform's maxima per Tenant, above what any test asks for (validation.rs tests them).
  local maxima=(--set-string tenants.maxima.cpu=64 --set-string tenants.maxima.memory=256Gi
                --set-string tenants.maxima.storage=1Ti)
  if [ -n "${KUBESPACES_API_GATEWAY:-}" ] && [ -f "$VCLUSTER_VALUES" ]; then
    # The images come from the chart's tenantImages under registry=localhost (below), not from
    # values-local-images.yaml: each must name what images.sh imported.
    local built name tag
    built=$(KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" vcluster "$STATE")
    while read -r name tag _; do chart_tenant_image "$name" "kubespaces/$name:$tag"; done <<<"$built"
    { printf 'controlPlane:\n  vcluster:\n    values:\n'; sed 's/^/      /' "$VCLUSTER_VALUES"; } >"$STATE/chart-vcluster-values.yaml"
    cp=(--set-string controlPlane.kind=vcluster
        --set-string tenants.baseDomain="$KUBESPACES_DOMAIN"
        --set-string controlPlane.apiGateway="$KUBESPACES_API_GATEWAY"
        --set-string controlPlane.gatewayAddress="$KUBESPACES_GATEWAY_SERVICE"
        --set-string controlPlane.vcluster.storageClass="${KUBESPACES_STORAGE_CLASS:-}"
        -f "$STATE/chart-vcluster-values.yaml")
    # Apps exposure where the cluster has cert-manager's issuer (cert-manager.sh) too.
    if [ -n "${KUBESPACES_APPS_CLUSTER_ISSUER:-}" ]; then
      cp+=(--set-string controlPlane.apps.gatewayClass="$KUBESPACES_APPS_GATEWAY_CLASS"
           --set-string controlPlane.apps.clusterIssuer="$KUBESPACES_APPS_CLUSTER_ISSUER")
    fi
  fi
  # The server, where the cluster's Dex answers its pods (dex.sh start STATE_DIR node), at the
  # door of the cluster's Gateway with a certificate of its CA; elsewhere no server.
  local server=(--set server.enabled=false)
  if [ -n "${KUBESPACES_NODE_OIDC_ISSUER:-}" ] && [ -n "${KUBESPACES_APPS_CLUSTER_ISSUER:-}" ]; then
    local sv=${KUBESPACES_SERVER_BINARY:-$REPO_ROOT/target/release/kubespaces-server} server_image
    [ -x "$sv" ] || die "$sv not found: cargo build --release -p kubespaces-server"
    server_image=$(KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" server "$STATE" "$sv")
    [ "${server_image%:*}" = localhost/kubespaces/server ] || die "images.sh server named $server_image, not localhost/kubespaces/server:<tag>"
    server=(--set-string server.image.tag="${server_image##*:}"
            --set-string server.oidc.issuer="$KUBESPACES_NODE_OIDC_ISSUER"
            --set-string server.oidc.clientId=kubespaces
            --set-string server.oidc.adminGroup=kubespaces-admins
            --set-file server.oidc.caBundle="$KUBESPACES_NODE_OIDC_CA_FILE"
            --set-string server.gateway.className="$KUBESPACES_APPS_GATEWAY_CLASS"
            --set-string server.gateway.clusterIssuer="$KUBESPACES_APPS_CLUSTER_ISSUER")
  fi
  # Every image from registry=localhost, as a platform team's come from theirs: the operator's
  # and the server's (their content tags), and every tenant's vCluster's (tenantImages).
  [ "${image%:*}" = localhost/kubespaces/operator ] || die "images.sh operator named $image, not localhost/kubespaces/operator:<tag>"
  log "helm upgrade --install $RELEASE charts/kubespaces -n $NAMESPACE (image $image) ${maxima[*]} ${cp[*]} ${server[*]} $*"
  if ! helm_ upgrade --install "$RELEASE" "$CHART" -n "$NAMESPACE" --create-namespace \
       --set-string registry=localhost --set-string image.tag="${image##*:}" \
       "${maxima[@]}" "${cp[@]}" "${server[@]}" --wait --timeout 180s "$@" >/dev/null; then
    "$K" -n "$NAMESPACE" get pods -o wide >&3 || true
    "$K" -n "$NAMESPACE" describe pods -l "$SELECTOR" | tail -n 40 >&3 || true
    logs "$STATE"
    tail -n 40 "$STATE/logs/operator-pods.log" >&3 || true
    tail -n 40 "$STATE/logs/server-pods.log" >&3 || true
    die "helm install of the chart failed"
  fi
  # --wait is satisfied with replicas minus maxUnavailable Ready: wait for every one, of the new
  # ReplicaSet, with the old ones gone.
  "$K" -n "$NAMESPACE" rollout status "deployment/$DEPLOYMENT" --timeout=120s >/dev/null \
    || die "deployment $DEPLOYMENT did not roll out"
  all_ready() {
    local want ready
    want=$("$K" -n "$NAMESPACE" get deployment "$DEPLOYMENT" -o jsonpath='{.spec.replicas}')
    ready=$("$K" -n "$NAMESPACE" get pods -l "$SELECTOR" -o jsonpath='{range .items[*]}{.status.phase}/{.metadata.deletionTimestamp}/{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -cx 'Running//True')
    [ "$ready" = "$want" ] && [ "$("$K" -n "$NAMESPACE" get pods -l "$SELECTOR" -o name | wc -l)" = "$want" ]
  }
  wait_for "every operator replica Running and Ready" 120 all_ready || die "the operator's replicas are not all Ready"
  operator_setting "$STATE" KUBESPACES_HELM "$HELM"
  env_set "$STATE/env" KUBESPACES_OPERATOR_NAMESPACE "$NAMESPACE"
  env_set "$STATE/env" KUBESPACES_OPERATOR_RELEASE "$RELEASE"
  env_set "$STATE/env" KUBESPACES_OPERATOR_IMAGE "$image"
  log "operator installed by the chart in $((SECONDS - t0))s: $("$K" -n "$NAMESPACE" get pods -l "$SELECTOR" -o name | tr '\n' ' ')"
}

logs() {
  load_state "$@"
  local component out pod
  mkdir -p "$STATE/logs"
  for component in operator server; do
    out="$STATE/logs/$component-pods.log"
    : >"$out"
    for pod in $("$K" -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=$component" -o name 2>/dev/null); do
      { echo "===== $pod (previous container, if any)"
        "$K" -n "$NAMESPACE" logs "$pod" --previous 2>/dev/null || true
        echo "===== $pod"
        "$K" -n "$NAMESPACE" logs "$pod" 2>&1 || true; } >>"$out"
    done
  done
}

healthy() {
  load_state "$@"
  local want ready restarts crashed
  want=$("$K" -n "$NAMESPACE" get deployment "$DEPLOYMENT" -o jsonpath='{.spec.replicas}') \
    || { log "no deployment $NAMESPACE/$DEPLOYMENT"; exit 1; }
  ready=$("$K" -n "$NAMESPACE" get deployment "$DEPLOYMENT" -o jsonpath='{.status.readyReplicas}')
  [ "${ready:-0}" = "$want" ] || { log "the operator has ${ready:-0} of $want replicas Ready"; exit 1; }
  # "POD RESTARTS EXITCODE REASON" of the last termination of each operator container.
  restarts=$("$K" -n "$NAMESPACE" get pods -l "$SELECTOR" -o jsonpath='{range .items[*]}{.metadata.name} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].lastState.terminated.exitCode} {.status.containerStatuses[0].lastState.terminated.reason}{"\n"}{end}' | awk '$2 > 0')
  [ -z "$restarts" ] || log "operator containers restarted (pod, restarts, last exit code and reason): $restarts"
  # The operator ends with exit code 1 when it loses the Lease (for instance while the API server
  # is away), and Kubernetes starts it again as a standby: that is by design. A panic (101), an
  # OOM kill or a signal is a crash.
  crashed=$(awk '$3 != 1' <<<"$restarts")
  [ -z "$crashed" ] || { log "operator containers crashed: $crashed"; exit 1; }
}

case $cmd in
  check) [ $# -eq 0 ] || die "$USAGE"; check ;;
  install) install "$@" ;;
  logs) logs "$@" ;;
  healthy) healthy "$@" ;;
  *) die "$USAGE" ;;
esac
