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
{{- $rv := .Values.redis -}}
{{- $r := dict "key_prefix" $rv.keyPrefix -}}
{{- $mode := default "standalone" $rv.mode -}}
{{- if eq $mode "cluster" -}}
{{- if ne (int $rv.db) 0 }}{{ fail "redis.db must be 0 with redis.mode cluster: a Redis Cluster has database 0 only" }}{{ end -}}
{{- $_ := set $r "mode" "cluster" -}}
{{- if $rv.addresses }}{{ $_ := set $r "addresses" $rv.addresses }}{{ else }}{{ $_ := set $r "address" $rv.address }}{{ end -}}
{{- else if eq $mode "standalone" -}}
{{- if $rv.addresses }}{{ fail "redis.addresses lists a cluster's nodes but redis.mode is standalone: set redis.mode cluster, or name the one server as redis.address" }}{{ end -}}
{{- $_ := set $r "address" $rv.address -}}
{{- $_ := set $r "db" (int $rv.db) -}}
{{- else -}}
{{- fail (printf "redis.mode must be standalone or cluster (got %q)" $mode) -}}
{{- end -}}
{{- if $rv.failClosed }}{{ $_ := set $r "fail_closed" true }}{{ end -}}
{{- if $rv.passwordSecret.name }}{{ $_ := set $r "password_env" "JUNCTION_REDIS_PASSWORD" }}{{ end -}}
{{- if $rv.tls.enabled -}}
{{- $tls := dict "enabled" true -}}
{{- $dir := include "junction.redisTLSDir" . -}}
{{- $ca := $rv.tls.caFile -}}
{{- if and (not $ca) $rv.tls.secretName }}{{ $ca = printf "%s/ca.crt" $dir }}{{ end -}}
{{- with $ca }}{{ $_ := set $tls "ca_file" . }}{{ end -}}
{{- $cert := $rv.tls.certFile -}}{{- $key := $rv.tls.keyFile -}}
{{- if and $rv.tls.clientCertificate $rv.tls.secretName -}}
{{- $cert = default (printf "%s/tls.crt" $dir) $cert -}}{{- $key = default (printf "%s/tls.key" $dir) $key -}}
{{- end -}}
{{- if ne (empty $cert) (empty $key) }}{{ fail "redis.tls: certFile and keyFile go together (or set secretName and clientCertificate: true)" }}{{ end -}}
{{- with $cert }}{{ $_ := set $tls "cert_file" . }}{{ end -}}
{{- with $key }}{{ $_ := set $tls "key_file" . }}{{ end -}}
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

{{/* Where redis.tls.secretName is mounted. */}}
{{- define "junction.redisTLSDir" -}}/etc/junction-redis-tls{{- end -}}

{{/* junction.sysmonTuning is the GODEBUG value that keeps the Go runtime's sysmon out of its deep sleep
     (docs/operator.md#runtime-tuning-sysmon), or "" when runtime.sysmonTuning is false or values.env sets
     GODEBUG itself (the user's entry wins; two entries of one name would leave the choice to the kubelet). */}}
{{- define "junction.sysmonTuning" -}}
{{- $own := false -}}
{{- range .Values.env }}{{ if eq (toString .name) "GODEBUG" }}{{ $own = true }}{{ end }}{{ end -}}
{{- $rt := default dict .Values.runtime -}}
{{- if and (ne (toString $rt.sysmonTuning) "false") (not $own) -}}
schedtrace=2147483647
{{- end -}}
{{- end -}}
