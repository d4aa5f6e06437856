#!/usr/bin/env bash
# Builds the upstream components of the test rig into .cache/upstream/bin (see upstream/README.md):
# kube-apiserver and kubectl from k8s.io/kubernetes, etcd from ./etcd, and our oracles dra-allocate and
# pool-check.
# Rebuilds only when an input changed (go.mod/go.sum of both modules, the oracle's sources, this
# script): the stamp file holds a hash of them. Output: one line per step on stderr, nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${UPSTREAM_BIN:-$here/../.cache/upstream/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bins=(kube-apiserver kube-scheduler kube-controller-manager kubectl etcd dra-allocate pool-check)

command -v go >/dev/null || { echo "upstream: Go >= 1.26 is needed to build upstream Kubernetes (go not found)" >&2; exit 2; }
gov=$(go env GOVERSION)
case "$gov" in
  go1.2[6-9]*|go1.[3-9][0-9]*) ;;
  *) echo "upstream: Go >= 1.26 is needed, found $gov" >&2; exit 2 ;;
esac

cd "$here"
key=$( { cat go.mod go.sum etcd/go.mod etcd/go.sum build.sh; find cmd -name '*.go' -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -c1-16)
have_all=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || have_all=0; done
if [ "$have_all" = 1 ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$key" ]; then
  echo "upstream: binaries in $out are up to date" >&2
  exit 0
fi

# The version the binaries report (`kube-apiserver --version`); 1.37 components derive their
# binary and compatibility versions from it, so it must be the real one, not v0.0.0-master.
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
date=$(go list -m -f '{{.Time}}' k8s.io/kubernetes 2>/dev/null | sed 's/ .*//')
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=${date:-1970-01-01T00:00:00Z}"
done

start=$(date +%s)
echo "upstream: building kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, dra-allocate, pool-check $version (a cold build takes minutes)" >&2
go build -buildvcs=false -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl ./cmd/dra-allocate ./cmd/pool-check
echo "upstream: building etcd $(cd etcd && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)" >&2
(cd etcd && go build -buildvcs=false -trimpath -ldflags "-s -w" -o "$out/etcd" .)
echo "$key" > "$out/.stamp"
echo "upstream: done in $(( $(date +%s) - start )) s: $("$out/kube-apiserver" --version)" >&2
