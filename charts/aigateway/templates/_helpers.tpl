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
