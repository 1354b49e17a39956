"""Tapyard tap harness: imports a user's tap script, calls fetch() and streams its records.

Usage:
    python -E -S -u -B harness.py [--uid N --gid N] [--memory BYTES] [--cpu SECONDS]
                                   [--nproc N] [--fsize BYTES] [--egress-port N] [--rows 1]
                                   [--flush 1] [--state 1] [--] <script_path>

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
script's too (the platform may feed it requests); the harness never reads it.
Messages name the script by its file name only, never by a platform path.

--flush 1 (request/response use: the platform waits for each answer before it sends the next
request): every record is written as soon as it is yielded instead of in batches.

--state 1 (incremental taps): the platform puts the tap's last committed state, a JSON object, in
the environment variable TAPYARD_TAP_STATE; the harness takes it out of the environment before the
script loads. A fetch() with a parameter named `state` is called as fetch(state=<that dict>) (an
empty dict on the first run) and may change the dict as it goes, typically a cursor as records are
yielded; once every record is written, the dict as it is then goes in the done line. A fetch()
without that parameter is called as before and no state is reported: old scripts keep working.

--egress-port: the sandbox has its own network namespace with nothing but loopback. The platform's
egress proxy is a Unix socket bound at EGRESS_SOCKET; a forwarder process listens on
127.0.0.1:<port> and relays each connection to it, so HTTP_PROXY=http://127.0.0.1:<port> works for
requests, httpx and urllib.
"""

import os
import sys

OUT_FD = 3
PID = os.getpid()
# Records are sent in batches: one write per FLUSH_RECORDS records, or sooner when a slow
# generator has kept a record waiting for FLUSH_SECONDS, so streaming stays live.
FLUSH_RECORDS = 2048
FLUSH_SECONDS = 0.05
BIG_LINE = 1 << 16
MAX_TRACEBACK_FRAMES = 10
CONTROL = b"!"
LIMITS = {}
PREFIXES = {"import": "importing the script failed: ", "fetch_raised": "fetch() raised "}
EGRESS_SOCKET = "/run/tapyard/egress.sock"
STATE_ENV = "TAPYARD_TAP_STATE"
MAX_STATE_BYTES = 1 << 16
RELAY_BUFFER = 1 << 18


class Failure(Exception):
    """A structured error for the control line."""

    def __init__(self, kind, message, **details):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details


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


def drop_privileges(uid, gid):
    """Run as uid/gid from here on; the kernel then clears every capability."""
    if os.getuid() == uid and os.geteuid() == uid:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise Failure("internal", "could not drop privileges")


def set_limits(opts):
    import resource

    def limit(res, soft, hard):
        _, cur_hard = resource.getrlimit(res)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(res, (soft, hard))

    limit(resource.RLIMIT_CORE, 0, 0)
    if "memory" in opts:
        limit(resource.RLIMIT_AS, opts["memory"], opts["memory"])
    if "cpu" in opts:
        # SIGXCPU at the soft limit; SIGKILL a second later if the script ignores it.
        limit(resource.RLIMIT_CPU, opts["cpu"], opts["cpu"] + 1)
    if "nproc" in opts:
        limit(resource.RLIMIT_NPROC, opts["nproc"], opts["nproc"])
    if "fsize" in opts:
        limit(resource.RLIMIT_FSIZE, opts["fsize"], opts["fsize"])


def close_other_fds():
    """Nothing but stdio and the record channel reaches the script (e.g. bwrap's args pipe)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = soft if 0 < soft < 1 << 20 else 1 << 16
    os.closerange(OUT_FD + 1, top)
    # Subprocesses of the script must not write into the record channel.
    os.set_inheritable(OUT_FD, False)


def start_egress_forwarder(port):
    """Listens before the script starts (so its first request finds the port open), then relays in a
    process of its own: a script busy with the CPU or blocked in C code never stalls its own traffic."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    if os.fork() != 0:
        listener.close()
        return
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(OUT_FD)
        relay(listener)
    finally:
        os._exit(0)


class RelayEnd:
    """One socket of a relayed connection: what waits to be written to it, and whether it ended."""

    def __init__(self, sock):
        self.sock = sock
        self.peer = None
        self.out = bytearray()
        self.eof = False
        self.shut = False


