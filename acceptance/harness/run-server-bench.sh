#!/usr/bin/env bash
# run-server-bench.sh [REQUESTS [ROUNDS]] — `make bench-server` (issue 19): the KubeSpaces server
# serving a legitimate user while it is flooded, side by side with the same server left alone, on
# a fresh kwok-only cluster with only the CRDs (no operator: nothing needs to reconcile) and Dex
# (dex.sh), in .kubespaces/server-bench/.
#
# The driver, acceptance/src/bin/server-bench/ (release build), seeds 50 Tenants (half of them
# alice's, labelled kubespaces.io/test-operator=server-bench so no operator would take them) and,
# on each side, starts a fresh kubespaces-server process (the release build, with this cluster's
# admin kubeconfig, Dex as its issuer and the admin group of dex.sh), so its memory is its own:
#   no flood  REQUESTS (default 400) timed `GET /api/v1/tenants` as alice with a real Dex ID token,
#             one after another, each on a new connection (the REST API, not the CLI binary: the
#             CLI's start-up would swamp the server's latency);
#   flood     the same, while on loopback 200 idle live streams (`GET /api/v1/watch/tenants`, bob's
#             valid token) are held open and loops of unauthenticated `GET /login` (each begins a
#             login, sealed in its cookie) and of forged tokens (valid claims, signed with a key Dex does not
#             have) run, from 10 s before the timed requests until after them.
# Figures: the user's p50 and p99, the server's peak (VmHWM) and final (VmRSS) resident memory,
# the ratios flood / no flood against the targets (p99 <= 2x, RSS <= 1.5x); ROUNDS (default 3)
# rounds, the order alternating, median and range. The driver's flags (flood size, settle time,
# the server's --pending-login-ttl-secs, ...) can be given as SERVER_BENCH_ARGS.
# Everything started here is stopped on exit, also on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-server
STATE="$REPO_ROOT/.kubespaces/server-bench"
REQUESTS=${1:-400}
ROUNDS=${2:-3}
[[ "$REQUESTS" =~ ^[1-9][0-9]*$ && "$ROUNDS" =~ ^[1-9][0-9]*$ ]] \
  || die "usage: $0 [requests per side [rounds]]"
read -r -a EXTRA <<<"${SERVER_BENCH_ARGS:-}"

# The release server and the driver, Dex (cached); KWOK only and only the CRDs: the server needs
# the Tenant API, no pod and no operator.
bench_cluster "$STATE" kwok --build kubespaces-server --build kubespaces-acceptance:server-bench \
  --with dex --crds
"$HARNESS_DIR/dex.sh" start "$STATE"
# shellcheck disable=SC1091  # again: dex.sh added the issuer
. "$STATE/env"

# The driver stops every server it starts; should the driver itself be killed, a server it left
# (its executable kubespaces-server, its KUBECONFIG this cluster's) is stopped before the cluster.
stop_stray_servers() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$(proc_exe_name "$p" 2>/dev/null)" = kubespaces-server ] || continue
    proc_running "$p" || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "KUBECONFIG=$KUBECONFIG" || continue
    log "stopping a kubespaces-server the driver left (pid $p)"
    kill -KILL "$p" 2>/dev/null || true
  done
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  stop_stray_servers || true
  # _throwaway_cleanup (lib.sh) takes the exit status from $? at its call.
  if [ "$rc" -eq 0 ]; then _throwaway_cleanup; else (exit "$rc") || _throwaway_cleanup; fi
}
trap cleanup EXIT

log "==> measuring: $REQUESTS lists per side, $ROUNDS rounds; server $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- server || echo ' + uncommitted changes in server/')"
KUBESPACES_SERVER_BIN="$REPO_ROOT/target/release/kubespaces-server" \
  "$REPO_ROOT/target/release/server-bench" --requests "$REQUESTS" --rounds "$ROUNDS" \
  --state-dir "$STATE" "${EXTRA[@]}" | tee "$STATE/results.txt"
log "figures also in ${STATE#"$REPO_ROOT/"}/results.txt, the servers' logs in ${STATE#"$REPO_ROOT/"}/logs/server-bench-*.log"
