#!/usr/bin/env bash
# images.sh build|import STATE_DIR|operator|server STATE_DIR BINARY|vcluster|crossplane|conformance STATE_DIR|dist OPERATOR SERVER — the node's
# container images, without a registry.
#
# build: writes each image as a docker-archive tarball with mkimage (acceptance/tools/images) from
#   binaries the harness built or Debian installed, cached in ~/.cache/kubespaces/images/ under a
#   key of its content, and prints "NAME TAG TARBALL ID" lines (ID: the image's config digest).
# import: builds (or looks up), then loads into the containerd of the cluster in STATE_DIR every
#   image whose ID that containerd does not hold yet under that tag (STATE_DIR/node/images records
#   the IDs imported), so a warm start imports nothing; prints the same lines as build.
# operator: builds the operator's image from BINARY (a build of kubespaces-operator: the release
#   build, or make test's debug build) and imports it the same way; prints its name,
#   localhost/kubespaces/operator:<tag>, where the tag is a digest of the image's content, so a
#   rebuilt binary gets a new name and the chart's Deployment rolls. The image holds the binary,
#   exactly the shared libraries `ldd` lists for it (with the dynamic loader), helm and the pinned
#   vCluster chart archive(s) of charts/vcluster (under /usr/share/kubespaces/charts), and an /etc
#   for its user, 65532; no shell. It is also tagged with the operator's version (the chart's
#   appVersion), which the chart's default values name. Older operator images are removed from
#   the node, unless KUBESPACES_KEEP_OLDER_IMAGES=1 (previous-release.sh).
# server: the same for the server (a build of kubespaces-server), localhost/kubespaces/server:<tag>:
#   the binary and its libraries alone.
# vcluster: builds and imports (the same way as import) the two images a vCluster runs from, which
#   only clusters that host vClusters need (their binaries: build-tools.sh --with vcluster).
# dist: builds (or looks up) the images of the platform and its tenants, from the operator and
#   server binaries given (OPERATOR SERVER) and the vCluster's, and prints their lines as build
#   does, importing nothing: operator, server, vcluster, kubernetes, coredns (dist.sh).
# conformance: builds and imports the images the conformance suite's pods run, under the names the
#   suite gives them with manifests/conformance-registries.yaml (e2e.test --list-images; every
#   registry is localhost/kubespaces): agnhost, from the cluster's Kubernetes module (build-tools.sh
#   --with conformance), on busybox as upstream's is on alpine, with the Debian programs its
#   probes run (nc, curl, dig, getent, ...), and glibc-dns-testing of the same; the harness's
#   busybox with bash as its sh (conformance-busybox) and pause under the suite's tags. Prints
#   the names it does not provide
#   (run-conformance.sh reports them).
# crossplane: builds and imports Crossplane's image and the package of the composition function
#   docs/crossplane.md uses (binaries and upstream files: build-tools.sh --with crossplane), for
#   crossplane.sh. The package is built by xp-package and also written as the entry of
#   Crossplane's package cache; TARBALL.ref holds the reference to install it by.
#
# The names are the ones manifests use, with imagePullPolicy IfNotPresent:
#   localhost/kubespaces/pause:1        the pod sandbox (own pause program)
#   localhost/kubespaces/busybox:<v>    Debian's static busybox, for tests and debugging
#   localhost/kubespaces/coredns:<v>    cluster DNS (CoreDNS built with the plugins it needs)
#   localhost/kubespaces/kubectl:<v>    busybox + kubectl, for tests of in-cluster API access
#   localhost/kubespaces/traefik:<v>    the platform's Gateway (manifests/gateway, gateway.sh)
#   localhost/kubespaces/tlsserver:1    an HTTPS server for tests (acceptance/tools/images/tlsserver)
#   localhost/kubespaces/local-path-provisioner:<v>  dynamic volumes (manifests/local-path)
#   localhost/kubespaces/cert-manager:<v>  the cert-manager controller (manifests/cert-manager,
#                                       cert-manager.sh)
#   localhost/kubespaces/vcluster:<v>   the vCluster syncer, /vcluster start (only with `vcluster`)
#   localhost/kubespaces/kubernetes:<v> busybox + /kubernetes/{kube-apiserver,kube-controller-manager,
#                                       kube-scheduler,kine}, which the vCluster chart's init
#                                       container copies to /binaries (only with `vcluster`)
#   localhost/kubespaces/operator:<t>   the operator (only with `operator`)
#   localhost/kubespaces/server:<t>     the server (only with `server`)
#   localhost/kubespaces/crossplane:<v> Crossplane core and its RBAC manager, with the CRDs and
#                                       webhook configurations `crossplane core init` installs
#                                       (only with `crossplane`)
#   localhost/kubespaces/function-patch-and-transform:<v>  that function's package: its runtime
#                                       (the function as /function, uid 65532) and its package.yaml
#                                       layer (only with `crossplane`)
# To add an image: a rootfs_NAME function and a line in IMAGES below (see docs/development.md).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=images