def relay(listener):
    """Copies bytes between each accepted TCP connection and a new connection to the egress socket."""
    import selectors
    import socket

    read, write = selectors.EVENT_READ, selectors.EVENT_WRITE
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, read)
    registered = set()

    def watch(end):
        if end.sock.fileno() < 0:
            return
        events = 0
        if not end.eof and len(end.peer.out) < RELAY_BUFFER:
            events |= read
        if end.out:
            events |= write
        if events and end.sock in registered:
            sel.modify(end.sock, events, end)
        elif events:
            sel.register(end.sock, events, end)
            registered.add(end.sock)
        elif end.sock in registered:
            sel.unregister(end.sock)
            registered.discard(end.sock)

    def close(end):
        for e in (end, end.peer):
            if e.sock in registered:
                sel.unregister(e.sock)
                registered.discard(e.sock)
            e.sock.close()

    def settle(end):
        """Passes an end of stream on once its bytes are written; True when the pair is closed."""
        for e in (end, end.peer):
            if e.eof and not e.peer.out and not e.peer.shut:
                try:
                    e.peer.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                e.peer.shut = True
        if end.eof and end.peer.eof and not end.out and not end.peer.out:
            close(end)
            return True
        return False

    while True:
        for key, mask in sel.select():
            if key.fileobj is listener:
                try:
                    client, _ = listener.accept()
                except OSError:
                    continue
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    upstream.connect(EGRESS_SOCKET)
                except OSError:
                    client.close()
                    upstream.close()
                    continue
                client.setblocking(False)
                upstream.setblocking(False)
                a, b = RelayEnd(client), RelayEnd(upstream)
                a.peer, b.peer = b, a
                watch(a)
                watch(b)
                continue
            end = key.data
            if end.sock.fileno() < 0:
                continue
            try:
                if mask & read:
                    data = end.sock.recv(1 << 16)
                    if data:
                        end.peer.out += data
                    else:
                        end.eof = True
                if mask & write and end.out:
                    del end.out[: end.sock.send(end.out)]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                close(end)
                continue
            if not settle(end):
                watch(end)
                watch(end.peer)


def type_name(exc_type):
    if exc_type.__module__ == "builtins":
        return exc_type.__qualname__
    return exc_type.__module__ + "." + exc_type.__qualname__


def describe(exc):
    text = str(exc)
    name = type_name(type(exc))
    return name + ": " + text if text else name


def script_traceback(exc, script_path):
    """Only the script's own frames, named by file name: no harness or library paths leak."""
    import traceback

    shown = os.path.basename(script_path)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == script_path]
    lines = []
    for f in frames[-MAX_TRACEBACK_FRAMES:]:
        lines.append('  File "%s", line %s, in %s' % (shown, f.lineno, f.name))
        if f.line:
            lines.append("    " + f.line.strip())
    return "\n".join(lines)


def raised(exc, script_path, kind):
    if isinstance(exc, MemoryError):
        return Failure("memory", "MemoryError: the script ran out of memory")
    message = PREFIXES[kind] + describe(exc)
    if isinstance(exc, BlockingIOError) and LIMITS.get("nproc"):
        message += " (the script may have hit its limit of %d processes)" % LIMITS["nproc"]
    return Failure(
        kind,
        message,
        exception=type_name(type(exc)),
        traceback=script_traceback(exc, script_path),
    )


