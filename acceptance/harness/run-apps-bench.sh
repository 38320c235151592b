#!/usr/bin/env bash
# run-apps-bench.sh [SECONDS [ROUNDS]] — `make bench-apps`: what the Gateway costs a tenant's app
# (issue 9), in .kubespaces/appsbench/: a fresh cluster with the real node, the platform Gateway
# (Traefik) and cert-manager, the chart installed by `chart.sh install` (apps exposure on), one
# Tenant with an app published from inside it as docs/exposing-apps.md does (a Deployment, a
# Service, an HTTPRoute; the app is the harness's small Go server in plain-HTTP mode, which keeps
# connections alive as most apps do). Then wrk, from the node's network namespace, side by side:
#   gateway  https://<app>.<tenant>.apps.<domain>/ through Traefik (TLS terminated there, the
#            tenant's certificate), keep-alive connections to the Gateway;
#   direct   http://<pod IP>:8080/, the same pod, no Gateway;
# each for SECONDS (default 10) with 8 connections on 2 threads, ROUNDS (default 3) rounds, the
# order alternating. Prints requests/s and latency p50/p99 of each side per round, the medians
# and the ratios (gateway / direct). The cluster is stopped on exit, also on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-apps
DURATION=${1:-10}
ROUNDS=${2:-3}
STATE="$REPO_ROOT/.kubespaces/appsbench"
TENANT=bench-apps
T0=$SECONDS

# The release operator (its image is made from this binary), the real node, only the CRDs: the
# chart installs the rest.
bench_cluster "$STATE" real --need wrk:wrk --build kubespaces-operator --with helm --with vcluster \
  --crds --chart
[ -n "${KUBESPACES_APPS_CLUSTER_ISSUER:-}" ] || die "the cluster in $STATE has no apps issuer (cert-manager.sh): no apps exposure"
K=$KUBESPACES_KUBECTL

log "==> Tenant $TENANT and its app"
"$K" apply -f - <<EOF >&2
apiVersion: kubespaces.io/v1alpha1
kind: Tenant
metadata: {name: $TENANT}
spec:
  owner: bench@example.com
  resources: {cpu: "2", memory: 4Gi}
EOF
"$K" wait "tenant/$TENANT" --for=condition=Ready --timeout=5m >&2
TKC="$STATE/$TENANT.kubeconfig"
(umask 077; "$K" get secret tenant-kubeconfig -n "kubespaces-tenant-$TENANT" -o jsonpath='{.data.config}' | base64 -d >"$TKC")
HOST="hello.$TENANT.apps.$KUBESPACES_DOMAIN"
# The app: a Go net/http server (keep-alive), with a CPU limit high enough not to be the limit.
"$K" --kubeconfig "$TKC" apply -f - <<EOF >&2
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello}
spec:
  replicas: 1
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers:
      - name: hello
        image: $KUBESPACES_TLSSERVER_IMAGE
        args: [-plain, -addr, ":8080", -name, $TENANT]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 2}
        resources: {requests: {cpu: 500m, memory: 64Mi}, limits: {cpu: "1", memory: 64Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: hello}
spec:
  selector: {app: hello}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: hello}
spec:
  parentRefs: [{name: apps, namespace: kubespaces}]
  hostnames: ["$HOST"]
  rules: [{backendRefs: [{name: hello, port: 80}]}]
EOF
"$K" --kubeconfig "$TKC" rollout status deployment/hello --timeout=2m >&2
answers() { curl --silent --fail --max-time 5 --cacert "$KUBESPACES_APPS_CA_FILE" "https://$HOST/" | grep -q "hello from $TENANT"; }
wait_for "https://$HOST/ to answer" 120 answers || die "the app does not answer at https://$HOST/"
POD_IP=$("$K" -n "kubespaces-tenant-$TENANT" get pods -l app=hello -o jsonpath='{.items[0].status.podIP}')
[ -n "$POD_IP" ] || die "no pod IP for the app on the host"
# The Gateway's address as this machine resolves the app's name (hosts-sync), for wrk inside the node.
GATEWAY_IP=$(getent hosts "$HOST" | awk '{print $1; exit}')
log "==> measuring: gateway https://$HOST/ ($GATEWAY_IP) vs direct http://$POD_IP:8080/, ${DURATION}s x $ROUNDS rounds"

# wrk in the node's network namespace (where pod IPs are routed; /etc/hosts is this machine's).
run_wrk() {
  ip netns exec "$KUBESPACES_NODE_NETNS" wrk --threads 2 --connections 8 --duration "${DURATION}s" --latency "$1"
}
# "Requests/sec: N" and the 50% / 99% lines of --latency, in ms.
parse() {
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec:/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
    /Non-2xx|Socket errors/ { errors = errors " " $0 }
    END { printf "%.0f %.2f %.2f%s\n", rps, p50, p99, (errors == "" ? "" : " ERRORS:" errors) }'
}
declare -a G_RPS D_RPS G_P50 D_P50 G_P99 D_P99
for round in $(seq 1 "$ROUNDS"); do
  order=(gateway direct); [ $((round % 2)) -eq 0 ] && order=(direct gateway)
  for side in "${order[@]}"; do
    case $side in
      gateway) url="https://$HOST/" ;;
      direct)  url="http://$POD_IP:8080/" ;;
    esac
    read -r rps p50 p99 rest < <(run_wrk "$url" | parse)
    [ -z "${rest:-}" ] || die "round $round $side: $rest"
    log "round $round $side: $rps req/s, p50 ${p50} ms, p99 ${p99} ms"
    if [ "$side" = gateway ]; then G_RPS+=("$rps"); G_P50+=("$p50"); G_P99+=("$p99")
    else D_RPS+=("$rps"); D_P50+=("$p50"); D_P99+=("$p99"); fi
  done
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {print lo "–" hi}'; }
row() {
  local what=$1 unit=$2; shift 2
  local -n g=$1 d=$2
  local gm dm
  gm=$(median "${g[@]}"); dm=$(median "${d[@]}")
  printf '%-16s %12s %-14s %12s %-14s %7s\n' "$what ($unit)" "$gm" "[$(range "${g[@]}")]" "$dm" "[$(range "${d[@]}")]" \
    "$(awk -v a="$gm" -v b="$dm" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')"
}
{
  echo
  echo "Apps through the Gateway vs the same pod direct: wrk -t2 -c8 -d${DURATION}s, $ROUNDS rounds (order alternating), from the node's network namespace"
  echo "  gateway: https://$HOST/ (Traefik, TLS terminated with the tenant's certificate, keep-alive)"
  echo "  direct:  http://$POD_IP:8080/ (the same server in the tenant's pod, keep-alive)"
  printf '%-16s %12s %-14s %12s %-14s %7s\n' "" "gateway" "[range]" "direct" "[range]" "ratio"
  row "requests/s" "1/s" G_RPS D_RPS
  row "latency p50" "ms" G_P50 D_P50
  row "latency p99" "ms" G_P99 D_P99
} >&3
log "done in $((SECONDS - T0))s"
