import fc from 'fast-check';
import { ReaderPool, ReaderResult } from './support/reader-pool';
import { FUZZ_TEST_TIMEOUT, corpus, fuzzParameters, keep } from './support/fuzz-options';
import { applyMutations, chunkSize, mutations } from './support/mutate';

/**
 * Differential fuzzing of the tap records reader (JSON lines from the harness, mapped onto CSV
 * columns) against JSON.parse per line: every line reads as JSON.parse reads it, or is a reject
 * naming that line; every read ends in time and is the same at any chunk size.
 */
describe('tap records reader fuzz (differential against JSON.parse per line)', () => {
  const pool = new ReaderPool();
  afterAll(() => pool.close());
  const KEYS = ['a', 'b', 'c'];

  const cell = (v: unknown): string | null =>
    v === null || v === undefined
      ? null
      : typeof v === 'string'
        ? v
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);

  async function read(data: Uint8Array, chunk: number): Promise<ReaderResult> {
    const result = await pool.run({ reader: 'tap', data, chunk, keys: KEYS });
    expect(await pool.run({ reader: 'tap', data, chunk: 1 << 30, keys: KEYS })).toEqual(result);
    return result;
  }

  function check(data: Uint8Array, r: ReaderResult): void {
    expect(r.fatal).toBeNull();
    const rowAt = new Map(r.lines.map((l, i) => [l, r.rows[i]]));
    const errAt = new Map(r.errors.map((e) => [e.line, e.reason]));
    new TextDecoder()
      .decode(data)
      .split('\n')
      .forEach((text, i) => {
        const line = i + 1;
        if (text === '') return;
        let ref: unknown;
        try {
          ref = JSON.parse(text);
        } catch {
          expect({ line, reason: errAt.get(line) }).toEqual({ line, reason: 'record is not valid JSON' });
          return;
        }
        if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) {
          expect({ line, reason: errAt.get(line) }).toEqual({ line, reason: 'record is not a JSON object' });
          return;
        }
        const o = ref as Record<string, unknown>;
        expect({ line, row: rowAt.get(line) }).toEqual({ line, row: KEYS.map((k) => cell(o[k])) });
      });
  }

  const record = fc.dictionary(fc.constantFrom(...KEYS, 'other'), fc.jsonValue({ maxDepth: 2 }));

  it(
    'reads valid and corrupted record lines as JSON.parse does, or rejects the line',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(record, { maxLength: 10 }),
          fc.boolean(),
          mutations('{}[]",:\n\\'),
          chunkSize,
          async (records, corrupt, ms, chunk) => {
            const clean = Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
            const data = corrupt ? applyMutations(clean, ms) : clean;
            try {
              const r = await read(data, chunk);
              check(data, r);
              if (!corrupt) expect(r.errors).toEqual([]);
            } catch (err) {
              keep('tap-records', data, 'jsonl');
              throw err;
            }
          },
        ),
        fuzzParameters(300),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('replays the regression corpus (test/corpora/tap-records)', async () => {
    const cases = corpus('tap-records');
    expect(cases.length).toBeGreaterThan(0);
    for (const [name, data] of cases) {
      try {
        check(data, await read(data, 1));
      } catch (err) {
        throw new Error(`corpus file tap-records/${name}: ${(err as Error).message}`, { cause: err });
      }
    }
  }, 120_000);
});
