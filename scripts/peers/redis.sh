# shellcheck shell=bash
# ---------------------------------------------------------------- Redis (Debian package)
# Sourced by scripts/services.
REDIS_PORT="${TAPYARD_REDIS_PORT:-6379}"

redis_install() { command -v redis-server >/dev/null || apt_install redis-server; }

redis_cli() { REDISCLI_AUTH="$TAPYARD_REDIS_PASSWORD" redis-cli --no-auth-warning -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

redis_ready() { [ "$(redis_cli ping 2>/dev/null)" = "PONG" ]; }

redis_start() {
  redis_install
  if redis_ready; then
    log "redis already running on 127.0.0.1:$REDIS_PORT"
    # One started by an earlier version of this script has no password: give it ours.
    if [ -z "$(redis_cli config get requirepass 2>/dev/null | sed -n 2p)" ]; then
      log "redis had no password; setting one"
      redis_cli config set requirepass "$TAPYARD_REDIS_PASSWORD" >/dev/null 2>&1
    fi
    return 0
  fi
  local dir="$TAPYARD_HOME/redis"
  mkdir -p "$dir"
  log "starting redis on 127.0.0.1:$REDIS_PORT (data in $dir)"
  # BullMQ needs noeviction; AOF off keeps CI fast, RDB snapshots keep dev data across restarts. The
  # password comes from a config file, never the command line (where /proc would show it).
  (umask 077 && printf 'requirepass %s\n' "$TAPYARD_REDIS_PASSWORD" >"$dir/auth.conf")
  redis-server "$dir/auth.conf" --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --dir "$dir" \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --maxmemory-policy noeviction \
    --protected-mode yes --save 60 1000
  wait_for 10 redis_ready || die "redis did not become ready (see $dir/redis.log)"
}

redis_stop() { redis_ready && redis_cli shutdown nosave >/dev/null 2>&1 || true; }

redis_status() { redis_ready && echo "redis: up (127.0.0.1:$REDIS_PORT)" || echo "redis: down"; }
