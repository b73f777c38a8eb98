#!/usr/bin/env bash
# The demo `make run` plays once the local stack and the four services are up: the declarations
# applied, a stream of memories for two tenants, Recall navigations with and without a pinned
# scope, the edges the classifier added, the audit rows and their verification, the trace ids.
# Every step is a `mnemo` command as a user would type it. Each run creates its own two tenants,
# so it can run again and again. Waits are polls with a deadline, never fixed sleeps.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source deploy/local/common.sh
# What the services were started with (the navigator's pinned scope template, for the narration).
source deploy/local/settings.sh
# `make run` exports these; a direct run gets the local stack's defaults.
client_defaults
export MNEMO_NAVIGATOR_URL="$NAVIGATOR_URL"
JAEGER_URL="http://127.0.0.1:16686"
PYTHON=.venv/bin/python
mnemo() { .venv/bin/mnemo "$@"; }
section() { printf '\n== %s\n' "$1"; }
# quoted ARG: ARG as a shell would need it typed.
quoted() {
    if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
        printf '%s' "$1"
    elif [[ "$1" != *"'"* ]]; then
        printf "'%s'" "$1"
    else
        local text="${1//\\/\\\\}"
        text="${text//\"/\\\"}"
        text="${text//\$/\\\$}"
        text="${text//\`/\\\`}"
        printf '"%s"' "$text"
    fi
}
# show CMD...: print the command as typed, then run it.
show() {
    local line="$ mnemo" arg
    for arg in "$@"; do line+=" $(quoted "$arg")"; done
    printf '%s\n' "$line"
    mnemo "$@"
}
# wait_until SECONDS WHAT COMMAND...: poll COMMAND (every 0.3 s) until it succeeds; fail after SECONDS.
wait_until() {
    local seconds="$1" what="$2"
    shift 2
    wait_for "$seconds" "$what" "$@" || {
        printf 'demo: %s did not happen within %s s\n' "$what" "$seconds" >&2
        printf 'demo: if the services were started before deploy/local/settings.sh existed or changed, restart them: make down && make run\n' >&2
        exit 1
    }
}
trap 'printf "demo: failed at line %s (logs: .local/logs/)\n" "$LINENO" >&2' ERR
started=$SECONDS

section "the stack: PostgreSQL, Kafka and the four services"
show dev status

section "the declarations (deploy/axon/memory.axon): check, apply, publish (the navigator serves published corpora)"
show check deploy/axon/memory.axon
show apply deploy/axon/memory.axon
show corpus publish Memory
printf "navigator's pinned scope templates (deploy/local/settings.sh): %s\n" "$MNEMO_NAVIGATOR_PINNED_SCOPES"

section "two tenants, new for this run"
run="$(date +%m%d%H%M%S)-$((RANDOM % 1000))"
ACME="$(mnemo tenant create "acme-$run")"
SOLO="$(mnemo tenant create "solo-$run")"
printf '$ mnemo tenant create acme-%s\n%s\n$ mnemo tenant create solo-%s\n%s\n' "$run" "$ACME" "$run" "$SOLO"
data=".local/demo/$run"
clients="$("$PYTHON" deploy/demo/memories.py "$data")"
NORTHWIND="$(sed -n 's/^northwind=//p' <<<"$clients")"
GLOBEX="$(sed -n 's/^globex=//p' <<<"$clients")"
printf 'acme-%s is an agency: its memories are for two end-clients, told apart by the tenant_id column\n' "$run"
printf '  northwind = %s\n  globex    = %s\n' "$NORTHWIND" "$GLOBEX"
printf 'solo-%s is one person: one tenant_id for all its memories\n' "$run"

section "a stream of memories (deploy/demo/memories.py): persist publishes them, ingest writes them"
show persist --store MemoryDocuments --tenant "$ACME" "$data/acme.jsonl" --wait 60
show persist --store MemoryDocuments --tenant "$SOLO" "$data/solo.jsonl" --wait 60

section "edges nobody sent: the edge classifier read each memory and added typed edges (from the audit rows)"
edges_of() { # edges_of TENANT FILE [--expect TYPE]
    mnemo audit tail --tenant "$1" --after-seq 0 --no-follow --json \
        | "$PYTHON" deploy/demo/classified_edges.py --titles "$2" "${@:3}"
}
edges_there() { edges_of "$@" >/dev/null; }
# The classifier works behind ingest: wait (bounded) for the edges the story memories must get. If
# it is behind (a backlog on its topic), say so and go on: the rest of the demo does not need them.
if ! { wait_for 60 "edges" edges_there "$ACME" "$data/acme.jsonl" --expect supersede \
    && wait_for 30 "edges" edges_there "$ACME" "$data/acme.jsonl" --expect contradict \
    && wait_for 30 "edges" edges_there "$SOLO" "$data/solo.jsonl" --expect supersede; }; then
    printf 'demo: warning: the edge classifier has not classified these memories within 60 s; it is behind
' >&2
    printf '      (its consumer lag: `make ops`, or .local/logs/edge-classifier.log); their edges will come
' >&2
fi
printf '$ mnemo audit tail --tenant acme-%s --after-seq 0 --no-follow --json | python deploy/demo/classified_edges.py …\n' "$run"
edges_of "$ACME" "$data/acme.jsonl"
printf '$ mnemo audit tail --tenant solo-%s --after-seq 0 --no-follow --json | python deploy/demo/classified_edges.py …\n' "$run"
edges_of "$SOLO" "$data/solo.jsonl"

query="what is the liability cap now"
section "recall, tenant-wide token of acme (no client claim): every end-client of acme, nothing of solo"
printf '$ export MNEMO_TOKEN=$(mnemo token --tenant %s)\n' "$ACME"
MNEMO_TOKEN="$(mnemo token --tenant "$ACME")"
export MNEMO_TOKEN
show navigate Memory --query "$query" --budget 6 --direction both --brief

