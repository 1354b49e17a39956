"""Failures as the control line reports them: a kind, a message naming the script by its file name only,
and the script's own traceback frames (never a harness or library path)."""

import os

from . import LIMITS

MAX_TRACEBACK_FRAMES = 10
PREFIXES = {"import": "importing the script failed: ", "fetch_raised": "fetch() raised "}


class Failure(Exception):
    """A structured error for the control line."""

    def __init__(self, kind, message, **details):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details


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


def article(word):
    return "an" if word[:1].lower() in "aeiou" else "a"
