#!/usr/bin/env bash
# `make compose-test`: docker-compose.yml brought up with podman (podman-compose from PyPI) on the
# host's network (deploy/compose/host-network.yml), checked end to end by tests/compose, then torn
# down with its volumes, whatever happened. Public registries being unreachable, every image is a
# local equivalent: Mnemo from the Dockerfile on a debootstrapped base, Postgres and Prometheus
# from Debian packages, Kafka from the jars `make up` fetched, Jaeger from the binary `make ops`
# builds (deploy/container/engine.sh). Prints how long each step took.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/../local/common.sh"

PODMAN_COMPOSE_VERSION="1.6.0"
PROJECT="${MNEMO_COMPOSE_PROJECT:-mnemo-compose-test}"
CONTAINER_HOME="$MNEMO_LOCAL/container"
WORK="$CONTAINER_HOME/compose-test"
COMPOSE_VENV="$CONTAINER_HOME/compose-venv"
PODMAN_SHIM="$CONTAINER_HOME/podman"
LOG="$MNEMO_LOGS/compose-test.log"
engine() { bash "$here/engine.sh" "$@"; }
started=$SECONDS
step_started=$SECONDS
step() {
    say "compose-test: $1 ($((SECONDS - step_started)) s)"
    step_started=$SECONDS
}

engine ensure
mkdir -p "$WORK"
: >"$LOG"

# podman-compose in a tool environment of its own (pinned), run through a podman that uses the
# rlimit-free runtime wrapper.
if [ ! -x "$COMPOSE_VENV/bin/podman-compose" ] \
    || [ "$("$COMPOSE_VENV/bin/podman-compose" --version 2>/dev/null | sed -n 's/^podman-compose version //p')" != "$PODMAN_COMPOSE_VERSION" ]; then
    python3 -m venv "$COMPOSE_VENV"
    "$COMPOSE_VENV/bin/pip" install -q "podman-compose==$PODMAN_COMPOSE_VERSION" >>"$LOG" 2>&1 \
        || fail "installing podman-compose $PODMAN_COMPOSE_VERSION failed" "$LOG"
fi
printf '#!/bin/sh\nexec podman --runtime "%s" "$@"\n' "$CONTAINER_HOME/runc-without-rlimits" >"$PODMAN_SHIM.tmp"
chmod +x "$PODMAN_SHIM.tmp" && mv "$PODMAN_SHIM.tmp" "$PODMAN_SHIM"
step "podman, runc and podman-compose ready"

# The images: the stand-ins for the public ones, then Mnemo's own.
while IFS='=' read -r name value; do export "$name=$value"; done < <(engine stand-ins)
step "infrastructure images ready"
export MNEMO_IMAGE="localhost/mnemo:compose-test"
MNEMO_IMAGE="$MNEMO_IMAGE" engine image
step "Mnemo image built"

# Jaeger and Prometheus configured for the host-network ports.
sed -e 's/127\.0\.0\.1:4317/127.0.0.1:34317/; s/127\.0\.0\.1:4318/127.0.0.1:34318/' \
    -e 's/127\.0\.0\.1:16686/127.0.0.1:36686/; s/127\.0\.0\.1:16685/127.0.0.1:36685/' \
    -e 's/127\.0\.0\.1:13133/127.0.0.1:33133/; s/port: 14269/port: 34269/' \
    "$MNEMO_ROOT/deploy/jaeger/local.yaml" >"$WORK/jaeger.yaml"
sed -e 's/"navigator:8080"/"127.0.0.1:38080"/; s/"ingest:8081"/"127.0.0.1:38081"/' \
    -e 's/"edge-classifier:8082"/"127.0.0.1:38082"/; s/"audit:8083"/"127.0.0.1:38083"/' \
    -e 's/"localhost:9090"/"127.0.0.1:39090"/' \
    -e '/job_name: otel-collector/,/targets: \["otel-collector:8888"\]/d' \
    "$MNEMO_ROOT/deploy/prometheus/prometheus.yml" >"$WORK/prometheus.yml"
export MNEMO_COMPOSE_JAEGER_CONFIG="$WORK/jaeger.yaml"
export MNEMO_PROMETHEUS_CONFIG="$WORK/prometheus.yml"

