#!/usr/bin/env bash
# run-bench.sh [bench args] — `make bench`: `cargo run --release -p kubespaces-acceptance --bin bench`
# against a fresh control plane in .kubespaces/bench/ (cluster only: the bench starts and measures
# its own operator process, the release build, given as KUBESPACES_OPERATOR_BIN).
# Everything started here is stopped on exit.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-bench
STATE="$REPO_ROOT/.kubespaces/bench"
cd "$REPO_ROOT"

ensure_runtime_tools
ensure_go
ensure_rust

# Compile first so rustc does not compete with the control plane for CPU during the measurement.
log "==> building the release operator and bench"
cargo build --release -p kubespaces-operator
cargo build --release -p kubespaces-acceptance --bin bench
BIN=$("$HARNESS_DIR/build-tools.sh")

# KWOK only: the benchmark measures the operator and the API server, and no pod needs to run.
KUBESPACES_NODES=kwok throwaway_cluster "$STATE" "$BIN"

# shellcheck disable=SC1091
. "$STATE/env"
export KUBESPACES_OPERATOR_BIN="$REPO_ROOT/target/release/kubespaces-operator"
export KUBESPACES_ACCEPTANCE=1
log "==> cargo run --release -p kubespaces-acceptance --bin bench $*"
cargo run --release -p kubespaces-acceptance --bin bench -- "$@"
