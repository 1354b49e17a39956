"""Loading the user's script as a module and checking that fetch() gave something to iterate."""

import sys

from . import PID
from .failures import Failure, article, describe, raised


def read_script(stream):
    """A script sent on stdin (--script-stdin 1): its UTF-8 length (4 bytes, little-endian), then the text.
    None when stdin ends first: the platform let go of a sandbox started ahead of a script."""
    # What loading it and streaming its records import anyway, imported while nothing waits for it.
    import json  # noqa: F401
    import linecache  # noqa: F401
    import types  # noqa: F401

    head = stream.read(4)
    if len(head) < 4:
        return None
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        return None
    return data.decode("utf-8", "surrogatepass")


def load_script(script_path, source=None):
    """Imports the script from its file or, given `source`, from that text under the same name."""
    name = "_tapyard_tap_%d" % PID
    try:
        if source is None:
            import importlib.util

            spec = importlib.util.spec_from_file_location(name, script_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            import linecache
            import types

            module = types.ModuleType(name)
            module.__file__ = script_path
            sys.modules[name] = module
            # Tracebacks quote the script's lines as they would from its file, which does not exist here
            # (an entry without a modification time is never checked against the disk).
            linecache.cache[script_path] = (len(source), None, source.splitlines(True), script_path)
            exec(compile(source, script_path, "exec", dont_inherit=True), module.__dict__)
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

