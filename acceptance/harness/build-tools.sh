#!/usr/bin/env bash
# Builds the real cluster binaries from the pinned Go modules under acceptance/tools/, and caches
# them under ~/.cache/kubespaces/<component>/<version>-<go version>-<hash of pins and flags>/:
#   control plane  kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd
#   node           kubelet, kube-proxy (same k8s build), containerd + shim + ctr, CoreDNS (only
#                  the plugins cluster DNS needs), kube-router (NetworkPolicy), mkimage + pause
#                  (the harness's image builder and the pod sandbox's pause process), tlsserver
#                  (an HTTPS backend for tests), Traefik (the platform's Gateway) and the Gateway
#                  API standard-channel CRDs (gateway-api-crds/, from the module Traefik pins),
#                  local-path-provisioner (dynamic volumes), and cert-manager (the controller,
#                  from a project-owned main over the pinned module's public packages: SelfSigned
#                  and CA issuers, no ACME; acceptance/tools/cert-manager) with its CRDs
#                  (cert-manager-crds/, the module's deploy/crds)
# Prints the directory holding everything (a directory of symlinks) on stdout; logs go to stderr.
# Concurrent runs (make up and make test at once) are serialised by a lock: never two Go builds.
#
# Usage: build-tools.sh [--with EXTRA]... [--all]
# Extras are built (and cached the same way) only when asked for, and symlinked next to the
# control-plane binaries:
#   kwok           kwok (acceptance/tools/kwok), the fake node of kwok clusters (benchmarks:
#                  KUBESPACES_NODES=kwok), with its stage file (kwok-stages.yaml) assembled from the
#                  pinned module (the binary has no built-in stages); test clusters need none of it
#   vcluster       the vCluster OSS syncer (acceptance/tools/vcluster) and kine (acceptance/tools/kine),
#                  for the images a vCluster runs from (images.sh vcluster)
#   tofu           OpenTofu (acceptance/tools/tofu), for the provider's acceptance tests
#   tf-kubectl     gavinbunney/terraform-provider-kubectl (acceptance/tools/tf-kubectl), the Go
#                  provider the provider benchmark compares against (run-provider-bench.sh)
#   helm           Helm v3 (acceptance/tools/helm), which installs charts/kubespaces (make test,
#                  make up); its default Kubernetes version is the cluster's
#   health-check   acceptance/tools/health-check: what Flux's healthCheckExprs (cel-go), Argo CD's
#                  Lua health check (gopher-lua) and kstatus (cli-utils) say about Tenant objects
#                  (tests/health.rs)
#   crossplane     Crossplane v2 (acceptance/tools/crossplane) for its `internal render`, and
#                  function-patch-and-transform (acceptance/tools/function-pat), the composition
#                  function it dials (tests/crossplane.rs)
#   dex            Dex (acceptance/tools/dex), the OIDC provider the server and the CLI log in
#                  against (acceptance/harness/dex.sh; the server's and the CLI's tests)
#   ociarchive     acceptance/tools/images/ociarchive: the harness's image tarballs as OCI image
#                  archives, for make dist (dist.sh)
#   conformance    the upstream conformance suite (e2e.test, built with go test -c) and agnhost, the
#                  program most of its pods run, from the cluster's Kubernetes module and pins
#                  (acceptance/tools/conformance), for make conformance (run-conformance.sh)
set -euo pipefail
EXTRAS=()
while [ $# -gt 0 ]; do
  case $1 in
    --with) [ $# -ge 2 ] || { echo "build-tools: --with needs a name" >&2; exit 2; }
            EXTRAS+=("$2"); shift 2 ;;
    --all) EXTRAS+=(kwok tofu tf-kubectl helm health-check crossplane vcluster dex ociarchive conformance); shift ;;
    *) echo "usage: build-tools.sh [--with kwok|tofu|tf-kubectl|helm|health-check|crossplane|vcluster|dex|ociarchive|conformance]... [--all]" >&2; exit 2 ;;
  esac
done
# Without this, `set -e` is off inside $(...) and a failed `go build` in build_cached would go on
# to mark a broken cache entry complete.
shopt -s inherit_errexit
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS="$HERE/../tools"
CACHE="${KUBESPACES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubespaces}"
# -dwarf=false: the binaries are stripped (-s -w) anyway, and a compiler that writes no DWARF does
# about 12% less work (etcd's server, cold: 95 s of CPU against 109), which a cold build of
# everything here pays on its critical path.
export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -gcflags=all=-dwarf=false" GOGC=300

