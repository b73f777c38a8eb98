# Settings the local services start with: services.sh sources this file before starting them, and a
# variable already set in the environment wins. Only what the local stack needs beyond the defaults.
#
# The demo corpus `Memory` (deploy/axon/memory.axon) keeps a tenant's end-clients apart by its
# `tenant_id` column:
# - the navigator confines a token with a `client` claim to its own end-client (a pinned scope
#   template: the token's `client.tenant_id` is ANDed to whatever `where:` the request sends);
# - the edge classifier joins only documents of the same end-client, and its edges carry the value
#   (no setting: the column the Memory corpus's documents and edges stores share, from the
#   declarations, as ingest reads it).

default_setting() { [ -n "${!1:-}" ] || export "$1=$2"; }

# Development mode: the navigator and audit verify tokens with the public development key that
# `mnemo token` signs with by default. Outside it, a service without a token key refuses to start.
default_setting MNEMO_DEVELOPMENT 1

default_setting MNEMO_NAVIGATOR_PINNED_SCOPES '{"Memory": "tenant_id == \"${client.tenant_id}\""}'

# The MCP server the demo's MCP-bound corpus `ClinicalGuidelines` names (deploy/demo/forms/forms.axon):
# the reference server `@modelcontextprotocol/server-everything` run over stdio by the navigator when
# it lists the corpus, installed under .local by deploy/local/mcp-everything.sh (the demo runs it).
mcp_everything="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.local/mcp-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
default_setting MNEMO_NAVIGATOR_MCP_SERVERS "{\"clinical-mcp.internal\": {\"command\": [\"node\", \"$mcp_everything\", \"stdio\"]}}"
unset mcp_everything
# Starting node and reading the server's documents can take seconds on a busy machine.
default_setting MNEMO_NAVIGATOR_MCP_TIMEOUT_SECONDS 30
