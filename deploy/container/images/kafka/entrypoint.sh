#!/bin/bash
# KAFKA_* variables to server.properties (as the apache/kafka image reads them: '_' -> '.',
# '__' -> '_', '___' -> '-', lower case), storage formatted once, then the broker.
set -euo pipefail
config=/opt/kafka/config/server.properties
: >"$config"
while IFS='=' read -r name value; do
    case "$name" in KAFKA_HEAP_OPTS | KAFKA_OPTS | KAFKA_JVM_PERFORMANCE_OPTS) continue ;; KAFKA_*) ;; *) continue ;; esac
    key="${name#KAFKA_}"
    key="${key//___/-}"
    key="${key//__/@}"
    key="${key//_/.}"
    key="${key//@/_}"
    printf '%s=%s\n' "${key,,}" "$value" >>"$config"
done < <(env)
log_dirs="$(sed -n 's/^log.dirs=//p' "$config")"
log_dirs="${log_dirs:-/tmp/kraft-combined-logs}"
classpath="/opt/kafka/libs/*"
if [ ! -f "$log_dirs/meta.properties" ]; then
    java -cp "$classpath" kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" \
        -c "$config" --ignore-formatted
fi
# shellcheck disable=SC2086  # the heap setting is a list of JVM flags
exec java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.yaml -Dkafka.logs.dir=/tmp \
    -cp "$classpath" kafka.Kafka "$config"
