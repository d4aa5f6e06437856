{{/* Names, labels and shared fragments of the dra-webhook chart. */}}

{{- define "dra-webhook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dra-webhook.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dra-webhook.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dra-webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dra-webhook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "dra-webhook.labels" -}}
helm.sh/chart: {{ include "dra-webhook.chart" . }}
{{ include "dra-webhook.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: admission-webhook
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "dra-webhook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "dra-webhook.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Service name; the serving certificate's SANs are derived from it. */}}
{{- define "dra-webhook.serviceName" -}}
{{- include "dra-webhook.fullname" . -}}
{{- end -}}

{{- define "dra-webhook.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Secret that holds tls.crt / tls.key (and ca.crt except in existingSecret mode). */}}
{{- define "dra-webhook.tlsSecretName" -}}
{{- if eq .Values.certs.mode "existingSecret" -}}
{{- .Values.certs.existingSecret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "dra-webhook.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "dra-webhook.caSecretName" -}}
{{- printf "%s-ca" (include "dra-webhook.fullname" .) -}}
{{- end -}}

{{- define "dra-webhook.certificateName" -}}
{{- printf "%s-serving" (include "dra-webhook.fullname" .) -}}
{{- end -}}

{{/* DNS names the serving certificate must carry (the apiserver dials <svc>.<ns>.svc). */}}
{{- define "dra-webhook.dnsNames" -}}
{{- $svc := include "dra-webhook.serviceName" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) | toJson -}}
{{- end -}}

{{/*
Self-signed mode: generate the CA and serving certificate once per render and cache them on
the root context, so the Secret and both webhook configurations see the same CA. On upgrade the
CA is read back from the cluster with `lookup` and only the serving certificate is re-issued.
*/}}
{{- define "dra-webhook.ensureSelfSignedCerts" -}}
{{- if not (hasKey . "draWebhookCerts") -}}
{{- $svc := include "dra-webhook.serviceName" . -}}
{{- $dnsNames := include "dra-webhook.dnsNames" . | fromJsonArray -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "dra-webhook.caSecretName" .) -}}
{{- $data := dict -}}
{{- if $existing -}}
{{- $data = $existing.data | default dict -}}
{{- end -}}
{{- $ca := dict -}}
{{- if and (index $data "tls.crt") (index $data "tls.key") -}}
{{- $ca = buildCustomCert (index $data "tls.crt") (index $data "tls.key") -}}
{{- else -}}
{{- $ca = genCA (printf "%s-ca" $svc) (int .Values.certs.selfSigned.caValidityDays) -}}
{{- end -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc .Release.Namespace) nil $dnsNames (int .Values.certs.selfSigned.certValidityDays) $ca -}}
{{- $_ := set . "draWebhookCerts" (dict "caCert" $ca.Cert "caKey" $ca.Key "cert" $cert.Cert "key" $cert.Key) -}}
{{- end -}}
{{- end -}}

{{/* clientConfig.caBundle (base64 PEM) for the current cert mode; empty for certManager. */}}
{{- define "dra-webhook.caBundle" -}}
{{- if eq .Values.certs.mode "selfSigned" -}}
{{- include "dra-webhook.ensureSelfSignedCerts" . -}}
{{- .draWebhookCerts.caCert | b64enc -}}
{{- else if eq .Values.certs.mode "existingSecret" -}}
{{- .Values.certs.existingSecret.caBundle | b64enc -}}
{{- end -}}
{{- end -}}

{{- define "dra-webhook.failurePolicy" -}}
{{- if .root.Values.webhooks.forceFailurePolicyIgnore -}}
Ignore
{{- else -}}
{{- .policy -}}
{{- end -}}
{{- end -}}

{{- define "dra-webhook.namespaceSelector" -}}
{{- $sel := .Values.webhooks.namespaceSelector -}}
{{- $names := list -}}
{{- range $sel.excludeNamespaces }}{{ $names = append $names . }}{{ end -}}
{{- if and $sel.excludeReleaseNamespace (not (has .Release.Namespace $names)) -}}
{{- $names = append $names .Release.Namespace -}}
{{- end -}}
{{- $exprs := list -}}
{{- if $names -}}
{{- $exprs = append $exprs (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" $names) -}}
{{- end -}}
{{- if $sel.optOutLabel -}}
{{- $exprs = append $exprs (dict "key" $sel.optOutLabel "operator" "DoesNotExist") -}}
{{- end -}}
{{- range $sel.matchExpressions }}{{ $exprs = append $exprs . }}{{ end -}}
namespaceSelector:
{{- if $exprs }}
  matchExpressions:
    {{- toYaml $exprs | nindent 4 }}
{{- else }} {}
{{- end }}
{{- end -}}

{{/* Rules for the DRA and scheduling kinds (the same for /mutate and /validate). */}}
{{- define "dra-webhook.rules" -}}
rules:
  - apiGroups: ["resource.k8s.io"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["resourceslices", "deviceclasses", "devicetaintrules"]
    scope: Cluster
  - apiGroups: ["resource.k8s.io"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["resourceclaims", "resourceclaimtemplates"]
    scope: Namespaced
  - apiGroups: ["scheduling.k8s.io"]
    apiVersions: ["v1beta1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["podgroups", "workloads"]
    scope: Namespaced
{{- end -}}

{{/* Rules for the workload kinds whose dry-run CREATEs get "k of N replicas fit" warnings. */}}
{{- define "dra-webhook.workloadRules" -}}
rules:
  - apiGroups: ["apps"]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["deployments", "replicasets", "statefulsets"]
    scope: Namespaced
  - apiGroups: ["batch"]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["jobs", "cronjobs"]
    scope: Namespaced
{{- end -}}

{{/*
One webhook entry. Arguments (dict): root, name, path, policy, mutating (bool), scope ("dra": the
DRA and scheduling kinds; "pods": pods with claims or a scheduling group, or only the latter when
mutating; "workloads": dry-run CREATEs of the workload kinds).
*/}}
{{- define "dra-webhook.webhook" -}}
{{- $root := .root -}}
{{- $v := $root.Values.webhooks -}}
- name: {{ .name }}
  admissionReviewVersions: ["v1"]
  sideEffects: None
  matchPolicy: Equivalent
  failurePolicy: {{ include "dra-webhook.failurePolicy" (dict "root" $root "policy" .policy) }}
  timeoutSeconds: {{ $v.timeoutSeconds }}
  {{- if .mutating }}
  reinvocationPolicy: {{ $v.mutating.reinvocationPolicy }}
  {{- end }}
  clientConfig:
    {{- if $v.url }}
    url: {{ printf "%s%s" (trimSuffix "/" $v.url) .path | quote }}
    {{- else }}
    service:
      name: {{ include "dra-webhook.serviceName" $root }}
      namespace: {{ $root.Release.Namespace }}
      path: {{ .path }}
      port: {{ $root.Values.service.port }}
    {{- end }}
    {{- $ca := include "dra-webhook.caBundle" $root }}
    {{- if $ca }}
    caBundle: {{ $ca }}
    {{- end }}
  {{- if eq .scope "pods" }}
  rules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
      scope: Namespaced
  {{- else if eq .scope "workloads" }}
  {{- include "dra-webhook.workloadRules" $root | nindent 2 }}
  {{- else }}
  {{- include "dra-webhook.rules" $root | nindent 2 }}
  {{- end }}
  {{- include "dra-webhook.namespaceSelector" $root | nindent 2 }}
  {{- with $v.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $conds := list -}}
  {{- if and (eq .scope "pods") .mutating }}
  {{- /* /mutate only strips a schedulingGroup its gate drops */}}
  {{- $conds = append $conds (dict "name" "uses-scheduling-group" "expression" "has(object.spec.schedulingGroup)") -}}
  {{- else if eq .scope "pods" }}
  {{- /* /validate adds feasibility: pods that use claims or a scheduling group */}}
  {{- $conds = append $conds (dict "name" "uses-claims-or-scheduling-group" "expression" "has(object.spec.schedulingGroup) || (has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)") -}}
  {{- else if eq .scope "workloads" }}
  {{- /* only feasibility, only on dry runs: real writes never wait on us */}}
  {{- $conds = append $conds (dict "name" "dry-run-only" "expression" "request.dryRun == true") -}}
  {{- end }}
  {{- range $v.matchConditions }}{{ $conds = append $conds . }}{{ end }}
  {{- with $conds }}
  matchConditions:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Fail the render on settings that would break graceful shutdown or the deadline. */}}
{{- define "dra-webhook.checks" -}}
{{- $stop := add (int .Values.preStopSleepSeconds) (ceil .Values.server.shutdownDelaySeconds | int) 25 -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $stop) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than preStopSleepSeconds (%d) + server.shutdownDelaySeconds (%v) + 25 s of gunicorn graceful timeout" (int .Values.terminationGracePeriodSeconds) (int .Values.preStopSleepSeconds) .Values.server.shutdownDelaySeconds) -}}
{{- end -}}
{{- if ge (float64 .Values.config.deadlineMarginSeconds) (float64 .Values.webhooks.timeoutSeconds) -}}
{{- fail "config.deadlineMarginSeconds must be smaller than webhooks.timeoutSeconds" -}}
{{- end -}}
{{- if le (float64 .Values.config.stateStaleAfterSeconds) (float64 .Values.config.stateWatchTimeoutSeconds) -}}
{{- fail "config.stateStaleAfterSeconds must be greater than config.stateWatchTimeoutSeconds" -}}
{{- end -}}
{{- $pdb := .Values.podDisruptionBudget -}}
{{- if and $pdb.enabled (gt (int .Values.replicaCount) 1) (not (kindIs "string" $pdb.minAvailable)) (ge (int $pdb.minAvailable) (int .Values.replicaCount)) -}}
{{- fail "podDisruptionBudget.minAvailable must be smaller than replicaCount, or no node could ever be drained" -}}
{{- end -}}
{{- if and (eq .Values.certs.mode "existingSecret") (or (not .Values.certs.existingSecret.name) (not .Values.certs.existingSecret.caBundle)) -}}
{{- fail "certs.mode=existingSecret needs certs.existingSecret.name and certs.existingSecret.caBundle" -}}
{{- end -}}
{{- end -}}
