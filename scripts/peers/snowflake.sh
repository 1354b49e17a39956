# shellcheck shell=bash
# ---------------------------------------------------------------- Snowflake stand-in (fakesnow's HTTP server, PyPI)
# Sourced by scripts/services. fakesnow (DuckDB underneath) speaks Snowflake's REST protocol on 127.0.0.1; the
# Node driver reaches it with accessUrl (the fields below). Its server answers queries in Arrow only, which
# snowflake-sdk 3.x cannot read, so it runs inside a small wrapper ($SNOWFLAKE_DIR/serve.py, written here) that
# turns those answers into Snowflake's JSON rowset and fills the gaps the Node driver trips on (see the file).
# Databases are in memory, shared by all sessions, and gone at each restart; any account, user and password log
# in. What works through snowflake-sdk: DDL, INSERT with array binds, SELECT, PUT to table and named internal
# stages, COPY INTO from them (CSV, Parquet with MATCH_BY_COLUMN_NAME) with load history (a second COPY skips
# loaded files, FORCE=TRUE reloads), COPY from file:// URLs and file:// external stages. Not s3://, https://:
# DuckDB would have to download its httpfs extension, which it cannot do here.
FAKESNOW_VERSION=0.12.1
# fakesnow 0.12.1 imports snowflake.connector.converter, which connector 5.x no longer has.
FAKESNOW_CONNECTOR_VERSION=4.8.1
SNOWFLAKE_PORT="${TAPYARD_SNOWFLAKE_PORT:-8090}"
SNOWFLAKE_DIR="$TAPYARD_HOME/snowflake"

snowflake_install() {
  pip_venv fakesnow "fakesnow[server]==$FAKESNOW_VERSION" "snowflake-connector-python==$FAKESNOW_CONNECTOR_VERSION"
}

# Ready means our wrapper answers on its probe path: a bare fakesnow, or another program on the port, does not.
snowflake_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$SNOWFLAKE_PORT/tapyard/ready" 2>/dev/null | grep -q '^fakesnow '; }