def load_script(script_path):
    import importlib.util

    name = "_tapyard_tap_%d" % PID
    try:
        spec = importlib.util.spec_from_file_location(name, script_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        if exc.filename != script_path:
            raise Failure("import", "importing the script failed: " + describe(exc)) from None
        message = "syntax error on line %s: %s" % (exc.lineno, exc.msg)
        details = {"line": exc.lineno}
        if exc.text:
            details["text"] = exc.text.rstrip("\n")
        raise Failure("syntax", message, **details) from None
    except ModuleNotFoundError as exc:
        failure = raised(exc, script_path, "import")
        failure.details["module"] = exc.name
        raise failure from None
    except BaseException as exc:
        raise raised(exc, script_path, "import") from None
    return module


def article(word):
    return "an" if word[:1].lower() in "aeiou" else "a"


def iterate(result):
    if result is None:
        raise Failure("not_iterable", "fetch() returned None; return a list or an iterable of records")
    kind = type(result).__name__
    if isinstance(result, dict):
        raise Failure("not_iterable", "fetch() returned a dict; return a list or an iterable of records")
    if isinstance(result, (str, bytes, bytearray, memoryview)):
        raise Failure(
            "not_iterable",
            "fetch() returned %s %s; return a list or an iterable of records" % (article(kind), kind),
        )
    try:
        return iter(result)
    except TypeError:
        raise Failure(
            "not_iterable",
            "fetch() returned %s %s; return a list or an iterable of records" % (article(kind), kind),
        ) from None


class ChannelClosed(Exception):
    """The platform stopped reading the records (it stopped the run)."""


class NotJson(Exception):
    def __init__(self, index, cause):
        super().__init__()
        self.index = index
        self.cause = cause


class NotRow(Exception):
    def __init__(self, index, record):
        super().__init__()
        self.index = index
        self.record = record


def make_encoder(json):
    """JSONEncoder.encode builds a fresh C encoder per call; reusing one is twice as fast.

    No circular-reference markers: a cycle ends in RecursionError, reported as not_json.
    """
    from json.encoder import c_make_encoder, encode_basestring_ascii

    default = json.JSONEncoder().default
    if c_make_encoder is None:
        return json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
    encoder = c_make_encoder(None, default, encode_basestring_ascii, None, ":", ",", False, False, False)
    join = "".join
    return lambda value: join(encoder(value, 0))


def stream(records, out, rows=False, each=False):
    """The hot path: encode with one reused encoder, write in large batches (or each record at once)."""
    import json
    from time import monotonic

    encode = make_encoder(json)
    seen = set()
    last_keys = None
    write = out.write
    # Each batch goes out at once: the platform may be loading records while the script runs.
    push = out.flush
    batch = []
    append = batch.append
    count = 0
    last = monotonic()
    # A local bound instead of a flag: flushing each record costs the loop no extra test.
    most = 1 if each else FLUSH_RECORDS

    def flush():
        batch.append("")
        try:
            write("\n".join(batch).encode())
            push()
        except OSError:
            # Only the channel's own failures; a BrokenPipeError the script raises is its error.
            raise ChannelClosed() from None
        batch.clear()

    def announce(keys):
        # Rare (a key's first appearance), so it may be slow: the key as JSON writes it ("1" for 1).
        fresh = [k for k in keys if k not in seen]
        if not fresh:
            return
        seen.update(fresh)
        names = [next(iter(json.loads(encode({k: None})))) for k in fresh]
        flush()
        batch.append("#" + json.dumps(names, separators=(",", ":")))

    try:
        for record in records:
            if rows:
                if type(record) is not dict:
                    if not isinstance(record, dict):
                        raise NotRow(count, record)
                keys = record.keys()
                # Comparing key views is set equality in C: cheap when rows share their keys.
                if keys != last_keys:
                    announce(keys)
                    last_keys = keys
            try:
                line = encode(record)
            except (TypeError, ValueError, RecursionError) as exc:
                raise NotJson(count, exc) from None
            append(line)
            count += 1
            now = monotonic()
            if len(batch) >= most or now - last >= FLUSH_SECONDS or len(line) >= BIG_LINE:
                flush()
                last = now
    except ChannelClosed:
        raise
    except Exception:
        # The records before the failure are delivered, then the error.
        flush()
        raise
    flush()
    return count


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


def take_state():
    """The committed state, out of the environment before any script code runs."""
    import json

    text = os.environ.pop(STATE_ENV, None)
    try:
        value = json.loads(text) if text else None
    except ValueError:
        raise Failure("internal", "the platform passed a state that is not JSON") from None
    return value if isinstance(value, dict) else {}


def wants_state(fetch):
    import inspect

    try:
        parameter = inspect.signature(fetch).parameters.get("state")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind != inspect.Parameter.POSITIONAL_ONLY


def encode_state(state):
    """The state for the done line; a state that cannot be stored fails the run (nothing is committed)."""
    import json
    import re

    if not isinstance(state, dict):
        kind = type(state).__name__
        raise Failure("bad_state", "the state must stay a dict, not %s %s" % (article(kind), kind))
    try:
        text = json.dumps(state, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise Failure("bad_state", "the state is not JSON: %s" % exc) from None
    # An escaped NUL (after an even run of backslashes): PostgreSQL's jsonb cannot hold one.
    if re.search(r"(?<!\\)(?:\\\\)*\\u0000", text):
        raise Failure("bad_state", "the state holds a NUL character (\\u0000), which cannot be stored")
    if len(text.encode()) > MAX_STATE_BYTES:
        raise Failure(
            "bad_state",
            "the state is %d bytes of JSON; at most %d are kept (store a cursor, not the data)"
            % (len(text.encode()), MAX_STATE_BYTES),
        )
    return json.loads(text)


def run(script_path, out):
    try:
        import site

        site.main()
    except BaseException as exc:
        raise raised(exc, script_path, "import") from None
    sys.argv = [script_path]
    sys.path[0] = os.path.dirname(script_path)
    state = take_state() if LIMITS.get("state") == 1 else None
    module = load_script(script_path)
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
