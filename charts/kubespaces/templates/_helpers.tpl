{{/* Labels of every object of the release. */}}
{{- define "kubespaces.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubespaces
{{- end }}

{{/* The operator pods' labels, which its Deployment, PDB and Service select. */}}
{{- define "kubespaces.operatorSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The server pods' labels, which its Deployment, PDB and Service select. */}}
{{- define "kubespaces.serverSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/*
Where a Deployment's replicas go: its affinity, or by default a preference for different nodes,
and its topologySpreadConstraints, or by default an even spread over zones (ScheduleAnyway: a
cluster without zone labels, or with one zone, still runs every replica). Argument: (list $
VALUES SELECTOR-TEMPLATE), VALUES holding affinity and topologySpreadConstraints.
*/}}
{{- define "kubespaces.placement" -}}
{{- $root := index . 0 }}
{{- $v := index . 1 }}
{{- $selector := include (index . 2) $root }}
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
              {{- $selector | nindent 14 }}
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
        {{- $selector | nindent 8 }}
    # Only the pods of the same rollout count: old ones about to go do not skew the spread.
    matchLabelKeys: [pod-template-hash]
{{- end }}
{{- end }}

{{- define "kubespaces.serverName" -}}
{{- printf "%s-server" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The server's public name: server.host, or kubespaces.<tenants.baseDomain>. */}}
{{- define "kubespaces.serverHost" -}}
{{- .Values.server.host | default (printf "kubespaces.%s" .Values.tenants.baseDomain) }}
{{- end }}

{{/* The server's public URL (the port only when it is not 443). */}}
{{- define "kubespaces.serverUrl" -}}
{{- $port := int .Values.server.gateway.port }}
{{- if eq $port 443 }}https://{{ include "kubespaces.serverHost" . }}
{{- else }}https://{{ include "kubespaces.serverHost" . }}:{{ $port }}
{{- end }}
{{- end }}

{{- define "kubespaces.serverSessionKeys" -}}
{{- .Values.server.sessionKeys.existingSecret | default (printf "%s-session-keys" (include "kubespaces.serverName" .)) }}
{{- end }}

{{- define "kubespaces.wakerName" -}}
{{- printf "%s-waker" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The waker pods' labels, which its Deployment, PDB and Service select. */}}
{{- define "kubespaces.wakerSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: waker
{{- end }}

{{- define "kubespaces.operatorName" -}}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The operator's image: <registry>/kubespaces/operator when registry is set. */}}
{{- define "kubespaces.image" -}}
{{- include "kubespaces.programImage" (list . .Values.image "operator") }}
{{- end }}

{{/* The server's image, likewise. */}}
{{- define "kubespaces.serverImage" -}}
{{- include "kubespaces.programImage" (list . .Values.server.image "server") }}
{{- end }}

{{/* Argument: (list $ IMAGE-VALUES NAME). */}}
{{- define "kubespaces.programImage" -}}
{{- $root := index . 0 }}
{{- $image := index . 1 }}
{{- $repository := $image.repository }}
{{- with $root.Values.registry }}{{ $repository = printf "%s/kubespaces/%s" (trimSuffix "/" .) (index $ 2) }}{{ end }}
{{- printf "%s:%s" $repository ($image.tag | default $root.Chart.AppVersion) }}
{{- end }}

{{/*
The platform's values for every tenant's vCluster: controlPlane.vcluster.values, with the images
of tenantImages under registry laid over them when registry is set.
*/}}
{{- define "kubespaces.vclusterValues" -}}
{{- $values := deepCopy .Values.controlPlane.vcluster.values }}
{{- with .Values.registry }}
{{- $registry := trimSuffix "/" . }}
{{- $t := $.Values.tenantImages }}
{{- $syncer := regexSplit ":" $t.vcluster 2 }}
{{- $kubernetes := regexSplit ":" $t.kubernetes 2 }}
{{- $images := dict "controlPlane" (dict
      "statefulSet" (dict "image" (dict "registry" $registry "repository" (index $syncer 0) "tag" (index $syncer 1)))
      "distro" (dict "k8s" (dict "image" (dict "registry" $registry "repository" (index $kubernetes 0) "tag" (index $kubernetes 1))))
      "coredns" (dict "deployment" (dict "image" (printf "%s/%s" $registry $t.coredns)))) }}
{{- $values = mustMergeOverwrite $values $images }}
{{- end }}
{{- toYaml $values }}
{{- end }}

{{/*
The objects of one manifest generated by the operator (operator/manifests/, reached through the
symlinks in files/), with the release's labels added (its own labels otherwise kept) and, for
namespaced RBAC objects, the release namespace (or the namespace given as a third argument). One
source: the chart never restates them. Argument: (list $ "files/NAME.yaml" [namespace]).
*/}}
{{- define "kubespaces.generated" -}}
{{- $root := index . 0 }}
{{- $path := index . 1 }}
{{- $namespace := $root.Release.Namespace }}
{{- if gt (len .) 2 }}{{ $namespace = index . 2 }}{{ end }}
{{- $text := $root.Files.Get $path }}
{{- if not $text }}
{{- fail (printf "%s is empty or missing: it is a symlink to operator/manifests, generated by `kubespaces-operator manifests`" $path) }}
{{- end }}
{{- range $doc := regexSplit "(?m)^---[ \\t]*$" $text -1 }}
{{- $obj := fromYaml $doc }}
{{- if hasKey $obj "Error" }}
{{- fail (printf "%s: %s" $path $obj.Error) }}
{{- end }}
{{- if $obj }}
{{- $meta := $obj.metadata | default dict }}
{{- $_ := set $meta "labels" (merge (include "kubespaces.labels" $root | fromYaml) ($meta.labels | default dict)) }}
{{- if has $path (include "kubespaces.keptFiles" $root | fromYamlArray) }}
{{- $_ := set $meta "annotations" (merge (dict "helm.sh/resource-policy" "keep") ($meta.annotations | default dict)) }}
{{- end }}
{{- if has $obj.kind (list "Role" "RoleBinding") }}
{{- $_ := set $meta "namespace" $namespace }}
{{- end }}
{{- $_ := set $obj "metadata" $meta }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}

{{/*
What `helm uninstall` leaves behind (docs/install.md, "Uninstall"): whatever keeps existing
tenants working and apart while no operator runs. The generated manifests of the tenant-owner
ClusterRole (their owners' access to their namespaces) and of the generated admission policies
(the teardown finalizer on new Tenants, the guards in tenant namespaces, the operator's bounds);
the CRD too (Helm never deletes crds/); and the waker, its account and its Role (every tenant API
route goes through it: waker.yaml). A reinstall of the same release in the same namespace adopts
them; nothing else of the release is left. Not the maxima policy: it only bounds what a
Tenant asks for, and kept, it would outlive an upgrade that clears tenants.maxima (Helm also keeps
a kept object a newer chart no longer renders).
*/}}
{{- define "kubespaces.keptFiles" -}}
- files/tenant-owner-clusterrole.yaml
- files/tenant-finalizer-admission.yaml
- files/tenant-guard-admission.yaml
- files/operator-bounds-admission.yaml
- files/waker-role.yaml
- files/waker-clusterrole.yaml
{{- end }}

{{/* The first object of a generated manifest, as a dict (to read a name from it). */}}
{{- define "kubespaces.generatedName" -}}
{{- $root := index . 0 }}
{{- $path := index . 1 }}
{{- $obj := fromYaml (first (regexSplit "(?m)^---[ \\t]*$" ($root.Files.Get $path) -1)) }}
{{- required (printf "%s has no metadata.name" $path) (($obj.metadata | default dict).name) }}
{{- end }}
