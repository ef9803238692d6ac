#!/usr/bin/env bash
# realk8s.sh builds the real Kubernetes API server, controller-manager and etcd
# from the Go module proxy, once, into a cache directory, and prints that
# directory.
#
#   bash hack/realk8s.sh            # build if absent, print the directory
#   KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test ./...
#
# Nothing is downloaded but Go modules; no binary is committed. k8s.io/kubernetes
# cannot be built as a dependency as published, because its go.mod replaces its
# staging modules (k8s.io/api, k8s.io/apiserver, ...) with local paths. A
# throwaway module that requires k8s.io/kubernetes and replaces every staging
# module with its published v0.x release builds cmd/kube-apiserver and
# cmd/kube-controller-manager (one module, so the packages they share compile
# once). The version is stamped with -ldflags so that clients (kubectl) can
# parse /version.
#
# Cold: about 15 minutes on 2 cores (kube-apiserver), about 4 more for
# kube-controller-manager, plus 2 (etcd). Warm: instant.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
staging_version="v0.${K8S_VERSION#v1.}"
cache=${KLOOP_CACHE:-$HOME/.cache/kloop}
out="$cache/realk8s-$K8S_VERSION-etcd-$ETCD_VERSION"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS=-mod=mod

log() { echo "realk8s: $*" >&2; }

if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/etcd" ]]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

build_etcd() {
  [[ -x "$out/etcd" ]] && return 0
  log "building etcd $ETCD_VERSION"
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  cat > go.mod <<MOD
module kloop.dev/realk8s/etcd

go 1.26
MOD
  cat > main.go <<'SRC'
// Command etcd is etcd's own main, built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
SRC
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  go mod tidy >&2
  go build -trimpath -o "$out/etcd.tmp" . >&2
  mv "$out/etcd.tmp" "$out/etcd"
}

build_kube() {
  [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" ]] && return 0
  log "building kube-apiserver and kube-controller-manager $K8S_VERSION (staging modules at $staging_version)"
  mkdir -p "$work/k8s"
  cd "$work/k8s"
  go mod download -json "k8s.io/kubernetes@$K8S_VERSION" > dl.json
  local gomod
  gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' dl.json)
  {
    echo "module kloop.dev/realk8s/k8s"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\t\1 => \1 '"$staging_version"'#p' "$gomod"
    echo ")"
  } > go.mod
  cat > tools.go <<'SRC'
//go:build tools

// Package tools pins the main packages built here so that go mod tidy keeps
// everything they need.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
SRC
  go mod tidy >&2
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  local bin
  for bin in kube-apiserver kube-controller-manager; do
    [[ -x "$out/$bin" ]] && continue
    log "building $bin"
    go build -trimpath -ldflags "$ldflags" -o "$out/$bin.tmp" "k8s.io/kubernetes/cmd/$bin" >&2
    mv "$out/$bin.tmp" "$out/$bin"
  done
}

start=$(date +%s)
build_etcd
build_kube
log "done in $(( $(date +%s) - start ))s: $out"
echo "$out"
