{{/* Names and labels shared by every template. */}}

{{- define "mnemo.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The kebab-case component name of a service key: edgeClassifier -> edge-classifier. */}}
{{- define "mnemo.component" -}}
{{- . | kebabcase -}}
{{- end -}}

{{- define "mnemo.selectorLabels" -}}
app.kubernetes.io/name: mnemo
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
app.kubernetes.io/name: mnemo
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
