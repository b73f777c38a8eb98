#!/usr/bin/env bash
# A container engine for the image and Compose checks, made from Debian packages on this machine:
# podman with runc behind a small wrapper (the sandbox cannot set rlimits, so the wrapper drops
# process.rlimits from each bundle's config.json before runc reads it), and a Python base image
# debootstrapped from the Debian mirror apt is already configured with (public image registries
# are not reachable). Everything it makes is cached under .local/container/.
# Usage: engine.sh ensure        install podman, runc and debootstrap if missing; write the wrapper
#        engine.sh base          print the local base image's name, building it once
#        engine.sh image         build the Mnemo image (Dockerfile) on that base as $MNEMO_IMAGE,
#                                from the work tree, or from the last commit when
#                                MNEMO_IMAGE_SOURCE=head (what a clean clone would build)
#        engine.sh stand-ins     build local equivalents of the public infrastructure images
#                                (images/: Postgres, Kafka, Jaeger, Prometheus) and print
#                                MNEMO_*_IMAGE=NAME lines for docker-compose.yml
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
"""OCI runtime wrapper: drop rlimits (bundle config.json, exec process.json), then exec runc."""
import json
import os
import sys


def value_of(args, *names):
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return args[i + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def rewrite(path, strip):
    try:
        with open(path) as f:
            document = json.load(f)
    except FileNotFoundError:
        return
    if strip(document) is not None:
        with open(path, "w") as f:
            json.dump(document, f)


args = sys.argv[1:]
bundle = value_of(args, "--bundle", "-b")
if bundle is not None:
    rewrite(os.path.join(bundle, "config.json"), lambda c: c.get("process", {}).pop("rlimits", None))
process = value_of(args, "--process", "-p")
if process is not None and "exec" in args:
    rewrite(process, lambda p: p.pop("rlimits", None))
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
    local context="$MNEMO_ROOT" source="${MNEMO_IMAGE_SOURCE:-worktree}"
    case "$source" in
        worktree) ;;
        head)
            context="$CONTAINER_HOME/context/mnemo-head"
            rm -rf "$context" && mkdir -p "$context"
            git -C "$MNEMO_ROOT" archive HEAD | tar -x -C "$context"
            ;;
        *) fail "MNEMO_IMAGE_SOURCE is '$source': worktree or head" ;;
    esac
    say "engine: building $MNEMO_IMAGE on $base_image from the $source (log ${log#"$MNEMO_ROOT"/})"
    # Docker format: the OCI image format has no HEALTHCHECK.
    run_podman build --format docker --network=host --file "$context/Dockerfile" --tag "$MNEMO_IMAGE" "${secret[@]}" \
        --build-arg "PYTHON_IMAGE=$base_image" \
        --build-arg "VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$MNEMO_ROOT/pyproject.toml" | head -n 1)" \
        --label "org.opencontainers.image.revision=$(git -C "$MNEMO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
        --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        "$context" >"$log" 2>&1 || fail "podman build failed" "$log"
    [ "$source" = worktree ] || rm -rf "$context"
    # Earlier builds leave untagged images behind; a day's worth stays as the layer cache.
    run_podman image prune --force --filter until=24h >/dev/null 2>&1 || true
    say "engine: built $MNEMO_IMAGE in $((SECONDS - started)) s ($(run_podman image inspect --format '{{.Size}}' "$MNEMO_IMAGE" | awk '{printf "%d MB", $1 / 1000000}'))"
}

stand_in() {
    # stand_in NAME FILE…: build images/NAME with FILE… (paths on this machine) beside its
    # Containerfile; tagged by the hash of everything that goes in, so a cached one is reused.
    local name="$1" context="$CONTAINER_HOME/context/$1" base_image="$2"
    shift 2
    rm -rf "$context"
    mkdir -p "$context"
    cp -a "$here/images/$name/." "$context/"
    local item
    for item in "$@"; do cp -a "$item" "$context/"; done
    local tag
    tag="$( (cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$base_image") | sha256sum | cut -c1-12)"
    local image="localhost/mnemo-$name:$tag" log="$MNEMO_LOGS/container-$name.log"
    if ! run_podman image exists "$image"; then
        local started=$SECONDS
        say "engine: building $image (log ${log#"$MNEMO_ROOT"/})" >&2
        run_podman build --network=host --build-arg "BASE_IMAGE=$base_image" --tag "$image" \
            "$context" >"$log" 2>&1 || fail "building the $name image failed" "$log"
        say "engine: built $image in $((SECONDS - started)) s" >&2
    fi
    rm -rf "$context"
    printf '%s\n' "$image"
}

stand_ins() {
    local base_image
    base_image="$(base)"
    # The broker jars `make up` fetched (deploy/local/kafka.sh), the Jaeger binary `make ops` builds
    # (built here if missing, before the image build lock is taken: it can take minutes).
    local jars jaeger
    jars="$MNEMO_LOCAL/kafka-libs-$(sha256sum "$MNEMO_ROOT/deploy/kafka/pom.xml" | cut -c1-12)"
    [ -f "$jars/.complete" ] || fail "Kafka's jars are not fetched yet ($jars): run 'make up' first"
    jaeger="$(bash "$MNEMO_ROOT/deploy/local/gotool.sh" jaeger github.com/jaegertracing/jaeger/cmd/jaeger \
        "${MNEMO_JAEGER_VERSION:-v1.75.0}")"
    exec 7>"$CONTAINER_HOME/build.lock"
    flock 7
    local libs="$CONTAINER_HOME/kafka-libs"
    rm -rf "$libs" && mkdir -p "$libs" && cp "$jars"/*.jar "$libs/"
    printf 'MNEMO_POSTGRES_IMAGE=%s\n' "$(stand_in postgres "$base_image")"
    printf 'MNEMO_KAFKA_IMAGE=%s\n' "$(stand_in kafka "$base_image" "$libs" "$MNEMO_ROOT/deploy/kafka/log4j2.yaml")"
    rm -rf "$libs"
    printf 'MNEMO_PROMETHEUS_IMAGE=%s\n' "$(stand_in prometheus "$base_image")"
    printf 'MNEMO_JAEGER_IMAGE=%s\n' "$(stand_in jaeger "$base_image" "$jaeger")"
}

case "${1:-}" in
    ensure) ensure ;;
    stand-ins) stand_ins ;;
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
