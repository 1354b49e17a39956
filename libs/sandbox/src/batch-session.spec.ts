import { BatchSession, SessionOptions } from './batch-session';
import { SandboxError } from './errors';
import { RunRequest } from './sandbox';
import { ScriptFile, writeScript } from './script-file';
import { offModeAvailable, py, SandboxFixture, sandboxFixture, SpecMode } from './spec-fixtures';

const modes: SpecMode[] = offModeAvailable ? ['bwrap', 'off'] : ['bwrap'];
const MiB = 1024 * 1024;
/** Each test's bound; the runs inside are bounded by their own call timeouts and run limits. */
const TEST_MS = 60_000;

/** The generated wrapper's shape: one request per stdin line, one record per request. */
const SUMMING = py(
  'import sys, json',
  'def fetch():',
  '    for line in sys.stdin:',
  '        req = json.loads(line)',
  '        yield {"n": len(req["rows"]), "sum": sum(r["x"] for r in req["rows"])}',
);

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof SandboxError) return err;
    throw err;
  }
  throw new Error('the call was expected to fail');
}

describe.each(modes)('batch session (bwrap: %s)', (mode) => {
  let fx: SandboxFixture;
  const scripts: ScriptFile[] = [];
  beforeAll(async () => {
    fx = await sandboxFixture(mode, { limits: { timeoutMs: 30_000, memoryBytes: 256 * MiB } });
  });
  afterEach(async () => {
    await Promise.all(scripts.splice(0).map((s) => s.remove()));
  });
  afterAll(() => fx.close());

  async function start(
    source: string,
    request: Partial<RunRequest> = {},
    options: SessionOptions = {},
  ): Promise<BatchSession> {
    const script = await writeScript(source);
    scripts.push(script);
    return BatchSession.start(
      fx.sandbox,
      { scriptPath: script.path, python: fx.venv.python, venvDir: fx.venv.dir, ...request },
      options,
    );
  }

  it(
    'prestarts a run that takes its script from stdin, once; one let go of or killed before its script ends quietly',
    async () => {
      const request = { scriptPath: '/summing.py', python: fx.venv.python, venvDir: fx.venv.dir };
      const session = BatchSession.prestart(fx.sandbox, request);
      expect(await session.begin(SUMMING)).toBe(true);
      await expect(session.begin(SUMMING)).rejects.toThrow('begin() comes once, before any call');
      expect(await session.call(JSON.stringify({ rows: [{ x: 2 }, { x: 3 }] }), 5000)).toEqual({
        n: 2,
        sum: 5,
      });
      expect(await session.close()).toMatchObject({ error: null, exitCode: 0, recordCount: 1 });

      // The script's name is the one its file would have had: the harness never reads a file for it.
      const failing = BatchSession.prestart(fx.sandbox, request);
      expect(await failing.begin(py('def fetch():', '    raise ValueError("no")'))).toBe(true);
      const err = await rejection(failing.call('{}', 5000));
      expect(err.details.traceback).toBe('  File "summing.py", line 2, in fetch\n    raise ValueError("no")');

      const unused = BatchSession.prestart(fx.sandbox, request);
      expect(await unused.close()).toMatchObject({ error: null, exitCode: 0, recordCount: 0 });

      const killed = BatchSession.prestart(fx.sandbox, request);
      killed.kill();
      expect(await killed.begin(SUMMING)).toBe(false);
    },
    TEST_MS,
  );

  it(
    'answers 200 calls in order on one process',
    async () => {
      const session = await start(SUMMING);
      for (let i = 0; i < 200; i++) {
        const rows = Array.from({ length: i % 7 }, (_, k) => ({ x: k * i }));
        const answer = await session.call(JSON.stringify({ rows }), 5000);
        expect(answer).toEqual({ n: rows.length, sum: rows.reduce((s, r) => s + r.x, 0) });
      }
      const outcome = await session.close();
      expect(outcome).toMatchObject({ error: null, exitCode: 0, recordCount: 200 });
      expect(await session.close()).toBe(outcome);
    },
    TEST_MS,
  );

  it(
    'gets the answer to a short line before the next one is written (stdin is not block-buffered)',
    async () => {
      // The script reports whether more input was waiting while it answered: with calls serialized
      // the next line is only written once this answer has arrived.
      const session = await start(
        py(
          'import sys, select, time',
          'def fetch():',
          '    for n, line in enumerate(sys.stdin, 1):',
          '        time.sleep(0.5)',
          '        waiting = bool(select.select([sys.stdin], [], [], 0)[0])',
          '        yield {"n": n, "line": line.strip(), "waiting": waiting}',
        ),
      );
      const first = await session.call('1', 5000);
      expect(first).toEqual({ n: 1, line: '1', waiting: false });
      const rest = await Promise.all(['2', '3', '4'].map((line) => session.call(line, 5000)));
      expect(rest).toEqual([
        { n: 2, line: '2', waiting: false },
        { n: 3, line: '3', waiting: false },
        { n: 4, line: '4', waiting: false },
      ]);
      expect((await session.close()).error).toBeNull();
    },
    TEST_MS,
  );

  it(
    "pipelined: writes each input at once, answers in order, and counts each call's time from its turn",
    async () => {
      // The script reads stdin unbuffered after a pause, and says how many more lines that read brought:
      // with the session pipelined, all four lines are in the pipe by then.
      const session = await start(
        py(
          'import os, time',
          'def fetch():',
          '    buf, n = b"", 0',
          '    while True:',
          '        if b"\\n" not in buf:',
          '            time.sleep(1)',
          '            chunk = os.read(0, 65536)',
          '            if not chunk:',
          '                return',
          '            buf += chunk',
          '        line, buf = buf.split(b"\\n", 1)',
          '        n += 1',
          '        time.sleep(0.2)',
          '        yield {"n": n, "line": line.decode(), "ahead": buf.count(b"\\n")}',
        ),
        {},
        { pipelined: true },
      );
      // The first call's time covers the start-up; each later one has 2 s from its turn, where it takes 0.5 s.
      // The last is answered 3 s or more after it was made: a clock started at the call would fail it.
      const answers = await Promise.all(
        ['1', '2', '3', '4'].map((line, i) => session.call(line, i === 0 ? 30_000 : 2000)),
      );
      expect(answers).toEqual([
        { n: 1, line: '1', ahead: 3 },
        { n: 2, line: '2', ahead: 2 },
        { n: 3, line: '3', ahead: 1 },
        { n: 4, line: '4', ahead: 0 },
      ]);
      expect((await session.close()).error).toBeNull();
    },
    TEST_MS,
  );

  it(
    'pipelined: a failure rejects every call written ahead with the same error',
    async () => {
      const session = await start(
        py(
          'import sys',
          'def fetch():',
          '    for n, line in enumerate(sys.stdin, 1):',
          '        if n == 2:',
          '            raise ValueError("batch two")',
          '        yield {"n": n}',
        ),
        {},
        { pipelined: true },
      );
      const calls = ['1', '2', '3'].map((line) => session.call(line, 5000));
      expect(await calls[0]).toEqual({ n: 1 });
      const second = await rejection(calls[1]);
      expect(second.message).toBe('fetch() raised ValueError: batch two');
      expect(await rejection(calls[2])).toBe(second);
      expect(await rejection(session.call('4', 5000))).toBe(second);
    },
    TEST_MS,
  );

  it(
    "rejects the call the script fails on with the script's own frames, secrets masked",
    async () => {
      const secret = 'tok-5d1e-secret';
      const session = await start(
        py(
          'import sys, json, os',
          'def fetch():',
          '    for n, line in enumerate(sys.stdin, 1):',
          '        if n == 3:',
          '            raise ValueError("bad batch with " + os.environ["TOKEN"])',
          '        yield {"n": n}',
        ),
        { env: { TOKEN: secret }, secrets: [secret] },
      );
      expect(await session.call('{}', 5000)).toEqual({ n: 1 });
      expect(await session.call('{}', 5000)).toEqual({ n: 2 });
      const error = await rejection(session.call('{}', 5000));
      expect(error).toMatchObject({
        kind: 'fetch_raised',
        message: 'fetch() raised ValueError: bad batch with ***',
        details: {
          exception: 'ValueError',
          traceback: [
            '  File "tap.py", line 5, in fetch',
            '    raise ValueError("bad batch with " + os.environ["TOKEN"])',
          ].join('\n'),
        },
      });
      expect(JSON.stringify({ ...error, message: error.message })).not.toMatch(
        /harness\.py|\/sandbox\/|\/usr\/lib|pyenv|tapyard-tap-|tok-5d1e/,
      );
      // The session is over: later calls get the same error at once.
      expect(await rejection(session.call('{}', 5000))).toBe(error);
      expect((await session.close()).error).toBe(error);
    },
    TEST_MS,
  );

  it(
    'times out a script that never answers and stops its process',
    async () => {
      const session = await start(
        py(
          'import sys, os, time',
          'def fetch():',
          '    for line in sys.stdin:',
          '        if line.strip() == "pid":',
          '            yield os.getpid()',
          '        else:',
          '            time.sleep(60)',
        ),
      );
      const pid = await session.call('pid', 5000);
      const started = Date.now();
      const error = await rejection(session.call('{}', 500));
      expect(error).toMatchObject({
        kind: 'timeout',
        message: 'the script did not answer call 2 within 500 ms and was stopped',
        details: { limit: 500 },
      });
      expect(await rejection(session.call('{}', 5000))).toBe(error);
      const outcome = await session.close();
      expect(outcome.error).toBe(error);
      expect(outcome.signal).toBe('SIGKILL');
      // Stopped, not waited for: the script would have slept 60 s (a bound, not a speed measurement).
      expect(Date.now() - started).toBeLessThan(45_000);
      // Without bwrap's pid namespace the script's pid is the host's: it must be gone.
      if (mode === 'off') expect(() => process.kill(pid as number, 0)).toThrow(/ESRCH/);
    },
    TEST_MS,
  );

  it(
    'rejects a call the script can no longer answer because fetch() returned',
    async () => {
      const session = await start(
        py(
          'import sys',
          'def fetch():',
          '    for line in sys.stdin:',
          '        yield {"ok": True}',
          '        return',
        ),
      );
      expect(await session.call('{}', 5000)).toEqual({ ok: true });
      // A large line: whether the script is still exiting or gone, the write must not hurt the platform.
      const error = await rejection(session.call(JSON.stringify({ pad: 'p'.repeat(MiB) }), 5000));
      expect(error).toMatchObject({
        kind: 'crashed',
        message: "the script's fetch() ended after answering 1 call; it answers no more",
      });
      const outcome = await session.close();
      expect(outcome).toMatchObject({ error: null, exitCode: 0, recordCount: 1 });
    },
    TEST_MS,
  );

  it(
    'survives a script that closes its stdin while it keeps running',
    async () => {
      // The write fails with EPIPE while the script still runs (bwrap keeps no copy of stdin open):
      // the error must stay on the stream, and the unanswered call times out.
      const session = await start(
        py(
          'import sys, os, time',
          'def fetch():',
          '    sys.stdin.readline()',
          '    os.close(0)',
          '    yield "closed"',
          '    time.sleep(60)',
        ),
      );
      expect(await session.call('{}', 5000)).toBe('closed');
      const error = await rejection(session.call(JSON.stringify({ pad: 'p'.repeat(4 * MiB) }), 1000));
      expect(error.kind).toBe('timeout');
      expect((await session.close()).error).toBe(error);
    },
    TEST_MS,
  );

  it(
    'reports a script that dies between calls',
    async () => {
      const session = await start(
        py(
          'import sys, os',
          'def fetch():',
          '    for line in sys.stdin:',
          '        yield 1',
          '        os._exit(7)',
        ),
      );
      expect(await session.call('{}', 5000)).toBe(1);
      expect(await rejection(session.call('{}', 5000))).toMatchObject({
        kind: 'crashed',
        message: 'the script exited with code 7 before finishing',
      });
    },
    TEST_MS,
  );

  it(
    'close() ends stdin and returns the outcome with the logs',
    async () => {
      const session = await start(
        py(
          'import sys, json',
          'print("loaded")',
          'def fetch():',
          '    for line in sys.stdin:',
          '        req = json.loads(line)',
          '        print("batch", req["id"])',
          '        print("warn", req["id"], file=sys.stderr)',
          '        yield {"id": req["id"]}',
          '    print("input ended")',
        ),
      );
      for (const id of [1, 2, 3]) expect(await session.call(JSON.stringify({ id }), 5000)).toEqual({ id });
      const closing = session.close();
      expect(session.close()).toBe(closing);
      const outcome = await closing;
      expect(outcome).toMatchObject({ error: null, exitCode: 0, recordCount: 3, logsTruncated: false });
      // stdout and stderr are two pipes: each keeps its order, their interleaving is the reader's.
      const lines = outcome.logs.split('\n').filter((l) => l !== '');
      expect(lines.filter((l) => !l.startsWith('warn'))).toEqual([
        'loaded',
        'batch 1',
        'batch 2',
        'batch 3',
        'input ended',
      ]);
      expect(lines.filter((l) => l.startsWith('warn'))).toEqual(['warn 1', 'warn 2', 'warn 3']);
      await expect(session.call('{}', 5000)).rejects.toThrow('the batch session is closed');
    },
    TEST_MS,
  );

  it(
    'keeps the memory limit of the request',
    async () => {
      const session = await start(
        py(
          'import sys, json',
          'def fetch():',
          '    for line in sys.stdin:',
          '        data = bytearray(json.loads(line)["mib"] << 20)',
          '        yield len(data)',
        ),
        { limits: { memoryBytes: 128 * MiB } },
      );
      expect(await session.call('{"mib": 1}', 5000)).toBe(MiB);
      expect(await rejection(session.call('{"mib": 512}', 5000))).toMatchObject({
        kind: 'memory_limit',
        message: 'the script used more than 128 MiB of memory',
      });
    },
    TEST_MS,
  );

  it(
    'passes lines and answers of several MiB',
    async () => {
      const session = await start(
        py(
          'import sys, json',
          'def fetch():',
          '    for line in sys.stdin:',
          '        req = json.loads(line)',
          '        yield {"bytes": len(line), "rows": len(req["rows"]), "echo": req["rows"][-1]["s"] * 40000}',
        ),
      );
      const rows = Array.from({ length: 40_000 }, (_, i) => ({ i, s: `row-${i}-${'v'.repeat(100)}` }));
      const line = JSON.stringify({ rows });
      expect(line.length).toBeGreaterThan(4 * MiB);
      for (let n = 0; n < 3; n++) {
        const answer = (await session.call(line, 15_000)) as { bytes: number; rows: number; echo: string };
        expect(answer.bytes).toBe(line.length + 1);
        expect(answer.rows).toBe(40_000);
        expect(answer.echo).toHaveLength(rows[39_999].s.length * 40_000);
      }
      expect((await session.close()).error).toBeNull();
    },
    TEST_MS,
  );

  it(
    'refuses a script that yields more than one record per line',
    async () => {
      const session = await start(
        py('import sys', 'def fetch():', '    for line in sys.stdin:', '        yield 1', '        yield 2'),
      );
      expect(await session.call('{}', 5000)).toBe(1);
      const outcome = await session.close();
      expect(outcome.error).toMatchObject({
        kind: 'crashed',
        message:
          'the script yielded a record no call asked for (after 1 answers); ' +
          'it must yield exactly one record per input line',
      });
    },
    TEST_MS,
  );

  it(
    'kill() stops the run at once and rejects the waiting call',
    async () => {
      const session = await start(
        py('import sys, time', 'def fetch():', '    for line in sys.stdin:', '        time.sleep(60)'),
      );
      const waiting = session.call('{}', 20_000);
      setTimeout(() => session.kill(), 200);
      expect(await rejection(waiting)).toMatchObject({
        kind: 'killed',
        message: 'the run was stopped by the caller',
      });
      expect((await session.close()).error?.kind).toBe('killed');
    },
    TEST_MS,
  );

  it(
    'refuses a line with a newline and a bad timeout without touching the session',
    async () => {
      const session = await start(SUMMING);
      await expect(session.call('{"rows": []}\n{"rows": []}', 5000)).rejects.toThrow(TypeError);
      await expect(session.call('{"rows": []}', 0)).rejects.toThrow(RangeError);
      expect(await session.call('{"rows": [{"x": 2}]}', 5000)).toEqual({ n: 1, sum: 2 });
      expect((await session.close()).error).toBeNull();
    },
    TEST_MS,
  );
});

