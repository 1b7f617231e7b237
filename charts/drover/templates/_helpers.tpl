{{- define "drover.labels" -}}
app.kubernetes.io/name: drover
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "drover.selector" -}}
app.kubernetes.io/name: drover
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "drover.image" -}}
{{ .Values.image | default (printf "ghcr.io/droverhq/drover:%s" .Chart.AppVersion) }}
{{- end -}}

{{/* The server keeps its lease and settings in drover-system (internal/server.SystemNamespace). */}}
{{- define "drover.checkNamespace" -}}
{{- if ne .Release.Namespace "drover-system" -}}
{{- fail "install drover into the drover-system namespace (helm install -n drover-system --create-namespace): the server keeps its leader lease and registration settings there" -}}
{{- end -}}
{{- end -}}
