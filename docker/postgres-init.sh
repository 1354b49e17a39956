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
# Each tenant environment's natural-language SQL runs as a role of its own, which this function (owned
# by the superuser; the platform's role may not create roles) creates: NOLOGIN, no attributes.
psql -v ON_ERROR_STOP=1 --username postgres --dbname tapyard <<'SQL'
CREATE SCHEMA IF NOT EXISTS tapyard AUTHORIZATION tapyard;
CREATE FUNCTION tapyard.query_role(environment text) RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
DECLARE
  r text := 'tapyard_q_' || left(md5(environment), 16);
BEGIN
  IF environment IS NULL OR environment !~ '^[a-z][a-z0-9_-]{0,39}$' THEN
    RAISE EXCEPTION 'not an environment name: %', environment;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
    BEGIN
      EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', r);
    EXCEPTION WHEN duplicate_object THEN
      NULL; -- created meanwhile from another database of the cluster
    END;
  END IF;
  EXECUTE format('GRANT %I TO tapyard', r);
  RETURN r;
END
$body$;
REVOKE ALL ON FUNCTION tapyard.query_role(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tapyard.query_role(text) TO tapyard;
SQL
