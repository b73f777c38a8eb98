#!/usr/bin/env bash
# Build a Go command from its module once, with the machine's Go toolchain, and cache the binary
# under .local/gotools/<name>-<version>/ (keyed by version: a new version builds anew, an old one is
# never rebuilt). Prints the binary's path on stdout; progress and timings go to stderr.
# Usage: gotool.sh NAME PACKAGE VERSION [EXTRA_LDFLAGS]   e.g. gotool.sh helm helm.sh/helm/v4/cmd/helm v4.3.2
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

name="${1:?usage: gotool.sh NAME PACKAGE VERSION}"
package="${2:?usage: gotool.sh NAME PACKAGE VERSION}"
version="${3:?usage: gotool.sh NAME PACKAGE VERSION}"

extra_ldflags="${4:-}"

dir="$MNEMO_LOCAL/gotools/$name-$version"
binary="$dir/$name"
mkdir -p "$MNEMO_LOCAL/gotools"
# One build at a time per tool and version: a second caller waits, then finds the binary.
exec 9>"$dir.lock"
flock 9
if [ -x "$binary" ] && [ -f "$dir/.complete" ]; then
    printf '%s\n' "$binary"
    exit 0
fi

command -v go >/dev/null || fail "go is missing: $name $version is built from its Go module (install Go 1.24+ from go.dev)"
log="$MNEMO_LOGS/build-$name-$version.log"
# Module and build caches stay inside the project (git-ignored), writable so `rm -rf .local` works.
export GOPATH="$MNEMO_LOCAL/go"
export GOMODCACHE="$MNEMO_LOCAL/go/pkg/mod"
export GOCACHE="$MNEMO_LOCAL/go/build-cache"
export GOFLAGS="-modcacherw -buildvcs=false"
export CGO_ENABLED=0

work="$dir.build"
rm -rf "$work"
mkdir -p "$work"
printf '%s: building %s from its Go module (once; cached in %s, log %s)\n' \
    "$name" "$version" "${dir#"$MNEMO_ROOT"/}" "${log#"$MNEMO_ROOT"/}" >&2
started=$SECONDS
{
    cd "$work"
    go mod init "mnemo.local/tools/$name"
    go get -tool "$package@$version"
    fetched=$SECONDS
    echo "fetched modules in $((fetched - started)) s"
    go build -trimpath -ldflags="-s -w $extra_ldflags" -o "$binary.tmp" "$package"
    echo "built in $((SECONDS - fetched)) s"
} >"$log" 2>&1 || fail "building $name $version failed" "$log"
mv "$binary.tmp" "$binary"
touch "$dir/.complete"
rm -rf "$work"
printf '%s: built %s in %d s (%s)\n' "$name" "$version" "$((SECONDS - started))" \
    "$(du -h "$binary" | cut -f1)" >&2
printf '%s\n' "$binary"
