{{- define "aigateway.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "aigateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "aigateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "aigateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: aigateway
{{- end -}}

{{- define "aigateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aigateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "aigateway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "aigateway.operatorName" -}}
{{ include "aigateway.fullname" . }}-operator
{{- end -}}

{{- define "aigateway.proxyName" -}}
{{ include "aigateway.fullname" . }}-proxy
{{- end -}}

{{- define "aigateway.operatorServiceAccount" -}}
{{- if .Values.operator.serviceAccount.create -}}
{{ .Values.operator.serviceAccount.name | default (include "aigateway.operatorName" .) }}
{{- else -}}
{{ .Values.operator.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{- define "aigateway.proxyServiceAccount" -}}
{{- if .Values.proxy.serviceAccount.create -}}
{{ .Values.proxy.serviceAccount.name | default (include "aigateway.proxyName" .) }}
{{- else -}}
{{ .Values.proxy.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{- define "aigateway.stateConfigMap" -}}
{{ .Values.state.configMapName | default (printf "%s-state" (include "aigateway.fullname" .)) }}
{{- end -}}

{{- define "aigateway.stateSecret" -}}
{{ .Values.state.secretName | default (printf "%s-credentials" (include "aigateway.fullname" .)) }}
{{- end -}}

{{- define "aigateway.leaseName" -}}
{{ include "aigateway.operatorName" . }}
{{- end -}}

{{- define "aigateway.proxyStateRole" -}}
{{ include "aigateway.proxyName" . }}-state
{{- end -}}

{{/* priorityClassName, affinity (soft anti-affinity by default), topology spread (zones and
     nodes, ScheduleAnyway, by default), nodeSelector and tolerations of one component.
     Call with (dict "root" $ "component" "proxy" "values" .Values.proxy). */}}
{{- define "aigateway.scheduling" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $selector := dict "app.kubernetes.io/name" (include "aigateway.name" $root) "app.kubernetes.io/instance" $root.Release.Name "app.kubernetes.io/component" .component -}}
{{- with ($v.priorityClassName | default $root.Values.priorityClassName) }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
affinity:
{{- if $v.affinity }}
  {{- toYaml $v.affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- toYaml $selector | nindent 14 }}
{{- end }}
topologySpreadConstraints:
{{- if $v.topologySpreadConstraints }}
  {{- toYaml $v.topologySpreadConstraints | nindent 2 }}
{{- else }}
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- toYaml $selector | nindent 8 }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- toYaml $selector | nindent 8 }}
{{- end }}
{{- end -}}

{{- define "aigateway.monitoringApi" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" -}}true{{- end -}}
{{- end -}}

{{- define "aigateway.egressTo" -}}
{{- /* (dict "cidrs" [...] "ports" [...]): one egress rule; no cidrs = any address on the ports */ -}}
- ports:
  {{- range .ports }}
    - { protocol: TCP, port: {{ . }} }
  {{- end }}
  {{- with .cidrs }}
  to:
    {{- range . }}
    - ipBlock: { cidr: {{ . | quote }} }
    {{- end }}
  {{- end }}
{{- end -}}

{{- define "aigateway.postgresqlName" -}}
{{ include "aigateway.fullname" . }}-postgresql
{{- end -}}

{{- /* The Secret and key holding the PostgreSQL URL ("" when neither postgresql option is set). */ -}}
{{- define "aigateway.databaseSecretRef" -}}
{{- $pg := .Values.postgresql -}}
{{- if and $pg.existingSecret $pg.bundled.enabled -}}
{{- fail "postgresql: set existingSecret or bundled.enabled, not both" -}}
{{- else if $pg.existingSecret -}}
{ name: {{ $pg.existingSecret | quote }}, key: {{ $pg.key | quote }} }
{{- else if $pg.bundled.enabled -}}
{ name: {{ include "aigateway.postgresqlName" . | quote }}, key: url }
{{- end -}}
{{- end -}}

{{- /* Secrets the operator refuses to read for any resource: the gateway's own secrets. */ -}}
{{- define "aigateway.protectedSecrets" -}}
{{- $names := list (include "aigateway.stateSecret" .) -}}
{{- with .Values.proxy.secretKey.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.proxy.redis.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.postgresql.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- if .Values.postgresql.bundled.enabled }}{{ $names = append $names (include "aigateway.postgresqlName" .) }}{{ end -}}
{{- $names = concat $names .Values.operator.protectedSecrets -}}
{{- join "," (uniq $names) -}}
{{- end -}}

{{- define "aigateway.redisConfigured" -}}
{{- if or .Values.proxy.redis.existingSecret .Values.proxy.redisUrl -}}true{{- end -}}
{{- end -}}
