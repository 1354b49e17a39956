{{- define "tapyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 55 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 55 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tapyard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: "api" or "worker". */}}
{{- define "tapyard.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tapyard.secretName" -}}
{{- .Values.existingSecret | default (printf "%s-env" (include "tapyard.fullname" .)) -}}
{{- end -}}

{{- define "tapyard.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
The tap sandbox's needs, in the pod spec. Tap scripts run in bubblewrap, which creates user, pid, network
and mount namespaces and mounts a fresh /proc for the script. Docker (compose.yaml) allows that with
seccomp=unconfined, apparmor=unconfined and systempaths=unconfined; here:
- seccompProfile Unconfined: the runtime's default profile refuses unshare(CLONE_NEWUSER) and mount. The
  sandbox installs a seccomp filter of its own around each script (libs/sandbox/src/seccomp.ts).
- appArmorProfile Unconfined: the runtime's default AppArmor profile refuses mount.
- hostUsers: false and procMount Unmasked (sandbox.userNamespace): the kernel refuses a new /proc while the
  container's /proc has masked paths; Kubernetes allows an unmasked /proc only in a pod with a user
  namespace of its own, which also maps the pod's uids to unprivileged ones on the node.
- Not privileged, no capability, no privilege escalation: bubblewrap is not setuid here, it runs as the
  app's own non-root uid (10001, the image's USER) in a user namespace.
- runAsNonRoot: the apps never need root. As root the sandbox would switch each run to a uid of its own
  and use cgroups; as non-root each run is confined by its user namespace instead (libs/sandbox/README.md).
- readOnlyRootFilesystem: the apps write only to /tmp and TAPYARD_DATA_DIR (virtual environments of tap
  packages, git clones), both emptyDir volumes of the pod's own.
*/}}
{{- define "tapyard.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: Unconfined
appArmorProfile:
  type: Unconfined
{{- end -}}

{{- define "tapyard.containerSecurityContext" -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- if .Values.sandbox.userNamespace }}
procMount: Unmasked
{{- end }}
{{- end -}}

{{- define "tapyard.volumes" -}}
- name: tmp
  emptyDir: {}
- name: data
  emptyDir: {}
{{- end -}}

{{- define "tapyard.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/tapyard
{{- end -}}

{{- define "tapyard.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "tapyard.fullname" . }}-config
  - secretRef:
      name: {{ include "tapyard.secretName" . }}
{{- end -}}

{{/* Restarts pods when the settings they read at boot change. */}}
{{- define "tapyard.checksums" -}}
checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end -}}
