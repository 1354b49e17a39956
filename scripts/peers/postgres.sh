# shellcheck shell=bash
# ---------------------------------------------------------------- PostgreSQL (Debian package)
# Sourced by scripts/services.
PG_PORT="${TAPYARD_PG_PORT:-5432}"
PG_CLUSTER="${TAPYARD_PG_CLUSTER:-main}"

pg_version() { ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1; }

postgres_install() {
  if [ -z "$(pg_version)" ] || ! command -v pg_ctlcluster >/dev/null; then
    apt_install postgresql postgresql-contrib
  fi
}

postgres_ready() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; }

# The cluster's superuser through its Unix socket and peer authentication: no password to keep.
pg_admin() { runuser -u postgres -- psql -X -q -p "$PG_PORT" -v ON_ERROR_STOP=1 "$@"; }

postgres_configure() {
  local v; v=$(pg_version)
  local conf="/etc/postgresql/$v/$PG_CLUSTER"
  [ -d "$conf" ] || { log "creating cluster $v/$PG_CLUSTER"; pg_createcluster "$v" "$PG_CLUSTER" >/dev/null; }
  # Debian's rules: peer on the socket, passwords (scram) on loopback. Earlier versions of this script put
  # "trust" lines first; they are taken out.
  local hba="$conf/pg_hba.conf"
  if grep -q '# tapyard-loopback-trust' "$hba"; then
    log "removing passwordless loopback access from $hba"
    local tmp; tmp=$(mktemp)
    grep -v -e '# tapyard-loopback-trust' -e '^host all all 127.0.0.1/32 trust$' -e '^host all all ::1/128 trust$' \
      -e '^local all all trust$' "$hba" >"$tmp"
    cat "$tmp" >"$hba" && rm -f "$tmp"
    postgres_ready && pg_ctlcluster "$v" "$PG_CLUSTER" reload
  fi
  local custom="$conf/conf.d/tapyard.conf"
  mkdir -p "$conf/conf.d"
  if [ ! -f "$custom" ]; then
    cat >"$custom" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
max_connections = 300
fsync = on
CONF
  fi
  # Two COPY streams per large load (PG_COPY_STREAMS) join through prepared transactions. The server
  # reads this at start only: postgres_start restarts a running one that has it off.
  if ! grep -q '^max_prepared_transactions' "$custom"; then
    echo 'max_prepared_transactions = 64' >>"$custom"
  fi
}

# The platform's role: a password, no superuser (no COPY ... TO PROGRAM, no server files, no other roles),
# owner of its own databases and of what earlier runs created there as the superuser.
postgres_secure() {
  local user=$TAPYARD_PG_USER
  pg_admin -v user="$user" -v pw="$TAPYARD_PG_PASSWORD" <<'SQL' >/dev/null
SELECT format('CREATE ROLE %I LOGIN', :'user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'user') \gexec
SELECT format('ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD %L', :'user', :'pw') \gexec
-- Natural-language SQL runs as this role: no login, nothing but the SELECT grants the platform gives it.
SELECT 'CREATE ROLE tapyard_query NOLOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tapyard_query') \gexec
ALTER ROLE tapyard_query NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
SELECT format('GRANT tapyard_query TO %I', :'user') \gexec
SQL
  for db in tapyard tapyard_test; do
    if ! pg_admin -Atc "select 1 from pg_database where datname='$db'" | grep -q 1; then
      pg_admin -c "create database $db owner \"$user\"" >/dev/null
    fi
    pg_admin -d "$db" -v user="$user" <<'SQL' >/dev/null
SELECT format('ALTER DATABASE %I OWNER TO %I', current_database(), :'user') \gexec
SELECT format('ALTER SCHEMA %I OWNER TO %I', nspname, :'user') FROM pg_namespace
  WHERE nspowner = 'postgres'::regrole AND nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema' \gexec
SELECT format('ALTER TABLE %s OWNER TO %I', c.oid::regclass, :'user') FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relowner = 'postgres'::regrole AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema' \gexec
SELECT format('ALTER SEQUENCE %s OWNER TO %I', c.oid::regclass, :'user') FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relowner = 'postgres'::regrole AND c.relkind = 'S'
    AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')) \gexec
-- Each tenant environment's natural-language SQL runs as a role of its own. The platform's role may
-- not create roles (CREATEROLE would let it grant itself far more): this function, owned by the
-- superuser, creates only NOLOGIN roles without attributes, named from the environment, and grants
-- them to the platform's role. Only the platform's role may call it.
SELECT format('CREATE SCHEMA IF NOT EXISTS tapyard AUTHORIZATION %I', :'user') \gexec
SELECT format($fmt$
CREATE OR REPLACE FUNCTION tapyard.query_role(environment text) RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
DECLARE
  r text := 'tapyard_q_' || left(md5(environment), 16);
BEGIN
  IF environment IS NULL OR environment !~ '^[a-z][a-z0-9_-]{0,39}$' THEN
    RAISE EXCEPTION 'not an environment name: %%', environment;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
    BEGIN
      EXECUTE format('CREATE ROLE %%I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', r);
    EXCEPTION WHEN duplicate_object THEN
      NULL; -- created meanwhile from another database of the cluster
    END;
  END IF;
  EXECUTE format('GRANT %%I TO %%I', r, %L);
  RETURN r;
END
$body$$fmt$, :'user') \gexec
REVOKE ALL ON FUNCTION tapyard.query_role(text) FROM PUBLIC;
SELECT format('GRANT EXECUTE ON FUNCTION tapyard.query_role(text) TO %I', :'user') \gexec
SQL
  done
}

# One caller at a time (`scripts/services up` run at once by several processes): concurrent ALTER ROLEs
# fail with "tuple concurrently updated". Only psql runs under the lock, so no daemon inherits it.
postgres_secure_once() {
  { flock 9; postgres_secure; } 9>"$TAPYARD_HOME/.postgres-setup.lock"
}

postgres_start() {
  postgres_install
  postgres_configure
  if postgres_ready && [ "$(pg_admin -Atc 'show max_prepared_transactions')" = 0 ]; then
    # A server started before the setting was written (an older checkout, or Debian's own start at install)
    # would load on one COPY stream for ever: restarted once, it reads it.
    local v; v=$(pg_version)
    log "restarting postgres $v for max_prepared_transactions (two COPY streams per large load)"
    pg_ctlcluster "$v" "$PG_CLUSTER" restart || true
    wait_for 30 postgres_ready || die "postgres did not become ready (see /var/log/postgresql/)"
  elif postgres_ready; then
    log "postgres already running on 127.0.0.1:$PG_PORT"
  else
    local v; v=$(pg_version)
    log "starting postgres $v on 127.0.0.1:$PG_PORT"
    pg_ctlcluster "$v" "$PG_CLUSTER" start || true
    wait_for 30 postgres_ready || die "postgres did not become ready (see /var/log/postgresql/)"
  fi
  postgres_secure_once
}

postgres_stop() {
  local v; v=$(pg_version)
  [ -n "$v" ] || return 0
  postgres_ready && pg_ctlcluster "$v" "$PG_CLUSTER" stop || true
}

postgres_status() { postgres_ready && echo "postgres: up (127.0.0.1:$PG_PORT)" || echo "postgres: down"; }
