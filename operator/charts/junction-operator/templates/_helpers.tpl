{{- define "junction-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "junction-operator.labels" -}}
app.kubernetes.io/name: junction-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "junction-operator.selector" -}}
app.kubernetes.io/name: junction-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "junction-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "junction-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
