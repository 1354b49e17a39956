# The cluster's app hosts: their environment, their bwrap root, starting and waiting for their app.
# Sourced by scripts/cluster (its globals: NAME, SUBNET, STATE, ROOT...); see the usage there.

# The environment of every app process: the services host's addresses and credentials, one master key, the
# private paths, then the caller's --env-file lines.
write_app_env() {
  local file="$STATE/app.env"
  (
    umask 077
    {
      q() { printf "export %s='%s'\n" "$1" "${2//\'/\'\\\'\'}"; }
      q TAPYARD_ENV "$TAPYARD_ENV"
      q TAPYARD_MASTER_KEY "$MASTER_KEY"
      q DATABASE_URL "postgres://tapyard:$PG_PASSWORD@$SUBNET.1:5432/tapyard"
      q PGVECTOR_URL "postgres://tapyard:$PG_PASSWORD@$SUBNET.1:5432/tapyard_vectors"
      q REDIS_URL "redis://:$REDIS_PASSWORD@$SUBNET.1:6379"
      q OBJECT_STORE_ENDPOINT "http://$SUBNET.1:9000"
      q OBJECT_STORE_ACCESS_KEY tapyard
      q OBJECT_STORE_SECRET_KEY "$MINIO_PASSWORD"
      q TAPYARD_DATA_DIR "$HOST_DATA"
      q TAPYARD_SPOOL_DIR "$HOST_DATA/spool"
      q CODE_REPOSITORY_CACHE "$HOST_DATA/git"
      q TAP_VENV_DIR "$HOST_DATA/venvs"
      q EMBEDDING_MODEL_DIR "$MODEL_DIR"
      q HOME "$HOST_DATA"
      q PATH /usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin
      if [ -f "$STATE/extra.env" ]; then
        local line
        while IFS= read -r line || [ -n "$line" ]; do
          [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] && q "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
        done <"$STATE/extra.env"
      fi
    } >"$file"
  )
}

# The bwrap arguments of a host's root: the system and the repository read-only, its own /tmp and data.
view_args() {
  local host=$1 dir="$STATE/hosts/$1" d
  local -a args=(--unshare-uts --hostname "$NAME-$host" --unshare-ipc --dev /dev --proc /proc --bind /sys /sys)
  for d in /usr /etc /opt; do [ -d "$d" ] && args+=(--ro-bind "$d" "$d"); done
  for d in /bin /sbin /lib /lib32 /lib64 /libx32; do
    if [ -L "$d" ]; then args+=(--symlink "$(readlink "$d")" "$d"); elif [ -d "$d" ]; then args+=(--ro-bind "$d" "$d"); fi
  done
  # The sandbox's uid leases: one kernel, so one set of leases for every host (separate machines need none).
  # The directory is the sandbox's own (it makes it on first use), so it stays after `down`.
  mkdir -p /run/tapyard
  args+=(--bind /run/tapyard /run/tapyard)
  args+=(--bind "$dir/tmp" /tmp --bind "$dir/data" "$HOST_DATA" --ro-bind "$STATE/app.env" /run/tapyard-cluster.env)
  # After the private /tmp: a checkout (or its builds, models) under /tmp stays visible over it.
  args+=(--ro-bind "$ROOT" "$ROOT")
  local modules; modules=$(readlink -f "$ROOT/node_modules")
  [[ "$modules" == "$ROOT"/* ]] || args+=(--ro-bind "$modules" "$modules")
  [ -d "$MODEL_DIR" ] && args+=(--ro-bind "$MODEL_DIR" "$MODEL_DIR")
  # The Node that runs the apps (run_app), wherever it is installed.
  local node_home; node_home=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
  case "$node_home" in "$ROOT"/* | "$modules"/* | /usr/* | /opt/*) ;; *) args+=(--ro-bind "$node_home" "$node_home") ;; esac
  args+=(--chdir "$HOST_DATA")
  printf '%s\0' "${args[@]}"
}

# in_view <host> <command...>: runs in the host's namespace and root (stdio inherited).
in_view() {
  local host=$1; shift
  local -a view
  mapfile -d '' view < <(view_args "$host")
  exec nsenter --net="/run/netns/$(ns_of "$host")" -- bwrap "${view[@]}" -- /bin/sh -c \
    'set -a; . /run/tapyard-cluster.env; set +a; exec "$@"' sh "$@"
}

app_running() { [ -n "$(ip netns pids "$(ns_of "$1")" 2>/dev/null)" ]; }

start_app() { # start_app <host>: the host (made if new) and its app, in the background
  local host=$1 app dir="$STATE/hosts/$1"
  case "$host" in api) app=api ;; w[0-9]*) app=worker ;; *) fail "not an app host: '$host' (api, w1, w2...)" ;; esac
  app_running "$host" && return 0
  mkdir -p "$dir/tmp" "$dir/data" && chmod 1777 "$dir/tmp" && chmod 700 "$dir/data"
  make_netns "$host"
  printf '\n[cluster] %s: starting %s\n' "$(date -u +%FT%TZ)" "$app" >>"$dir/app.log"
  # Detached (its own session, output to the log), so it outlives this command.
  setsid "$ROOT/scripts/cluster" --name "$NAME" __app "$host" >>"$dir/app.log" 2>&1 </dev/null &
  echo $! >"$dir/app.pid"
}

run_app() { # run_app <host>: becomes the host's bwrap (its pid is the host's first process)
  local host=$1 app ip main flags=$TAPYARD_NODE_OPTIONS
  case "$host" in api) app=api ;; *) app=worker flags=$TAPYARD_WORKER_NODE_OPTIONS ;; esac
  main="dist/apps/$app/src/main.js"
  if [ "$app" = worker ] && [ -f "$STATE/worker-main" ]; then main=$(cat "$STATE/worker-main"); fi
  ip=$(host_ip "$host")
  # Each host listens on its own address only; the worker's HTTP port is for its probes.
  # The host's PATH is the system's: the project's Node (scripts/lib/node.sh) is named by its path.
  local node_bin; node_bin=$(readlink -f "$(command -v node)")
  # Node flags for a run (a bench's --cpu-prof): the --env-file's TAPYARD_APP_NODE_OPTIONS, after the defaults.
  local extra_flags; extra_flags=$(sed -n 's/^TAPYARD_APP_NODE_OPTIONS=//p' "$STATE/extra.env" 2>/dev/null | tail -n 1)
  in_view "$host" env PORT=$API_PORT HOST="$ip" WORKER_HTTP_PORT=$WORKER_HTTP WORKER_HTTP_HOST="$ip" \
    NODE_OPTIONS="$flags${extra_flags:+ $extra_flags}" \
    "$node_bin" "$ROOT/$main"
}

wait_app() { # wait_app <host> <seconds>: until its ready line, or fail with the log's tail
  local host=$1 limit=$2 dir="$STATE/hosts/$1" pattern i
  case "$host" in api) pattern='Tapyard API listening' ;; *) pattern='Tapyard worker ready' ;; esac
  local from; from=$(grep -n '^\[cluster\] .*: starting' "$dir/app.log" | tail -n 1 | cut -d: -f1)
  for ((i = 0; i < limit * 10; i++)); do
    tail -n "+${from:-1}" "$dir/app.log" | grep -q "$pattern" && return 0
    kill -0 "$(cat "$dir/app.pid")" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 30 "$dir/app.log" >&2
  fail "$host did not become ready"
}