section "recall, client token of acme's end-client northwind: the pinned scope confines it"
printf '$ export MNEMO_TOKEN=$(mnemo token --tenant %s --client tenant_id=%s)\n' "$ACME" "$NORTHWIND"
MNEMO_TOKEN="$(mnemo token --tenant "$ACME" --client "tenant_id=$NORTHWIND")"
show navigate Memory --query "$query" --budget 6 --direction both --brief

section "recall, the same northwind token sending a widening where: (still only northwind)"
# shellcheck disable=SC2016  # ${globex} and ${northwind} are where: parameters, not shell ones
show navigate Memory --query "$query" --budget 6 --direction both --brief \
    --where 'tenant_id == '"'"'${globex}'"'"' OR tenant_id == '"'"'${northwind}'"'"'' \
    --param "globex=$GLOBEX" --param "northwind=$NORTHWIND"

section "retrieve, client token of acme's end-client globex"
printf '$ export MNEMO_TOKEN=$(mnemo token --tenant %s --client tenant_id=%s)\n' "$ACME" "$GLOBEX"
MNEMO_TOKEN="$(mnemo token --tenant "$ACME" --client "tenant_id=$GLOBEX")"
show retrieve Memory --query "liability cap" -k 5 --brief

section "recall, tenant-wide token of solo: only solo's memories"
printf '$ export MNEMO_TOKEN=$(mnemo token --tenant %s)\n' "$SOLO"
MNEMO_TOKEN="$(mnemo token --tenant "$SOLO")"
show navigate Memory --query "$query" --budget 6 --direction both --brief

section "every corpus form: inline (a), MCP-bound (b), declared graph (c), beside the living graph Memory (d)"
# The MCP server ClinicalGuidelines names: installed once under .local; the navigator runs it over
# stdio when it lists the corpus (MNEMO_NAVIGATOR_MCP_SERVERS in deploy/local/settings.sh).
bash deploy/local/mcp-everything.sh >/dev/null
show apply --documents deploy/demo/forms/documents deploy/demo/forms/forms.axon
for corpus in PolicyDocs ClinicalGuidelines SessionKnowledge; do show corpus publish "$corpus"; done
printf '(the token of solo-%s is still set)\n' "$run"
show retrieve PolicyDocs --query "when are refunds paid" -k 2 --brief
show retrieve ClinicalGuidelines --query "architecture of the server" -k 3 --brief
show navigate SessionKnowledge --query "is the cache warm" --from sess_a --budget 3 --brief
show navigate Memory --query "$query" --budget 3 --direction both --brief

section "the audit log: one row per query and per write, hash-chained per tenant"
queries_audited() { # queries_audited TENANT N: at least N query rows
    [ "$(mnemo audit tail --tenant "$1" --after-seq 0 --no-follow | grep -c ':query ')" -ge "$2" ]
}
wait_until 30 "the audit rows of acme's 4 queries" queries_audited "$ACME" 4
wait_until 30 "the audit rows of solo's queries" queries_audited "$SOLO" 5
rows="$(mnemo audit tail --tenant "$ACME" --after-seq 0 --no-follow)"
printf '$ mnemo audit tail --tenant acme-%s --after-seq 0 --no-follow    # %s rows; the queries:\n' "$run" "$(wc -l <<<"$rows")"
grep ':query ' <<<"$rows"
printf '… and the first writes of the edge classifier:\n'
awk '/MemoryEdges/ && shown++ < 2' <<<"$rows"
show audit verify --tenant "acme-$run"
show audit verify --tenant "solo-$run"

section "traces"
traces="$(sed -n 's/.*trace=\([0-9a-f]\{32\}\).*/\1/p' <<<"$rows" | awk '!seen[$0]++' | tail -n 3)"
if [ -n "$traces" ]; then
    printf 'trace ids on the audit rows:\n'
    printf '  %s\n' $traces
else
    printf 'the audit rows carry no trace context (the services export spans when started with MNEMO_OTLP_ENDPOINT)\n'
fi
if curl -fsS -o /dev/null --max-time 2 "$JAEGER_URL/api/services" 2>/dev/null; then
    printf 'Jaeger (make ops) is up: %s\n' "$JAEGER_URL"
    for trace in $traces; do printf '  %s/trace/%s\n' "$JAEGER_URL" "$trace"; done
else
    printf 'Jaeger is not running: `make ops` starts it, then `make run` again links the traces\n'
fi

# The registry's worked example: routes, deterministic prefetch, an external gateway, the console.
bash deploy/local/demo_prefetch.sh

section "explore, then stop"
cat <<EOF
  export MNEMO_TOKEN=\$(.venv/bin/mnemo token --tenant $ACME --client tenant_id=$NORTHWIND)
  .venv/bin/mnemo navigate Memory --query "gross negligence" --brief    # or without --brief: the JSON answer
  .venv/bin/mnemo retrieve Memory --query "hosting" -k 5 --brief
  .venv/bin/mnemo audit tail --tenant acme-$run                         # follows new rows (Ctrl-C stops)
  .venv/bin/mnemo persist --store MemoryDocuments --tenant $SOLO FILE.jsonl --wait 30
  the memories of this run: $data/   the navigator's API: $NAVIGATOR_URL/docs
  logs: .local/logs/   status: make status   stop everything: make down
  the Control Plane console (read-only): $NAVIGATOR_URL/console
    paste an admin token: .venv/bin/mnemo token --tenant $SOLO --scope admin
EOF
printf '\ndemo: done in %s s\n' "$((SECONDS - started))"
