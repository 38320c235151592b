#!/usr/bin/env bash
# run-tests.sh — `make test`: every check and test, against a fresh control plane in
# .kubespaces/test/ (the dev cluster of `make up` is never touched).
#
#   1. cargo fmt --check
#   2. the Go builds (or cache lookups) in the background (.kubespaces/test-tools.log) while all
#      tests and binaries compile in the foreground: each keeps about 1.9 of the 2 cores busy, and
#      each fills the other's gaps (module downloads, links, a lone crate). First the cluster's
#      binaries; helm, the vCluster's and Dex build on while the cluster starts. Then the previous
#      release's operator and server (previous-release.sh, cached), for the upgrade test
#   3. fresh cluster (the CRDs only)
#   4. the chart: helm lint, every generated manifest in it, its values schema (chart.sh check);
#      installed with helm: the shared operator runs as two pods under its ServiceAccount, from an
#      image of the debug build the tests run too (the same code as the release build; make up
#      and the benchmarks use the release build), for every Tenant not labelled
#      kubespaces.io/test-operator (tests that need their own operator start one for Tenants
#      carrying that label); Dex
#   5. in the background, at a lower priority, in CPU time the tests mostly leave idle: cargo
#      clippy -D warnings (its own target dir, target/clippy) and the tools only some tests use
#      (health-check, the conformance suite's e2e.test and agnhost, Crossplane, OpenTofu; their
#      tests wait for them)
#   6. alone: the tests that take the shared cluster down in part (the API server's outage, the
#      shared operator's leader killed, the release uninstalled and installed again: docs/install.md;
#      the release taken back to the previous one and upgraded with a live tenant); #[ignore]d in a
#      plain cargo test, run with --ignored
#   7. the other tests (cargo test --workspace) with the cluster's env and KUBESPACES_ACCEPTANCE=1,
#      in two lanes at once, and beside them the provider's acceptance tests, once with terraform
#      and once with OpenTofu
#   8. clippy passed, the shared operator never crashed (it ends and restarts when it loses the
#      Lease, by design) and all its replicas are Ready
#   9. after the cluster stopped: nothing of it is left on the machine (host-state.sh before/after)
# Everything started here is stopped on exit (trap), and component logs are printed on failure.
# The end of the output is the time of each phase and the ten slowest test binaries.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-test
STATE="$REPO_ROOT/.kubespaces/test"
cd "$REPO_ROOT"

# Golden-file tests rewrite their files instead of comparing them when this is set: here they
# must compare.
unset KUBESPACES_UPDATE_MANIFESTS

# The time of each phase, printed at the end (the cold-run budget is read from it).
T0=$SECONDS
PHASES=()
phase_t=$SECONDS
step() { log "==> $*"; }
# phase NAME: the time since the previous phase ended is NAME's.
phase() { PHASES+=("$1|$((SECONDS - phase_t))"); phase_t=$SECONDS; }
TEST_LOGS=()

ensure_runtime_tools
# The portal's test drives a real headless Chromium (Debian's package) and checks its pages with
# axe-core, which npm fetches once (acceptance/src/browser.rs); the conformance test's images carry
# Debian's network tools (images.sh conformance).
ensure_cmds chromium:chromium npm:npm "${CONFORMANCE_IMAGE_TOOLS[@]}"
ensure_node_tools
ensure_go
ensure_rust
phase "the machine's packages (apt-get, when missing)"

