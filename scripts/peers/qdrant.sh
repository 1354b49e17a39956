# shellcheck shell=bash
# ---------------------------------------------------------------- Qdrant (real server; no registry ships one)
# Sourced by scripts/services.
# From $TAPYARD_QDRANT_BIN, or the 1.18.3 binary in ../shared/peers/qdrant beside the clone (built from Qdrant's
# public source; see its README), unpacked once into $BIN.
QDRANT_PORT="${TAPYARD_QDRANT_PORT:-6333}"
QDRANT_SHA256=bdd4a474e126ef326d269ff83f103b3508e52efaf4b668c6149cab5333107744

# The binary to run: $TAPYARD_QDRANT_BIN when set (used in place, so changing it takes effect at once), else the
# copy unpacked into $BIN.
qdrant_exe() { if [ -n "${TAPYARD_QDRANT_BIN:-}" ]; then echo "$TAPYARD_QDRANT_BIN"; else echo "$BIN/qdrant"; fi; }

# ../shared beside the clone; from a git worktree elsewhere, also beside the main checkout.
qdrant_packed() {
  local name=shared/peers/qdrant/qdrant-1.18.3-linux-x86_64.xz root common
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  common="$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
  for f in "$root/../$name" ${common:+"$(dirname "$common")/../$name"}; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

qdrant_install() {
  if [ -n "${TAPYARD_QDRANT_BIN:-}" ]; then
    [ -x "$TAPYARD_QDRANT_BIN" ] || die "TAPYARD_QDRANT_BIN=$TAPYARD_QDRANT_BIN is not an executable file"
    return 0
  fi
  [ -x "$BIN/qdrant" ] && [ ! -L "$BIN/qdrant" ] && return 0
  local packed
  packed="$(qdrant_packed)" || die "no Qdrant server: none in \$TAPYARD_QDRANT_BIN, none in ../shared/peers/qdrant beside the clone. \
Get Qdrant 1.18.3 (a release binary from github.com/qdrant/qdrant/releases, or copy /qdrant/qdrant out of the \
Docker image qdrant/qdrant:v1.18.3: docker create --name q qdrant/qdrant:v1.18.3 && docker cp q:/qdrant/qdrant .), \
then run again with TAPYARD_QDRANT_BIN=/path/to/qdrant"
  command -v xz >/dev/null || apt_install xz-utils
  log "unpacking the Qdrant 1.18.3 server from $packed into $BIN (first run only)"
  mkdir -p "$BIN"
  xz -dc "$packed" >"$BIN/qdrant.tmp"
  [ "$(sha256sum "$BIN/qdrant.tmp" | cut -c1-64)" = "$QDRANT_SHA256" ] || { rm -f "$BIN/qdrant.tmp"; die "the unpacked Qdrant binary does not match its sha256"; }
  chmod +x "$BIN/qdrant.tmp" && mv -f "$BIN/qdrant.tmp" "$BIN/qdrant"
}

qdrant_ready() { curl -fsS "http://127.0.0.1:$QDRANT_PORT/readyz" >/dev/null 2>&1; }

qdrant_start() {
  qdrant_install
  if qdrant_ready; then log "qdrant already running on 127.0.0.1:$QDRANT_PORT"; return 0; fi
  local dir="$TAPYARD_HOME/qdrant"
  mkdir -p "$dir/storage" "$dir/snapshots"
  log "starting qdrant on 127.0.0.1:$QDRANT_PORT (data in $dir)"
  (cd "$dir" && QDRANT__SERVICE__HOST=127.0.0.1 QDRANT__SERVICE__HTTP_PORT="$QDRANT_PORT" \
    QDRANT__SERVICE__GRPC_PORT="$((QDRANT_PORT + 1))" QDRANT__STORAGE__STORAGE_PATH="$dir/storage" \
    QDRANT__STORAGE__SNAPSHOTS_PATH="$dir/snapshots" QDRANT__TELEMETRY_DISABLED=true QDRANT__LOG_LEVEL=WARN \
    start_daemon qdrant "$dir/qdrant.log" "$(qdrant_exe)")
  wait_for 30 qdrant_ready || die "qdrant did not become ready (see $dir/qdrant.log)"
}

qdrant_stop() { stop_daemon qdrant; }

qdrant_status() { qdrant_ready && echo "qdrant: up (127.0.0.1:$QDRANT_PORT)" || echo "qdrant: down"; }

qdrant_fields() { printf '{"url":"http://127.0.0.1:%s"}\n' "$QDRANT_PORT"; }
