{{- define "redis-lite.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name: the release name unless fullnameOverride is set.
*/}}
{{- define "redis-lite.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redis-lite.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redis-lite.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redis-lite.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "redis-lite.imageTag" -}}
{{- .Values.image.tag | default (printf "%s-alpine" .Chart.AppVersion) | toString }}
{{- end }}

{{- define "redis-lite.labels" -}}
helm.sh/chart: {{ include "redis-lite.chart" . }}
{{ include "redis-lite.selectorLabels" . }}
app.kubernetes.io/version: {{ include "redis-lite.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: cache
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
