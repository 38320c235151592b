#!/usr/bin/env bash
# previous-release.sh build | images STATE_DIR — the release before this one, which the upgrade
# test (tests/install.rs) and make bench-upgrade install and then upgrade from. It is built from
# the commit recorded below, as a platform team would have taken it then: its chart and its
# operator and server.
#
#   build
#       extracts the recorded commit (git archive: a clone that has the commit is enough) and
#       builds its operator and server (debug, like make test's) into this checkout's target/,
#       so that only the workspace's own crates compile: the dependencies are shared with the
#       current build. The binaries this checkout's build put in target/debug are put back
#       afterwards. Cached in ~/.cache/kubespaces/previous-release/<version>-<commit>-<rustc>/:
#       chart/ (the release's charts/kubespaces, beside the operator/manifests its links name),
#       kubespaces-operator, kubespaces-server. Prints that directory.
#   images STATE_DIR
#       build, then imports the release's operator and server images into the node of the
#       cluster in STATE_DIR (images.sh, keeping the images the current chart runs) and writes to
#       STATE_DIR/env: KUBESPACES_PREVIOUS_VERSION, KUBESPACES_PREVIOUS_CHART (the chart's
#       directory), KUBESPACES_PREVIOUS_OPERATOR_TAG and KUBESPACES_PREVIOUS_SERVER_TAG (the
#       images' tags under registry=localhost).
#
# Releasing: bump the workspace version (Cargo.toml) and the chart's (Chart.yaml), and record
# here the last commit of the release before (the one that still says its version).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=previous-release
USAGE="usage: $0 build | images STATE_DIR"

PREVIOUS_VERSION=0.1.0
PREVIOUS_COMMIT=56d1a60f4d5ffc614ab5d4f32c6185891e3e4abe

CACHE="${KUBESPACES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubespaces}"

build() {
  ensure_rust
  git -C "$REPO_ROOT" cat-file -e "$PREVIOUS_COMMIT^{commit}" 2>/dev/null \
    || die "commit $PREVIOUS_COMMIT (release $PREVIOUS_VERSION) is not in this clone: fetch the full history (git fetch --unshallow)"
  local rustc out tmp src t0=$SECONDS
  rustc=$(rustc --version | awk '{print $2}')
  out="$CACHE/previous-release/$PREVIOUS_VERSION-${PREVIOUS_COMMIT:0:12}-$rustc"
  if [ ! -f "$out/.complete" ]; then
    log "building release $PREVIOUS_VERSION ($PREVIOUS_COMMIT): its operator and server, in target/ beside this checkout's build"
    mkdir -p "$CACHE/previous-release"
    rm -rf "$CACHE"/previous-release/*.tmp.*
    tmp=$(mktemp -d "$out.tmp.XXXXXX")
    src="$tmp/src"
    mkdir -p "$src"
    git -C "$REPO_ROOT" archive "$PREVIOUS_COMMIT" | tar -x -C "$src"
    # The binaries this checkout's build uplifted to target/debug: the release's build would
    # replace them (cargo links the same names), so they go back once it is done.
    local kept="$tmp/kept" b
    mkdir -p "$kept"
    for b in kubespaces-operator kubespaces-server; do
      [ ! -e "$REPO_ROOT/target/debug/$b" ] || ln "$REPO_ROOT/target/debug/$b" "$kept/$b"
    done
    # The features make test's `cargo test --workspace` builds the dependencies with, so that
    # they are the very units already built: every package, with its dev-dependencies' features
    # (asking for --examples, of which there are none, makes cargo resolve them), and only the
    # binaries built.
    local rc=0
    (cd "$src" && CARGO_TARGET_DIR="$REPO_ROOT/target" cargo build --workspace --bins --examples --locked) >&2 || rc=$?
    [ $rc -ne 0 ] || for b in kubespaces-operator kubespaces-server; do
      cp "$REPO_ROOT/target/debug/$b" "$tmp/$b" || rc=$?
    done
    for b in kubespaces-operator kubespaces-server; do
      if [ -e "$kept/$b" ]; then mv -f "$kept/$b" "$REPO_ROOT/target/debug/$b"
      else rm -f "$REPO_ROOT/target/debug/$b"; fi
    done
    [ $rc -eq 0 ] || { rm -rf "$tmp"; die "building release $PREVIOUS_VERSION failed"; }
    "$tmp/kubespaces-operator" --version | grep -qF " $PREVIOUS_VERSION" \
      || die "the operator built from $PREVIOUS_COMMIT is not version $PREVIOUS_VERSION: $("$tmp/kubespaces-operator" --version)"
    # The chart, beside the manifests its links name; nothing else of the sources is kept.
    mkdir -p "$tmp/chart/charts" "$tmp/chart/operator"
    mv "$src/charts/kubespaces" "$tmp/chart/charts/kubespaces"
    mv "$src/operator/manifests" "$tmp/chart/operator/manifests"
    rm -rf "$src" "$kept"
    touch "$tmp/.complete"
    rm -rf "$out"; mv "$tmp" "$out"
    log "built release $PREVIOUS_VERSION in $((SECONDS - t0))s"
  fi
  echo "$out"
}

images() {
  [ $# -eq 1 ] && [ -d "$1" ] || die "$USAGE"
  local state dir op sv
  state=$(cd "$1" && pwd)
  dir=$(build)
  op=$(KUBESPACES_KEEP_OLDER_IMAGES=1 "$HARNESS_DIR/images.sh" operator "$state" "$dir/kubespaces-operator")
  sv=$(KUBESPACES_KEEP_OLDER_IMAGES=1 "$HARNESS_DIR/images.sh" server "$state" "$dir/kubespaces-server")
  env_set "$state/env" KUBESPACES_PREVIOUS_VERSION "$PREVIOUS_VERSION"
  env_set "$state/env" KUBESPACES_PREVIOUS_CHART "$dir/chart/charts/kubespaces"
  env_set "$state/env" KUBESPACES_PREVIOUS_OPERATOR_TAG "${op##*:}"
  env_set "$state/env" KUBESPACES_PREVIOUS_SERVER_TAG "${sv##*:}"
  log "release $PREVIOUS_VERSION: $op, $sv, chart $dir/chart/charts/kubespaces"
}

case ${1:-} in
  build) [ $# -eq 1 ] || die "$USAGE"; build ;;
  images) shift; images "$@" ;;
  *) die "$USAGE" ;;
esac
