# shellcheck shell=bash
# ---------------------------------------------------------------- chart tools (not a server): helm + schemas
# Sourced by scripts/services. The Helm chart in deploy/helm/tapyard is checked with `helm lint`, `helm template`
# and a strict schema check of what it renders. helm is built from its module on the Go proxy; the Kubernetes
# JSON schemas (strict variants: an unknown field is an error) ship inside PyPI's kubernetes-validate, which
# checks them offline. Both are installed once under $TAPYARD_HOME; `up helm` prints, as its last line, where.
HELM_VERSION=v3.22.0
KUBERNETES_VALIDATE_VERSION=1.37.0

helm_install() {
  go_build helm.sh/helm/v3 "$HELM_VERSION" ./cmd/helm helm
  pip_venv kubevalidate "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
}

helm_ready() {
  [ -x "$BIN/helm" ] && [ -x "$TAPYARD_HOME/venvs/kubevalidate/bin/kubernetes-validate" ]
}

helm_start() { helm_install; helm_ready || die "the chart tools are incomplete under $TAPYARD_HOME"; }

helm_stop() { :; }

helm_status() {
  if helm_ready; then echo "helm: $("$BIN/helm" version --short 2>/dev/null), kubernetes-validate $KUBERNETES_VALIDATE_VERSION"
  else echo "helm: not installed (scripts/services up helm)"; fi
}

helm_fields() {
  printf '{"helm":"%s","kubernetesValidate":"%s"}\n' "$BIN/helm" "$TAPYARD_HOME/venvs/kubevalidate/bin/kubernetes-validate"
}
