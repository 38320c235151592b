#!/usr/bin/env bash
# run-tests.sh — `make test`: every check and test, against a fresh control plane in
# .kubespaces/test/ (the dev cluster of `make up` is never touched).
#
#   1. cargo fmt --check, cargo clippy -D warnings
#   2. compile all tests and binaries first, and the release operator for its image (rustc and a
#      starting apiserver would fight for 2 cores)
#   3. build or look up the cached control-plane binaries, helm and the vCluster's (the tools only
#      some tests use, health-check, Crossplane and OpenTofu, build in the background in step 6)
#   4. the chart: helm lint, every generated manifest in it, its values schema (chart.sh check)
#   5. fresh cluster (the CRDs only) + the chart installed with helm: the shared operator runs as two
#      pods under its ServiceAccount, from an image of the release build, for every Tenant not
#      labelled kubespaces.io/test-operator (tests that need their own operator start one for
#      Tenants carrying that label)
#   6. cargo test --workspace with the cluster's env and KUBESPACES_ACCEPTANCE=1
#   7. the provider's acceptance tests, once with terraform and once with OpenTofu (built from its
#      pinned Go module by build-tools.sh, like the control plane)
#   8. the shared operator never crashed (it ends and restarts when it loses the Lease, by design)
#      and all its replicas are Ready
#   9. after the cluster stopped: nothing of it is left on the machine (host-state.sh before/after)
# Everything started here is stopped on exit (trap), and component logs are printed on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-test
STATE="$REPO_ROOT/.kubespaces/test"
cd "$REPO_ROOT"

# Golden-file tests rewrite their files instead of comparing them when this is set: here they
# must compare.
unset KUBESPACES_UPDATE_MANIFESTS
ensure_runtime_tools
# The portal's test drives a real headless Chromium (Debian's package).
ensure_cmds chromium:chromium
ensure_node_tools
ensure_go
ensure_rust

step() { log "==> $*"; }
T0=$SECONDS

step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
step "compiling all tests and binaries (cargo test --workspace --no-run; cargo build --workspace --bins)"
cargo test --workspace --no-run
cargo build --workspace --bins
[ -x target/debug/kubespaces-operator ] || die "target/debug/kubespaces-operator was not built"
step "the release operator, for its image (cargo build --release -p kubespaces-operator)"
cargo build --release -p kubespaces-operator

step "control-plane binaries, helm and the vCluster's (cached after the first build)"
BIN=$("$HARNESS_DIR/build-tools.sh" --with helm --with vcluster)

step "the chart (helm lint, generated manifests, values schema)"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" check
# The pinned vCluster chart archive is the module's chart/, file for file (provenance).
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/vcluster-chart.sh" check

cluster_started=false
status=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  [ "$status" -ne 0 ] || status=$rc
  # The background build of the late tools, when the run ends before it did.
  [ -z "${LATE_TOOLS:-}" ] || kill -TERM -- "-$LATE_TOOLS" 2>/dev/null || true
  if $cluster_started; then
    # The operator pods' logs live on the node: keep them with the components' logs.
    "$HARNESS_DIR/chart.sh" logs "$STATE" 2>/dev/null || true
    if [ "$status" -ne 0 ]; then
      case $status in 130|143) log "interrupted: component logs follow" ;;
        *) log "tests failed (exit $status): component logs follow" ;; esac
      print_log_tails "$STATE" 60
      log "full logs in ${STATE#"$REPO_ROOT/"}/logs/"
    fi
    # Operators that tests started for their own tenants and did not stop (a test that panicked
    # before its cleanup): stop them too, they would otherwise outlive the cluster.
    local p
    for p in $(stray_operators "$STATE"); do
      log "stopping operator pid $p left running by a test"
      kill -TERM "$p" 2>/dev/null || true
    done
    "$HARNESS_DIR/cluster-down.sh" "$STATE" || true
    # The machine as it was before the cluster started: no process, mount, link, namespace,
    # iptables rule, cgroup or sysctl of the cluster may remain.
    if ! "$HARNESS_DIR/host-state.sh" >"$HOST_AFTER"; then
      log "host check: the snapshot of the machine after the run failed, so nothing was checked"
      [ "$status" -ne 0 ] || status=1
    elif ! diff -u "$HOST_BEFORE" "$HOST_AFTER" >&3; then
      log "the stopped test cluster left the above on the machine (- before, + after)"
      [ "$status" -ne 0 ] || status=1
    else
      log "host check: nothing of the test cluster is left on the machine"
    fi
  fi
  log "make test finished in $((SECONDS - T0))s with exit $status"
  exit "$status"
}
trap cleanup EXIT
# Ctrl-C / CI cancellation: run the same cleanup (via EXIT) with a conventional exit code.
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