USAGE="usage: $0 build | import STATE_DIR | operator|server STATE_DIR BINARY | vcluster STATE_DIR | crossplane STATE_DIR | conformance STATE_DIR | dist OPERATOR SERVER"
[ $# -ge 1 ] || die "$USAGE"
BIN=${KUBESPACES_BIN:-$("$HARNESS_DIR/build-tools.sh")}
CACHE="${KUBESPACES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubespaces}/images"
mkdir -p "$CACHE"
ensure_cmds busybox:busybox-static strip:binutils ldd:libc-bin

# (Read whole before parsing: `busybox | head -1` would end busybox with SIGPIPE under pipefail.)
BUSYBOX_V=$(busybox 2>&1 || true)
BUSYBOX_V=$(sed -nE '1s/.*v([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' <<<"$BUSYBOX_V")
KUBECTL_V=$("$BIN/kubectl" version --client -o json | sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p')
COREDNS_V=$("$BIN/coredns" -version 2>/dev/null | grep -oE 'CoreDNS-[0-9.]+' | cut -d- -f2)
TRAEFIK_V=$("$BIN/traefik" version | awk '$1 == "Version:" {print $2}')

# name  tag  entrypoint  cmd (JSON arrays, - for none). busybox has a command, not an entrypoint,
# so `kubectl run --image=... -- sh -c '...'` works as with Docker's busybox.
IMAGES=(
  "pause 1 [\"/pause\"] -"
  "busybox $BUSYBOX_V - [\"/bin/sh\"]"
  "coredns v$COREDNS_V [\"/coredns\"] -"
  "kubectl $KUBECTL_V [\"/usr/local/bin/kubectl\"] -"
  "traefik $TRAEFIK_V [\"/traefik\"] -"
  "tlsserver 1 [\"/tlsserver\"] -"
)
# The provisioner (node-up.sh needs it): absent only from binary dirs built before it was added,
# which clusters started earlier still name in their env (images.sh operator must work for them).
if [ -x "$BIN/local-path-provisioner" ]; then
  # "local-path-provisioner version v0.0.30"
  IMAGES+=("local-path-provisioner $("$BIN/local-path-provisioner" --version | awk '{print $NF}') - -")
fi

# cert-manager's controller (cert-manager.sh): likewise absent from binary dirs built before it.
if [ -x "$BIN/cert-manager" ]; then
  # "cert-manager v1.21.2"
  IMAGES+=("cert-manager $("$BIN/cert-manager" --version | awk '{print $NF}') [\"/cert-manager\"] -")
fi

# A minimal /etc for any image: root and nobody, so `id` and runAsUser work.
etc_files() {
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$1/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$1/etc/group"
}
rootfs_pause() { install -D -m755 "$BIN/pause" "$1/pause"; }
rootfs_coredns() { etc_files "$1"; install -D -m755 "$BIN/coredns" "$1/coredns"; }
rootfs_traefik() { etc_files "$1"; install -D -m755 "$BIN/traefik" "$1/traefik"; }
rootfs_cert-manager() { etc_files "$1"; install -D -m755 "$BIN/cert-manager" "$1/cert-manager"; }
rootfs_tlsserver() { etc_files "$1"; install -D -m755 "$BIN/tlsserver" "$1/tlsserver"; }
rootfs_kubectl() { rootfs_busybox "$1"; install -D -m755 "$BIN/kubectl" "$1/usr/local/bin/kubectl"; }
# The provisioner runs as `local-path-provisioner start ...` (its Deployment's command), off PATH.
rootfs_local-path-provisioner() {
  etc_files "$1"; install -D -m755 "$BIN/local-path-provisioner" "$1/usr/local/bin/local-path-provisioner"
}
# The vCluster images: the syncer on busybox (as upstream's is on alpine: a shell for debugging), and
# the binaries its chart's init container copies with `cp -r /kubernetes/. /binaries/`.
rootfs_vcluster() { rootfs_busybox "$1"; install -D -m755 "$BIN/vcluster" "$1/vcluster"; }
rootfs_kubernetes() {
  local b
  rootfs_busybox "$1"
  for b in kube-apiserver kube-controller-manager kube-scheduler kine; do
    install -D -m755 "$BIN/$b" "$1/kubernetes/$b"
  done
}
# Crossplane, laid out as its release image: the binary on PATH, the files `core init` applies.
rootfs_crossplane() {
  etc_files "$1"
  install -D -m755 "$BIN/crossplane" "$1/usr/local/bin/crossplane"
  cp -rL "$BIN/crossplane-cluster/crds" "$1/crds"
  cp -rL "$BIN/crossplane-cluster/webhookconfigurations" "$1/webhookconfigurations"
  chmod -R a+rX,u+w "$1/crds" "$1/webhookconfigurations"
}
# A function's runtime, as upstream's image: the function as /function (its entrypoint).
rootfs_function-runtime() {
  etc_files "$1"; install -D -m755 "$BIN/function-patch-and-transform" "$1/function"
}
# agnhost as upstream lays it out: /agnhost (also as agnhost-2), /uploads, the porter's
# certificate and key at /localhost.{crt,key}, the user and group of the test that runs as "a
# user defined in the image", and the tools upstream adds to its alpine, which the suite's probes
# run (rootfs_network_tools).
rootfs_agnhost() {
  rootfs_busybox "$1"
  rootfs_network_tools "$1"
  install -D -m755 "$BIN/agnhost" "$1/agnhost"
  install -m644 "$BIN/agnhost-porter/localhost.crt" "$BIN/agnhost-porter/localhost.key" "$1/"
  ln -s agnhost "$1/agnhost-2"
  mkdir -p "$1/uploads"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$1/etc/passwd"
  printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$1/etc/group"
}
# The DNS specs' second prober: upstream's is Debian with dnsutils, for glibc's resolver (getent).
rootfs_glibc-dns-testing() {
  rootfs_busybox "$1"
  rootfs_network_tools "$1"
}
# The Debian programs of CONFORMANCE_IMAGE_TOOLS (lib.sh; the suite's probes run `nc -v -t -w 2`,
# `curl`, `dig`, `getent hosts`, ...) under /usr/bin, before busybox's /bin on PATH, with what
# they load; and dash as /bin/sh, since the ash of Debian's static busybox runs its own applets (a
# small nc) before anything on PATH. glibc (>= 2.34) has the files and dns modules built in.
rootfs_network_tools() {
  local tool
  rm -f "$1/bin/sh" "$1/bin/bash"
  install_dynamic "$1" "$(command -v dash)" /bin/sh
  install_dynamic "$1" "$(command -v bash)" /bin/bash
  install_dynamic "$1" "$(command -v nc.openbsd)" /usr/bin/nc
  for tool in curl dig getent socat ip; do
    install_dynamic "$1" "$(command -v "$tool")" "/usr/bin/$tool"
  done
  printf 'hosts: files dns\n' >"$1/etc/nsswitch.conf"
}
# The suite's busybox: the harness's, with bash as /bin/sh. The ash of Debian's busybox (1.35)
# drops environment variables whose names are no shell identifiers (`data-1`) before it runs
# `env`, which the suite's busybox (1.36 and later) keeps, as bash does: the ConfigMap environment
# specs read them through `sh -c env`.
rootfs_conformance-busybox() {
  rootfs_busybox "$1"
  rm -f "$1/bin/sh"
  install_dynamic "$1" "$(command -v bash)" /bin/sh
}
rootfs_busybox() {
  local applet
  etc_files "$1"
  install -D -m755 "$(command -v busybox)" "$1/bin/busybox"
  for applet in $(busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$1/bin/$applet"
  done
}

# A program of this repository (kubespaces-operator, kubespaces-server) as /usr/local/bin/NAME:
# BINARY without its debug info (both profiles keep line tables, 80% of the file; symbols stay, so
# backtraces still name functions), the shared libraries it loads and the dynamic loader, each at
# the path `ldd` names (the copy is of the file a symlink points to), and users for uid 65532.
rootfs_program() {
  local dir=$1 binary=$2 name=$3
  mkdir -p "$dir/usr/local/bin"
  strip --strip-debug -o "$dir/usr/local/bin/$name" "$binary"
  chmod 755 "$dir/usr/local/bin/$name"
  install_libs "$dir" "$binary"
  mkdir -p "$dir/etc"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/etc/group"
  # glibc (>= 2.34 has the files and dns modules built in) reads this for host names.
  printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
}

# install_libs DIR BINARY: the shared libraries BINARY loads and the dynamic loader, each at the
# path `ldd` names (the copy is of the file a symlink points to). From `ldd`:
# "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)";
# linux-vdso is the kernel's. A static binary ("not a dynamic executable") needs none.
install_libs() {
  local dir=$1 binary=$2 libs lib
  libs=$(ldd "$binary" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}') || true
  for lib in $libs; do
    install -D -m755 "$(readlink -f "$lib")" "$dir$lib"
  done
}
# install_dynamic DIR BINARY PATH: BINARY at PATH in DIR, with what it loads.
install_dynamic() {
  install -D -m755 "$2" "$1$3"
  install_libs "$1" "$2"
}

# The operator, and beside it helm, which renders the tenants' vCluster chart (`helm template`),
# and that chart's pinned archive (the chart's values name its path, version and digest).
rootfs_operator() {
  local dir=$1 archive
  rootfs_program "$dir" "$2" kubespaces-operator
  [ -x "$BIN/helm" ] || die "no helm in $BIN: build it with build-tools.sh --with helm"
  install -D -m755 "$(readlink -f "$BIN/helm")" "$dir/usr/local/bin/helm"
  for archive in "$REPO_ROOT"/charts/vcluster/vcluster-*.tgz; do
    install -D -m644 "$archive" "$dir/usr/share/kubespaces/charts/$(basename "$archive")"
  done
}

# The server: the program alone (its TLS roots are built in; the kube client uses the pod's
# ServiceAccount).
rootfs_server() { rootfs_program "$1" "$2" kubespaces-server; }

# content_key DIR EXTRA: a digest of every file, link and mode under DIR, plus EXTRA.
content_key() {
  (cd "$1" && find . -printf '%p %l %m\n' | sort && find . -type f -print0 | sort -z | xargs -0 cat
   echo "$2") | sha256sum | cut -c1-16
}

# mkimage_cached NAME TAG KEY DIR ENTRYPOINT CMD [mkimage args]: echoes "NAME TAG TARBALL ID".
mkimage_cached() {
  local name=$1 tag=$2 key=$3 dir=$4 entrypoint=$5 cmd=$6 out; shift 6
  out="$CACHE/$name-$key.tar"
  if [ ! -s "$out" ] || [ ! -s "$out.id" ]; then
    "$BIN/mkimage" -dir "$dir" -tag "localhost/kubespaces/$name:$tag" -entrypoint "$entrypoint" \
      -cmd "$cmd" -out "$out" "$@" >"$out.id.tmp"
    mv "$out.id.tmp" "$out.id"
  fi
  echo "$name $tag $out $(cat "$out.id")"
}

# build_image NAME TAG ENTRYPOINT CMD: echoes "NAME TAG TARBALL ID".
build_image() {
  local name=$1 tag=$2 entrypoint=${3#-} cmd=${4#-} tmp key
  tmp=$(mktemp -d)
  "rootfs_$name" "$tmp"
  # The key is the content (every file, link and mode) plus the image's name and entrypoint.
  key=$(content_key "$tmp" "$name $tag $entrypoint $cmd")
  mkimage_cached "$name" "$tag" "$key" "$tmp" "$entrypoint" "$cmd"
  rm -rf "$tmp"
}

# build_program NAME BINARY: echoes "NAME TAG TARBALL ID" for the image of the operator or the
# server; TAG is the content's digest. Older tarballs of NAME are removed from the cache (the
# newest few are kept).
build_program() {
  local name=$1 tmp key entrypoint cmd user=65532:65532
  entrypoint="[\"/usr/local/bin/kubespaces-$name\"]"
  case $name in operator) cmd='["run"]' ;; *) cmd= ;; esac
  tmp=$(mktemp -d)
  "rootfs_$name" "$tmp" "$2"
  key=$(content_key "$tmp" "$name $entrypoint $cmd $user")
  mkimage_cached "$name" "$key" "$key" "$tmp" "$entrypoint" "$cmd" -user "$user"
  rm -rf "$tmp"
  # shellcheck disable=SC2012  # names are ours: NAME-<hex>.tar
  ls -t "$CACHE/$name"-*.tar | tail -n +4 | while read -r old; do rm -f "$old" "$old.id"; done
}

build_all() {
  local spec
  for spec in "${IMAGES[@]}"; do
    # shellcheck disable=SC2086
    build_image $spec
  done
}

need_vcluster_binaries() {
  local b
  for b in vcluster kine; do
    [ -x "$BIN/$b" ] || die "$BIN/$b missing: build it with acceptance/harness/build-tools.sh --with vcluster"
  done
}

# build_vcluster: the vCluster images, tagged with the pinned syncer version (the binary itself
# says "dev", see build-tools.sh) and the Kubernetes version.
build_vcluster() {
  local vc_v
  vc_v=$(awk '{ m = $1; v = $2 } $1 == "require" { m = $2; v = $3 }
               m == "github.com/loft-sh/vcluster" { print v; exit }' "$REPO_ROOT/acceptance/tools/vcluster/go.mod")
  build_image vcluster "$vc_v" '["/vcluster","start"]' -
  build_image kubernetes "$KUBECTL_V" - -
}

# build_crossplane: Crossplane's image, and the function's package built on its runtime image.
build_crossplane() {
  local xp_v pat_v runtime pkg
  xp_v=$("$BIN/crossplane" --version)
  pat_v=$(awk '{ m = $1; v = $2 } $1 == "require" { m = $2; v = $3 }
               m == "github.com/crossplane-contrib/function-patch-and-transform" { print v; exit }' \
    "$REPO_ROOT/acceptance/tools/function-pat/go.mod")
  build_image crossplane "$xp_v" '["/usr/local/bin/crossplane"]' -
  read -r _ _ runtime _ < <(build_image function-runtime "$pat_v" '["/function"]' -)
  # Keyed by the runtime image and the package's files: the cache entry's name holds the digest.
  pkg="$CACHE/function-patch-and-transform-$( (basename "$runtime"; cat "$BIN"/function-patch-and-transform-package/*.yaml \
    "$BIN"/function-patch-and-transform-package/*/*.yaml) | sha256sum | cut -c1-16).tar"
  if [ ! -s "$pkg.ref" ]; then
    rm -rf "$pkg.cache"
    "$BIN/xp-package" --package-root "$BIN/function-patch-and-transform-package/" \
      --runtime-image "$runtime" --source kubespaces.localhost/function-patch-and-transform \
      --tag "localhost/kubespaces/function-patch-and-transform:$pat_v" --out "$pkg" \
      --cache-dir "$pkg.cache" >"$pkg.ref.tmp"
    mv "$pkg.ref.tmp" "$pkg.ref"
  fi
  # The ID import_images records: the image's config digest, as mkimage prints it.
  echo "function-patch-and-transform $pat_v $pkg $(tar -xOf "$pkg" manifest.json | grep -oE 'sha256:[0-9a-f]{64}' | head -1)"
}

# import_images STATE: imports the images of the "NAME TAG TARBALL ID" lines on stdin into the
# containerd of the cluster in STATE, unless it holds that ID under that name already (recorded
# in the image store, which outlives clusters of the same state dir); echoes the lines.
import_images() {
  local state sock record present n=0 name tag tarball id ref out
  state=$(cd "$1" && pwd)
  sock="$state/node/containerd/containerd.sock"
  record="$state/node/containerd/root/kubespaces-images"
  [ -S "$sock" ] || die "no containerd at $sock: is the cluster in $state up with a real node?"
  touch "$record"
  ctr() { "$BIN/ctr" --address "$sock" --namespace k8s.io "$@"; }
  # (ctr warns on every call that cgroup v1 is deprecated: its stderr is shown on failure only)
  present=$(ctr images ls -q 2>/dev/null) || present=""
  while read -r name tag tarball id; do
    ref="localhost/kubespaces/$name:$tag"
    if ! grep -qx "$ref $id" "$record" || ! grep -qx "$ref" <<<"$present"; then
      log "importing $ref ($id)"
      out=$(ctr images import --local "$tarball" 2>&1) || die "importing $tarball failed: $out"
      # The kubelet's image garbage collector leaves pinned images alone.
      out=$(ctr images label "$ref" io.cri-containerd.pinned=pinned 2>&1) || die "pinning $ref failed: $out"
      grep -v "^$ref " "$record" >"$record.tmp" || true
      echo "$ref $id" >>"$record.tmp"
      mv "$record.tmp" "$record"
      n=$((n + 1))
    fi
    echo "$name $tag $tarball $id"
  done
  log "$n image(s) imported"
}

case $1 in
  build) build_all ;;
  vcluster)
    [ $# -eq 2 ] || die "$USAGE"
    need_vcluster_binaries
    # Built first, so that a failed build (e.g. a full disk) stops here instead of importing nothing.
    shopt -s inherit_errexit
    lines=$(build_vcluster)
    [ "$(grep -c . <<<"$lines")" -eq 2 ] || die "building the vCluster images gave no images"
    import_images "$2" <<<"$lines"
    ;;
  crossplane)
    [ $# -eq 2 ] || die "$USAGE"
    for b in crossplane xp-package function-patch-and-transform crossplane-cluster function-patch-and-transform-package; do
      [ -e "$BIN/$b" ] || die "$BIN/$b missing: build it with acceptance/harness/build-tools.sh --with crossplane"
    done
    shopt -s inherit_errexit
    lines=$(build_crossplane)
    [ "$(grep -c . <<<"$lines")" -eq 2 ] || die "building the Crossplane images gave no images"
    import_images "$2" <<<"$lines"
    ;;
  conformance)
    [ $# -eq 2 ] || die "$USAGE"
    for b in e2e.test agnhost agnhost-porter; do
      [ -e "$BIN/$b" ] || die "$BIN/$b missing: build it with acceptance/harness/build-tools.sh --with conformance"
    done
    refs=$(KUBE_TEST_REPO_LIST="$HARNESS_DIR/manifests/conformance-registries.yaml" "$BIN/e2e.test" --list-images) \
      || die "e2e.test --list-images failed"
    ensure_cmds "${CONFORMANCE_IMAGE_TOOLS[@]}"
    AGNHOST_V=$(grep -oE '^localhost/kubespaces/agnhost:[^ ]+$' <<<"$refs" | sort -V | tail -1 | cut -d: -f2)
    [ -n "$AGNHOST_V" ] || die "e2e.test lists no localhost/kubespaces/agnhost image"
    shopt -s inherit_errexit
    DNS_TESTING_V=$(grep -oE '^localhost/kubespaces/glibc-dns-testing:[^ ]+$' <<<"$refs" | cut -d: -f2)
    lines=$(build_image agnhost "$AGNHOST_V" '["/agnhost"]' '["pause"]'
            build_image conformance-busybox "$BUSYBOX_V" - '["/bin/sh"]'
            [ -z "$DNS_TESTING_V" ] || build_image glibc-dns-testing "$DNS_TESTING_V" - '["/bin/sh"]')
    import_images "$2" <<<"$lines" >/dev/null
    # The node's pause, and these agnhost and busybox, under every name of theirs the suite uses
    # (some tests name theirs in full, outside the registry list).
    state=$(cd "$2" && pwd)
    ctr() { "$BIN/ctr" --address "$state/node/containerd/containerd.sock" --namespace k8s.io "$@" 2>/dev/null; }
    for ref in $refs; do
      name=${ref##*/}; name=${name%%:*}
      case "$name:$ref" in
        agnhost:localhost/kubespaces/*) from="localhost/kubespaces/agnhost:$AGNHOST_V" ;;
        glibc-dns-testing:localhost/kubespaces/*) from="localhost/kubespaces/glibc-dns-testing:$DNS_TESTING_V" ;;
        busybox:*) from="localhost/kubespaces/conformance-busybox:$BUSYBOX_V" ;;
        pause:*) from="localhost/kubespaces/pause:1" ;;
        *) echo "$ref"; continue ;;
      esac
      [ "$ref" = "$from" ] && continue
      ctr images rm "$ref" >/dev/null || true
      ctr images tag "$from" "$ref" >/dev/null || die "tagging $from as $ref failed"
      ctr images label "$ref" io.cri-containerd.pinned=pinned >/dev/null
    done
    ;;
  import)
    [ $# -eq 2 ] || die "$USAGE"
    import_images "$2" < <(build_all)
    ;;
  operator|server)
    [ $# -eq 3 ] || die "$USAGE"
    name=$1
    [ -x "$3" ] || die "$3 is not an executable (build it first: cargo build --release -p kubespaces-$name)"
    line=$(import_images "$2" < <(build_program "$name" "$3"))
    read -r _ tag _ _ <<<"$line"
    repo="localhost/kubespaces/$name"
    ref="$repo:$tag"
    sock="$(cd "$2" && pwd)/node/containerd/containerd.sock"
    record="$(cd "$2" && pwd)/node/containerd/root/kubespaces-images"
    ctr() { "$BIN/ctr" --address "$sock" --namespace k8s.io "$@" 2>/dev/null; }
    # The version tag the chart's default values name (its appVersion), on the same image.
    version=$("$3" --version | awk '{print $NF}')
    ctr images rm "$repo:$version" >/dev/null || true
    ctr images tag "$ref" "$repo:$version" >/dev/null
    ctr images label "$repo:$version" io.cri-containerd.pinned=pinned >/dev/null
    # Older builds are of no further use (the image store outlives clusters: they would pile up).
    # A container still running from one keeps its snapshot until its pod is replaced.
    # KUBESPACES_KEEP_OLDER_IMAGES=1 keeps them: the previous release's images are imported beside
    # the current ones (previous-release.sh), which the upgrade goes back to.
    [ -n "${KUBESPACES_KEEP_OLDER_IMAGES:-}" ] || for old in $(ctr images ls -q | grep "^$repo:" || true); do
      case $old in "$ref"|"$repo:$version") ;;
        *) ctr images rm "$old" >/dev/null || true
           grep -v "^$old " "$record" >"$record.tmp" || true; mv "$record.tmp" "$record" ;; esac
    done
    echo "$ref"
    ;;
  dist)
    # Built only, never imported: the lines of every image a platform and its tenants run.
    [ $# -eq 3 ] || die "$USAGE"
    need_vcluster_binaries
    shopt -s inherit_errexit
    # CoreDNS: the node's image, from its line in IMAGES (the tenants' DNS runs it too).
    lines=$(build_program operator "$2"; build_program server "$3"; build_vcluster
            for spec in "${IMAGES[@]}"; do
              # shellcheck disable=SC2086
              [ "${spec%% *}" != coredns ] || build_image $spec
            done)
    [ "$(grep -c . <<<"$lines")" -eq 5 ] || die "building the platform's images gave no images"
    echo "$lines"
    ;;
  *) die "$USAGE" ;;
esac
