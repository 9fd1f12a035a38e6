{{- define "junction.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "junction.labels" -}}
app.kubernetes.io/name: junction
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "junction.selector" -}}
app.kubernetes.io/name: junction
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The configuration document: values.config with global.state (redis) and global.storage (postgres) set
     from their values when enabled. */}}
{{- define "junction.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $global := default dict $cfg.global -}}
{{- if .Values.redis.enabled -}}
{{- $r := dict "address" .Values.redis.address "db" (int .Values.redis.db) "key_prefix" .Values.redis.keyPrefix -}}
{{- if .Values.redis.failClosed }}{{ $_ := set $r "fail_closed" true }}{{ end -}}
{{- if .Values.redis.passwordSecret.name }}{{ $_ := set $r "password_env" "JUNCTION_REDIS_PASSWORD" }}{{ end -}}
{{- if .Values.redis.tls.enabled -}}
{{- $tls := dict "enabled" true -}}
{{- with .Values.redis.tls.caFile }}{{ $_ := set $tls "ca_file" . }}{{ end -}}
{{- $_ := set $r "tls" $tls -}}
{{- end -}}
{{- $_ := set $global "state" (dict "backend" "redis" "redis" $r) -}}
{{- end -}}
{{- if .Values.postgres.enabled -}}
{{- $storage := default dict $global.storage -}}
{{- $_ := set $storage "backend" "postgres" -}}
{{- $_ := set $storage "postgres" (dict "dsn_env" "JUNCTION_POSTGRES_DSN" "max_conns" (int .Values.postgres.maxConns)) -}}
{{- $_ := set $global "storage" $storage -}}
{{- end -}}
{{- if $global }}{{ $_ := set $cfg "global" $global }}{{ end -}}
{{- toYaml $cfg -}}
{{- end -}}
