#!/usr/bin/env bash
# Tracing and metrics for the local stack, without containers: Jaeger (all-in-one, in-memory,
# built once from its Go module) receiving OTLP from the services, and Prometheus (Debian's
# package) scraping their /metrics with Mnemo's alert rules loaded. Loopback only.
# Usage: ops.sh up|down|status|install-prometheus
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"

JAEGER_VERSION="${MNEMO_JAEGER_VERSION:-v1.75.0}"
JAEGER_PACKAGE="github.com/jaegertracing/jaeger/cmd/jaeger"
JAEGER_LOG="$MNEMO_LOGS/jaeger.log"
JAEGER_PIDFILE="$MNEMO_RUN/jaeger.pid"
# Jaeger's usual ports (deploy/jaeger/local.yaml): OTLP gRPC 4317, OTLP HTTP 4318, query API 16686.
JAEGER_OTLP_GRPC_PORT=4317
JAEGER_OTLP_HTTP_PORT=4318
JAEGER_QUERY_PORT=16686

PROM_PORT="${MNEMO_PROMETHEUS_PORT:-29090}"
PROM_HOME="$MNEMO_LOCAL/prometheus"
PROM_CONFIG="$PROM_HOME/prometheus.yml"
PROM_LOG="$MNEMO_LOGS/prometheus.log"
PROM_PIDFILE="$MNEMO_RUN/prometheus.pid"
PROM_SCRAPE_INTERVAL="${MNEMO_PROMETHEUS_SCRAPE_INTERVAL:-5s}"
# The services' HTTP ports (ARCHITECTURE §7), each overridable like the stack's own ports.
NAVIGATOR_PORT="${MNEMO_NAVIGATOR_PORT:-8080}"
INGEST_PORT="${MNEMO_INGEST_PORT:-8081}"
EDGE_CLASSIFIER_PORT="${MNEMO_EDGE_CLASSIFIER_PORT:-8082}"
AUDIT_PORT="${MNEMO_AUDIT_PORT:-8083}"

http_ok() {
    curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
}

# ---- Jaeger ---------------------------------------------------------------------------------

jaeger_running() {
    pid_alive "$JAEGER_PIDFILE" && http_ok "http://127.0.0.1:$JAEGER_QUERY_PORT/api/services"
}

jaeger_up() {
    if jaeger_running; then
        say "jaeger: already running (pid $(cat "$JAEGER_PIDFILE")), nothing to do"
        return 0
    fi
    for port in "$JAEGER_OTLP_GRPC_PORT" "$JAEGER_OTLP_HTTP_PORT" "$JAEGER_QUERY_PORT"; do
        port_open "$port" && fail "port $port is taken by another program; Jaeger needs 4317, 4318 and 16686"
    done
    local binary
    binary="$("$here/gotool.sh" jaeger "$JAEGER_PACKAGE" "$JAEGER_VERSION")"
    mkdir -p "$MNEMO_LOCAL/jaeger"
    say "jaeger: starting $JAEGER_VERSION (OTLP 127.0.0.1:$JAEGER_OTLP_GRPC_PORT grpc, :$JAEGER_OTLP_HTTP_PORT http; query :$JAEGER_QUERY_PORT)"
    : >"$JAEGER_LOG"
    (cd "$MNEMO_LOCAL/jaeger" && exec nohup "$binary" --config "$MNEMO_ROOT/deploy/jaeger/local.yaml" >>"$JAEGER_LOG" 2>&1) &
    echo $! >"$JAEGER_PIDFILE"
    wait_for 60 "jaeger" jaeger_running_or_dead || fail "jaeger's query API did not answer within 60 s" "$JAEGER_LOG"
    pid_alive "$JAEGER_PIDFILE" || { rm -f "$JAEGER_PIDFILE"; fail "jaeger exited during start-up" "$JAEGER_LOG"; }
    wait_for 30 "jaeger otlp" port_open "$JAEGER_OTLP_HTTP_PORT" || fail "jaeger is not accepting OTLP on $JAEGER_OTLP_HTTP_PORT" "$JAEGER_LOG"
    say "jaeger: ready (pid $(cat "$JAEGER_PIDFILE")), traces at http://127.0.0.1:$JAEGER_QUERY_PORT/api/traces/<id>, log $JAEGER_LOG"
}

jaeger_running_or_dead() {
    jaeger_running || ! pid_alive "$JAEGER_PIDFILE"
}

# ---- Prometheus -----------------------------------------------------------------------------

prometheus_binary() {
    command -v prometheus 2>/dev/null || { [ -x /usr/bin/prometheus ] && printf '/usr/bin/prometheus'; }
}

ensure_prometheus() {
    if prometheus_binary >/dev/null; then return 0; fi
    say "prometheus: not installed; installing Debian's prometheus package (once)"
    if [ "$(id -u)" -ne 0 ]; then
        fail "Prometheus is missing and installing it needs root: run 'sudo apt-get install prometheus'"
    fi
    # policy-rc.d keeps the package from starting its own server on 9090: ours is separate.
    local policy=/usr/sbin/policy-rc.d created_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
    fi
    {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus
    } >"$MNEMO_LOGS/prometheus-install.log" 2>&1 || {
        [ -n "$created_policy" ] && rm -f "$policy"
        fail "apt-get install prometheus failed" "$MNEMO_LOGS/prometheus-install.log"
    }
    [ -n "$created_policy" ] && rm -f "$policy"
    prometheus_binary >/dev/null || fail "the prometheus package installed no prometheus command"
}

