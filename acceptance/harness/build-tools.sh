#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, etcd, kwok) from the pinned Go modules under acceptance/tools/, and caches them under
# ~/.cache/kubespaces/<component>/<version>-<go version>-<hash of pins and this script>/.
# Prints the directory holding all binaries (a directory of symlinks) on stdout; logs go to stderr.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS="$HERE/../tools"
CACHE="${KUBESPACES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubespaces}"
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath GOGC=300

command -v go >/dev/null || { echo "build-tools: Go is required (apt-get install golang or a Go toolchain >= 1.26)" >&2; exit 1; }
GOV=$(go env GOVERSION)

# build_cached NAME VERSION MODDIR LDFLAGS PKG...  -> echoes the cache dir holding the binaries
build_cached() {
  local name=$1 version=$2 moddir=$3 ldflags=$4; shift 4
  local key out tmp
  # The key covers the pins and the flags, not this script, so editing the script keeps the cache.
  key=$( (cat "$moddir/go.mod" "$moddir/go.sum"; echo "$ldflags $*") | sha256sum | cut -c1-12)
  out="$CACHE/$name/$version-$GOV-$key"
  if [ ! -f "$out/.complete" ]; then
    echo "build-tools: building $name $version (cold builds take minutes; cached afterwards in $out)" >&2
    mkdir -p "$CACHE/$name"
    tmp=$(mktemp -d "$out.tmp.XXXXXX")
    ( cd "$moddir" && go mod download && go build -ldflags "$ldflags" -o "$tmp/" "$@" ) >&2
    # etcd's main package is the module root (.../server/v3): go names that binary "server".
    [ -e "$tmp/server" ] && mv "$tmp/server" "$tmp/etcd"
    touch "$tmp/.complete"
    rm -rf "$out"; mv "$tmp" "$out"
  fi
  echo "$out"
}

modversion() { grep -oE "^\s*(require )?$1 v[^ ]+" "$2/go.mod" | head -1 | awk '{print $NF}'; }

K8S_V=$(modversion k8s.io/kubernetes "$TOOLS/k8s")
K8S_MINOR=$(echo "$K8S_V" | cut -d. -f2)
K8S_LD="-s -w"
# Stamp the version the way Kubernetes' own build does, so /version reports a real release.
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  K8S_LD+=" -X $p.gitVersion=$K8S_V -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR -X $p.gitTreeState=clean"
done
ETCD_V=$(modversion go.etcd.io/etcd/server/v3 "$TOOLS/etcd")
KWOK_V=$(modversion sigs.k8s.io/kwok "$TOOLS/kwok")

ETCD_DIR=$(build_cached etcd "$ETCD_V" "$TOOLS/etcd" "-s -w" go.etcd.io/etcd/server/v3)
KWOK_DIR=$(build_cached kwok "$KWOK_V" "$TOOLS/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok)
K8S_DIR=$(build_cached k8s "$K8S_V" "$TOOLS/k8s" "$K8S_LD" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)

BIN="$CACHE/bin"
mkdir -p "$BIN"
for f in "$K8S_DIR"/kube-apiserver "$K8S_DIR"/kube-controller-manager "$K8S_DIR"/kube-scheduler \
         "$K8S_DIR"/kubectl "$ETCD_DIR"/etcd "$KWOK_DIR"/kwok; do
  [ -x "$f" ] || { echo "build-tools: missing $f" >&2; exit 1; }
  ln -sfn "$f" "$BIN/$(basename "$f")"
done
echo "$BIN"
