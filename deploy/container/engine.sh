#!/usr/bin/env bash
# A container engine for the image and Compose checks, made from Debian packages on this machine:
# podman with runc behind a small wrapper (the sandbox cannot set rlimits, so the wrapper drops
# process.rlimits from each bundle's config.json before runc reads it), and a Python base image
# debootstrapped from the Debian mirror apt is already configured with (public image registries
# are not reachable). Everything it makes is cached under .local/container/.
# Usage: engine.sh ensure        install podman, runc and debootstrap if missing; write the wrapper
#        engine.sh base          print the local base image's name, building it once
#        engine.sh image         build the Mnemo image (Dockerfile) on that base as $MNEMO_IMAGE
#        engine.sh podman ARGS…  run podman with the wrapper as its OCI runtime
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/../local/common.sh"

CONTAINER_HOME="$MNEMO_LOCAL/container"
RUNTIME_WRAPPER="$CONTAINER_HOME/runc-without-rlimits"
BASE_SUITE="${MNEMO_BASE_SUITE:-bookworm}"
BASE_IMAGE="${MNEMO_BASE_IMAGE:-localhost/mnemo-base:$BASE_SUITE-python3}"
BASE_TARBALL="$CONTAINER_HOME/base-$BASE_SUITE-python3.tar"
MNEMO_IMAGE="${MNEMO_IMAGE:-localhost/mnemo:local}"
mkdir -p "$CONTAINER_HOME"

apt_install() {
    # apt_install PACKAGE…: install what is missing (with its recommended packages: podman's
    # networking helpers are recommends), once; refreshes the package lists first.
    [ "$(id -u)" -eq 0 ] || fail "installing $* needs root: run 'sudo apt-get install $*'"
    local log="$MNEMO_LOGS/container-apt.log"
    say "engine: installing $* with apt-get (once)"
    {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
    } >"$log" 2>&1 || fail "apt-get install $* failed" "$log"
}

ensure() {
    local missing=()
    command -v podman >/dev/null || missing+=(podman)
    [ -x /usr/sbin/runc ] || missing+=(runc)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ "${#missing[@]}" -eq 0 ] || apt_install "${missing[@]}"
    write_wrapper
}

write_wrapper() {
    # The wrapper is rewritten only when its text changes, so concurrent callers see a whole file.
    local text
    text=$(
        cat <<'WRAPPER'
#!/usr/bin/env python3
"""OCI runtime wrapper: drop process.rlimits from the bundle's config.json, then exec runc."""
import json
import os
import sys

args = sys.argv[1:]
bundle = None
for i, arg in enumerate(args):
    if arg in ("--bundle", "-b") and i + 1 < len(args):
        bundle = args[i + 1]
    elif arg.startswith("--bundle="):
        bundle = arg.split("=", 1)[1]
if bundle is not None:
    path = os.path.join(bundle, "config.json")
    try:
        with open(path) as f:
            config = json.load(f)
    except FileNotFoundError:
        config = None
    if config is not None and config.get("process", {}).pop("rlimits", None) is not None:
        with open(path, "w") as f:
            json.dump(config, f)
os.execv("/usr/sbin/runc", ["runc", *args])
WRAPPER
    )
    if [ ! -x "$RUNTIME_WRAPPER" ] || [ "$(cat "$RUNTIME_WRAPPER")" != "$text" ]; then
        printf '%s\n' "$text" >"$RUNTIME_WRAPPER.tmp"
        chmod +x "$RUNTIME_WRAPPER.tmp"
        mv "$RUNTIME_WRAPPER.tmp" "$RUNTIME_WRAPPER"
    fi
}

run_podman() {
    podman --runtime "$RUNTIME_WRAPPER" "$@"
}

debian_mirror() {
    # The first Debian archive apt uses (deb822 .sources or one-line .list), never a fixed host.
    local uri
    uri=$(
        {
            awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' /etc/apt/sources.list.d/*.sources 2>/dev/null
            awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' \
                /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
        } | grep -v -- '-security' | grep -E '/debian/?$' | head -n 1
    )
    [ -n "$uri" ] || fail "no Debian archive in apt's sources (/etc/apt/sources.list*): set MNEMO_DEBIAN_MIRROR"
    printf '%s\n' "$uri"
}

base() {
    ensure
    exec 8>"$CONTAINER_HOME/base.lock"
    flock 8
    if run_podman image exists "$BASE_IMAGE"; then
        printf '%s\n' "$BASE_IMAGE"
        return 0
    fi
    if [ ! -s "$BASE_TARBALL" ]; then
        local mirror="${MNEMO_DEBIAN_MIRROR:-$(debian_mirror)}"
        local root="$CONTAINER_HOME/base-root" log="$MNEMO_LOGS/container-debootstrap.log"
        local started=$SECONDS
        say "engine: debootstrapping $BASE_SUITE (minbase, python3, python3-venv) from $mirror" >&2
        rm -rf "$root"
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            "$BASE_SUITE" "$root" "$mirror" >"$log" 2>&1 || fail "debootstrap failed" "$log"
        # Package lists and caches are not needed in an image.
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        tar -C "$root" -cf "$BASE_TARBALL.tmp" .
        mv "$BASE_TARBALL.tmp" "$BASE_TARBALL"
        rm -rf "$root"
        say "engine: base root filesystem in $((SECONDS - started)) s ($(du -h "$BASE_TARBALL" | cut -f1))" >&2
    fi
    run_podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["python3"]' \
        "$BASE_TARBALL" "$BASE_IMAGE" >/dev/null
    say "engine: imported $BASE_IMAGE" >&2
    printf '%s\n' "$BASE_IMAGE"
}

image() {
    local base_image started=$SECONDS log="$MNEMO_LOGS/container-image.log"
    base_image="$(base)"
    # One build at a time on this machine (two shared cores).
    exec 7>"$CONTAINER_HOME/build.lock"
    flock 7
    # The machine's CA bundle reaches the build as a secret: package indexes may sit behind a
    # TLS-inspecting proxy whose CA only the host trusts.
    local ca_bundle="${MNEMO_BUILD_CA_BUNDLE:-${SSL_CERT_FILE:-${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}}}"
    local secret=()
    [ -s "$ca_bundle" ] && secret=(--secret "id=ca_bundle,src=$ca_bundle")
    say "engine: building $MNEMO_IMAGE on $base_image (log ${log#"$MNEMO_ROOT"/})"
    # Docker format: the OCI image format has no HEALTHCHECK.
    run_podman build --format docker --network=host --file "$MNEMO_ROOT/Dockerfile" --tag "$MNEMO_IMAGE" "${secret[@]}" \
        --build-arg "PYTHON_IMAGE=$base_image" \
        --build-arg "VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$MNEMO_ROOT/pyproject.toml" | head -n 1)" \
        --label "org.opencontainers.image.revision=$(git -C "$MNEMO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
        --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        "$MNEMO_ROOT" >"$log" 2>&1 || fail "podman build failed" "$log"
    say "engine: built $MNEMO_IMAGE in $((SECONDS - started)) s ($(run_podman image inspect --format '{{.Size}}' "$MNEMO_IMAGE" | awk '{printf "%d MB", $1 / 1000000}'))"
}

case "${1:-}" in
    ensure) ensure ;;
    base) base ;;
    image) image ;;
    podman)
        shift
        ensure
        run_podman "$@"
        ;;
    *)
        echo "usage: $0 ensure|base|podman ARGS..." >&2
        exit 2
        ;;
esac