write_prometheus_config() {
    mkdir -p "$PROM_HOME/data" "$PROM_HOME/targets"
    cat >"$PROM_CONFIG" <<CONF
# Written by deploy/local/ops.sh: the local services on loopback, Mnemo's alert rules.
# The container and Kubernetes equivalents are deploy/prometheus/prometheus.yml and the Helm chart.
global:
  scrape_interval: $PROM_SCRAPE_INTERVAL
  evaluation_interval: $PROM_SCRAPE_INTERVAL
rule_files:
  - $MNEMO_ROOT/deploy/prometheus/rules/*.yml
scrape_configs:
  - job_name: mnemo
    static_configs:
      - targets: ["127.0.0.1:$NAVIGATOR_PORT"]
        labels: {mnemo_service: navigator}
      - targets: ["127.0.0.1:$INGEST_PORT"]
        labels: {mnemo_service: ingest}
      - targets: ["127.0.0.1:$EDGE_CLASSIFIER_PORT"]
        labels: {mnemo_service: edge-classifier}
      - targets: ["127.0.0.1:$AUDIT_PORT"]
        labels: {mnemo_service: audit}
  # Service processes a test starts on ports of its own register here (one JSON file each).
  - job_name: mnemo-tests
    file_sd_configs:
      - files: ["$PROM_HOME/targets/*.json"]
        refresh_interval: 5s
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:$PROM_PORT"]
CONF
}

prometheus_running() {
    pid_alive "$PROM_PIDFILE" && http_ok "http://127.0.0.1:$PROM_PORT/-/ready"
}

prometheus_running_or_dead() {
    prometheus_running || ! pid_alive "$PROM_PIDFILE"
}

prometheus_up() {
    if prometheus_running; then
        write_prometheus_config
        curl -fsS -X POST -o /dev/null "http://127.0.0.1:$PROM_PORT/-/reload" || true
        say "prometheus: already running on 127.0.0.1:$PROM_PORT (pid $(cat "$PROM_PIDFILE")), configuration reloaded"
        return 0
    fi
    port_open "$PROM_PORT" && fail "port $PROM_PORT is taken by another program; set MNEMO_PROMETHEUS_PORT to a free port"
    ensure_prometheus
    write_prometheus_config
    if command -v promtool >/dev/null; then
        promtool check config "$PROM_CONFIG" >"$MNEMO_LOGS/prometheus-check.log" 2>&1 \
            || fail "the Prometheus configuration or rules do not check" "$MNEMO_LOGS/prometheus-check.log"
    fi
    say "prometheus: starting on 127.0.0.1:$PROM_PORT (scraping 127.0.0.1:$NAVIGATOR_PORT,$INGEST_PORT,$EDGE_CLASSIFIER_PORT,$AUDIT_PORT every $PROM_SCRAPE_INTERVAL)"
    : >"$PROM_LOG"
    nohup "$(prometheus_binary)" \
        --config.file="$PROM_CONFIG" \
        --storage.tsdb.path="$PROM_HOME/data" \
        --storage.tsdb.retention.time=2d \
        --web.listen-address="127.0.0.1:$PROM_PORT" \
        --web.enable-lifecycle \
        >>"$PROM_LOG" 2>&1 &
    echo $! >"$PROM_PIDFILE"
    wait_for 60 "prometheus" prometheus_running_or_dead || fail "prometheus did not become ready within 60 s" "$PROM_LOG"
    pid_alive "$PROM_PIDFILE" || { rm -f "$PROM_PIDFILE"; fail "prometheus exited during start-up" "$PROM_LOG"; }
    say "prometheus: ready (pid $(cat "$PROM_PIDFILE")), http://127.0.0.1:$PROM_PORT, log $PROM_LOG"
}

# ---- both -----------------------------------------------------------------------------------

up() {
    jaeger_up
    prometheus_up
    say "ops: a service exports its spans here when started with MNEMO_OTLP_ENDPOINT=http://127.0.0.1:$JAEGER_OTLP_HTTP_PORT"
}

down() {
    # Quiet when `make ops` never ran: `make down` calls this every time.
    [ -f "$PROM_PIDFILE" ] && stop_pidfile prometheus "$PROM_PIDFILE"
    [ -f "$JAEGER_PIDFILE" ] && stop_pidfile jaeger "$JAEGER_PIDFILE"
    return 0
}

status() {
    if jaeger_running; then
        say "jaeger: up, OTLP on 127.0.0.1:$JAEGER_OTLP_GRPC_PORT/$JAEGER_OTLP_HTTP_PORT, query API on 127.0.0.1:$JAEGER_QUERY_PORT (pid $(cat "$JAEGER_PIDFILE"))"
    else
        say "jaeger: down"
    fi
    if prometheus_running; then
        say "prometheus: up on 127.0.0.1:$PROM_PORT (pid $(cat "$PROM_PIDFILE"))"
    else
        say "prometheus: down"
    fi
}

install-prometheus() {
    ensure_prometheus
}

case "${1:?usage: ops.sh up|down|status|install-prometheus}" in
    up | down | status | install-prometheus) "$1" ;;
    *) echo "usage: ops.sh up|down|status|install-prometheus" >&2; exit 2 ;;
esac
