#!/usr/bin/env bash
# A second, private Kafka broker (KRaft, one node, loopback only) secured the way a managed or
# Strimzi cluster is: clients connect with SASL_SSL and SCRAM-SHA-512, every service as its own
# user whose ACLs (deploy/kafka/service-acls.txt) allow only its own topics and consumer group.
# It never touches the shared broker of `make up`: its own directory, ports and process.
#
# Usage: kafka-secure.sh up|down|status|env NAME
#   up      make a CA and a broker certificate (openssl), SCRAM users with random passwords,
#           format and start the broker, create Mnemo's topics as the administrator, grant the ACLs
#   down    stop the broker (its directory stays; `up` again reuses it)
#   env     print the MNEMO_KAFKA_* settings a client of user NAME (admin, mnemo-ingest, ...) needs
# Settings: MNEMO_KAFKA_SECURE_HOME (.local/kafka-secure), MNEMO_KAFKA_SECURE_PORT (29192),
#           MNEMO_KAFKA_SECURE_CONTROLLER_PORT (29193).
# The controller listener (loopback) authenticates with SASL PLAIN as the administrator: KRaft
# controllers cannot use SCRAM, whose credentials live in the metadata they serve.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"

HOME_DIR="${MNEMO_KAFKA_SECURE_HOME:-$MNEMO_LOCAL/kafka-secure}"
PORT="${MNEMO_KAFKA_SECURE_PORT:-29192}"
CONTROLLER_PORT="${MNEMO_KAFKA_SECURE_CONTROLLER_PORT:-29193}"
TLS="$HOME_DIR/tls"
USERS="$HOME_DIR/users"
CONFIG="$HOME_DIR/server.properties"
LOG="$HOME_DIR/kafka.log"
PIDFILE="$HOME_DIR/kafka.pid"
ACLS="$MNEMO_ROOT/deploy/kafka/service-acls.txt"
HEAP="${MNEMO_KAFKA_SECURE_HEAP:--Xms256m -Xmx256m}"
KAFKA_POM="$MNEMO_ROOT/deploy/kafka/pom.xml"
PYTHON="$MNEMO_ROOT/.venv/bin/python"

classpath() {
    local dir
    dir="$MNEMO_LOCAL/kafka-libs-$(sha256sum "$KAFKA_POM" | cut -c1-12)"
    [ -f "$dir/.complete" ] || fail "Kafka's jars are missing: run \`make up\` once (it fetches them)"
    printf '%s/*' "$dir"
}

# The users: the administrator (super user) and one per service, each with a random password.
make_users() {
    [ -f "$USERS" ] && return 0
    umask 077
    local name
    for name in admin $(grep -v '^#' "$ACLS" | awk 'NF { print $1 }' | sort -u); do
        printf '%s %s\n' "$name" "$(openssl rand -hex 24)"
    done >"$USERS"
}

password_of() {
    awk -v n="$1" '$1 == n { print $2 }' "$USERS"
}

make_certificates() {
    [ -f "$TLS/broker.pem" ] && return 0
    mkdir -p "$TLS"
    (
        cd "$TLS"
        umask 077
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=Mnemo local test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
            -keyout broker.key -out broker.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
            -extfile broker.ext -out broker.crt 2>/dev/null
        # Kafka's PEM key store: the PKCS#8 key followed by the certificate chain.
        { openssl pkcs8 -topk8 -nocrypt -in broker.key; cat broker.crt ca.pem; } >broker.pem
        rm -f broker.csr broker.ext ca.srl
        chmod 644 ca.pem
    )
}

write_config() {
    local admin
    admin="$(password_of admin)"
    cat >"$CONFIG" <<CONF
# Written by deploy/local/kafka-secure.sh: a private SASL_SSL broker for tests; loopback only.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=CLIENTS://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=CLIENTS://127.0.0.1:$PORT
listener.security.protocol.map=CLIENTS:SASL_SSL,CONTROLLER:SASL_PLAINTEXT
inter.broker.listener.name=CLIENTS
controller.listener.names=CONTROLLER
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
sasl.mechanism.controller.protocol=PLAIN
listener.name.clients.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.clients.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$admin";
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="$admin" user_admin="$admin";
ssl.keystore.type=PEM
ssl.keystore.location=$TLS/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS/ca.pem
ssl.client.auth=none
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
log.dirs=$HOME_DIR/data
$(kafka_node_settings)
CONF
    chmod 600 "$CONFIG"
}

