#!/bin/bash
# Stand-in for Kafka's tool of this name (its jar is not among the broker's): succeeds when the
# --bootstrap-server address accepts TCP connections, which is what the Compose healthcheck asks.
set -euo pipefail
server=""
while [ "$#" -gt 0 ]; do
    case "$1" in --bootstrap-server) server="$2"; shift 2 ;; *) shift ;; esac
done
server="${server:-localhost:9092}"
exec 3<>"/dev/tcp/${server%:*}/${server##*:}"
