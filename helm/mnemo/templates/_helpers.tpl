{{/* Names and labels shared by every template. */}}

{{/* The chart's name (nameOverride) and the prefix of every object (fullnameOverride). */}}
{{- define "mnemo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mnemo.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "mnemo.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The kebab-case component name of a service key: edgeClassifier -> edge-classifier. */}}
{{- define "mnemo.component" -}}
{{- . | kebabcase -}}
{{- end -}}

{{- define "mnemo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mnemo.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ include "mnemo.component" .key }}
{{- end -}}

{{- define "mnemo.labels" -}}
{{ include "mnemo.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "mnemo.commonLabels" -}}
app.kubernetes.io/name: {{ include "mnemo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mnemo.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "mnemo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mnemo.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Environment every Mnemo process shares: Kafka, tracing, environment name. */}}
{{- define "mnemo.sharedEnv" -}}
- name: MNEMO_KAFKA_BOOTSTRAP
  value: {{ .Values.kafka.bootstrap | quote }}
- name: MNEMO_KAFKA_PARTITIONS
  value: {{ .Values.kafka.partitions | quote }}
- name: MNEMO_KAFKA_REPLICATION_FACTOR
  value: {{ .Values.kafka.replicationFactor | quote }}
- name: MNEMO_DEPLOYMENT_ENVIRONMENT
  value: {{ .Values.environment | quote }}
{{- with .Values.otlpEndpoint }}
- name: MNEMO_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "mnemo.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end -}}

{{/* A map of environment variables: a string is a value, a map is a `valueFrom` source
(secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef). */}}
{{- define "mnemo.env" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  {{- if kindIs "map" $value }}
  valueFrom:
    {{- toYaml $value | nindent 4 }}
  {{- else }}
  value: {{ $value | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* How a component reaches Kafka beyond the bootstrap list: the security protocol, its own SASL
user (the password from the Kafka Secret) and the CA file mounted from the CA Secret.
Called with (dict "root" $ "user" <kafka.sasl.users entry>). */}}
{{- define "mnemo.kafkaSecurityEnv" -}}
{{- $kafka := .root.Values.kafka -}}
- name: MNEMO_KAFKA_SECURITY_PROTOCOL
  value: {{ $kafka.securityProtocol | quote }}
{{- if hasPrefix "SASL_" $kafka.securityProtocol }}
- name: MNEMO_KAFKA_SASL_MECHANISM
  value: {{ $kafka.sasl.mechanism | quote }}
- name: MNEMO_KAFKA_SASL_USERNAME
  value: {{ required "kafka.sasl.users.<component>.username is required with SASL" .user.username | quote }}
{{ include "mnemo.secretEnv" (dict "name" "MNEMO_KAFKA_SASL_PASSWORD" "secret" (required "kafka.sasl.secretName is required with SASL" $kafka.sasl.secretName) "key" .user.passwordKey) }}
{{- end }}
{{- if and (hasSuffix "SSL" $kafka.securityProtocol) $kafka.tls.caSecret }}
- name: MNEMO_KAFKA_SSL_CA_FILE
  value: /etc/mnemo/kafka-ca/{{ $kafka.tls.caKey }}
{{- end }}
{{- if hasSuffix "SSL" $kafka.securityProtocol }}
- name: MNEMO_KAFKA_SSL_CHECK_HOSTNAME
  value: {{ $kafka.tls.checkHostname | quote }}
{{- end }}
{{- end -}}

{{- define "mnemo.kafkaCaMounted" -}}
{{- if and (hasSuffix "SSL" .Values.kafka.securityProtocol) .Values.kafka.tls.caSecret -}}true{{- end -}}
{{- end -}}

{{/* The bearer-token key of the navigator and audit: exactly one source, so a JWKS URL or a
public key never meets an injected secret. */}}
{{- define "mnemo.authEnv" -}}
{{- $auth := .root.Values.auth -}}
{{- $prefix := printf "MNEMO_%s_" .prefix -}}
{{- if eq $auth.mode "jwks" }}
- name: {{ $prefix }}JWKS_URL
  value: {{ required "auth.jwksUrl is required with auth.mode=jwks" $auth.jwksUrl | quote }}
{{- else if eq $auth.mode "publicKey" }}
{{ include "mnemo.secretEnv" (dict "name" (printf "%sTOKEN_PUBLIC_KEY" $prefix) "secret" $auth.publicKey.secretName "key" $auth.publicKey.key) }}
{{- else }}
{{ include "mnemo.secretEnv" (dict "name" (printf "%sTOKEN_SECRET" $prefix) "secret" .root.Values.secrets.jwt.name "key" .root.Values.secrets.jwt.key) }}
{{- end }}
- name: {{ $prefix }}TOKEN_ISSUER
  value: {{ $auth.issuer | quote }}
- name: {{ $prefix }}TOKEN_AUDIENCE
  value: {{ $auth.audience | quote }}
{{- end -}}

{{/* Bytes of a Kubernetes memory quantity (512Mi, 2Gi, 1G, 1048576). */}}
{{- define "mnemo.bytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $bytes := 0 -}}
{{- if regexMatch "^[0-9]+$" $q -}}
{{- $bytes = int64 $q -}}
{{- else -}}
{{- range $suffix, $factor := $units -}}
{{- if and (hasSuffix $suffix $q) (regexMatch "^[0-9]+$" (trimSuffix $suffix $q)) -}}
{{- $bytes = mul (int64 (trimSuffix $suffix $q)) $factor -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $bytes -}}
{{- fail (printf "cannot read the memory quantity %q (use an integer with Ki, Mi, Gi, Ti, k, M, G or T)" $q) -}}
{{- end -}}
{{- $bytes -}}
{{- end -}}
