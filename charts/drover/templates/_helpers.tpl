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

{{/* The chart's podAntiAffinity (value podAntiAffinity: soft or hard), as a YAML map. */}}
{{- define "drover.podAntiAffinity" -}}
{{- if eq .Values.podAntiAffinity "hard" }}
requiredDuringSchedulingIgnoredDuringExecution:
  - topologyKey: kubernetes.io/hostname
    labelSelector:
      matchLabels: {{- include "drover.selector" . | nindent 8 }}
{{- else if eq .Values.podAntiAffinity "soft" }}
preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels: {{- include "drover.selector" . | nindent 10 }}
{{- end }}
{{- end -}}

{{/* The pod's affinity: the value affinity, plus the chart's podAntiAffinity unless affinity sets its own. */}}
{{- define "drover.affinity" -}}
{{- $affinity := deepCopy (.Values.affinity | default dict) }}
{{- $anti := include "drover.podAntiAffinity" . | fromYaml }}
{{- if and $anti (not (hasKey $affinity "podAntiAffinity")) }}
{{- $_ := set $affinity "podAntiAffinity" $anti }}
{{- end }}
{{- with $affinity }}{{ toYaml . }}{{ end }}
{{- end -}}

{{/* Combinations of values that would install a broken or unsafe drover, refused with the values named. */}}
{{- define "drover.checkValues" -}}
{{- $replicas := int .Values.replicas }}
{{- if and (not .Values.leaderElection) (gt $replicas 1) }}
{{- fail (printf "leaderElection=false with replicas=%d: every replica would reconcile the same objects at once and fight; set leaderElection=true or replicas=1" $replicas) }}
{{- end }}
{{- $min := .Values.podDisruptionBudget.minAvailable }}
{{- if and .Values.podDisruptionBudget.enabled (gt $replicas 1) (or (kindIs "float64" $min) (kindIs "int" $min) (kindIs "int64" $min)) (ge (int $min) $replicas) }}
{{- fail (printf "podDisruptionBudget.minAvailable=%d with replicas=%d allows no eviction, so node drains would block forever; set it below replicas" (int $min) $replicas) }}
{{- end }}
{{- range $k, $_ := .Values.podLabels }}
{{- if hasKey (include "drover.selector" $ | fromYaml) $k }}
{{- fail (printf "podLabels.%s: the chart sets this label itself (the Deployment's selector); choose another key" $k) }}
{{- end }}
{{- end }}
{{- if and .Values.prometheusRule.enabled (not .Values.metrics.serviceMonitor.enabled) (not .Values.prometheusRule.allowWithoutServiceMonitor) }}
{{- fail "prometheusRule.enabled without metrics.serviceMonitor.enabled: the DroverDown alert (absent(up{job=\"drover-metrics\"})) would fire forever, as nothing scrapes drover under that job; set metrics.serviceMonitor.enabled=true, or, if your own scrape config uses job=\"drover-metrics\" (namespace drover-system), prometheusRule.allowWithoutServiceMonitor=true" }}
{{- end }}
{{- end -}}