cluster_started=false
status=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  [ "$status" -ne 0 ] || status=$rc
  # Background work the run did not wait for (it ended early).
  local group
  for group in ${GO_BUILDS:-} ${LATE_TOOLS:-} ${CLIPPY:-} ${PROVIDER_LANE:-} ${LANE_A_JOB:-} \
    ${LANE_B_JOB:-}; do
    kill -TERM -- "-$group" 2>/dev/null || true
  done
  if $cluster_started; then
    # The operator pods' logs live on the node: keep them with the components' logs.
    "$HARNESS_DIR/chart.sh" logs "$STATE" 2>/dev/null || true
    if [ "$status" -ne 0 ]; then
      case $status in 130|143) log "interrupted: component logs follow" ;;
        *) log "tests failed (exit $status): component logs follow" ;; esac
      print_log_tails "$STATE" 60
      print_unwell "$STATE" "${BIN:-}"
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
  print_phases
  [ ${#TEST_LOGS[@]} -eq 0 ] || slowest_test_binaries 10 "${TEST_LOGS[@]}"
  log "make test finished in $((SECONDS - T0))s with exit $status"
  exit "$status"
}
# slowest_test_binaries N LOG...: the N test binaries that took longest, from cargo test's output
# (each "Running <target> (<path>)" line, then its "test result: ... finished in <s>s").
# shellcheck disable=SC2317  # invoked by cleanup
slowest_test_binaries() {
  local n=$1; shift
  log "the $n slowest test binaries (s):"
  awk '/^ *Running / { bin = $NF; sub(/^\(.*\//, "", bin); sub(/-[0-9a-f]+\)$/, "", bin)
                       name = ($2 == "unittests") ? bin " (unit tests)" : $2
                       lane = FILENAME; sub(/.*\//, "", lane); sub(/\.log$/, "", lane) }
       /^test result:/ && name != "" { t = $NF; sub(/s$/, "", t)
                                       printf "  %8.1f  %s (%s)\n", t, name, lane; name = "" }' \
    "$@" 2>/dev/null | sort -rn | head -n "$n" >&3
}
# shellcheck disable=SC2317  # invoked by cleanup
print_phases() {
  local p
  log "time per phase (s):"
  for p in ${PHASES[@]+"${PHASES[@]}"}; do
    printf '  %6s  %s\n' "${p##*|}" "${p%|*}" >&3
  done
}
trap cleanup EXIT
# Ctrl-C / CI cancellation: run the same cleanup (via EXIT) with a conventional exit code.
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

step "cargo fmt --check"
cargo fmt --all --check

# The Go builds, in the background from here on (their own process group, so the cleanup can
# stop them): first the cluster's binaries, then helm, the vCluster's and Dex, which only the
# chart and the tests need, so they build while the cluster starts.
mkdir -p "$REPO_ROOT/.kubespaces"
TOOLS_LOG="$REPO_ROOT/.kubespaces/test-tools.log"
BIN_FILE="$REPO_ROOT/.kubespaces/test-tools.bin"
EXTRAS_FILE="$REPO_ROOT/.kubespaces/test-tools.extras"
rm -f "$BIN_FILE" "$EXTRAS_FILE"
step "the cluster's binaries, then helm, the vCluster's and Dex, built in the background (${TOOLS_LOG#"$REPO_ROOT/"})"
setsid bash -c '"$1/build-tools.sh" >"$2.tmp" 2>"$4" && mv "$2.tmp" "$2" \
  && "$1/build-tools.sh" --with helm --with vcluster --with dex >"$3.tmp" 2>>"$4" && mv "$3.tmp" "$3"' \
  go-builds "$HARNESS_DIR" "$BIN_FILE" "$EXTRAS_FILE" "$TOOLS_LOG" &
GO_BUILDS=$!
# go_builds_failed: the builds' log, and the run ends.
go_builds_failed() {
  GO_BUILDS=
  cat "$TOOLS_LOG" >&2
  die "build-tools.sh failed (its log is above)"
}

step "compiling all tests and binaries (cargo test --workspace --no-run)"
# Once: every cargo run below selects the whole workspace (and picks its test targets), because
# features are unified per selection of packages and a `-p` run or a plain `cargo build` would
# build the dependencies again with other features (4 min of a cold run). The binaries the tests
# run are the ones this builds for them: every package has integration tests.
cargo test --workspace --no-run
for b in kubespaces-operator kubespaces-server kubespaces terraform-provider-kubespaces; do
  [ -x "target/debug/$b" ] || die "target/debug/$b was not built by cargo test --workspace --no-run"
done
step "the previous release's operator and server (previous-release.sh build; cached by its commit)"
"$HARNESS_DIR/previous-release.sh" build >/dev/null
phase "Rust: fmt, tests and binaries"

step "waiting for the cluster's binaries"
# Polled: the background job goes on to the extras once they are there.
until [ -s "$BIN_FILE" ]; do
  kill -0 "$GO_BUILDS" 2>/dev/null || go_builds_failed
  sleep 1
done
BIN=$(cat "$BIN_FILE")
phase "Go: the cluster's binaries (after the Rust builds they ran beside)"

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
phase "cluster"

step "waiting for helm, the vCluster's binaries and Dex"
wait "$GO_BUILDS" && [ -s "$EXTRAS_FILE" ] || go_builds_failed
GO_BUILDS=
# What was built and how long each took (cold), or nothing (cached).
grep -E '^build-tools: built ' "$TOOLS_LOG" >&2 || true
phase "Go: helm, the vCluster's and Dex (after the cluster started beside them)"

# The tools only some tests use build from here on, while the chart is installed and the tests
# run, at a lower priority, in CPU time the tests leave (cold, 2026-12-06, with one set of Go pins:
# about 18 min under their load; cached: a lookup): health-check (tests/health.rs), e2e.test and
# agnhost (tests/conformance.rs), Crossplane (tests/crossplane.rs) and OpenTofu (the provider's
# second pass). Their tests wait for them (kubespaces_acceptance::built_tool);
# their links are dropped first so that no test runs a stale build of an older pin. The steps
# below pass KUBESPACES_BIN, so none of them waits for build-tools.sh's lock meanwhile.
step "health-check, the conformance suite, Crossplane and OpenTofu, built in the background (logs/late-tools.log)"
rm -f "$BIN"/{health-check,e2e.test,agnhost,agnhost-porter,crossplane,xp-render,xp-package,crossplane-cluster,function-patch-and-transform,function-patch-and-transform-package,tofu} \
  "$STATE/tools.failed"
# health.rs's verdicts and the conformance core end one lane (health-check: under a minute; the
# suite: about 2.5 min after the cluster's Kubernetes, whose packages it shares); OpenTofu next:
# its pass follows the terraform pass, and built last (cold, 2026-12-06: 989 s under the tests' load) it made the
# run end 295 s after the lanes; Crossplane and the function (which reuses Crossplane's compiled
# packages) last, for crossplane.rs, which ends the other lane (cold, in this order: OpenTofu
# 986 s, Crossplane 837 s, and that lane waited for it: the lanes ran 375 s longer, with no tail).
setsid bash -c 'nice -n 10 "$1/build-tools.sh" --with health-check --with conformance --with tofu \
    --with crossplane >/dev/null 2>"$2/logs/late-tools.log" \
  || echo "build-tools.sh --with health-check --with conformance --with tofu --with crossplane failed: see $2/logs/late-tools.log" >"$2/tools.failed"' \
  late-tools "$HARNESS_DIR" "$STATE" &
LATE_TOOLS=$!

step "the chart (helm lint, generated manifests, values schema)"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" check
# The pinned vCluster chart archive is the module's chart/, file for file (provenance).
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/vcluster-chart.sh" check

# --- Dex: on loopback for the servers the tests run as processes (KUBESPACES_OIDC_ISSUER), and on
# the node's link for the chart's server, which runs in pods (KUBESPACES_NODE_OIDC_ISSUER) ---
step "Dex, the OIDC provider of the server, portal and CLI tests (dex.sh, loopback and node)"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/dex.sh" start "$STATE"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/dex.sh" start "$STATE" node
# --- end Dex ---

step "the chart: helm install of the shared operator and the server (kubespaces-system), from the debug builds"
# No limit on the tenants one owner may have at the chart's server: the tests of both lanes create
# tenants for the same Dex users at once (cli.rs, portal.rs, sleep.rs, validation.rs), and the
# server counts the whole cluster's. The servers the tests run as processes drop it too
# (acceptance/src/oidc.rs); tests/hostile_user/bounds.rs tests the limit on a server of its own.
KUBESPACES_OPERATOR_BINARY="$REPO_ROOT/target/debug/kubespaces-operator" \
  KUBESPACES_SERVER_BINARY="$REPO_ROOT/target/debug/kubespaces-server" KUBESPACES_BIN="$BIN" \
  "$HARNESS_DIR/chart.sh" install "$STATE" --set-string operator.selector='!kubespaces.io/test-operator' \
  --set server.limits.maxTenantsPerOwner=0
# The previous release's images beside the current ones, and where its chart is (tests/upgrade.rs).
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/previous-release.sh" images "$STATE"
phase "chart checked and installed, Dex"

# Clippy too: a check build of its own (it shares no artifact with the test build), so in its own
# target dir, where it never waits for the lock of the cargo runs below; below the tools, which
# tests wait for.
step "cargo clippy --workspace --all-targets -- -D warnings, in the background (logs/clippy.log)"
setsid bash -c 'CARGO_TARGET_DIR="$1/target/clippy" nice -n 15 \
    cargo clippy --workspace --all-targets -- -D warnings >"$2/logs/clippy.log" 2>&1' \
  clippy "$REPO_ROOT" "$STATE" &
CLIPPY=$!

# shellcheck disable=SC1091
. "$STATE/env"
export KUBESPACES_ACCEPTANCE=1
# Tests that start an operator of their own run the debug build, for their own Tenants.
export KUBESPACES_OPERATOR_BIN="$REPO_ROOT/target/debug/kubespaces-operator"

# Each cargo run's output is kept, for the slowest binaries at the end.
# cargo_tests LOG ARGS...: cargo test ARGS, its output on stdout and in $STATE/logs/LOG.
cargo_tests() {
  local log="$STATE/logs/$1"; shift
  TEST_LOGS+=("$log")
  cargo test "$@" 2>&1 | tee "$log"
}

step "alone: the tests that take part of the shared cluster down (API server outage, leader killed, uninstall and reinstall, upgrade from the previous release)"
# Nothing else runs meanwhile: a test beside them would see the outage as its own failure.
ALONE=(api_outage chart install upgrade)
cargo_tests alone.log --workspace "${ALONE[@]/#/--test=}" -- --ignored || status=$?
phase "tests alone: API server outage, shared leader killed, uninstall and reinstall, upgrade"

# The provider's acceptance tests drive the real terraform binary against this cluster and its
# operator (they are #[ignore]d in a plain `cargo test`, which has no cluster), then OpenTofu.
# They run beside the other tests: their tenants have names of their own (the test process's
# id), and the CPU the other tests leave idle is theirs. The terraform pass runs one test at a
# time, the OpenTofu pass two. Measured cold (2026-12-06): with one, lanes 1210 s and 254 s of
# OpenTofu after them; with the terraform pass at two, lanes 1329 s and still 272 s after them,
# since OpenTofu (a late tool) was then built last (it is built before Crossplane since). Their
# output is printed after the other tests'.
TEST_LOGS+=("$STATE/logs/provider-terraform.log" "$STATE/logs/provider-tofu.log")
step "provider acceptance tests with terraform, then OpenTofu, beside the other tests (logs/provider-*.log)"
setsid bash -c '
  status=0
  if command -v terraform >/dev/null 2>&1; then
    TF_ACC=1 cargo test --workspace --test acceptance -- --ignored \
      --test-threads=1 >"$1/logs/provider-terraform.log" 2>&1 || status=1
  else
    # Terraform is not in any package registry this project can reach, so a machine may lack it;
    # the OpenTofu pass always runs (the harness builds tofu from its Go module).
    echo "terraform is not installed: the terraform pass is skipped (install terraform >= 1.11 to run it); OpenTofu still runs" \
      >"$1/logs/provider-terraform.log"
  fi
  # OpenTofu comes from the late tools: wait for their build (it says when it failed).
  while [ ! -x "$2/tofu" ]; do
    if [ -f "$1/tools.failed" ]; then cat "$1/tools.failed" >"$1/logs/provider-tofu.log"; exit 1; fi
    sleep 2
  done
  echo "OpenTofu $("$2/tofu" version | awk "/^OpenTofu/ {print \$2}")" >"$1/logs/provider-tofu.log"
  TF_ACC=1 TF_ACC_TERRAFORM_PATH="$2/tofu" \
    cargo test --workspace --test acceptance -- --ignored --test-threads=2 \
    >>"$1/logs/provider-tofu.log" 2>&1 || status=1
  exit $status' provider-lane "$STATE" "$BIN" &
PROVIDER_LANE=$!

# Every other test of the workspace, in two lanes that run at once: a lane's tests spend most of
# their time waiting for control planes, pods and certificates, and that CPU is the other lane's.
# Each lane is cargo test over its binaries (cargo runs them one after the other, the tests of one
# binary in parallel), then over those that wait for the late tools. Lane A holds the binaries
# that must never run beside each other: the tenant team-atlas (apps, control_plane,
# tenant_lifecycle, cli; crossplane dry-runs its XR's Tenant of that name), the tenants owned by
# dave and his one Dex refresh token (control_plane, tenant_lifecycle, hostile_user, cli), with
# others to even the lanes out (warm at 5d19fa6, lane A's binaries took 1316 s and lane B's 990 s;
# real_node, 178 s, moved from A to B since). Lane B is every
# other test target of the workspace (a new one lands there), unit tests too; the doc tests
# follow both. Every run selects the whole workspace, as above.
LANE_A=(apps control_plane tenant_lifecycle cli hostile_user leader_election observability
  operator_restart gateway control_plane_roll)
LANE_A_LATE=(crossplane)
LANE_B_LATE=(conformance health)
mapfile -t LANE_B < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
taken = set(sys.argv[1:])
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "test" in target["kind"] and target["name"] not in taken:
            print(target["name"])' "${LANE_A[@]}" "${LANE_A_LATE[@]}" "${LANE_B_LATE[@]}" "${ALONE[@]}")
[ ${#LANE_B[@]} -gt 0 ] || die "cargo metadata listed no test target for lane B"
# lane LOG ARGS... [-- LATE...]: cargo test over ARGS, then over the LATE targets; every output in
# $STATE/logs/LOG. --no-fail-fast: one failing binary must not hide the results of the others.
# shellcheck disable=SC2317  # run by setsid bash below
lane() {
  local log="$STATE/logs/$1" args=() late=() rc=0; shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; for t in "$@"; do late+=(--test "$t"); done; }
  : >"$log"
  cargo test --workspace --no-fail-fast "${args[@]}" >>"$log" 2>&1 || rc=1
  [ ${#late[@]} -eq 0 ] || cargo test --workspace --no-fail-fast "${late[@]}" >>"$log" 2>&1 || rc=1
  return $rc
}
targets() { local t; for t in "$@"; do printf -- '--test\n%s\n' "$t"; done; }
mapfile -t LANE_A_ARGS < <(targets "${LANE_A[@]}")
mapfile -t LANE_B_ARGS < <(targets "${LANE_B[@]}")
TEST_LOGS+=("$STATE/logs/lane-a.log" "$STATE/logs/lane-b.log" "$STATE/logs/doc-tests.log")
step "the tests in two lanes (logs/lane-a.log, logs/lane-b.log): ${LANE_A[*]} ${LANE_A_LATE[*]} | the rest, ${LANE_B_LATE[*]}"
export STATE
setsid bash -c "$(declare -f lane); lane lane-a.log \"\$@\" -- ${LANE_A_LATE[*]}" lane-a \
  "${LANE_A_ARGS[@]}" &
LANE_A_JOB=$!
setsid bash -c "$(declare -f lane); lane lane-b.log --lib --bins \"\$@\" -- ${LANE_B_LATE[*]}" lane-b \
  "${LANE_B_ARGS[@]}" &
LANE_B_JOB=$!
for job in LANE_A_JOB LANE_B_JOB; do
  wait "${!job}" || status=1
  printf -v "$job" ''
done
cat "$STATE/logs/lane-a.log" "$STATE/logs/lane-b.log"
# Doc tests cannot be selected together with other targets.
cargo_tests doc-tests.log --workspace --no-fail-fast --doc || status=$?
phase "the tests in two lanes (the provider's tests beside them)"

step "the provider's acceptance tests (terraform, then OpenTofu): waiting for them"
wait "$PROVIDER_LANE" || status=1
PROVIDER_LANE=
cat "$STATE/logs/provider-terraform.log" "$STATE/logs/provider-tofu.log"
phase "the provider's tests, after the other tests ended"

wait "$LATE_TOOLS" || true
LATE_TOOLS=
if [ -f "$STATE/tools.failed" ]; then
  log "$(cat "$STATE/tools.failed")"
  status=1
fi
step "clippy (its output follows)"
clippy_rc=0
wait "$CLIPPY" || clippy_rc=$?
CLIPPY=
cat "$STATE/logs/clippy.log"
if [ "$clippy_rc" -ne 0 ]; then
  log "cargo clippy --workspace --all-targets -- -D warnings failed (above)"
  status=1
fi
phase "waiting for clippy and the late tools"

# A test run can pass while the shared operator crashed underneath it; that is a failure too.
# (The chart test kills the leader pod on purpose: its replacement is a new pod, not a restart.)
if [ $status -eq 0 ] && ! "$HARNESS_DIR/chart.sh" healthy "$STATE"; then
  log "the shared operator is not healthy"
  status=1
fi
exit $status
