"""The hot path: records encoded as JSON lines and written to the record channel in batches."""

# Records are sent in batches: one write per FLUSH_RECORDS records, or sooner when a slow
# generator has kept a record waiting for FLUSH_SECONDS, so streaming stays live.
FLUSH_RECORDS = 2048
FLUSH_SECONDS = 0.05
BIG_LINE = 1 << 16


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

