#!/usr/bin/env bash
# `make helm-check`: lint the Helm chart, render it with the default values and with each values file
# of helm/mnemo/ci (production-like; secured: SASL_SSL Kafka, JWKS, roles Job, Prometheus Operator
# objects, Ingress; public key: TLS-only Kafka, a PEM key, fullnameOverride), check that the schema
# refuses what it must, validate every rendered manifest against the Kubernetes schemas offline (kubernetes-validate,
# strict, the oldest and newest Kubernetes the chart supports), and run the alert rules' promtool
# tests. helm and promtool come from tools.sh (built or installed once, then cached).
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"

CHART="$MNEMO_ROOT/helm/mnemo"
OUT="$MNEMO_LOCAL/helm-render"
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBE_VERSIONS="${MNEMO_KUBE_VERSIONS:-1.27.0 1.37.0}"
UV="${UV:-$MNEMO_LOCAL/tools/bin/uv}"

helm="$(bash "$here/tools.sh" helm)"
# helm says it follows the files/axon link to deploy/axon; that is intended, so not repeated here.
quiet() { grep -v 'found symbolic link in path' || true; }

mkdir -p "$OUT"
combinations=(default)
for file in "$CHART"/ci/*-values.yaml; do
    combinations+=("$(basename "$file" -values.yaml)")
done
for values in "${combinations[@]}"; do
    args=()
    [ "$values" = default ] || args=(-f "$CHART/ci/$values-values.yaml")
    "$helm" lint --strict "$CHART" "${args[@]}" >"$OUT/lint-$values.log" 2>&1 \
        || fail "helm lint failed with the $values values" "$OUT/lint-$values.log"
    say "helm-check: $values values: $(grep -E 'chart\(s\) linted' "$OUT/lint-$values.log")"
    "$helm" template mnemo "$CHART" --namespace mnemo "${args[@]}" >"$OUT/$values.yaml" 2> >(quiet >&2) \
        || fail "helm template failed with the $values values"
    for kube in $KUBE_VERSIONS; do
        "$UV" run --frozen kubernetes-validate --strict --quiet -k "$kube" "$OUT/$values.yaml" \
            >"$OUT/$values-$kube.log" 2>&1 || fail "rendered manifests ($values values) are invalid for Kubernetes $kube" "$OUT/$values-$kube.log"
        # Kinds without a Kubernetes schema (KEDA's ScaledObject) are checked by tests/unit/ops.
        say "helm-check: $values values: $(grep -c '^kind:' "$OUT/$values.yaml") manifests valid for Kubernetes $kube"
    done
done

# Values the schema must refuse: a JWKS mode without its URL, SASL without the users' Secret.
refused() {
    if "$helm" template mnemo "$CHART" "$@" >/dev/null 2>&1; then
        fail "helm template accepted values it must refuse: $*"
    fi
}
refused --set auth.mode=jwks
refused --set kafka.securityProtocol=SASL_SSL
refused --set auth.mode=publicKey
say "helm-check: the schema refuses a JWKS mode without a URL, SASL without a Secret, a public key without one"

bash "$here/ops.sh" install-prometheus
promtool test rules "$MNEMO_ROOT/deploy/prometheus/tests/mnemo.rules.test.yml" >"$OUT/promtool.log" 2>&1 \
    || fail "the alert rules fail their promtool tests" "$OUT/promtool.log"
say "helm-check: alert rules pass their promtool tests"
