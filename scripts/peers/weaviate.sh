# shellcheck shell=bash
# ---------------------------------------------------------------- Weaviate (built from its module on the Go proxy)
# Sourced by scripts/services.
# Weaviate binds its gRPC and cluster data ports on every interface (v1.35.2 has no setting for them); HTTP,
# gossip and raft are on loopback.
WEAVIATE_VERSION=v1.35.2
WEAVIATE_PORT="${TAPYARD_WEAVIATE_PORT:-8079}"
WEAVIATE_GRPC_PORT="${TAPYARD_WEAVIATE_GRPC_PORT:-50051}"

weaviate_install() { go_build github.com/weaviate/weaviate "$WEAVIATE_VERSION" ./cmd/weaviate-server weaviate-server; }

weaviate_ready() { curl -fsS "http://127.0.0.1:$WEAVIATE_PORT/v1/.well-known/ready" >/dev/null 2>&1; }

weaviate_start() {
  weaviate_install
  if weaviate_ready; then log "weaviate already running on 127.0.0.1:$WEAVIATE_PORT"; return 0; fi
  local dir="$TAPYARD_HOME/weaviate"
  mkdir -p "$dir/data"
  log "starting weaviate $WEAVIATE_VERSION on 127.0.0.1:$WEAVIATE_PORT, gRPC $WEAVIATE_GRPC_PORT (data in $dir)"
  (cd "$dir" && AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true DEFAULT_VECTORIZER_MODULE=none ENABLE_MODULES= \
    CLUSTER_HOSTNAME=node1 CLUSTER_ADVERTISE_ADDR=127.0.0.1 CLUSTER_BIND_ADDR=127.0.0.1 CLUSTER_GOSSIP_BIND_PORT=7946 CLUSTER_DATA_BIND_PORT=7947 \
    RAFT_PORT=8300 RAFT_INTERNAL_RPC_PORT=8301 RAFT_JOIN=node1 RAFT_BOOTSTRAP_EXPECT=1 \
    GRPC_PORT="$WEAVIATE_GRPC_PORT" PERSISTENCE_DATA_PATH="$dir/data" DISABLE_TELEMETRY=true LOG_LEVEL=warning \
    QUERY_DEFAULTS_LIMIT=100 GO_PROFILING_DISABLE=true \
    start_daemon weaviate "$dir/weaviate.log" "$BIN/weaviate-server" --host 127.0.0.1 --port "$WEAVIATE_PORT" --scheme http)
  wait_for 90 weaviate_ready || die "weaviate did not become ready (see $dir/weaviate.log)"
}

weaviate_stop() { stop_daemon weaviate; }

weaviate_status() { weaviate_ready && echo "weaviate: up (127.0.0.1:$WEAVIATE_PORT)" || echo "weaviate: down"; }

weaviate_fields() { printf '{"url":"http://127.0.0.1:%s","grpcPort":"%s"}\n' "$WEAVIATE_PORT" "$WEAVIATE_GRPC_PORT"; }
