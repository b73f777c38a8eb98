#!/usr/bin/env bash
# Apache Kafka (KRaft, one node) for the local stack: resolve the broker's jars from Maven Central
# (deploy/kafka/pom.xml), cache them under .local/, format storage, start on 127.0.0.1, wait.
# Usage: kafka.sh up|down|status
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

KAFKA_POM="$MNEMO_ROOT/deploy/kafka/pom.xml"
KAFKA_HOME="$MNEMO_LOCAL/kafka"
KAFKA_LOG="$MNEMO_LOGS/kafka.log"
KAFKA_PIDFILE="$MNEMO_RUN/kafka.pid"
KAFKA_CONFIG="$KAFKA_HOME/server.properties"
KAFKA_HEAP="${MNEMO_KAFKA_HEAP:--Xms512m -Xmx512m}"

# The classpath folder is keyed by the pom's hash, so a version change fetches anew.
classpath_dir() {
    printf '%s/kafka-libs-%s' "$MNEMO_LOCAL" "$(sha256sum "$KAFKA_POM" | cut -c1-12)"
}

ensure_jars() {
    local dir
    dir="$(classpath_dir)"
    if [ -f "$dir/.complete" ]; then return 0; fi
    command -v java >/dev/null || fail "java is missing: Kafka needs a Java 17+ runtime (apt-get install openjdk-17-jre-headless)"
    command -v mvn >/dev/null || fail "mvn is missing: the broker's jars are fetched with Maven (apt-get install maven)"
    say "kafka: fetching the broker's jars with Maven (once; cached in $dir)"
    rm -rf "$dir"
    mvn -B -q -f "$KAFKA_POM" -Dmaven.repo.local="$MNEMO_LOCAL/m2" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir" \
        >"$MNEMO_LOGS/kafka-fetch.log" 2>&1 || fail "fetching Kafka's jars failed" "$MNEMO_LOGS/kafka-fetch.log"
    touch "$dir/.complete"
}

write_config() {
    mkdir -p "$KAFKA_HOME/data"
    cat >"$KAFKA_CONFIG" <<CONF
# Written by deploy/local/kafka.sh: one KRaft node, loopback only, for development and tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$MNEMO_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$MNEMO_KAFKA_PORT,CONTROLLER://127.0.0.1:$MNEMO_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$MNEMO_KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_HOME/data
$(kafka_node_settings)
CONF
}

is_running() {
    pid_alive "$KAFKA_PIDFILE" && port_open "$MNEMO_KAFKA_PORT"
}

started_in_log() {
    grep -q 'Kafka Server started' "$KAFKA_LOG" 2>/dev/null || ! pid_alive "$KAFKA_PIDFILE"
}

up() {
    if is_running; then
        say "kafka: already running on 127.0.0.1:$MNEMO_KAFKA_PORT (pid $(cat "$KAFKA_PIDFILE")), nothing to do"
        return 0
    fi
    for port in "$MNEMO_KAFKA_PORT" "$MNEMO_KAFKA_CONTROLLER_PORT"; do
        port_open "$port" && fail "port $port is taken by another program; set MNEMO_KAFKA_PORT / MNEMO_KAFKA_CONTROLLER_PORT to free ports"
    done
    ensure_jars
    local cp
    cp="$(classpath_dir)/*"
    write_config
    if [ ! -f "$KAFKA_HOME/data/meta.properties" ]; then
        say "kafka: formatting storage in $KAFKA_HOME/data"
        java -cp "$cp" kafka.tools.StorageTool format -t "$(cat "$KAFKA_HOME/cluster-id" 2>/dev/null || java -cp "$cp" kafka.tools.StorageTool random-uuid | tee "$KAFKA_HOME/cluster-id")" \
            -c "$KAFKA_CONFIG" --ignore-formatted >"$MNEMO_LOGS/kafka-format.log" 2>&1 \
            || fail "formatting Kafka storage failed" "$MNEMO_LOGS/kafka-format.log"
    fi
    say "kafka: starting on 127.0.0.1:$MNEMO_KAFKA_PORT"
    : >"$KAFKA_LOG"
    # shellcheck disable=SC2086 # the heap setting is a list of JVM flags
    nohup java $KAFKA_HEAP -XX:+UseG1GC -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$MNEMO_ROOT/deploy/kafka/log4j2.yaml" \
        -Dkafka.logs.dir="$MNEMO_LOGS" \
        -cp "$cp" kafka.Kafka "$KAFKA_CONFIG" >>"$KAFKA_LOG" 2>&1 &
    echo $! >"$KAFKA_PIDFILE"
    wait_for 120 "kafka" started_in_log || fail "kafka did not report 'Kafka Server started' within 120 s" "$KAFKA_LOG"
    pid_alive "$KAFKA_PIDFILE" || { rm -f "$KAFKA_PIDFILE"; fail "kafka exited during start-up" "$KAFKA_LOG"; }
    wait_for 30 "kafka port" port_open "$MNEMO_KAFKA_PORT" || fail "kafka is not accepting connections" "$KAFKA_LOG"
    say "kafka: ready (pid $(cat "$KAFKA_PIDFILE")), log $KAFKA_LOG"
}

down() {
    stop_pidfile kafka "$KAFKA_PIDFILE"
}

status() {
    if is_running; then
        say "kafka: up on 127.0.0.1:$MNEMO_KAFKA_PORT (pid $(cat "$KAFKA_PIDFILE"))"
    else
        say "kafka: down"
    fi
}

"${1:?usage: kafka.sh up|down|status}"
