{{- define "worker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name: the release name unless fullnameOverride is set.
CronJob names are limited to 52 characters, so keep room for "-cron".
*/}}
{{- define "worker.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 47 | trimSuffix "-" }}
{{- end }}

{{- define "worker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "worker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "worker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "worker.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{- define "worker.image" -}}
{{- with .Values.image.registry }}{{ . }}/{{ end }}{{ .Values.image.repository }}:{{ include "worker.imageTag" . }}
{{- end }}

{{- define "worker.labels" -}}
helm.sh/chart: {{ include "worker.chart" . }}
{{ include "worker.selectorLabels" . }}
app.kubernetes.io/version: {{ include "worker.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: worker
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The container spec shared by the Deployment and the CronJob.
Call with (dict "root" $ "command" LIST "args" LIST "probes" BOOL).
*/}}
{{- define "worker.container" -}}
{{- $root := .root -}}
- name: {{ include "worker.name" $root }}
  image: {{ include "worker.image" $root | quote }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  {{- with .command }}
  command:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .args }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  env:
    - name: LOG_LEVEL
      value: {{ $root.Values.logLevel | quote }}
    - name: WORKER_CONFIG_FILE
      value: {{ printf "%s/%s" $root.Values.configMountPath $root.Values.configFileName | quote }}
    {{- with $root.Values.alertsEmail }}
    - name: ALERTS_EMAIL
      value: {{ . | quote }}
    {{- end }}
    {{- range $name, $value := $root.Values.env }}
    - name: {{ $name }}
      value: {{ $value | toString | quote }}
    {{- end }}
  {{- if and .probes (or $root.Values.probes.enabled $root.Values.metrics.enabled) }}
  ports:
    {{- if $root.Values.probes.enabled }}
    - name: health
      containerPort: {{ $root.Values.probes.port }}
      protocol: TCP
    {{- end }}
    {{- if $root.Values.metrics.enabled }}
    - name: metrics
      containerPort: {{ $root.Values.metrics.port }}
      protocol: TCP
    {{- end }}
  {{- end }}
  {{- if and .probes $root.Values.probes.enabled }}
  livenessProbe:
    httpGet:
      path: {{ $root.Values.probes.path }}
      port: health
    initialDelaySeconds: {{ $root.Values.probes.initialDelaySeconds }}
    periodSeconds: {{ $root.Values.probes.periodSeconds }}
  readinessProbe:
    httpGet:
      path: {{ $root.Values.probes.path }}
      port: health
    periodSeconds: {{ $root.Values.probes.periodSeconds }}
  {{- end }}
  {{- with $root.Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: config
      mountPath: {{ $root.Values.configMountPath }}
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}

{{/*
Pod-level settings shared by the Deployment and the CronJob.
*/}}
{{- define "worker.podSpecExtras" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: config
    configMap:
      name: {{ include "worker.fullname" . }}
  - name: tmp
    emptyDir: {}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
