# shellcheck shell=bash
# ---------------------------------------------------------------- MinIO (S3 API)
# Sourced by scripts/services.
# The MinIO repository is archived; its last commit is what the module proxy serves.
MINIO_PORT="${TAPYARD_MINIO_PORT:-9000}"
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

minio_install() { go_build github.com/minio/minio "$MINIO_VERSION" . minio; }

minio_ready() { curl -fsS "http://127.0.0.1:$MINIO_PORT/minio/health/ready" >/dev/null 2>&1; }

minio_credentials_mark() { printf '%s:%s' "$TAPYARD_MINIO_USER" "$TAPYARD_MINIO_PASSWORD" | sha256sum | cut -c1-64; }

minio_start() {
  minio_install
  local dir="$TAPYARD_HOME/minio"
  if minio_ready; then
    if [ "$(cat "$dir/credentials.sha256" 2>/dev/null)" = "$(minio_credentials_mark)" ]; then
      log "minio already running on 127.0.0.1:$MINIO_PORT"
      return 0
    fi
    # Started with other credentials (an earlier version of this script used a published default).
    [ -f "$TAPYARD_HOME/minio.pid" ] || die "a minio we did not start runs on 127.0.0.1:$MINIO_PORT"
    log "restarting minio with the generated credentials"
    stop_daemon minio
    wait_for 30 bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$MINIO_PORT) 2>/dev/null" || die "minio did not stop"
  fi
  mkdir -p "$dir/data"
  log "starting minio on 127.0.0.1:$MINIO_PORT (data in $dir)"
  # The scanner (usage accounting, lifecycle, healing) serves nothing a local peer needs, and at its default
  # speed it took most of a core once the store held many buckets: slowest leaves the 2 cores to the work.
  MINIO_ROOT_USER="$TAPYARD_MINIO_USER" MINIO_ROOT_PASSWORD="$TAPYARD_MINIO_PASSWORD" MINIO_BROWSER=off \
    MINIO_SCANNER_SPEED=slowest start_daemon minio "$dir/minio.log" "$BIN/minio" server "$dir/data" --quiet \
    --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$((MINIO_PORT + 1))"
  wait_for 60 minio_ready || die "minio did not become ready (see $dir/minio.log)"
  minio_credentials_mark >"$dir/credentials.sha256"
}

minio_stop() { stop_daemon minio; }

minio_status() { minio_ready && echo "minio: up (127.0.0.1:$MINIO_PORT)" || echo "minio: down"; }
