#!/bin/sh
# Runs once, when the Postgres volume is first created: the platform's own role is not a superuser
# (no COPY ... TO PROGRAM, no reading server files) and owns only its database.
set -eu
psql -v ON_ERROR_STOP=1 --username postgres -v pw="$TAPYARD_DB_PASSWORD" <<'SQL'
CREATE ROLE tapyard LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'pw';
-- Natural-language SQL runs as this role: no login, only the SELECT grants the platform gives it.
CREATE ROLE tapyard_query NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
GRANT tapyard_query TO tapyard;
CREATE DATABASE tapyard OWNER tapyard;
REVOKE ALL ON DATABASE postgres FROM PUBLIC;
SQL
psql -v ON_ERROR_STOP=1 --username postgres --dbname tapyard -c 'CREATE EXTENSION IF NOT EXISTS vector'
