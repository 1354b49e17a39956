import { py, SandboxFixture, sandboxFixture } from './spec-fixtures';
import { RecordChunk } from './run-handle';
import { writeScript } from './script-file';

/** Rows mode: the harness checks structured rows and announces keys; the parent need not parse. */
describe('rows mode (bwrap)', () => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture('bwrap', { limits: { timeoutMs: 20_000 } });
  });
  afterAll(() => fx.close());

  async function chunks(source: string, parse: boolean) {
    const script = await writeScript(source);
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        rows: true,
      });
      const got: RecordChunk[] = [];
      for await (const c of handle.chunks({ parse })) got.push(c);
      return { got, outcome: await handle.outcome };
    } finally {
      await script.remove();
    }
  }

  it('announces each key once, in order of first appearance, as JSON names it', async () => {
    const { got, outcome } = await chunks(
      py(
        'def fetch():',
        '    yield {"a": 1}',
        '    yield {"a": 2, "b": 3}',
        '    yield {"b": 4, "a": 5}',
        '    yield {1: "x", "a": 6}',
        '    for i in range(5000):',
        '        yield {"a": i}',
      ),
      false,
    );
    expect(outcome.error).toBeNull();
    expect(got.flatMap((c) => c.keys)).toEqual(['a', 'b', '1']);
    expect(got.reduce((n, c) => n + c.count, 0)).toBe(5004);
    expect(got.every((c) => c.records.length === 0)).toBe(true);
    const lines = got
      .map((c) => c.text)
      .join('\n')
      .split('\n');
    expect(lines).toHaveLength(5004);
    expect(lines.slice(0, 4)).toEqual(['{"a":1}', '{"a":2,"b":3}', '{"b":4,"a":5}', '{"1":"x","a":6}']);
  });

  it('still parses when asked, with the keys alongside', async () => {
    const { got } = await chunks(py('def fetch():', '    return [{"x": 1}, {"y": 2}]'), true);
    expect(got.flatMap((c) => c.records)).toEqual([{ x: 1 }, { y: 2 }]);
    expect(got.flatMap((c) => c.keys)).toEqual(['x', 'y']);
  });

  it('refuses a record that is not an object, naming it', async () => {
    const { got, outcome } = await chunks(py('def fetch():', '    return [{"x": 1}, {"x": 2}, [3]]'), false);
    expect(got.reduce((n, c) => n + c.count, 0)).toBe(2);
    expect(outcome.error?.kind).toBe('not_row');
    expect(outcome.error?.message).toBe(
      'record 2 is a list; a structured tap yields objects (dicts), one per row',
    );
    const none = await chunks(py('def fetch():', '    return [None]'), false);
    expect(none.outcome.error?.message).toMatch(/^record 0 is null;/);
  });
});
