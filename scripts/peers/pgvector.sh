# shellcheck shell=bash
# ---------------------------------------------------------------- pgvector (PostgreSQL 16 + pgvector from PyPI)
# Sourced by scripts/services.
# Debian 12 has no pgvector package; PyPI `pgserver` bundles PostgreSQL 16.2 with pgvector 0.6.2. It runs as a
# second server beside the platform's: the embedded default vector store (`npm run up` points PGVECTOR_URL at it).
PGVECTOR_PORT="${TAPYARD_PGVECTOR_PORT:-5433}"
PGSERVER_VERSION=0.1.4
# The server may not run as root, and the postgres user cannot enter root's home: as root, the binaries
# and data live where that user can read them.
if [ "$(id -u)" = 0 ]; then PGVECTOR_HOME="${TAPYARD_PGVECTOR_HOME:-/var/lib/tapyard/pgvector}"
else PGVECTOR_HOME="${TAPYARD_PGVECTOR_HOME:-$TAPYARD_HOME/pgvector}"; fi

pgvector_as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# The wheel's binaries find their libraries at $ORIGIN/../../../pgserver.libs: the copy keeps that layout.
PGVECTOR_PG="$PGVECTOR_HOME/site/pgserver/pginstall"

pgvector_install() {
  [ -f "$PGVECTOR_HOME/site/.version-$PGSERVER_VERSION" ] && return 0
  pip_venv pgserver "pgserver==$PGSERVER_VERSION"
  local site
  site=$(ls -d "$TAPYARD_HOME"/venvs/pgserver/lib/python3*/site-packages | head -n 1)
  [ -x "$site/pgserver/pginstall/bin/postgres" ] || die "pgserver $PGSERVER_VERSION has no PostgreSQL binaries in $site"
  [ "$(id -u)" != 0 ] || id postgres >/dev/null 2>&1 || postgres_install
  rm -rf "$PGVECTOR_HOME/site" && mkdir -p "$PGVECTOR_HOME/site/pgserver"
  cp -r "$site/pgserver/pginstall" "$PGVECTOR_HOME/site/pgserver/" && cp -r "$site/pgserver.libs" "$PGVECTOR_HOME/site/"
  chmod -R a+rX "$PGVECTOR_HOME/site"
  touch "$PGVECTOR_HOME/site/.version-$PGSERVER_VERSION"
}

pgvector_ready() { "$PGVECTOR_PG/bin/pg_isready" -q -h 127.0.0.1 -p "$PGVECTOR_PORT" 2>/dev/null; }

pgvector_psql() {
  PGPASSWORD="$TAPYARD_PGVECTOR_PASSWORD" PGOPTIONS='-c client_min_messages=warning' "$PGVECTOR_PG/bin/psql" -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$PGVECTOR_PORT" -U tapyard_admin "$@"
}

pgvector_start() {
  pgvector_install
  local data="$PGVECTOR_HOME/data"
  if [ ! -f "$data/PG_VERSION" ]; then
    log "initialising the pgvector server in $data"
    mkdir -p "$data" && { [ "$(id -u)" != 0 ] || chown postgres: "$PGVECTOR_HOME" "$data"; }
    chmod 700 "$data"
    local pw; pw=$(mktemp) && printf '%s\n' "$TAPYARD_PGVECTOR_PASSWORD" >"$pw" && chmod 644 "$pw"
    pgvector_as_owner "$PGVECTOR_PG/bin/initdb" -D "$data" -U tapyard_admin --pwfile="$pw" \
      --auth=scram-sha-256 -E UTF8 --locale=C >/dev/null || { rm -f "$pw"; die "initdb failed for pgvector"; }
    rm -f "$pw"
  fi
  if pgvector_ready; then
    log "pgvector already running on 127.0.0.1:$PGVECTOR_PORT"
  else
    log "starting pgvector (PostgreSQL 16 + pgvector) on 127.0.0.1:$PGVECTOR_PORT (data in $data)"
    pgvector_as_owner "$PGVECTOR_PG/bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$PGVECTOR_PORT -c unix_socket_directories='' -c max_connections=200" \
      start >/dev/null || die "pgvector did not start (see $data/server.log)"
  fi
  # The platform's role owns its database and may create tables; the extension is made by the admin.
  # One caller at a time (test workers ask at once): two concurrent ALTER ROLEs fail with "tuple
  # concurrently updated". Only psql runs under the lock, so no daemon inherits its descriptor.
  {
    flock 9
    pgvector_psql -d postgres -v pw="$TAPYARD_PGVECTOR_PASSWORD" <<'SQL' >/dev/null
SELECT 'CREATE ROLE tapyard LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tapyard') \gexec
SELECT format('ALTER ROLE tapyard LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L', :'pw') \gexec
SELECT 'CREATE DATABASE tapyard_vectors OWNER tapyard'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tapyard_vectors') \gexec
SQL
    pgvector_psql -d tapyard_vectors -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
  } 9>"$TAPYARD_HOME/.pgvector-setup.lock"
}

pgvector_stop() {
  [ -f "$PGVECTOR_HOME/data/PG_VERSION" ] || return 0
  pgvector_ready && pgvector_as_owner "$PGVECTOR_PG/bin/pg_ctl" -D "$PGVECTOR_HOME/data" -m fast stop >/dev/null || true
}

pgvector_status() { pgvector_ready && echo "pgvector: up (127.0.0.1:$PGVECTOR_PORT)" || echo "pgvector: down"; }

pgvector_url() { echo "postgres://tapyard:$TAPYARD_PGVECTOR_PASSWORD@127.0.0.1:$PGVECTOR_PORT/tapyard_vectors"; }

pgvector_fields() { printf '{"connectionString":"%s"}\n' "$(pgvector_url)"; }
