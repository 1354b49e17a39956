# shellcheck shell=bash
# ---------------------------------------------------------------- FerretDB (MongoDB wire protocol, SQLite backend)
# Sourced by scripts/services.
# No MongoDB package exists for this machine; FerretDB v1 speaks the wire protocol over SQLite files.
MONGO_PORT="${TAPYARD_MONGO_PORT:-27017}"
FERRETDB_VERSION=v1.24.0

ferretdb_version_file() { echo "$FERRETDB_VERSION" >build/version/version.txt; }

ferretdb_install() {
  go_build github.com/FerretDB/FerretDB "$FERRETDB_VERSION" ./cmd/ferretdb ferretdb ferretdb_version_file
}

ferretdb_ready() { port_open "$MONGO_PORT"; }

ferretdb_start() {
  ferretdb_install
  if ferretdb_ready; then log "ferretdb already running on 127.0.0.1:$MONGO_PORT"; return 0; fi
  local dir="$TAPYARD_HOME/ferretdb"
  mkdir -p "$dir/data"
  log "starting ferretdb $FERRETDB_VERSION on 127.0.0.1:$MONGO_PORT (data in $dir)"
  start_daemon ferretdb "$dir/ferretdb.log" "$BIN/ferretdb" --handler=sqlite --sqlite-url="file:$dir/data/" \
    --listen-addr="127.0.0.1:$MONGO_PORT" --debug-addr=- --state-dir="$dir" --telemetry=disable --log-level=WARN
  wait_for 30 ferretdb_ready || die "ferretdb did not become ready (see $dir/ferretdb.log)"
}

ferretdb_stop() { stop_daemon ferretdb; }

ferretdb_status() { ferretdb_ready && echo "ferretdb: up (127.0.0.1:$MONGO_PORT)" || echo "ferretdb: down"; }
