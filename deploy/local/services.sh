#!/usr/bin/env bash
# The four Mnemo services of the local stack, in the background: pid files in .local/run,
# logs in .local/logs/<name>.log. Usage: services.sh up|down|status
# `up` first creates the Kafka topics (idempotent); a service whose package has no `__main__` yet
# is skipped with a line saying so. A running service is left alone unless the code it runs has
# changed since it started (the Python sources of libs/ and services/, uv.lock and settings.sh,
# fingerprinted in .local/run/<name>.code): then `up` restarts it, so tests never meet old code.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=common.sh
. "$here/common.sh"
# shellcheck source=settings.sh
. "$here/settings.sh"
# Spans go to the Jaeger `make ops` starts; while none listens, the services drop them quietly.
export MNEMO_OTLP_ENDPOINT="${MNEMO_OTLP_ENDPOINT:-http://127.0.0.1:4318}"

PYTHON="$MNEMO_ROOT/.venv/bin/python"
# name:module:port-variable:default-port
SERVICES=(
    "ingest:mnemo_ingest:MNEMO_INGEST_PORT:8081"
    "edge-classifier:mnemo_edge_classifier:MNEMO_EDGE_CLASSIFIER_PORT:8082"
    "navigator:mnemo_navigator:MNEMO_NAVIGATOR_PORT:8080"
    "audit:mnemo_audit:MNEMO_AUDIT_PORT:8083"
)

healthy() {
    "$PYTHON" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

# code_fingerprint: one digest of everything a service process loads from this checkout.
code_fingerprint() {
    (
        cd "$MNEMO_ROOT"
        find libs services -path '*/src/*' -name '*.py' -print0 | sort -z | xargs -0 sha256sum
        sha256sum uv.lock deploy/local/settings.sh
    ) | sha256sum | cut -d' ' -f1
}

has_main() {
    "$PYTHON" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1] + '.__main__') else 1)" "$1" 2>/dev/null
}

up() {
    "$PYTHON" -m mnemo_events.provisioning | sed 's/^/kafka: /'
    local entry name module variable default port pidfile log code started
    code="$(code_fingerprint)"
    for entry in "${SERVICES[@]}"; do
        IFS=: read -r name module variable default <<<"$entry"
        port="${!variable:-$default}"
        pidfile="$MNEMO_RUN/$name.pid"
        log="$MNEMO_LOGS/$name.log"
        if pid_alive "$pidfile"; then
            started="$(cat "$MNEMO_RUN/$name.code" 2>/dev/null || true)"
            if [ "$started" = "$code" ]; then
                say "$name: already running (pid $(cat "$pidfile"), port $port)"
                continue
            fi
            say "$name: its code changed since it started: restarting"
            stop_pidfile "$name" "$pidfile"
        fi
        if ! has_main "$module"; then
            say "$name: skipped ($module has no __main__ yet)"
            continue
        fi
        if port_open "$port"; then
            fail "$name: port $port is already taken by another process"
        fi
        setsid nohup "$PYTHON" -m "$module" >>"$log" 2>&1 </dev/null &
        echo $! >"$pidfile"
        echo "$code" >"$MNEMO_RUN/$name.code"
        if ! wait_for 60 "$name" healthy "$port"; then
            pid_alive "$pidfile" || rm -f "$pidfile"
            fail "$name did not answer /healthz on port $port within 60 s" "$log"
        fi
        say "$name: up on 127.0.0.1:$port (pid $(cat "$pidfile"), log $log)"
    done
}

down() {
    local entry name module variable default
    for entry in "${SERVICES[@]}"; do
        IFS=: read -r name module variable default <<<"$entry"
        stop_pidfile "$name" "$MNEMO_RUN/$name.pid"
        rm -f "$MNEMO_RUN/$name.code"
    done
    # The demo's stand-in for someone else's search gateway (deploy/local/demo_prefetch.sh), if it ran.
    [ -f "$MNEMO_RUN/external-gateway.pid" ] && stop_pidfile "external-gateway" "$MNEMO_RUN/external-gateway.pid"
    return 0
}

status() {
    local entry name module variable default port
    for entry in "${SERVICES[@]}"; do
        IFS=: read -r name module variable default <<<"$entry"
        port="${!variable:-$default}"
        if pid_alive "$MNEMO_RUN/$name.pid" && healthy "$port"; then
            say "$name: up on 127.0.0.1:$port"
        else
            say "$name: down"
        fi
    done
}

case "${1:?usage: services.sh up|down|status}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *) echo "usage: services.sh up|down|status" >&2; exit 2 ;;
esac
