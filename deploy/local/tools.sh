#!/usr/bin/env bash
# The command-line tools the unit tests and `make helm-check` run, each made once and then reused:
# helm, built from its Go module by gotool.sh (cached under .local/gotools by version), and
# promtool, from Debian's prometheus package (installed once by ops.sh), and Debian's chromium for
# the console's browser test (chromium.sh).
# Usage: tools.sh all   (`make tools`: both, one line each; instant when both are there)
#        tools.sh helm  (print helm's path, building it first if needed)
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"

# tests/unit/ops/test_helm_chart.py looks for helm at .local/gotools/helm-<this version>/helm.
HELM_VERSION="${MNEMO_HELM_VERSION:-v4.3.2}"

helm_path() {
    "$here/gotool.sh" helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION" \
        "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
}

case "${1:?usage: tools.sh all|helm}" in
    helm) helm_path ;;
    all)
        say "tools: helm $HELM_VERSION at $(helm_path | sed "s|^$MNEMO_ROOT/||")"
        bash "$here/ops.sh" install-prometheus
        say "tools: promtool at $(command -v promtool || echo /usr/bin/promtool)"
        say "tools: chromium at $(bash "$here/chromium.sh" | tail -n 1)"
        ;;
    *) echo "usage: tools.sh all|helm" >&2; exit 2 ;;
esac
