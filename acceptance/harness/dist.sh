#!/usr/bin/env bash
# dist.sh [OUT_DIR] — `make dist`: everything a platform team installs KubeSpaces from, written to
# OUT_DIR (default dist/, emptied first):
#   kubespaces-<version>.tgz                    the chart (helm package; the CRD inside)
#   images/<name>-<tag>.oci.tar                 every image the platform and its tenants run, as
#                                               OCI image archives: operator and server (tagged
#                                               with the version), and each tenant's vCluster
#                                               syncer, Kubernetes control plane (with kine) and
#                                               CoreDNS (their own versions: the chart's
#                                               tenantImages names them)
#   images.txt                                  "ARCHIVE NAME" per image: the name to push it
#                                               under, below the registry the chart's `registry`
#                                               value names (docs/install.md)
#   bin/kubespaces                              the CLI
#   bin/terraform-provider-kubespaces_v<version>  the Terraform/OpenTofu provider, named as a
#                                               provider mirror wants it (provider/README.md)
#   SHA256SUMS                                  of every file above: sha256sum -c SHA256SUMS
# Builds the release binaries, the images from them (images.sh dist: the same builder, cache and
# content as the local cluster's images) and the Go tools it needs (build-tools.sh). No cluster.
# The binaries are for the machine's platform (linux amd64 here), like the images.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=dist
shopt -s inherit_errexit
step() { log "==> $*"; }
ensure_go
ensure_rust

OUT=${1:-$REPO_ROOT/dist}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ "$OUT" != "$REPO_ROOT" ] || die "OUT_DIR is the repository itself: name a directory of its own"

VERSION=$(awk '$1 == "version:" {print $2; exit}' "$REPO_ROOT/charts/kubespaces/Chart.yaml")
APP_VERSION=$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2; exit}' "$REPO_ROOT/charts/kubespaces/Chart.yaml")
[ "$VERSION" = "$APP_VERSION" ] || die "charts/kubespaces/Chart.yaml: version $VERSION and appVersion $APP_VERSION differ (both follow the workspace's)"

step "release binaries: operator, server, CLI, provider"
(cd "$REPO_ROOT" && cargo build --release --locked -p kubespaces-operator -p kubespaces-server \
  -p kubespaces-cli -p terraform-provider-kubespaces)
REL="$REPO_ROOT/target/release"
for b in kubespaces-operator kubespaces-server kubespaces terraform-provider-kubespaces; do
  v=$("$REL/$b" --version | awk '{print $NF}')
  [ "$v" = "$VERSION" ] || die "$b says version $v, the chart $VERSION: release them together (Cargo.toml, Chart.yaml)"
done

step "the Go tools: helm, the vCluster's binaries, ociarchive"
BIN=$("$HARNESS_DIR/build-tools.sh" --with helm --with vcluster --with ociarchive)

rm -rf "$OUT"/*
mkdir -p "$OUT/images" "$OUT/bin"

step "the images, as OCI archives"
lines=$(KUBESPACES_BIN="$BIN" "$HARNESS_DIR/images.sh" dist "$REL/kubespaces-operator" "$REL/kubespaces-server")
while read -r name tag tarball _; do
  # The operator's and the server's tags are content digests locally; shipped, the version (the
  # chart's default tag).
  # The chart must name the tenant images this writes (it gives them to every tenant's vCluster).
  case $name in operator|server) tag=$VERSION ;; *) chart_tenant_image "$name" "kubespaces/$name:$tag" ;; esac
  archive="images/$name-$tag.oci.tar"
  digest=$("$BIN/ociarchive" -in "$tarball" -ref "kubespaces/$name:$tag" -out "$OUT/$archive")
  echo "$archive kubespaces/$name:$tag" >>"$OUT/images.txt"
  log "$archive: kubespaces/$name:$tag ($digest)"
done <<<"$lines"

step "the chart, the CLI and the provider"
"$BIN/helm" package "$REPO_ROOT/charts/kubespaces" -d "$OUT" 2> >(grep -v 'found symbolic link in path' >&2 || true) >/dev/null
install -m 755 "$REL/kubespaces" "$OUT/bin/kubespaces"
install -m 755 "$REL/terraform-provider-kubespaces" "$OUT/bin/terraform-provider-kubespaces_v$VERSION"

(cd "$OUT" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)
log "wrote $(grep -c . "$OUT/SHA256SUMS") files to $OUT ($(du -sh "$OUT" | cut -f1)):"
cat "$OUT/SHA256SUMS" >&2
