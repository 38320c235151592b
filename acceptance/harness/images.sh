#!/usr/bin/env bash
# images.sh build|import STATE_DIR — the node's container images, without a registry.
#
# build: writes each image as a docker-archive tarball with mkimage (acceptance/tools/images) from
#   binaries the harness built or Debian installed, cached in ~/.cache/kubespaces/images/ under a
#   key of its content, and prints "NAME TAG TARBALL ID" lines (ID: the image's config digest).
# import: builds (or looks up), then loads into the containerd of the cluster in STATE_DIR every
#   image whose ID that containerd does not hold yet under that tag (STATE_DIR/node/images records
#   the IDs imported), so a warm start imports nothing; prints the same lines as build.
#
# The names are the ones manifests use, with imagePullPolicy IfNotPresent:
#   localhost/kubespaces/pause:1        the pod sandbox (own pause program)
#   localhost/kubespaces/busybox:<v>    Debian's static busybox, for tests and debugging
#   localhost/kubespaces/coredns:<v>    cluster DNS (CoreDNS built with the plugins it needs)
#   localhost/kubespaces/kubectl:<v>    busybox + kubectl, for tests of in-cluster API access
# To add an image: a rootfs_NAME function and a line in IMAGES below (see docs/development.md).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=images

[ $# -ge 1 ] || die "usage: $0 build | import STATE_DIR"
BIN=${KUBESPACES_BIN:-$("$HARNESS_DIR/build-tools.sh")}
CACHE="${KUBESPACES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubespaces}/images"
mkdir -p "$CACHE"
ensure_cmds busybox:busybox-static

# (Read whole before parsing: `busybox | head -1` would end busybox with SIGPIPE under pipefail.)
BUSYBOX_V=$(busybox 2>&1 || true)
BUSYBOX_V=$(sed -nE '1s/.*v([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' <<<"$BUSYBOX_V")
KUBECTL_V=$("$BIN/kubectl" version --client -o json | sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p')
COREDNS_V=$("$BIN/coredns" -version 2>/dev/null | grep -oE 'CoreDNS-[0-9.]+' | cut -d- -f2)

# name  tag  entrypoint  cmd (JSON arrays, - for none). busybox has a command, not an entrypoint,
# so `kubectl run --image=... -- sh -c '...'` works as with Docker's busybox.
IMAGES=(
  "pause 1 [\"/pause\"] -"
  "busybox $BUSYBOX_V - [\"/bin/sh\"]"
  "coredns v$COREDNS_V [\"/coredns\"] -"
  "kubectl $KUBECTL_V [\"/usr/local/bin/kubectl\"] -"
)

# A minimal /etc for any image: root and nobody, so `id` and runAsUser work.
etc_files() {
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$1/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$1/etc/group"
}
rootfs_pause() { install -D -m755 "$BIN/pause" "$1/pause"; }
rootfs_coredns() { etc_files "$1"; install -D -m755 "$BIN/coredns" "$1/coredns"; }
rootfs_kubectl() { rootfs_busybox "$1"; install -D -m755 "$BIN/kubectl" "$1/usr/local/bin/kubectl"; }
rootfs_busybox() {
  local applet
  etc_files "$1"
  install -D -m755 "$(command -v busybox)" "$1/bin/busybox"
  for applet in $(busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$1/bin/$applet"
  done
}

# build_image NAME TAG ENTRYPOINT CMD: echoes "NAME TAG TARBALL ID".
build_image() {
  local name=$1 tag=$2 entrypoint=${3#-} cmd=${4#-} tmp key out
  tmp=$(mktemp -d)
  "rootfs_$name" "$tmp"
  # The key is the content (every file, link and mode) plus the image's name and entrypoint.
  key=$( (cd "$tmp" && find . -printf '%p %l %m\n' | sort && find . -type f -print0 | sort -z \
          | xargs -0 cat; echo "$name $tag $entrypoint $cmd") | sha256sum | cut -c1-16)
  out="$CACHE/$name-$key.tar"
  if [ ! -s "$out" ] || [ ! -s "$out.id" ]; then
    "$BIN/mkimage" -dir "$tmp" -tag "localhost/kubespaces/$name:$tag" -entrypoint "$entrypoint" \
      -cmd "$cmd" -out "$out" >"$out.id.tmp"
    mv "$out.id.tmp" "$out.id"
  fi
  rm -rf "$tmp"
  echo "$name $tag $out $(cat "$out.id")"
}

build_all() {
  local spec
  for spec in "${IMAGES[@]}"; do
    # shellcheck disable=SC2086
    build_image $spec
  done
}

case $1 in
  build) build_all ;;
  import)
    [ $# -eq 2 ] || die "usage: $0 import STATE_DIR"
    STATE=$(cd "$2" && pwd)
    SOCK="$STATE/node/containerd/containerd.sock"
    RECORD="$STATE/node/containerd/root/kubespaces-images"
    touch "$RECORD"
    ctr() { "$BIN/ctr" --address "$SOCK" --namespace k8s.io "$@"; }
    present=$(ctr images ls -q)
    n=0
    while read -r name tag tarball id; do
      ref="localhost/kubespaces/$name:$tag"
      if ! grep -qx "$ref $id" "$RECORD" || ! grep -qx "$ref" <<<"$present"; then
        log "importing $ref ($id)"
        # (ctr warns on every call that cgroup v1 is deprecated: its output is shown on failure only)
        out=$(ctr images import --local "$tarball" 2>&1) || die "importing $tarball failed: $out"
        # The kubelet's image garbage collector leaves pinned images alone.
        ctr images label "$ref" io.cri-containerd.pinned=pinned >/dev/null
        grep -v "^$ref " "$RECORD" >"$RECORD.tmp" || true
        echo "$ref $id" >>"$RECORD.tmp"
        mv "$RECORD.tmp" "$RECORD"
        n=$((n + 1))
      fi
      echo "$name $tag $tarball $id"
    done < <(build_all)
    log "$n image(s) imported"
    ;;
  *) die "usage: $0 build | import STATE_DIR" ;;
esac
