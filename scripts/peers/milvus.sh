# shellcheck shell=bash
# ---------------------------------------------------------------- Milvus (Milvus Lite's native server, from PyPI)
# Sourced by scripts/services.
# PyPI milvus-lite 2.5.1 ships the Milvus Lite server binary (gRPC, the API of the Node SDK); it runs here on a
# loopback address instead of the Unix socket pymilvus would give it.
MILVUS_PORT="${TAPYARD_MILVUS_PORT:-19530}"
MILVUS_VERSION=2.5.1

milvus_lib() { ls -d "$TAPYARD_HOME"/venvs/milvus/lib/python3*/site-packages/milvus_lite/lib 2>/dev/null | head -n 1; }

milvus_install() { pip_venv milvus "milvus-lite==$MILVUS_VERSION"; [ -x "$(milvus_lib)/milvus" ] || die "milvus-lite $MILVUS_VERSION has no server binary"; }

milvus_ready() { port_open "$MILVUS_PORT"; }

milvus_start() {
  milvus_install
  if milvus_ready; then log "milvus already running on 127.0.0.1:$MILVUS_PORT"; return 0; fi
  local dir="$TAPYARD_HOME/milvus" lib; lib=$(milvus_lib)
  mkdir -p "$dir"
  log "starting milvus lite $MILVUS_VERSION on 127.0.0.1:$MILVUS_PORT (data in $dir)"
  (cd "$dir" && LD_LIBRARY_PATH="$lib" start_daemon milvus "$dir/milvus.log" "$lib/milvus" "$dir/milvus.db" "127.0.0.1:$MILVUS_PORT" ERROR)
  wait_for 30 milvus_ready || die "milvus did not become ready (see $dir/milvus.log)"
}

milvus_stop() { stop_daemon milvus; }

milvus_status() { milvus_ready && echo "milvus: up (127.0.0.1:$MILVUS_PORT)" || echo "milvus: down"; }

milvus_fields() { printf '{"url":"http://127.0.0.1:%s"}\n' "$MILVUS_PORT"; }
