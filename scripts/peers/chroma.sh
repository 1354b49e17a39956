# shellcheck shell=bash
# ---------------------------------------------------------------- Chroma (PyPI chromadb server)
# Sourced by scripts/services.
CHROMA_PORT="${TAPYARD_CHROMA_PORT:-8000}"
CHROMA_VERSION=1.5.9

chroma_install() { pip_venv chroma "chromadb==$CHROMA_VERSION"; }

chroma_ready() { curl -fsS "http://127.0.0.1:$CHROMA_PORT/api/v2/heartbeat" >/dev/null 2>&1; }

chroma_start() {
  chroma_install
  if chroma_ready; then log "chroma already running on 127.0.0.1:$CHROMA_PORT"; return 0; fi
  local dir="$TAPYARD_HOME/chroma"
  mkdir -p "$dir/data"
  log "starting chroma $CHROMA_VERSION on 127.0.0.1:$CHROMA_PORT (data in $dir)"
  ANONYMIZED_TELEMETRY=False start_daemon chroma "$dir/chroma.log" "$TAPYARD_HOME/venvs/chroma/bin/chroma" run \
    --path "$dir/data" --host 127.0.0.1 --port "$CHROMA_PORT"
  wait_for 60 chroma_ready || die "chroma did not become ready (see $dir/chroma.log)"
}

chroma_stop() { stop_daemon chroma; }

chroma_status() { chroma_ready && echo "chroma: up (127.0.0.1:$CHROMA_PORT)" || echo "chroma: down"; }

chroma_fields() { printf '{"url":"http://127.0.0.1:%s"}\n' "$CHROMA_PORT"; }