compose() {
    (cd "$MNEMO_ROOT" && "$COMPOSE_VENV/bin/podman-compose" --podman-path "$PODMAN_SHIM" \
        -p "$PROJECT" -f docker-compose.yml -f deploy/compose/host-network.yml "$@")
}
container() { printf '%s_%s_1' "$PROJECT" "$1"; }

main_shell=$BASHPID
# The script's own output, for the teardown: a signal's trap can run inside a redirected call.
exec 3>&1
teardown() {
    local code=$?
    # Only the script itself tears down (never a subshell that inherited the trap), once.
    [ "$BASHPID" = "$main_shell" ] || return 0
    trap - EXIT INT TERM
    say "compose-test: tearing down (containers, network and volumes of project $PROJECT)" >&3
    if [ "$code" -ne 0 ]; then
        for service in setup kafka-topics ingest edge-classifier navigator audit prometheus jaeger; do
            "$PODMAN_SHIM" logs --tail 20 "$(container "$service")" >>"$LOG" 2>&1 || true
        done
    fi
    compose down -v --timeout 10 >>"$LOG" 2>&1 || say "compose-test: warning: 'down' failed (log $LOG)" >&3
    say "compose-test: $([ "$code" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s (log ${LOG#"$MNEMO_ROOT"/})" >&3
    exit "$code"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A previous run killed before its teardown leaves containers behind: start clean.
compose down -v --timeout 5 >>"$LOG" 2>&1 || true
for port in 35432 39092 39093 38080 38081 38082 38083 34317 34318 36686 39090; do
    port_open "$port" && fail "port $port is taken: stop what listens there (compose-test needs it)"
done

# Compose's order, kept by this script: podman before 4.6 cannot wait for `service_healthy`
# (podman-compose skips those conditions) and podman 4.3 fails to start a container whose
# dependencies depend on others ("not found in input list"). So: the servers, their healthchecks
# (the commands Compose runs) until they pass; then the set-up jobs to completion; then the four
# services, each created without podman-level dependencies.
compose up -d postgres kafka jaeger prometheus >>"$LOG" 2>&1 || fail "compose up (servers) failed" "$LOG"
healthy() { "$PODMAN_SHIM" healthcheck run "$(container "$1")" >/dev/null 2>&1; }
wait_for 90 "postgres" healthy postgres || fail "postgres did not become healthy within 90 s" "$LOG"
wait_for 120 "kafka" healthy kafka || fail "kafka did not become healthy within 120 s" "$LOG"
answers() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }
wait_for 120 "prometheus" answers http://127.0.0.1:39090/-/ready \
    || fail "prometheus did not answer /-/ready on 39090 within 120 s" "$LOG"
wait_for 120 "jaeger" answers http://127.0.0.1:36686/api/services \
    || fail "jaeger's query API did not answer on 36686 within 120 s" "$LOG"
step "Postgres, Kafka, Jaeger and Prometheus up"

compose up -d --no-deps setup kafka-topics >>"$LOG" 2>&1 || fail "compose up (set-up jobs) failed" "$LOG"
for job in setup kafka-topics; do
    code="$(timeout 300 "$PODMAN_SHIM" wait "$(container "$job")" 2>>"$LOG" | tail -n 1)" \
        || fail "$job did not finish within 300 s" "$LOG"
    [ "$code" = "0" ] || fail "$job exited with $code" "$LOG"
done
compose up -d --no-deps ingest edge-classifier navigator audit >>"$LOG" 2>&1 \
    || fail "compose up (services) failed" "$LOG"
for service in navigator ingest edge-classifier audit; do
    wait_for 120 "$service" healthy "$service" || fail "$service did not become ready within 120 s" "$LOG"
done
step "setup done, the four services ready"

export MNEMO_COMPOSE_PG_PORT=35432 MNEMO_COMPOSE_KAFKA_PORT=39092 MNEMO_COMPOSE_NAVIGATOR_PORT=38080 \
    MNEMO_COMPOSE_AUDIT_PORT=38083 MNEMO_COMPOSE_JAEGER_QUERY_PORT=36686 MNEMO_COMPOSE_PROMETHEUS_PORT=39090
(cd "$MNEMO_ROOT" && "$MNEMO_LOCAL/tools/bin/uv" run --frozen pytest -p no:cacheprovider -m compose -q tests/compose)
step "end-to-end checks passed"
