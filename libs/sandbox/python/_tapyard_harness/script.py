"""Loading the user's script as a module and checking that fetch() gave something to iterate."""

import sys

from . import PID
from .failures import Failure, article, describe, raised


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