step "fresh control plane in ${STATE#"$REPO_ROOT/"}"
# Stop whatever a previous (killed) run left behind in this state dir, then start from nothing.
[ -d "$STATE" ] && "$HARNESS_DIR/cluster-down.sh" "$STATE"
reset_state_dir "$STATE"
HOST_BEFORE="$STATE/../test-host-before.txt"; HOST_AFTER="$STATE/../test-host-after.txt"
"$HARNESS_DIR/host-state.sh" >"$HOST_BEFORE"
cluster_started=true
# Only the CRDs before kube-controller-manager starts (its garbage collector and quota controller
# must see them at once): the chart installs everything else.
KUBESPACES_MANIFESTS=crds KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cluster-up.sh" "$STATE"

step "the chart: helm install of the shared operator (kubespaces-system)"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" install "$STATE" \
  --set-string operator.selector='!kubespaces.io/test-operator'

# --- Dex, for the server's, the portal's and the CLI's tests (they read KUBESPACES_OIDC_ISSUER) ---
step "Dex, the OIDC provider of the server, portal and CLI tests (dex.sh)"
KUBESPACES_BIN="$("$HARNESS_DIR/build-tools.sh" --with dex)" "$HARNESS_DIR/dex.sh" start "$STATE"
# --- end Dex ---

# The tools only some tests use build while the first tests run, at a lower priority, in CPU
# time the tests mostly leave idle (cold: about 8 min of build; cached: a lookup): health-check
# (tests/health.rs), Crossplane (tests/crossplane.rs) and OpenTofu (the provider's second pass).
# Their tests wait for them (kubespaces_acceptance::built_tool); their links are dropped first so
# that no test runs a stale build of an older pin.
step "health-check, Crossplane and OpenTofu, built in the background (logs/late-tools.log)"
rm -f "$BIN"/{health-check,crossplane,xp-render,function-patch-and-transform,tofu} "$STATE/tools.failed"
setsid bash -c 'nice -n 10 "$1/build-tools.sh" --with health-check --with crossplane --with tofu \
    >/dev/null 2>"$2/logs/late-tools.log" \
  || echo "build-tools.sh --with health-check --with crossplane --with tofu failed: see $2/logs/late-tools.log" >"$2/tools.failed"' \
  late-tools "$HARNESS_DIR" "$STATE" &
LATE_TOOLS=$!

step "cargo test --workspace"
# shellcheck disable=SC1091
. "$STATE/env"
export KUBESPACES_ACCEPTANCE=1
# Tests that start an operator of their own run the debug build, for their own Tenants.
export KUBESPACES_OPERATOR_BIN="$REPO_ROOT/target/debug/kubespaces-operator"
# --no-fail-fast: one failing test binary must not hide the results of the others.
cargo test --workspace --no-fail-fast || status=$?

# The provider's acceptance tests drive the real terraform binary against this cluster and its
# operator (they are #[ignore]d in a plain `cargo test`, which has no cluster).
step "provider acceptance tests (terraform)"
if command -v terraform >/dev/null 2>&1; then
  TF_ACC=1 cargo test -p terraform-provider-kubespaces --test acceptance -- --ignored || status=$?
else
  # Terraform is not in any package registry this project can reach, so a machine may lack it;
  # the OpenTofu pass below always runs (the harness builds tofu from its Go module).
  log "terraform is not installed: the terraform pass is skipped (install terraform >= 1.11 to run it); OpenTofu still runs"
fi
wait "$LATE_TOOLS" || true
LATE_TOOLS=
if [ -f "$STATE/tools.failed" ]; then
  log "$(cat "$STATE/tools.failed")"
  status=1
  exit $status
fi
step "provider acceptance tests (OpenTofu $("$BIN/tofu" version 2>/dev/null | awk '/^OpenTofu/ {print $2}'))"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$BIN/tofu" \
  cargo test -p terraform-provider-kubespaces --test acceptance -- --ignored || status=$?

# A test run can pass while the shared operator crashed underneath it; that is a failure too.
# (The chart test kills the leader pod on purpose: its replacement is a new pod, not a restart.)
if [ $status -eq 0 ] && ! "$HARNESS_DIR/chart.sh" healthy "$STATE"; then
  log "the shared operator is not healthy"
  status=1
fi
exit $status
