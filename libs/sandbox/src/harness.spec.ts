import { offModeAvailable, py, runScript, SandboxFixture, sandboxFixture, SpecMode } from './spec-fixtures';

const modes: SpecMode[] = offModeAvailable ? ['bwrap', 'off'] : ['bwrap'];

describe.each(modes)('harness protocol (bwrap: %s)', (mode) => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture(mode, { limits: { timeoutMs: 20_000, memoryBytes: 256 * 1024 * 1024 } });
  });
  afterAll(() => fx.close());

  it('streams the records of a list, logs stdout and stderr', async () => {
    const { records, outcome } = await runScript(
      fx,
      py(
        'import sys',
        'print("to stdout")',
        'def fetch():',
        '    print("to stderr", file=sys.stderr)',
        '    return [{"id": 1, "name": "é\\n"}, [1, 2.5], "s", 3, None, True]',
      ),
    );
    expect(records).toEqual([{ id: 1, name: 'é\n' }, [1, 2.5], 's', 3, null, true]);
    expect(outcome).toMatchObject({ error: null, exitCode: 0, recordCount: 6, logsTruncated: false });
    expect(outcome.logs).toBe('to stdout\nto stderr\n');
    expect(outcome.isolation).toBe(mode === 'bwrap' ? 'bwrap' : 'none');
  });

  it('accepts tuples, generators and other iterables', async () => {
    const { records, outcome } = await runScript(
      fx,
      py(
        'def rows():',
        '    yield from range(3)',
        'def fetch():',
        '    return map(lambda x: {"x": x}, rows())',
      ),
    );
    expect(outcome.error).toBeNull();
    expect(records).toEqual([{ x: 0 }, { x: 1 }, { x: 2 }]);
  });

  it('passes the committed state to fetch(state) and reports the dict it left after the last record', async () => {
    const { records, outcome } = await runScript(
      fx,
      py(
        'import os',
        'def fetch(state):',
        '    since = state.get("cursor", 0)',
        '    for i in range(since + 1, since + 4):',
        '        state["cursor"] = i',
        '        yield {"i": i, "seen_env": "TAPYARD_TAP_STATE" in os.environ}',
      ),
      { state: { cursor: 10, other: ['kept'] } },
    );
    expect(outcome.error).toBeNull();
    expect(records).toEqual([11, 12, 13].map((i) => ({ i, seen_env: false })));
    expect(outcome.state).toEqual({ cursor: 13, other: ['kept'] });
  });

  it('keeps old scripts working: fetch() without a state parameter reports no state', async () => {
    const { records, outcome } = await runScript(fx, py('def fetch():', '    return [{"a": 1}]'), {
      state: { cursor: 1 },
    });
    expect(outcome.error).toBeNull();
    expect(records).toEqual([{ a: 1 }]);
    expect(outcome.state).toBeUndefined();
    // Without a state in the request, a fetch(state=None) keeps its default.
    const plain = await runScript(fx, py('def fetch(state=None):', '    return [{"state": state}]'));
    expect(plain.records).toEqual([{ state: null }]);
    expect(plain.outcome.state).toBeUndefined();
  });

  it('fails the run when the state cannot be stored, and reports no state after an error', async () => {
    const bad = await runScript(
      fx,
      py(
        'import datetime',
        'def fetch(state):',
        '    state["at"] = datetime.date(2026, 1, 1)',
        '    return []',
      ),
      { state: {} },
    );
    expect(bad.outcome.error).toMatchObject({
      kind: 'bad_state',
      message: expect.stringMatching(/^the state is not JSON: /),
    });
    expect(bad.outcome.state).toBeUndefined();
    const nul = await runScript(fx, py('def fetch(state):', '    state["k"] = "a\\x00b"', '    return []'), {
      state: {},
    });
    expect(nul.outcome.error).toMatchObject({
      kind: 'bad_state',
      message: expect.stringMatching(/NUL character/),
    });
    const raised = await runScript(
      fx,
      py(
        'def fetch(state):',
        '    state["cursor"] = 5',
        '    yield {"a": 1}',
        '    raise RuntimeError("page 2")',
      ),
      { state: {} },
    );
    expect(raised.outcome.error?.kind).toBe('fetch_raised');
    expect(raised.outcome.state).toBeUndefined();
  });

  it('reports a script without fetch', async () => {
    const { outcome } = await runScript(fx, py('x = 1'));
    expect(outcome.error).toMatchObject({
      kind: 'no_fetch',
      message: 'the script does not define a fetch() function',
    });
  });

  it('reports a syntax error with its line', async () => {
    const { outcome } = await runScript(fx, py('import os', '', 'def fetch(:', '    return []'));
    expect(outcome.error?.kind).toBe('syntax');
    expect(outcome.error?.details).toMatchObject({ line: 3, text: 'def fetch(:' });
    expect(outcome.error?.message).toMatch(/^syntax error on line 3: /);
  });

  it('reports a missing module by name', async () => {
    const { outcome } = await runScript(
      fx,
      py('import tapyard_missing_mod', 'def fetch():', '    return []'),
    );
    expect(outcome.error).toMatchObject({
      kind: 'import',
      message: "importing the script failed: ModuleNotFoundError: No module named 'tapyard_missing_mod'",
      details: { module: 'tapyard_missing_mod', exception: 'ModuleNotFoundError' },
    });
  });

  it('reports an exception at import time', async () => {
    const { outcome } = await runScript(
      fx,
      py('raise RuntimeError("boot")', 'def fetch():', '    return []'),
    );
    expect(outcome.error).toMatchObject({
      kind: 'import',
      message: 'importing the script failed: RuntimeError: boot',
    });
  });

  it('reports fetch() raising, with a traceback of the script frames only', async () => {
    const { outcome } = await runScript(
      fx,
      py(
        'import json',
        'def helper(n):',
        '    return json.loads("{bad")',
        'def fetch():',
        '    return helper(3)',
      ),
    );
    const error = outcome.error;
    expect(error?.kind).toBe('fetch_raised');
    expect(error?.message).toMatch(
      /^fetch\(\) raised json\.decoder\.JSONDecodeError: Expecting property name/,
    );
    expect(error?.details.traceback).toBe(
      [
        '  File "tap.py", line 5, in fetch',
        '    return helper(3)',
        '  File "tap.py", line 3, in helper',
        '    return json.loads("{bad")',
      ].join('\n'),
    );
    // No platform paths: neither the harness's nor the interpreter's.
    expect(JSON.stringify(error)).not.toMatch(/harness\.py|\/usr\/lib|pyenv|tapyard-tap-/);
  });

  it('delivers the records a generator yielded before raising', async () => {
    const { records, outcome } = await runScript(
      fx,
      py('def fetch():', '    yield 1', '    yield 2', '    raise KeyError("k")'),
    );
    expect(records).toEqual([1, 2]);
    expect(outcome.error).toMatchObject({ kind: 'fetch_raised', message: "fetch() raised KeyError: 'k'" });
  });

  it('treats a BrokenPipeError raised by the script as its own error', async () => {
    const { outcome } = await runScript(
      fx,
      py('def fetch():', '    yield 1', '    raise BrokenPipeError("upstream closed")'),
    );
    expect(outcome.error).toMatchObject({
      kind: 'fetch_raised',
      message: 'fetch() raised BrokenPipeError: upstream closed',
    });
  });

  it('runs several scripts at once', async () => {
    const results = await Promise.all(
      [...Array(6).keys()].map((n) => runScript(fx, py('def fetch():', `    return range(${n * 1000})`))),
    );
    expect(results.map((r) => [r.outcome.error, r.records.length])).toEqual(
      [...Array(6).keys()].map((n) => [null, n * 1000]),
    );
  });

  it.each([
    ['{"a": 1}', 'fetch() returned a dict; return a list or an iterable of records'],
    ['42', 'fetch() returned an int; return a list or an iterable of records'],
    ['None', 'fetch() returned None; return a list or an iterable of records'],
    ['"text"', 'fetch() returned a str; return a list or an iterable of records'],
  ])('refuses fetch() returning %s', async (value, message) => {
    const { outcome } = await runScript(fx, py('def fetch():', `    return ${value}`));
    expect(outcome.error).toMatchObject({ kind: 'not_iterable', message });
  });

  it('names the record that is not JSON and keeps the ones before it', async () => {
    const { records, outcome } = await runScript(
      fx,
      py(
        'import datetime',
        'def fetch():',
        '    return [{"a": 1}, {"a": 2}, {"a": 3}, {"d": datetime.date(2024, 1, 1)}]',
      ),
    );
    expect(records).toHaveLength(3);
    expect(outcome.error).toMatchObject({
      kind: 'not_json',
      message: 'record 3 is not JSON: Object of type date is not JSON serializable',
      details: { record: 3 },
    });
  });

  it.each([
    ['float("nan")', 'record 0 is not JSON: Out of range float values are not JSON compliant'],
    ['loop', 'record 0 is not JSON: it is nested too deeply'],
  ])('refuses %s as a record', async (value, message) => {
    const { outcome } = await runScript(
      fx,
      py('loop = []', 'loop.append(loop)', 'def fetch():', `    return [${value}]`),
    );
    expect(outcome.error).toMatchObject({ kind: 'not_json', message });
  });

  it('reports running out of memory as memory_limit', async () => {
    const { outcome } = await runScript(
      fx,
      py('def fetch():', '    data = bytearray(10 * 1024**3)', '    return []'),
    );
    expect(outcome.error).toMatchObject({
      kind: 'memory_limit',
      message: 'the script used more than 256 MiB of memory',
    });
  });

  it('reports memory exhausted step by step', async () => {
    const { outcome } = await runScript(
      fx,
      py('def fetch():', '    hog = []', '    while True:', '        hog.append(bytearray(8 * 1024**2))'),
    );
    expect(outcome.error?.kind).toBe('memory_limit');
  });

  it('lets the script see only its own name in sys.argv', async () => {
    const { records } = await runScript(
      fx,
      py('import sys, os', 'def fetch():', '    return [os.path.basename(sys.argv[0]), len(sys.argv)]'),
    );
    expect(records).toEqual(['tap.py', 1]);
  });
});
