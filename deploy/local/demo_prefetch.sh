#!/usr/bin/env bash
# The registry seed's worked example, played against the running stack (`make run` plays it after
# the memories; it also runs alone): route overdraft_fee_qa, deterministic prefetch over
# fee-schedule (a store corpus Mnemo hosts and serves through its own gateway) and
# product-disclosure (someone else's gateway: deploy/local/external_gateway.py, a separate process
# started here on port 8090 and left up with the stack until `make down`). Then the console's URL.
# Usage: demo_prefetch.sh [TENANT_ID]   (default: a new tenant bank-<run>)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source deploy/local/common.sh
source deploy/local/settings.sh
client_defaults
PYTHON=.venv/bin/python
example=deploy/demo/overdraft_fee_qa
mnemo() { .venv/bin/mnemo "$@"; }
show() { # print the command as typed, then run it
    local line='$ mnemo' arg
    for arg in "$@"; do line+=" $(printf '%q' "$arg")"; done
    printf '%s\n' "$line"
    mnemo "$@"
}
section() { printf '\n== %s\n' "$1"; }

section "the registry's worked example: route overdraft_fee_qa over fee-schedule (Mnemo) and product-disclosure (elsewhere)"
{ show apply "$example/fee_schedule.axon"; } | sed -n '1p;$p'   # the command and its last line
show corpus publish FeeSchedule
if [ -n "${1:-}" ]; then
    BANK="$1"
else
    BANK="$(mnemo tenant create "bank-$(date +%m%d%H%M%S)-$((RANDOM % 1000))")"
    printf '$ mnemo tenant create bank-…\n%s\n' "$BANK"
fi
show persist --store FeeScheduleDocuments --tenant "$BANK" "$example/fees.jsonl" --wait 60 --quiet

# Someone else's search gateway: a process of its own that stays up with the local stack (so the
# route and the console keep working after the demo), until `make down` stops it.
GATEWAY_PORT="${MNEMO_EXTERNAL_GATEWAY_PORT:-8090}"
GATEWAY_URL="http://127.0.0.1:$GATEWAY_PORT"
gateway_pidfile="$MNEMO_RUN/external-gateway.pid"
gateway_log="$MNEMO_LOGS/external-gateway.log"
if ! pid_alive "$gateway_pidfile"; then
    port_open "$GATEWAY_PORT" \
        && fail "port $GATEWAY_PORT is taken; set MNEMO_EXTERNAL_GATEWAY_PORT to a free port for the external gateway"
    setsid nohup "$PYTHON" deploy/local/external_gateway.py --port "$GATEWAY_PORT" >>"$gateway_log" 2>&1 </dev/null &
    echo $! >"$gateway_pidfile"
fi
wait_for 20 "the external gateway" port_open "$GATEWAY_PORT" \
    || fail "the external gateway did not start on port $GATEWAY_PORT" "$gateway_log"
printf 'product-disclosure is served by a separate process (deploy/local/external_gateway.py, up until make down) at %s\n' "$GATEWAY_URL"

show corpus add-external fee-schedule --url "$NAVIGATOR_URL/v1/corpora/FeeSchedule/search" \
    --collection FeeSchedule --display-name "Fee schedule" --owner deposits
show corpus add-external product-disclosure --url "$GATEWAY_URL/corpora/product-disclosure/search" \
    --display-name "Product disclosure" --owner deposits
show corpus publish fee-schedule
show corpus publish product-disclosure
show route apply "$example/routes.yaml"

TOKEN="$(mnemo token --tenant "$BANK")"
goal='{"goal": {"utterance": "what is the overdraft fee"}}'
printf '$ curl -X POST %s/v1/routes/overdraft_fee_qa/prefetch -H "Authorization: Bearer $TOKEN" -d %s\n' \
    "$NAVIGATOR_URL" "'$goal'"
answer="$(curl -sS -X POST "$NAVIGATOR_URL/v1/routes/overdraft_fee_qa/prefetch" \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$goal")"
"$PYTHON" - "$answer" <<'PY'
import json
import sys

answer = json.loads(sys.argv[1])
if "packed" not in answer:
    sys.exit(f"demo: prefetch failed: {answer}")
print(f"route {answer['route_id']}@{answer['route_version']}; slots: {', '.join(answer['slots'])}")
print("packed (what the model would read, ahead of everything else):")
for line in answer["packed"].splitlines():
    print(f"  {line[:150]}")
PY

printf '\nthe Control Plane console (read-only; paste a token with the admin scope): %s/console\n' "$NAVIGATOR_URL"
printf '  an admin token: .venv/bin/mnemo token --tenant %s --scope admin\n' "$BANK"
