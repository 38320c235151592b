#!/usr/bin/env bash
# dev-down.sh — `make down`: stops the operator and the control plane of `make up` (.kubespaces/dev).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
STATE="$REPO_ROOT/.kubespaces/dev"
[ -d "$STATE" ] || { echo "nothing to stop (.kubespaces/dev does not exist)"; exit 0; }
"$HARNESS_DIR/operator.sh" stop "$STATE"
"$HARNESS_DIR/cluster-down.sh" "$STATE"
