"""Tapyard tap harness: imports a user's tap script, calls fetch() and streams its records.

Usage:
    python -E -S -u -B harness.py [--uid N --gid N] [--memory BYTES] [--cpu SECONDS]
                                   [--nproc N] [--fsize BYTES] [--egress-port N] [--rows 1]
                                   [--flush 1] [--state 1] [--script-stdin 1] [--] <script_path>

-S matters: site-packages (and their .pth files, which run code) are only loaded by this file,
after privileges are dropped and the limits are set.

Protocol on file descriptor 3 (ASCII, one item per line, each ending in "\\n"):
  * a record: its JSON text. json.dumps escapes newlines and never starts a text with "!".
  * with --rows 1 (structured taps), a keys line: "#" followed by a JSON array of the record keys
    seen for the first time, written before the first record that has them. JSON text never
    starts with "#" either. Every record must then be a dict (else error kind not_row).
  * a control line: "!" followed by one JSON object. Exactly one is written, always last:
        !{"type":"done","records":N}  (with --state 1 and a fetch(state): ,"state":{...})
        !{"type":"error","kind":K,"message":M, ...details}
    K is one of no_fetch, syntax, import, fetch_raised, not_iterable, not_json, not_row, bad_state,
    memory, internal.
stdout and stderr belong to the script (its logs); the harness never writes there. stdin is the
script's too (the platform may feed it requests); the harness only reads the script there with
--script-stdin 1.
Messages name the script by its file name only, never by a platform path.

--flush 1 (request/response use: the platform waits for each answer before it sends the next
request): every record is written as soon as it is yielded instead of in batches.

--state 1 (incremental taps): the platform puts the tap's last committed state, a JSON object, in
the environment variable TAPYARD_TAP_STATE; the harness takes it out of the environment before the
script loads. A fetch() with a parameter named `state` is called as fetch(state=<that dict>) (an
empty dict on the first run) and may change the dict as it goes, typically a cursor as records are
yielded; once every record is written, the dict as it is then goes in the done line. A fetch()
without that parameter is called as before and no state is reported: old scripts keep working.

--script-stdin 1 (a sandbox started before its script is known, e.g. CodeGen's warm sandboxes): the
script is not a file; the harness confines itself, loads site and then reads the script from stdin (its
UTF-8 length in 4 bytes, little-endian, then the text) and runs it under <script_path>'s name, which
tracebacks show. stdin then goes on as the script's. Ending stdin before the script ends the run
with no records (done, 0).

--egress-port: the sandbox has its own network namespace with nothing but loopback. The platform's
egress proxy is a Unix socket bound at EGRESS_SOCKET; a forwarder process listens on
127.0.0.1:<port> and relays each connection to it, so HTTP_PROXY=http://127.0.0.1:<port> works for
requests, httpx and urllib.

Each job lives in a module of the _tapyard_harness package beside this file (mounted beside it in the
sandbox): confine (privileges, limits, file descriptors), egress (the forwarder), script (loading the
script, checking what fetch() returned), records (the batched record stream), state (incremental taps),
failures (the control line's errors). This file parses the options and runs them in order.
"""

import os
import sys

from _tapyard_harness import LIMITS, OUT_FD, PID
from _tapyard_harness.confine import close_other_fds, drop_privileges, set_limits
from _tapyard_harness.egress import start_egress_forwarder
from _tapyard_harness.failures import Failure, article, describe, raised
from _tapyard_harness.records import ChannelClosed, NotJson, NotRow, stream
from _tapyard_harness.script import iterate, load_script, read_script
from _tapyard_harness.state import encode_state, take_state, wants_state

CONTROL = b"!"


def parse_args(argv):
    opts = {}
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] == "--":
            i += 1
            break
        opts[argv[i][2:]] = int(argv[i + 1])
        i += 2
    rest = argv[i:]
    if len(rest) != 1:
        sys.stderr.write("usage: harness.py [--option N ...] <script_path>\n")
        os._exit(2)
    return opts, rest[0]


def control(out, payload):
    import json

    out.write(CONTROL + json.dumps(payload).encode() + b"\n")
    out.flush()