describe('run input (bwrap)', () => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture('bwrap', { limits: { timeoutMs: 20_000 } });
  });
  afterAll(() => fx.close());

  it(
    'is null unless requested; writing to a script that is gone does not throw',
    async () => {
      const script = await writeScript(py('def fetch():', '    return [1]'));
      try {
        const request = { scriptPath: script.path, python: fx.venv.python, venvDir: fx.venv.dir };
        const plain = fx.sandbox.run(request);
        await plain.started;
        expect(plain.input()).toBeNull();
        for await (const record of plain) expect(record).toBe(1);
        expect((await plain.outcome).error).toBeNull();

        const piped = fx.sandbox.run({ ...request, stdin: true });
        await piped.started;
        const input = piped.input();
        expect(input).not.toBeNull();
        const records: unknown[] = [];
        for await (const record of piped) records.push(record);
        expect(records).toEqual([1]);
        expect((await piped.outcome).error).toBeNull();
        expect(piped.input()).toBeNull();
        const written = await new Promise<Error | null | undefined>((resolve) =>
          input?.write(Buffer.alloc(MiB), (err) => resolve(err)),
        );
        expect(written).toMatchObject({ code: 'ERR_STREAM_DESTROYED' });
      } finally {
        await script.remove();
      }
    },
    TEST_MS,
  );
});
