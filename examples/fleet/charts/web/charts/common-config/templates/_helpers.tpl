{{/*
The ConfigMap is named after the parent release: "<release>-common".
*/}}
{{- define "common-config.fullname" -}}
{{- printf "%s-common" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "common-config.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