def finish(out, payload, code):
    """Flush everything and leave without running the script's atexit hooks or thread joins."""
    if os.getpid() != PID:
        # A process the script forked got back into the harness: it must not report.
        os._exit(0)
    try:
        control(out, payload)
    except (BrokenPipeError, OSError):
        code = 1
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    os._exit(code)


def run(script_path, out):
    try:
        import site

        site.main()
    except BaseException as exc:
        raise raised(exc, script_path, "import") from None
    sys.argv = [script_path]
    sys.path[0] = os.path.dirname(script_path)
    state = take_state() if LIMITS.get("state") == 1 else None
    source = None
    if LIMITS.get("script-stdin") == 1:
        # Started ahead of its script: everything above is done, the process now waits for the text.
        source = read_script(sys.stdin.buffer)
        if source is None:
            return {"type": "done", "records": 0}
    module = load_script(script_path, source)
    fetch = getattr(module, "fetch", None)
    if fetch is None:
        raise Failure("no_fetch", "the script does not define a fetch() function")
    if not callable(fetch):
        kind = type(fetch).__name__
        raise Failure("no_fetch", "fetch is %s %s, not a function" % (article(kind), kind))
    arguments = {}
    if state is not None and wants_state(fetch):
        arguments["state"] = state
    else:
        state = None
    try:
        records = iterate(fetch(**arguments))
    except Failure:
        raise
    except BaseException as exc:
        raise raised(exc, script_path, "fetch_raised") from None
    if os.getpid() != PID:
        # fetch() forked and this is the child: only the original process streams.
        os._exit(0)
    try:
        count = stream(records, out, rows=LIMITS.get("rows") == 1, each=LIMITS.get("flush") == 1)
    except NotRow as exc:
        kind = "null" if exc.record is None else type(exc.record).__name__
        raise Failure(
            "not_row",
            "record %d is %s; a structured tap yields objects (dicts), one per row"
            % (exc.index, kind if kind == "null" else article(kind) + " " + kind),
            record=exc.index,
        ) from None
    except NotJson as exc:
        if isinstance(exc.cause, RecursionError):
            detail = "it is nested too deeply"
        else:
            detail = str(exc.cause)
        raise Failure(
            "not_json", "record %d is not JSON: %s" % (exc.index, detail), record=exc.index
        ) from None
    except ChannelClosed:
        raise
    except BaseException as exc:
        raise raised(exc, script_path, "fetch_raised") from None
    done = {"type": "done", "records": count}
    if state is not None:
        done["state"] = encode_state(state)
    return done


def main():
    opts, script_path = parse_args(sys.argv[1:])
    LIMITS.update(opts)
    try:
        # A larger pipe lets the script run ahead while the platform handles the previous batch,
        # instead of waiting for every 64 KiB to be read (1 MiB is the default unprivileged maximum).
        import fcntl

        fcntl.fcntl(OUT_FD, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass
    try:
        # The same for a script fed on stdin (CodeGen batches): a whole batch fits in the pipe, so the
        # platform writes it at once and goes on with its own work while the script reads.
        import fcntl

        fcntl.fcntl(0, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass
    try:
        out = open(OUT_FD, "wb", buffering=1 << 16)
    except OSError:
        sys.stderr.write("harness: file descriptor 3 is not open\n")
        os._exit(2)
    try:
        if "uid" in opts:
            drop_privileges(opts["uid"], opts.get("gid", opts["uid"]))
        set_limits(opts)
        close_other_fds()
        if "egress-port" in opts:
            start_egress_forwarder(opts["egress-port"])
    except Failure as failure:
        finish(out, dict(failure.details, type="error", kind=failure.kind, message=failure.message), 1)
    except BaseException as exc:
        finish(out, {"type": "error", "kind": "internal", "message": describe(exc)}, 1)
    try:
        done = run(os.path.abspath(script_path), out)
    except Failure as failure:
        finish(out, dict(failure.details, type="error", kind=failure.kind, message=failure.message), 1)
    except ChannelClosed:
        # The platform stopped reading (it killed the run or the consumer went away).
        os._exit(1)
    except MemoryError:
        finish(out, {"type": "error", "kind": "memory", "message": "MemoryError"}, 1)
    finish(out, done, 0)


if __name__ == "__main__":
    main()
