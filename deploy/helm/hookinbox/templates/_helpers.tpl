{{/* Names and labels. */}}
{{- define "hookinbox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookinbox.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hookinbox.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "hookinbox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hookinbox
{{- end }}

{{/* hookinbox.selectorLabels: (dict "ctx" $ "component" "intake") */}}
{{- define "hookinbox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookinbox.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hookinbox.componentLabels" -}}
{{ include "hookinbox.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hookinbox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hookinbox.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "hookinbox.devSecretName" -}}
{{- printf "%s-dev" (include "hookinbox.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookinbox.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
The hookinbox process roles (internal/store/roles.go; deploy/helm/check
compares them): value key, role, URL variable, password variable.
*/}}
{{- define "hookinbox.roles" -}}
intake: {role: hookinbox_intake, url: HOOKINBOX_INTAKE_DATABASE_URL, password: HOOKINBOX_INTAKE_DB_PASSWORD}
worker: {role: hookinbox_worker, url: HOOKINBOX_WORKER_DATABASE_URL, password: HOOKINBOX_WORKER_DB_PASSWORD}
console: {role: hookinbox_console, url: HOOKINBOX_CONSOLE_DATABASE_URL, password: HOOKINBOX_CONSOLE_DB_PASSWORD}
payloadReader: {role: hookinbox_payload_reader, url: HOOKINBOX_PAYLOAD_DATABASE_URL, password: HOOKINBOX_PAYLOAD_READER_DB_PASSWORD}
operator: {role: hookinbox_operator, url: HOOKINBOX_OPERATOR_DATABASE_URL, password: HOOKINBOX_OPERATOR_DB_PASSWORD}
{{- end }}

{{/*
hookinbox.secretRef: the Secret key a database URL or password is read from,
as (dict "name" … "key" …): (dict "ctx" $ "ref" .Values.database.intake
"dev" "intake-url"). In devMode the process roles' URLs and passwords (dev
set) come from the dev Secret; otherwise from ref, its secretName defaulting
to database.existingSecret.
*/}}
{{- define "hookinbox.secretRef" -}}
{{- $v := .ctx.Values }}
{{- if and $v.devMode.enabled .dev }}
{{- dict "name" (include "hookinbox.devSecretName" .ctx) "key" .dev | toJson }}
{{- else }}
{{- dict "name" (default $v.database.existingSecret .ref.secretName) "key" .ref.key | toJson }}
{{- end }}
{{- end }}

{{/* hookinbox.envFromSecret: one EnvVar from a Secret key: (dict "name" VAR "ref" (dict "name" … "key" …)). */}}
{{- define "hookinbox.envFromSecret" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ required (printf "%s: the Secret it is read from has no name" .name) .ref.name | quote }}
      key: {{ required (printf "%s: the key of Secret %s it is read from is empty" .name .ref.name) .ref.key | quote }}
{{- end }}

{{/* hookinbox.dbURLEnv: a process's own role's URL: (dict "ctx" $ "role" "intake"). */}}
{{- define "hookinbox.dbURLEnv" -}}
{{- $r := index (include "hookinbox.roles" .ctx | fromYaml) .role }}
{{- $ref := include "hookinbox.secretRef" (dict "ctx" .ctx "ref" (index .ctx.Values.database .role) "dev" (printf "%s-url" (kebabcase .role))) | fromJson }}
{{- include "hookinbox.envFromSecret" (dict "name" $r.url "ref" $ref) }}
{{- end }}

{{/*
Names that hold a secret: the chart never renders them as a literal value
(deploy/helm/check applies the same rule to the rendered objects).
*/}}
{{- define "hookinbox.secretNamePattern" -}}
(PASSWORD|SECRET|TOKEN|_KEY$|API_KEY|DATABASE_URL|HEADERS)
{{- end }}

{{- define "hookinbox.isSecretName" -}}
{{- if and (regexMatch (include "hookinbox.secretNamePattern" .) .) (not (hasSuffix "_FILE" .)) }}true{{ end }}
{{- end }}

{{/*
hookinbox.settings: a map of settings (config, a component's env), checked:
no secret, nothing the chart sets itself. (dict "values" map "where" "config").
*/}}
{{- define "hookinbox.checkSettings" -}}
{{- $reserved := list "DATABASE_URL" "HOOKINBOX_HTTP_ADDR" "HOOKINBOX_INTERNAL_ADDR" "HOOKINBOX_WORKER_ADDR" "HOOKINBOX_CONSOLE_ADDR" "HOOKINBOX_CONSOLE_URL" "HOOKINBOX_TEMPORAL_UI_URL" "HOOKINBOX_TASK_QUEUE" "HOOKINBOX_SECRETS_KEY" "HOOKINBOX_SECRETS_KEY_FILE" }}
{{- range $name, $value := .values }}
{{- if include "hookinbox.isSecretName" $name }}
{{- fail (printf "%s.%s: a secret is never a value (it would be in `helm get values`): put it in a Secret and use extraEnv with valueFrom.secretKeyRef" $.where $name) }}
{{- end }}
{{- if or (has $name $reserved) (hasPrefix "TEMPORAL_" $name) (hasPrefix "OTEL_" $name) }}
{{- fail (printf "%s.%s: set by the chart (temporal, database, secretsKey, tracing, console values), not here" $.where $name) }}
{{- end }}
{{- if not (regexMatch "^[A-Z][A-Z0-9_]*$" $name) }}
{{- fail (printf "%s.%s: not an environment variable name" $.where $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* hookinbox.extraEnv: EnvVar objects, refusing a secret as a literal. (dict "env" list "where" "extraEnv"). */}}
{{- define "hookinbox.extraEnv" -}}
{{- range .env }}
{{- if and (include "hookinbox.isSecretName" .name) (hasKey . "value") }}
{{- fail (printf "%s: %s holds a secret: give it valueFrom.secretKeyRef, not a value (it would be in `helm get values`)" $.where .name) }}
{{- end }}
{{- end }}
{{- with .env }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ConfigMap every Deployment reads with envFrom. */}}
{{- define "hookinbox.configName" -}}
{{- printf "%s-config" (include "hookinbox.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookinbox.sharedConfig" -}}
{{- include "hookinbox.checkSettings" (dict "values" .Values.config "where" "config") }}
TEMPORAL_ADDRESS: {{ required "temporal.address is required" .Values.temporal.address | quote }}
TEMPORAL_NAMESPACE: {{ required "temporal.namespace is required" .Values.temporal.namespace | quote }}
HOOKINBOX_TASK_QUEUE: {{ required "temporal.taskQueue is required" .Values.temporal.taskQueue | quote }}
{{- if .Values.temporal.tls.enabled }}
TEMPORAL_TLS: "true"
{{- end }}
{{- with .Values.temporal.tls.serverName }}
TEMPORAL_TLS_SERVER_NAME: {{ . | quote }}
{{- end }}
{{- /* Every process links to the console (workflow details, notices) and the Temporal UI. */}}
{{- with .Values.console.url }}
HOOKINBOX_CONSOLE_URL: {{ . | quote }}
{{- end }}
{{- with .Values.console.temporalUIURL }}
HOOKINBOX_TEMPORAL_UI_URL: {{ . | quote }}
{{- end }}
{{- range $k, $v := .Values.config }}
{{ $k }}: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/* Settings of one process, checked: (dict "values" map "where" "intake.env"). */}}
{{- define "hookinbox.componentEnv" -}}
{{- include "hookinbox.checkSettings" . }}
{{- range $k, $v := .values }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/* Pod-level security: non-root, the runtime's seccomp profile, no token. */}}
{{- define "hookinbox.podSecurity" -}}
automountServiceAccountToken: false
securityContext:
  runAsNonRoot: true
  {{- with .Values.podSecurityContext.runAsUser }}
  runAsUser: {{ . }}
  {{- end }}
  {{- with .Values.podSecurityContext.runAsGroup }}
  runAsGroup: {{ . }}
  {{- end }}
  {{- with .Values.podSecurityContext.fsGroup }}
  fsGroup: {{ . }}
  {{- end }}
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{- define "hookinbox.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Container-level security, the same for every container. */}}
{{- define "hookinbox.containerSecurity" -}}
securityContext:
  runAsNonRoot: true
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  privileged: false
  capabilities:
    drop: ["ALL"]
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/*
The secrets key, Temporal's TLS material and /tmp: volumes, the init
container copying a key file into memory, mounts and variables.
*/}}
{{- define "hookinbox.secretsKeyRef" -}}
{{- if .Values.devMode.enabled }}
{{- dict "name" (include "hookinbox.devSecretName" .) "key" "secrets.key" | toJson }}
{{- else }}
{{- dict "name" .Values.secretsKey.secretName "key" .Values.secretsKey.key | toJson }}
{{- end }}
{{- end }}

{{- define "hookinbox.keyFormat" -}}
{{- if .Values.devMode.enabled }}file{{ else }}{{ .Values.secretsKey.format }}{{ end }}
{{- end }}

{{- define "hookinbox.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if eq (include "hookinbox.keyFormat" .) "file" }}
{{- $ref := include "hookinbox.secretsKeyRef" . | fromJson }}
- name: secrets-key-source
  secret:
    secretName: {{ required "secretsKey.secretName is required" $ref.name | quote }}
    defaultMode: 0440
    items:
      - key: {{ required "secretsKey.key is required" $ref.key | quote }}
        path: secrets.key
- name: secrets-key
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}
{{- with .Values.temporal.tls.ca }}
{{- if and .configMapName .secretName }}
{{- fail "temporal.tls.ca: a ConfigMap or a Secret, not both" }}
{{- end }}
{{- if .configMapName }}
- name: temporal-ca
  configMap:
    name: {{ .configMapName | quote }}
    items:
      - key: {{ .key | quote }}
        path: ca.crt
{{- else if .secretName }}
- name: temporal-ca
  secret:
    secretName: {{ .secretName | quote }}
    defaultMode: 0440
    items:
      - key: {{ .key | quote }}
        path: ca.crt
{{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- with .Values.temporal.clientCert }}
{{- if .secretName }}
- name: temporal-client-cert
  secret:
    secretName: {{ .secretName | quote }}
    defaultMode: 0440
    items:
      - key: {{ .certKey | quote }}
        path: tls.crt
      - key: {{ .keyKey | quote }}
        path: tls.key
{{- end }}
{{- end }}
{{- end }}

{{- define "hookinbox.initContainers" -}}
{{- if eq (include "hookinbox.keyFormat" .) "file" }}
# hookinbox refuses a key file its group may read, and a Secret mounted
# for a non-root user always is (fsGroup): copy it into memory, 0400, owned
# by the pod's user.
- name: secrets-key
  image: {{ include "hookinbox.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command: ["install", "-m", "0400", "/var/run/hookinbox/secrets-key-source/secrets.key", "/var/run/hookinbox/secrets-key/secrets.key"]
  {{- include "hookinbox.containerSecurity" . | nindent 2 }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
    limits:
      memory: 32Mi
  volumeMounts:
    - name: secrets-key-source
      mountPath: /var/run/hookinbox/secrets-key-source
      readOnly: true
    - name: secrets-key
      mountPath: /var/run/hookinbox/secrets-key
{{- end }}
{{- end }}

{{- define "hookinbox.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if eq (include "hookinbox.keyFormat" .) "file" }}
- name: secrets-key
  mountPath: /var/run/hookinbox/secrets-key
  readOnly: true
{{- end }}
{{- if or .Values.temporal.tls.ca.configMapName .Values.temporal.tls.ca.secretName }}
- name: temporal-ca
  mountPath: /var/run/hookinbox/temporal-ca
  readOnly: true
{{- end }}
{{- if .Values.temporal.clientCert.secretName }}
- name: temporal-client-cert
  mountPath: /var/run/hookinbox/temporal-client-cert
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The secrets key's variable. */}}
{{- define "hookinbox.secretsKeyEnv" -}}
{{- if eq (include "hookinbox.keyFormat" .) "file" }}
- name: HOOKINBOX_SECRETS_KEY_FILE
  value: /var/run/hookinbox/secrets-key/secrets.key
{{- else if eq .Values.secretsKey.format "key" }}
{{- include "hookinbox.envFromSecret" (dict "name" "HOOKINBOX_SECRETS_KEY" "ref" (include "hookinbox.secretsKeyRef" . | fromJson)) }}
{{- else }}
{{- fail (printf "secretsKey.format: %q is neither file nor key" .Values.secretsKey.format) }}
{{- end }}
{{- end }}

{{/* Temporal's credentials and TLS files (the address and namespace are in the ConfigMap). */}}
{{- define "hookinbox.temporalEnv" -}}
{{- if and .Values.temporal.apiKey.secretName .Values.temporal.clientCert.secretName }}
{{- fail "temporal: an API key or a client certificate, not both" }}
{{- end }}
{{- if .Values.temporal.apiKey.secretName }}
{{- include "hookinbox.envFromSecret" (dict "name" "TEMPORAL_API_KEY" "ref" (dict "name" .Values.temporal.apiKey.secretName "key" .Values.temporal.apiKey.key)) }}
{{- end }}
{{- if .Values.temporal.clientCert.secretName }}
- name: TEMPORAL_TLS_CERT
  value: /var/run/hookinbox/temporal-client-cert/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /var/run/hookinbox/temporal-client-cert/tls.key
{{- end }}
{{- if or .Values.temporal.tls.ca.configMapName .Values.temporal.tls.ca.secretName }}
- name: TEMPORAL_TLS_CA
  value: /var/run/hookinbox/temporal-ca/ca.crt
{{- end }}
{{- end }}

{{/* Tracing (off by default): (dict "ctx" $ "component" "webhook"). */}}
{{- define "hookinbox.tracingEnv" -}}
{{- with .ctx.Values.tracing }}
{{- if .enabled }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "hookinbox-%s" $.component | quote }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ required "tracing.otlpEndpoint is required when tracing is enabled" .otlpEndpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .otlpProtocol | quote }}
{{- if .headers.secretName }}
{{ include "hookinbox.envFromSecret" (dict "name" "OTEL_EXPORTER_OTLP_HEADERS" "ref" (dict "name" .headers.secretName "key" .headers.key)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Topology spread of a component: (dict "ctx" $ "component" "intake" "own" list). */}}
{{- define "hookinbox.topologySpread" -}}
{{- if .own }}
topologySpreadConstraints:
  {{- toYaml .own | nindent 2 }}
{{- else if .ctx.Values.topologySpread.enabled }}
topologySpreadConstraints:
{{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - topologyKey: {{ . }}
    maxSkew: {{ $.ctx.Values.topologySpread.maxSkew }}
    whenUnsatisfiable: {{ $.ctx.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "hookinbox.selectorLabels" (dict "ctx" $.ctx "component" $.component) | nindent 8 }}
    matchLabelKeys: ["pod-template-hash"]
{{- end }}
{{- end }}
{{- end }}

{{/* Scheduling of a component: (dict "c" .Values.intake). */}}
{{- define "hookinbox.scheduling" -}}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod template annotations: a change of the shared settings rolls the pods. */}}
{{- define "hookinbox.podAnnotations" -}}
checksum/config: {{ include "hookinbox.sharedConfig" . | sha256sum }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* One step of the migration Job: (dict "ctx" $ "name" "migrate" "args" list "owner" ref "roles" map). */}}
{{- define "hookinbox.migrateContainer" -}}
{{- $v := .ctx.Values }}
- name: {{ .name }}
  image: {{ include "hookinbox.image" .ctx | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args: {{ toJson .args }}
  {{- include "hookinbox.containerSecurity" .ctx | nindent 2 }}
  env:
    {{- $url := .owner }}
    {{- if and (eq .name "db-roles") $v.database.roles.admin.key }}
    {{- $url = include "hookinbox.secretRef" (dict "ctx" .ctx "ref" $v.database.roles.admin) | fromJson }}
    {{- end }}
    {{- include "hookinbox.envFromSecret" (dict "name" "DATABASE_URL" "ref" $url) | nindent 4 }}
    {{- if eq .name "db-roles" }}
    {{- range $k, $r := .roles }}
    {{- $ref := index $v.database.roles.passwords $k }}
    {{- if or $v.devMode.enabled $ref.key }}
    {{- include "hookinbox.envFromSecret" (dict "name" $r.password "ref" (include "hookinbox.secretRef" (dict "ctx" $.ctx "ref" $ref "dev" (printf "%s-password" (kebabcase $k))) | fromJson)) | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- else }}
    {{- include "hookinbox.secretsKeyEnv" .ctx | nindent 4 }}
    {{- end }}
    {{- range $k, $val := $v.config }}
    {{- if hasPrefix "HOOKINBOX_LOG_" $k }}
    - name: {{ $k }}
      value: {{ $val | toString | quote }}
    {{- end }}
    {{- end }}
    {{- include "hookinbox.componentEnv" (dict "values" $v.migrations.env "where" "migrations.env") | nindent 4 }}
    {{- include "hookinbox.tracingEnv" (dict "ctx" .ctx "component" "migrate") | nindent 4 }}
    {{- include "hookinbox.extraEnv" (dict "env" $v.extraEnv "where" "extraEnv") | nindent 4 }}
    {{- include "hookinbox.extraEnv" (dict "env" $v.migrations.extraEnv "where" "migrations.extraEnv") | nindent 4 }}
  resources:
    {{- toYaml $v.migrations.resources | nindent 4 }}
  volumeMounts:
    {{- include "hookinbox.volumeMounts" .ctx | nindent 4 }}
{{- end }}
