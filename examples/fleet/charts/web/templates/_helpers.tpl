{{/*
Chart name, truncated to the 63 characters of a DNS label.
*/}}
{{- define "web.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name: the release name (release names are already unique per
namespace in this fleet), unless fullnameOverride is set.
*/}}
{{- define "web.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Chart label value: name-version.
*/}}
{{- define "web.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: must never change for an existing Deployment.
*/}}
{{- define "web.selectorLabels" -}}
app.kubernetes.io/name: {{ include "web.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "web.labels" -}}
helm.sh/chart: {{ include "web.chart" . }}
{{ include "web.selectorLabels" . }}
app.kubernetes.io/version: {{ include "web.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: web
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Image tag, defaulting to the chart's appVersion.
*/}}
{{- define "web.imageTag" -}}
{{- .Values.image.tag | default (printf "%s-alpine" .Chart.AppVersion) | toString }}
{{- end }}

{{/*
Full image reference: registry/repository:tag.
*/}}
{{- define "web.image" -}}
{{- with .Values.image.registry }}{{ . }}/{{ end }}{{ .Values.image.repository }}:{{ include "web.imageTag" . }}
{{- end }}

{{/*
Public URL of the service (empty without ingress).
*/}}
{{- define "web.publicUrl" -}}
{{- if and .Values.ingress.enabled .Values.ingress.host -}}
{{ ternary "https" "http" .Values.ingress.tls.enabled }}://{{ .Values.ingress.host }}{{ .Values.ingress.path | trimSuffix "/" }}
{{- end }}
{{- end }}

{{/*
Database name, defaulting to the release name.
*/}}
{{- define "web.databaseName" -}}
{{- .Values.database.name | default (include "web.fullname" .) }}
{{- end }}
