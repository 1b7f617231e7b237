{{- define "drover-agent.labels" -}}
app.kubernetes.io/name: drover-agent
fleet.drover.io/managed: "true"
{{- end -}}
