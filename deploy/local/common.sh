# Shared settings and small shell functions for the local (container-free) stack.
# Sourced by postgres.sh, kafka.sh and stack.sh; defines nothing that runs on its own.

MNEMO_ROOT="${MNEMO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
MNEMO_LOCAL="${MNEMO_LOCAL:-$MNEMO_ROOT/.local}"
MNEMO_LOGS="$MNEMO_LOCAL/logs"
MNEMO_RUN="$MNEMO_LOCAL/run"

MNEMO_PG_HOST=127.0.0.1
MNEMO_PG_PORT="${MNEMO_PG_PORT:-25432}"
MNEMO_PG_DB="${MNEMO_PG_DB:-mnemo}"
MNEMO_KAFKA_HOST=127.0.0.1
MNEMO_KAFKA_PORT="${MNEMO_KAFKA_PORT:-29092}"
MNEMO_KAFKA_CONTROLLER_PORT="${MNEMO_KAFKA_CONTROLLER_PORT:-29093}"

mkdir -p "$MNEMO_LOGS" "$MNEMO_RUN"

say() { printf '%s\n' "$*"; }
fail() {
    # fail MESSAGE [LOGFILE]: say what failed and which log to read, then stop.
    printf 'error: %s\n' "$1" >&2
    if [ -n "${2:-}" ]; then
        printf '       read the log: %s\n' "$2" >&2
        if [ -f "$2" ]; then
            printf '       last lines:\n' >&2
            tail -n 15 "$2" | sed 's/^/         /' >&2
        fi
    fi
    exit 1
}

# client_defaults: what the `mnemo` command needs to reach the local stack (the owner role's
# database URL, the Kafka bootstrap), exported unless already set (`make run` exports them), and
# NAVIGATOR_URL (MNEMO_NAVIGATOR_URL, or the local navigator). For the demo scripts.
client_defaults() {
    export MNEMO_OWNER_DATABASE_URL="${MNEMO_OWNER_DATABASE_URL:-postgresql://mnemo_owner:mnemo_owner@127.0.0.1:$MNEMO_PG_PORT/mnemo}"
    export MNEMO_KAFKA_BOOTSTRAP="${MNEMO_KAFKA_BOOTSTRAP:-127.0.0.1:$MNEMO_KAFKA_PORT}"
    NAVIGATOR_URL="${MNEMO_NAVIGATOR_URL:-http://127.0.0.1:${MNEMO_NAVIGATOR_PORT:-8080}}"
}

# kafka_node_settings: the server.properties lines both local brokers share (kafka.sh and
# kafka-secure.sh): one node, three partitions a topic, no auto-created topics, few threads.
kafka_node_settings() {
    cat <<'SETTINGS'
num.partitions=3
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
num.network.threads=2
num.io.threads=2
SETTINGS
}

# pid_alive PIDFILE: true when the file names a live process.
pid_alive() {
    [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s until it succeeds.
wait_for() {
    local seconds="$1" what="$2"
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            return 1
        fi
        sleep 0.2
    done
}

# stop_pidfile NAME PIDFILE: stop exactly the process we started, then forget it.
stop_pidfile() {
    local name="$1" pidfile="$2"
    if ! [ -f "$pidfile" ]; then
        say "$name: not running (no pid file)"
        return 0
    fi
    local pid
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        local deadline=$((SECONDS + 30))
        while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
        say "$name: stopped (pid $pid)"
    else
        say "$name: was not running (stale pid $pid)"
    fi
    rm -f "$pidfile"
}
