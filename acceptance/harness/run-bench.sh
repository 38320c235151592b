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

# The release operator and bench; KWOK only: the benchmark measures the operator and the API
# server, and no pod needs to run.
bench_cluster "$STATE" kwok --build kubespaces-operator --build kubespaces-acceptance:bench
export KUBESPACES_OPERATOR_BIN="$REPO_ROOT/target/release/kubespaces-operator"
export KUBESPACES_ACCEPTANCE=1
log "==> cargo run --release -p kubespaces-acceptance --bin bench $*"
cargo run --release -p kubespaces-acceptance --bin bench -- "$@"