command -v go >/dev/null || { echo "build-tools: Go is required (a Go toolchain >= 1.26 on PATH)" >&2; exit 1; }
GOV=$(go env GOVERSION)

mkdir -p "$CACHE"
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  echo "build-tools: another build-tools.sh is running; waiting for it (its results are reused)" >&2
  flock 9
fi
# Directories of builds that were interrupted (we hold the lock, so none is in progress).
rm -rf "$CACHE"/*/*.tmp.*

# build_cached NAME VERSION MODDIR LDFLAGS PKG...  -> echoes the cache dir holding the binaries
# (GO_TEST_PKG: a package whose tests are compiled too, go test -c, into PKGNAME.test)
build_cached() {
  local name=$1 version=$2 moddir=$3 ldflags=$4; shift 4
  local key out tmp
  # The key covers the pins and the flags, not this script, so editing the script keeps the cache.
  # GO_TAGS (build tags) and GOFLAGS are part of the key too. Sources in the module dir (a small
  # main) count.
  key=$( (cat "$moddir/go.mod" "$moddir/go.sum"; find "$moddir" -name '*.go' -type f | sort | xargs -r cat
          echo "$ldflags ${GO_TAGS:-} $GOFLAGS $*${GO_TEST_PKG:+ test $GO_TEST_PKG}") | sha256sum | cut -c1-12)
  out="$CACHE/$name/$version-$GOV-$key"
  if [ ! -f "$out/.complete" ]; then
    echo "build-tools: building $name $version (cold builds take minutes; cached afterwards in $out)" >&2
    mkdir -p "$CACHE/$name"
    tmp=$(mktemp -d "$out.tmp.XXXXXX")
    local t0=$SECONDS
    if ! ( cd "$moddir" && go mod download && go build ${GO_TAGS:+-tags "$GO_TAGS"} -ldflags "$ldflags" -o "$tmp/" "$@" \
           && if [ -n "${GO_TEST_PKG:-}" ]; then
                go test -c -ldflags "$ldflags" -o "$tmp/$(basename "$GO_TEST_PKG").test" "$GO_TEST_PKG"
              fi ) >&2; then
      rm -rf "$tmp"
      echo "build-tools: building $name $version failed" >&2
      return 1
    fi
    # etcd's main package is the module root (.../server/v3): go names that binary "server".
    if [ -e "$tmp/server" ]; then mv "$tmp/server" "$tmp/etcd"; fi
    chmod 755 "$tmp"
    touch "$tmp/.complete"
    rm -rf "$out"; mv "$tmp" "$out"
    echo "build-tools: built $name $version in $((SECONDS - t0))s" >&2
  fi
  echo "$out"
}

# moddir TOOLDIR MODULE: where the Go module cache holds MODULE at TOOLDIR's pin (downloaded if
# it is not there: a cached build needs no download of its own).
moddir() { (cd "$1" && go mod download -json "$2" | sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p'); }

modversion() { grep -oE "^\s*(require )?$1 v[^ ]+" "$2/go.mod" | head -1 | awk '{print $NF}'; }

K8S_V=$(modversion k8s.io/kubernetes "$TOOLS/k8s")
K8S_MINOR=$(echo "$K8S_V" | cut -d. -f2)
K8S_LD="-s -w"
# Stamp the version the way Kubernetes' own build does, so /version reports a real release.
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  K8S_LD+=" -X $p.gitVersion=$K8S_V -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR -X $p.gitTreeState=clean"
done
ETCD_V=$(modversion go.etcd.io/etcd/server/v3 "$TOOLS/etcd")

CONTAINERD_V=$(modversion github.com/containerd/containerd/v2 "$TOOLS/containerd")
COREDNS_V=$(modversion github.com/coredns/coredns "$TOOLS/coredns")
KROUTER_V=$(modversion github.com/cloudnativelabs/kube-router/v2 "$TOOLS/kube-router")
GGCR_V=$(modversion github.com/google/go-containerregistry "$TOOLS/images")

ETCD_DIR=$(build_cached etcd "$ETCD_V" "$TOOLS/etcd" "-s -w" go.etcd.io/etcd/server/v3)
K8S_DIR=$(build_cached k8s "$K8S_V" "$TOOLS/k8s" "$K8S_LD" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
# The node. containerd without the snapshotters this harness never uses (they need cgo or kernel
# features); the version stamped like containerd's own release build.
CONTAINERD_DIR=$(GO_TAGS="no_btrfs no_devmapper no_zfs" build_cached containerd "$CONTAINERD_V" \
  "$TOOLS/containerd" "-s -w -X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_V#v}" \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr)
COREDNS_DIR=$(build_cached coredns "$COREDNS_V" "$TOOLS/coredns" "-s -w" .)
KROUTER_DIR=$(build_cached kube-router "$KROUTER_V" "$TOOLS/kube-router" \
  "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KROUTER_V" \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
IMAGES_DIR=$(build_cached mkimage "$GGCR_V" "$TOOLS/images" "-s -w" ./mkimage ./pause ./tlsserver)

# ---- Traefik, the platform's Gateway on the real node (acceptance/tools/traefik), built from a
# source dir assembled in the cache: the wrapper module (upstream's replace lines, a stub for its
# nested dynamic/ext module) and a copy of lego, Traefik's ACME library, whose registry of DNS
# providers is replaced by lego-dns/: the Go proxy refuses the SDKs of ~15 of its 220 DNS
# providers, and the harness never asks Traefik for DNS-01 certificates (cert-manager does).
traefik_src() {
  local mod="$TOOLS/traefik" lego src tmp key
  lego=$(cd "$mod" && go mod download github.com/go-acme/lego/v5 && go list -m -f '{{.Dir}}' github.com/go-acme/lego/v5)
  key=$( (cat "$mod/go.mod" "$mod/go.sum" "$mod"/ext/* "$mod"/lego-dns/*; echo "$lego") | sha256sum | cut -c1-12)
  src="$CACHE/traefik/src-$key"
  if [ ! -f "$src/.complete" ]; then
    mkdir -p "$CACHE/traefik"
    tmp=$(mktemp -d "$src.tmp.XXXXXX")
    cp "$mod/go.mod" "$mod/go.sum" "$tmp/"
    cp -r "$mod/ext" "$tmp/ext"
    cp -r "$lego" "$tmp/lego"
    chmod -R u+w "$tmp/lego"
    find "$tmp/lego/providers/dns" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
    rm -f "$tmp/lego/providers/dns/"*_test.go
    cp "$mod/lego-dns/zz_gen_dns_providers.go" "$tmp/lego/providers/dns/"
    printf '\n// lego without its DNS providers (build-tools.sh traefik_src)\nreplace github.com/go-acme/lego/v5 => ./lego\n' >>"$tmp/go.mod"
    touch "$tmp/.complete"
    rm -rf "$src"; mv "$tmp" "$src"
  fi
  echo "$src"
}
TRAEFIK_V=$(modversion github.com/traefik/traefik/v3 "$TOOLS/traefik")
TRAEFIK_SRC=$(traefik_src)
TRAEFIK_DIR=$(build_cached traefik "$TRAEFIK_V" "$TRAEFIK_SRC" \
  "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_V" github.com/traefik/traefik/v3/cmd/traefik)
# The Gateway API CRDs of the standard channel, from the version Traefik is built against.
GWAPI_V=$(modversion sigs.k8s.io/gateway-api "$TOOLS/traefik")
GWAPI_DIR="$CACHE/gateway-api/$GWAPI_V-standard"
if [ ! -f "$GWAPI_DIR/.complete" ]; then
  gw_mod=$(cd "$TOOLS/traefik" && go mod download sigs.k8s.io/gateway-api && go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
  mkdir -p "$CACHE/gateway-api"
  tmp=$(mktemp -d "$GWAPI_DIR.tmp.XXXXXX")
  cp "$gw_mod"/config/crd/standard/*.yaml "$tmp/"
  chmod 755 "$tmp"; chmod 644 "$tmp"/*.yaml
  touch "$tmp/.complete"
  rm -rf "$GWAPI_DIR"; mv "$tmp" "$GWAPI_DIR"
fi
# Dynamic volumes on the real node (PVCs of the default StorageClass local-path).
LPP_V=$(modversion github.com/rancher/local-path-provisioner "$TOOLS/local-path")
LPP_DIR=$(build_cached local-path "$LPP_V" "$TOOLS/local-path" "-s -w -X main.VERSION=$LPP_V" \
  github.com/rancher/local-path-provisioner)

# cert-manager (acceptance/tools/cert-manager: its own main, since upstream's cmd/controller is a
# nested module the proxy does not serve), stamped with the module's version like upstream's
# release build, and its CRDs from the same module (deploy/crds).
CM_V=$(modversion github.com/cert-manager/cert-manager "$TOOLS/cert-manager")
CM_DIR=$(build_cached cert-manager "$CM_V" "$TOOLS/cert-manager" \
  "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CM_V" .)
CM_CRDS="$CACHE/cert-manager/$CM_V-crds"
if [ ! -f "$CM_CRDS/.complete" ]; then
  cm_mod=$(cd "$TOOLS/cert-manager" && go mod download github.com/cert-manager/cert-manager && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
  tmp=$(mktemp -d "$CM_CRDS.tmp.XXXXXX")
  cp "$cm_mod"/deploy/crds/*.yaml "$tmp/"
  chmod 755 "$tmp"; chmod 644 "$tmp"/*.yaml
  touch "$tmp/.complete"
  rm -rf "$CM_CRDS"; mv "$tmp" "$CM_CRDS"
fi

# One symlink dir per combination of builds, so a checkout with other pins (or a rebuild) never
# swaps binaries under a cluster that is running from an older combination.
# (Older versions of this script put the symlinks straight into $CACHE/bin: drop those.)
find "$CACHE/bin" -maxdepth 1 -type l -delete 2>/dev/null || true
NODE_DIRS="$CONTAINERD_DIR $COREDNS_DIR $KROUTER_DIR $IMAGES_DIR $LPP_DIR"
NODE_DIRS+=" $TRAEFIK_DIR $GWAPI_DIR"   # the Gateway (Traefik, Gateway API CRDs)
NODE_DIRS+=" $CM_DIR $CM_CRDS"          # cert-manager (controller, CRDs)
BIN="$CACHE/bin/$(echo "$K8S_DIR $ETCD_DIR $NODE_DIRS" | sha256sum | cut -c1-12)"
mkdir -p "$BIN"
for f in "$K8S_DIR"/kube-apiserver "$K8S_DIR"/kube-controller-manager "$K8S_DIR"/kube-scheduler \
         "$K8S_DIR"/kubectl "$K8S_DIR"/kubelet "$K8S_DIR"/kube-proxy "$ETCD_DIR"/etcd \
         "$CONTAINERD_DIR"/containerd "$CONTAINERD_DIR"/containerd-shim-runc-v2 "$CONTAINERD_DIR"/ctr \
         "$COREDNS_DIR"/coredns "$KROUTER_DIR"/kube-router "$IMAGES_DIR"/mkimage "$IMAGES_DIR"/pause \
         "$LPP_DIR"/local-path-provisioner; do
  [ -e "$f" ] || { echo "build-tools: missing $f" >&2; exit 1; }
  ln -sfn "$f" "$BIN/$(basename "$f")"
done

# The Gateway's binaries and CRDs (own lines: the loop above is extended by other components).
ln -sfn "$TRAEFIK_DIR/traefik" "$BIN/traefik"
ln -sfn "$IMAGES_DIR/tlsserver" "$BIN/tlsserver"
ln -sfn "$GWAPI_DIR" "$BIN/gateway-api-crds"
# cert-manager's controller and CRDs (cert-manager.sh).
ln -sfn "$CM_DIR/cert-manager" "$BIN/cert-manager"
ln -sfn "$CM_CRDS" "$BIN/cert-manager-crds"

# The extras asked for. They are not part of the cluster, so they do not go into the key of $BIN:
# their symlinks are (re)pointed in place.
for extra in ${EXTRAS[@]+"${EXTRAS[@]}"}; do
  case $extra in
    kwok)
      KWOK_V=$(modversion sigs.k8s.io/kwok "$TOOLS/kwok")
      KWOK_DIR=$(build_cached kwok "$KWOK_V" "$TOOLS/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok)
      # kwok's stages, from the same pinned module as the binary (kept next to it in the cache):
      # node initialize + lease heartbeat (kwokctl's defaults), fast pod ready/complete/delete, and the
      # volume stages that provision/bind/release PVs for PVCs of the `kwok-volume` StorageClass.
      STAGES="$KWOK_DIR/kwok-stages.yaml"
      if [ ! -s "$STAGES" ]; then
        kwok_mod=$(cd "$TOOLS/kwok" && go mod download sigs.k8s.io/kwok >&2 && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
        tmp=$(mktemp "$STAGES.tmp.XXXXXX")
        for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
                 pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
                 volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml volume/fast/pvc-delete.yaml \
                 volume/fast/pv-delete.yaml; do
          echo '---'
          cat "$kwok_mod/kustomize/stage/$f"
        done >"$tmp"
        chmod 644 "$tmp"
        mv "$tmp" "$STAGES"
      fi
      ln -sfn "$KWOK_DIR/kwok" "$BIN/kwok"
      ln -sfn "$STAGES" "$BIN/kwok-stages.yaml" ;;
    vcluster)
      # The vCluster OSS syncer (acceptance/tools/vcluster: its go.sum is the module's own, since
      # some of its pins are not in the checksum database). Deliberately not version-stamped: the
      # syncer then reports "dev", which also switches its telemetry off in the binary itself.
      VC_V=$(modversion github.com/loft-sh/vcluster "$TOOLS/vcluster")
      dir=$(build_cached vcluster "$VC_V" "$TOOLS/vcluster" "-s -w" github.com/loft-sh/vcluster/cmd/vcluster)
      ln -sfn "$dir/vcluster" "$BIN/vcluster"
      # kine, the etcd shim in front of SQLite that vCluster's embedded store runs (/binaries/kine).
      # Without cgo it uses the pure-Go modernc SQLite; no build tags: the NATS driver is not needed.
      KINE_V=$(modversion github.com/k3s-io/kine "$TOOLS/kine")
      dir=$(build_cached kine "$KINE_V" "$TOOLS/kine" \
        "-s -w -X github.com/k3s-io/kine/pkg/version.Version=$KINE_V" github.com/k3s-io/kine)
      ln -sfn "$dir/kine" "$BIN/kine" ;;
    tofu)
      TOFU_V=$(modversion github.com/opentofu/opentofu "$TOOLS/tofu")
      # version.dev=no: report the release (1.12.6), not 1.12.6-dev.
      dir=$(build_cached tofu "$TOFU_V" "$TOOLS/tofu" \
        "-s -w -X github.com/opentofu/opentofu/version.dev=no" github.com/opentofu/opentofu/cmd/tofu)
      ln -sfn "$dir/tofu" "$BIN/tofu" ;;
    tf-kubectl)
      TFK_V=$(modversion github.com/gavinbunney/terraform-provider-kubectl "$TOOLS/tf-kubectl")
      # The main package is the module root: go names the binary terraform-provider-kubectl.
      dir=$(build_cached tf-kubectl "$TFK_V" "$TOOLS/tf-kubectl" "-s -w" \
        github.com/gavinbunney/terraform-provider-kubectl)
      ln -sfn "$dir/terraform-provider-kubectl" "$BIN/terraform-provider-kubectl" ;;
    helm)
      HELM_V=$(modversion helm.sh/helm/v3 "$TOOLS/helm")
      # Stamped like Helm's release build (its Makefile): `helm version` reports the release, and
      # the Kubernetes version that `helm lint` and `helm template` assume without a cluster is the
      # one this cluster runs (unstamped it is 1.20, which predates the APIs the chart uses).
      HP=helm.sh/helm/v3
      HELM_LD="-s -w -X $HP/internal/version.version=$HELM_V -X $HP/internal/version.metadata="
      HELM_LD+=" -X $HP/internal/version.gitTreeState=clean"
      for p in $HP/pkg/chartutil $HP/pkg/lint/rules; do
        HELM_LD+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$K8S_MINOR"
      done
      dir=$(build_cached helm "$HELM_V" "$TOOLS/helm" "$HELM_LD" $HP/cmd/helm)
      ln -sfn "$dir/helm" "$BIN/helm" ;;
    health-check)
      # Versioned by its pins (cel-go, gopher-lua, cli-utils): the key covers go.mod and main.go.
      CEL_V=$(modversion github.com/google/cel-go "$TOOLS/health-check")
      dir=$(build_cached health-check "cel-$CEL_V" "$TOOLS/health-check" "-s -w" .)
      ln -sfn "$dir/health-check" "$BIN/health-check" ;;
    crossplane)
      # crossplane, stamped like its release build (`crossplane --version` says v2.3.4); xp-render,
      # which feeds `crossplane internal render` from YAML files; xp-package, which builds a
      # function's package; and the function they use. Beside them, the upstream files
      # images.sh and crossplane.sh use: Crossplane's cluster/ (CRDs, webhook configurations,
      # its Helm chart) and the function's package/ (its crossplane.yaml and input CRD).
      XP_V=$(modversion github.com/crossplane/crossplane/v2 "$TOOLS/crossplane")
      dir=$(build_cached crossplane "$XP_V" "$TOOLS/crossplane" \
        "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$XP_V" \
        github.com/crossplane/crossplane/v2/cmd/crossplane ./xp-render ./xp-package)
      for b in crossplane xp-render xp-package; do ln -sfn "$dir/$b" "$BIN/$b"; done
      ln -sfn "$(moddir "$TOOLS/crossplane" github.com/crossplane/crossplane/v2)/cluster" "$BIN/crossplane-cluster"
      PAT_V=$(modversion github.com/crossplane-contrib/function-patch-and-transform "$TOOLS/function-pat")
      # Its main package is the module root (in v0.10.x; newer heads moved it to cmd/fn). Its
      # pins follow Crossplane's (acceptance/tools/function-pat/go.mod says why), so after
      # Crossplane this build is seconds.
      dir=$(build_cached function-pat "$PAT_V" "$TOOLS/function-pat" "-s -w" \
        github.com/crossplane-contrib/function-patch-and-transform)
      ln -sfn "$dir/function-patch-and-transform" "$BIN/function-patch-and-transform"
      ln -sfn "$(moddir "$TOOLS/function-pat" github.com/crossplane-contrib/function-patch-and-transform)/package" \
        "$BIN/function-patch-and-transform-package" ;;
    dex)
      # Dex's module path has no /v2, so it is pinned by commit (a pseudo-version; v2.45.1 is
      # 11d2eeb52b42). Memory storage only: no cgo (sqlite) needed. Web assets are embedded.
      DEX_V=$(modversion github.com/dexidp/dex "$TOOLS/dex")
      dir=$(build_cached dex "$DEX_V" "$TOOLS/dex" "-s -w -X main.version=v2.45.1" \
        github.com/dexidp/dex/cmd/dex)
      ln -sfn "$dir/dex" "$BIN/dex" ;;
    ociarchive)
      dir=$(build_cached ociarchive "$GGCR_V" "$TOOLS/images" "-s -w" ./ociarchive)
      ln -sfn "$dir/ociarchive" "$BIN/ociarchive" ;;
    conformance)
      # Versioned and stamped like the cluster's binaries: the same Kubernetes module, so the
      # suite tests the version the tenants run. Its packages are mostly the cluster's, compiled
      # already: about 2.5 min after the cluster's build.
      dir=$(GO_TEST_PKG=k8s.io/kubernetes/test/e2e build_cached conformance "$K8S_V" \
        "$TOOLS/conformance" "$K8S_LD" k8s.io/kubernetes/test/images/agnhost)
      ln -sfn "$dir/e2e.test" "$BIN/e2e.test"
      ln -sfn "$dir/agnhost" "$BIN/agnhost"
      # The certificate and key upstream's agnhost image has at / (its porter serves them; the
      # StatefulSet specs' readiness probes fetch /localhost.crt from agnhost's web server).
      ln -sfn "$(moddir "$TOOLS/conformance" k8s.io/kubernetes)/test/images/agnhost/porter" \
        "$BIN/agnhost-porter" ;;
    *) echo "build-tools: unknown extra '$extra' (known: tofu, tf-kubectl, helm, health-check, crossplane, vcluster, dex, ociarchive, conformance)" >&2; exit 2 ;;
  esac
done
echo "$BIN"