is_running() {
    pid_alive "$PIDFILE" && port_open "$PORT"
}

started_in_log() {
    grep -q 'Kafka Server started' "$LOG" 2>/dev/null || ! pid_alive "$PIDFILE"
}

client_env() {
    local name="$1" password
    password="$(password_of "$name")"
    [ -n "$password" ] || fail "no Kafka user '$name' (users: $(awk '{print $1}' "$USERS" | tr '\n' ' '))"
    printf 'MNEMO_KAFKA_BOOTSTRAP=127.0.0.1:%s\n' "$PORT"
    printf 'MNEMO_KAFKA_SECURITY_PROTOCOL=SASL_SSL\n'
    printf 'MNEMO_KAFKA_SASL_MECHANISM=SCRAM-SHA-512\n'
    printf 'MNEMO_KAFKA_SASL_USERNAME=%s\n' "$name"
    printf 'MNEMO_KAFKA_SASL_PASSWORD=%s\n' "$password"
    printf 'MNEMO_KAFKA_SSL_CA_FILE=%s\n' "$TLS/ca.pem"
    [ "$name" = admin ] || printf 'MNEMO_KAFKA_PROVISION_TOPICS=false\n'
}

up() {
    if is_running; then
        say "kafka-secure: already running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
        return 0
    fi
    for port in "$PORT" "$CONTROLLER_PORT"; do
        port_open "$port" && fail "port $port is taken; set MNEMO_KAFKA_SECURE_PORT / MNEMO_KAFKA_SECURE_CONTROLLER_PORT"
    done
    command -v openssl >/dev/null || fail "openssl is missing (apt-get install openssl)"
    local cp
    cp="$(classpath)"
    mkdir -p "$HOME_DIR/data"
    make_users
    make_certificates
    write_config
    if [ ! -f "$HOME_DIR/data/meta.properties" ]; then
        local scram=() name
        while read -r name password; do
            scram+=(--add-scram "SCRAM-SHA-512=[name=$name,password=$password]")
        done <"$USERS"
        java -cp "$cp" kafka.tools.StorageTool format -t "$(java -cp "$cp" kafka.tools.StorageTool random-uuid)" \
            -c "$CONFIG" "${scram[@]}" >"$HOME_DIR/format.log" 2>&1 \
            || fail "formatting the secured broker's storage failed" "$HOME_DIR/format.log"
    fi
    say "kafka-secure: starting on 127.0.0.1:$PORT (SASL_SSL, SCRAM-SHA-512)"
    : >"$LOG"
    # shellcheck disable=SC2086 # the heap setting is a list of JVM flags
    setsid nohup java $HEAP -XX:+UseSerialGC -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$MNEMO_ROOT/deploy/kafka/log4j2.yaml" \
        -Dkafka.logs.dir="$HOME_DIR" \
        -cp "$cp" kafka.Kafka "$CONFIG" >>"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    wait_for 120 "kafka-secure" started_in_log || fail "the secured broker did not start within 120 s" "$LOG"
    pid_alive "$PIDFILE" || { rm -f "$PIDFILE"; fail "the secured broker exited during start-up" "$LOG"; }
    (
        set -a
        # shellcheck disable=SC1090 # the administrator's client settings, generated above
        source <(client_env admin)
        "$PYTHON" -m mnemo_events.provisioning | sed 's/^/kafka-secure: /'
    ) || fail "creating the topics as the administrator failed"
    java -cp "$cp" "$MNEMO_ROOT/deploy/kafka/GrantAcls.java" "127.0.0.1:$PORT" admin \
        <(password_of admin) "$TLS/ca.pem" "$ACLS" | sed 's/^/kafka-secure: /' \
        || fail "granting the services' ACLs failed"
    say "kafka-secure: ready (pid $(cat "$PIDFILE")); a client's settings: $0 env mnemo-navigator"
}

down() {
    stop_pidfile kafka-secure "$PIDFILE"
}

status() {
    if is_running; then
        say "kafka-secure: up on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
    else
        say "kafka-secure: down"
    fi
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    env) client_env "${2:?usage: kafka-secure.sh env NAME}" ;;
    *) echo "usage: kafka-secure.sh up|down|status|env NAME" >&2; exit 2 ;;
esac
