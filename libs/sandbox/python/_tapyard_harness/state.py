"""Incremental taps' state (--state 1): taken from the environment before the script loads, handed to a
fetch(state), and checked before it goes in the done line."""

import os

from .failures import Failure, article

STATE_ENV = "TAPYARD_TAP_STATE"
MAX_STATE_BYTES = 1 << 16


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