snowflake_configure() {
  mkdir -p "$SNOWFLAKE_DIR/tmp"
  # Internal stages live in fakesnow_bucket_* there; the databases they belonged to are gone after a restart.
  rm -rf "$SNOWFLAKE_DIR"/tmp/fakesnow_bucket_*
  cat >"$SNOWFLAKE_DIR/serve.py.tmp" <<'PY'
"""fakesnow's HTTP server, adapted for the Node.js driver (snowflake-sdk), which reads only JSON result sets.

fakesnow answers queries with Arrow (rowsetBase64), which the Python connector reads and snowflake-sdk does not;
this wraps its ASGI app and rewrites those answers as Snowflake's JSON rowset (every value a string, as the
service sends them). It also raises CLIENT_STAGE_ARRAY_BINDING_THRESHOLD from 0: snowflake-sdk stages any
array binding above the threshold (PUT to @SYSTEM$BIND, which fakesnow rejects), the Python connector reads 0
as "never". Usage: serve.py <host> <port> <tmpdir>
"""
import base64
import importlib.metadata
import gzip
import json
import os
import sys
import tempfile

host, port, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(tmp, exist_ok=True)
tempfile.tempdir = tmp  # fakesnow keeps internal stages in a mkdtemp() bucket: keep it under our directory

import pyarrow as pa  # noqa: E402
import uvicorn  # noqa: E402

import fakesnow.server  # noqa: E402
import fakesnow.transforms.stage  # noqa: E402

BIG_THRESHOLD = 2**31 - 1
VERSION = importlib.metadata.version("fakesnow")


def _cell(v, logical):
    if v is None:
        return None
    if isinstance(v, dict):  # TIMESTAMP_* as {epoch, fraction[, timezone]}
        s = f"{v['epoch']}.{v['fraction']:09d}"
        return f"{s} {v['timezone']}" if "timezone" in v else s
    if isinstance(v, bool):
        return "1" if v else "0"
    if logical == "TIME":  # nanoseconds since midnight
        return f"{v // 1_000_000_000}.{v % 1_000_000_000:09d}"
    if logical == "DATE" and not isinstance(v, int):
        return str((v - v.__class__(1970, 1, 1)).days)
    if isinstance(v, (bytes, bytearray)):
        return v.hex().upper()
    if isinstance(v, float):
        return repr(v)
    return str(v)


def arrow_to_rowset(b64):
    if not b64:
        return []
    table = pa.ipc.open_stream(base64.b64decode(b64)).read_all()
    logical = [(f.metadata or {}).get(b"logicalType", b"").decode() for f in table.schema]
    cols = []
    for i, col in enumerate(table.columns):
        if pa.types.is_date32(col.type):
            col = col.cast(pa.int32())
        cols.append([_cell(v, logical[i]) for v in col.to_pylist()])
    return [list(r) for r in zip(*cols)] if cols else []


def rewrite(path, body):
    doc = json.loads(body)
    data = doc.get("data")
    if not isinstance(data, dict):
        return None
    if path == "/session/v1/login-request":
        for p in data.get("parameters", []):
            if p.get("name") == "CLIENT_STAGE_ARRAY_BINDING_THRESHOLD" and p.get("value") == 0:
                p["value"] = BIG_THRESHOLD
    elif isinstance(data.get("stageInfo"), dict):
        # PUT: snowflake-sdk's GCS client reads stageInfo.region (fakesnow gives none)
        data["stageInfo"].setdefault("region", "")
    elif "queryResultFormat" in data:
        if data["queryResultFormat"] == "arrow":
            data["rowset"] = arrow_to_rowset(data.pop("rowsetBase64", ""))
            data["queryResultFormat"] = "json"
        # snowflake-sdk streams `returned` rows from the inline rowset and waits forever when it is missing
        data["returned"] = len(data.get("rowset") or [])
        data.setdefault("version", 1)  # TIMESTAMP_TZ as "<epoch.fraction> <offset>"
    else:
        return None
    return json.dumps(doc).encode()


class JsonResults:
    paths = ("/queries/v1/query-request", "/session/v1/login-request")

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/tapyard/ready":
            # what scripts/services probes: this wrapper, not a bare fakesnow nor another program, is serving
            body = f"fakesnow {VERSION} json-results".encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and scope["path"].startswith("/fs_bucket/"):
            # snowflake-sdk asks whether a file is on the stage before it PUTs it, and uploads only on a 404;
            # fakesnow serves PUT alone there (405), which the driver reports as "Unknown Error in uploading".
            root = fakesnow.transforms.stage.LOCAL_BUCKET_PATH
            target = os.path.normpath(os.path.join(root, scope["path"][len("/fs_bucket/"):]))
            found = target.startswith(root + os.sep) and os.path.isfile(target)
            await send({"type": "http.response.start", "status": 200 if found else 404, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] != "http" or scope["path"] not in self.paths:
            return await self.app(scope, receive, send)
        start, chunks = {}, []

        async def capture(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    body = b"".join(chunks)
                    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    if dict(headers).get(b"content-encoding") == b"gzip":
                        body = gzip.decompress(body)
                        headers = [(k, v) for k, v in headers if k.lower() != b"content-encoding"]
                    try:
                        body = rewrite(scope["path"], body) or body
                    except Exception as e:  # an answer we cannot read goes out as it was
                        print(f"[tapyard] could not rewrite a {scope['path']} answer: {e!r}", file=sys.stderr)
                    headers.append((b"content-length", str(len(body)).encode()))
                    await send({**start, "headers": headers})
                    await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


# On SIGTERM, uvicorn waits for open keep-alive connections unless told otherwise.
uvicorn.run(JsonResults(fakesnow.server.app), host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
PY
  mv -f "$SNOWFLAKE_DIR/serve.py.tmp" "$SNOWFLAKE_DIR/serve.py"
}

snowflake_start() {
  snowflake_install
  if snowflake_ready; then log "snowflake (fakesnow) already running on 127.0.0.1:$SNOWFLAKE_PORT"; return 0; fi
  if port_open "$SNOWFLAKE_PORT"; then
    [ -f "$TAPYARD_HOME/snowflake.pid" ] || die "something we did not start listens on 127.0.0.1:$SNOWFLAKE_PORT"
    log "restarting snowflake: what runs on 127.0.0.1:$SNOWFLAKE_PORT does not answer as expected"
    snowflake_stop
  fi
  snowflake_configure
  log "starting fakesnow $FAKESNOW_VERSION (Snowflake stand-in) on 127.0.0.1:$SNOWFLAKE_PORT (in memory; stages in $SNOWFLAKE_DIR/tmp)"
  (cd "$SNOWFLAKE_DIR" && start_daemon snowflake "$SNOWFLAKE_DIR/fakesnow.log" "$TAPYARD_HOME/venvs/fakesnow/bin/python" \
    "$SNOWFLAKE_DIR/serve.py" 127.0.0.1 "$SNOWFLAKE_PORT" "$SNOWFLAKE_DIR/tmp")
  wait_for 60 snowflake_ready || die "fakesnow did not become ready (see $SNOWFLAKE_DIR/fakesnow.log)"
}

snowflake_exited() { ! kill -0 "$1" 2>/dev/null; }

# uvicorn waits at most 3 s for open keep-alive connections (serve.py); past 10 s the process is killed, so that
# a start right after finds the port free.
snowflake_stop() {
  local pid; pid=$(cat "$TAPYARD_HOME/snowflake.pid" 2>/dev/null) || return 0
  stop_daemon snowflake
  wait_for 10 snowflake_exited "$pid" || { log "fakesnow (pid $pid) ignored SIGTERM: killing it"; kill -9 "$pid" 2>/dev/null || true; }
  wait_for 5 snowflake_exited "$pid" || log "fakesnow (pid $pid) is still running"
}

snowflake_status() { snowflake_ready && echo "snowflake: up (fakesnow, 127.0.0.1:$SNOWFLAKE_PORT)" || echo "snowflake: down"; }

# Any account, user and password are accepted; the database and schema are created on first login.
snowflake_fields() {
  printf '{"account":"fake","user":"tapyard","password":"fake","warehouse":"wh","database":"TAPYARD","schema":"PUBLIC","accessUrl":"http://127.0.0.1:%s"}\n' \
    "$SNOWFLAKE_PORT"
}
