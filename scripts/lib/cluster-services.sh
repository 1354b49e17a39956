# The cluster's services host: PostgreSQL + pgvector, Redis and MinIO in its namespace, bound to .1 only.
# Sourced by scripts/cluster (its globals: NAME, SUBNET, STATE, ROOT...); see the usage there.

PG_DIR() { echo "$STATE/services/postgres"; }

pg_run() { nsenter --net="/run/netns/$(ns_of svc)" -- runuser -u postgres -- "$@"; }

# The superuser through the cluster's own socket (peer authentication): what postgres_secure runs its SQL with.
pg_admin() { runuser -u postgres -- "$PGVECTOR_PG/bin/psql" -X -q -h "$(PG_DIR)/run" -p 5432 -v ON_ERROR_STOP=1 "$@"; }

postgres_up() {
  local dir; dir=$(PG_DIR)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    pgvector_install
    mkdir -p "$dir/data" "$dir/run" && chown postgres: "$dir" "$dir/data" "$dir/run" && chmod 700 "$dir/data"
    runuser -u postgres -- "$PGVECTOR_PG/bin/initdb" -D "$dir/data" -U postgres --auth-local=peer \
      --auth-host=scram-sha-256 -E UTF8 --locale=C >/dev/null || fail "initdb failed"
    echo "host all all $SUBNET.0/24 scram-sha-256" >>"$dir/data/pg_hba.conf"
  fi
  if ! postgres_answers; then
    pg_run "$PGVECTOR_PG/bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=$SUBNET.1 -c port=5432 -c unix_socket_directories=$dir/run -c max_connections=300 -c max_prepared_transactions=64" \
      start >/dev/null || fail "postgres did not start (see $dir/server.log)"
  fi
  [ -f "$dir/.secured" ] && return 0
  TAPYARD_PG_USER=tapyard TAPYARD_PG_PASSWORD="$PG_PASSWORD" postgres_secure
  pg_admin -d postgres <<'SQL' >/dev/null
SELECT 'CREATE DATABASE tapyard_vectors OWNER tapyard'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tapyard_vectors') \gexec
SQL
  pg_admin -d tapyard_vectors -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
  touch "$dir/.secured"
}

postgres_answers() { "$PGVECTOR_PG/bin/pg_isready" -q -h "$SUBNET.1" -p 5432 2>/dev/null; }

postgres_down() {
  [ -f "$(PG_DIR)/data/postmaster.pid" ] || return 0
  pg_run "$PGVECTOR_PG/bin/pg_ctl" -D "$(PG_DIR)/data" -m fast -t 30 stop >/dev/null 2>&1 || true
}

redis_answers() { [ "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli --no-auth-warning -h "$SUBNET.1" -p 6379 ping 2>/dev/null)" = PONG ]; }

redis_up() {
  redis_install
  redis_answers && return 0
  local dir="$STATE/services/redis"
  mkdir -p "$dir" && chmod 700 "$dir"
  (umask 077 && printf 'requirepass %s\n' "$REDIS_PASSWORD" >"$dir/auth.conf")
  # Snapshots on shutdown keep the queues across restart-service, as a real Redis restart would.
  nsenter --net="/run/netns/$(ns_of svc)" -- redis-server "$dir/auth.conf" --bind "$SUBNET.1" --port 6379 \
    --daemonize yes --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
    --maxmemory-policy noeviction --protected-mode yes --save 60 1000
  wait_for 20 redis_answers || fail "redis did not become ready (see $dir/redis.log)"
}

redis_down() {
  local pidfile="$STATE/services/redis/redis.pid"
  [ -f "$pidfile" ] || return 0
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  wait_for 20 bash -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

minio_answers() { curl -fsS -m 2 "http://$SUBNET.1:9000/minio/health/ready" >/dev/null 2>&1; }

minio_up() {
  minio_install
  minio_answers && return 0
  local dir="$STATE/services/minio"
  mkdir -p "$dir/data" && chmod 700 "$dir"
  # Credentials through the environment, never the command line.
  (
    export MINIO_ROOT_USER=tapyard MINIO_ROOT_PASSWORD="$MINIO_PASSWORD" MINIO_BROWSER=off
    setsid nsenter --net="/run/netns/$(ns_of svc)" -- "$BIN/minio" server "$dir/data" --quiet \
      --address "$SUBNET.1:9000" --console-address "$SUBNET.1:9001" >>"$dir/minio.log" 2>&1 </dev/null &
    echo $! >"$dir/minio.pid"
  )
  wait_for 60 minio_answers || fail "minio did not become ready (see $dir/minio.log)"
}

minio_down() {
  local pidfile="$STATE/services/minio/minio.pid"
  [ -f "$pidfile" ] || return 0
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  wait_for 20 bash -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

service_cmd() { # service_cmd <up|down> <service>
  case "$2" in
    postgres | redis | minio) "$2_$1" ;;
    *) fail "unknown service '$2' (postgres, redis, minio)" ;;
  esac
}

