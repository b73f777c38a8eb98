#!/usr/bin/env bash
# The local stack without containers: PostgreSQL and Kafka, started and stopped together.
# Usage: stack.sh up|down|status
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
case "${1:?usage: stack.sh up|down|status}" in
    up) "$here/postgres.sh" up && "$here/kafka.sh" up ;;
    down) "$here/ops.sh" down; "$here/kafka.sh" down; "$here/postgres.sh" down ;;
    status) "$here/postgres.sh" status; "$here/kafka.sh" status ;;
    *) echo "usage: stack.sh up|down|status" >&2; exit 2 ;;
esac
