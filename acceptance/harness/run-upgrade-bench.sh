#!/usr/bin/env bash
# run-upgrade-bench.sh [TENANTS] — `make bench-upgrade` (issue 22): `helm upgrade` of the platform
# from the previous release to this one with TENANTS (default 5) live tenants, in
# .kubespaces/upgrade-bench/: a fresh cluster with the real node, the platform Gateway and
# cert-manager, Dex on the node's link, the chart installed by `chart.sh install` from this
# checkout's debug builds (as make test installs it; the previous release, previous-release.sh,
# is a debug build too), the previous release's images beside them.
#
# The driver, acceptance/src/bin/upgrade-bench.rs, takes the release back to the previous one,
# makes the tenants under it (each with its own control plane and an app), then upgrades as
# docs/install.md does while probes ask every tenant's API, every app and the portal every 200 ms;
# then the same probes as long again with nothing changing (the baseline). Prints, per target,
# requests sent, failed and the longest time without an answer on both sides with the ratio, the
# time the upgrade took and how many control planes restarted. The cluster is stopped on exit,
# also on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-upgrade
TENANTS=${1:-5}
[[ "$TENANTS" =~ ^[1-9][0-9]*$ ]] || die "usage: $0 [TENANTS] (a positive number)"
STATE="$REPO_ROOT/.kubespaces/upgrade-bench"

bench_cluster "$STATE" real --with helm --with vcluster --with dex --crds
ensure_rust
log "==> building this checkout's operator, server and the driver (debug)"
# With make test's features (--examples: see previous-release.sh), so make test's build is reused.
nice cargo build --workspace --bins --examples
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/dex.sh" start "$STATE" node
KUBESPACES_OPERATOR_BINARY="$REPO_ROOT/target/debug/kubespaces-operator" \
  KUBESPACES_SERVER_BINARY="$REPO_ROOT/target/debug/kubespaces-server" "$HARNESS_DIR/chart.sh" install "$STATE"
"$HARNESS_DIR/previous-release.sh" images "$STATE"
# shellcheck disable=SC1091  # again: chart.sh, dex.sh and previous-release.sh added to it
. "$STATE/env"
log "==> measuring: $TENANTS tenants; this release is $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes')"
KUBESPACES_ACCEPTANCE=1 "$REPO_ROOT/target/debug/upgrade-bench" --tenants "$TENANTS" | tee "$STATE/results.txt"
log "figures also in ${STATE#"$REPO_ROOT/"}/results.txt"
