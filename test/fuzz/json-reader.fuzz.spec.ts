import fc from 'fast-check';
import { ReaderPool, ReaderResult } from './support/reader-pool';
import { FUZZ_TEST_TIMEOUT, corpus, fuzzParameters, keep } from './support/fuzz-options';
import { applyMutations, chunkSize, mutations } from './support/mutate';

/**
 * Differential fuzzing of the JSON reader against JSON.parse (issue 18). Valid arrays and JSON Lines
 * must read exactly as JSON.parse reads them. Corrupted ones (bytes inserted or deleted, truncation,
 * control bytes, invalid UTF-8, duplicated runs) must read as JSON.parse reads them, or end in a
 * clear error: a FatalReadError for an array that is not JSON, a rejected line for a JSON Lines line
 * that is not, a rejected record for invalid UTF-8 inside it. Every read ends within 10 s (the reader
 * runs in a thread that is stopped otherwise) and gives the same result at any chunk size.
 */
describe('JSON reader fuzz (differential against JSON.parse)', () => {
  const pool = new ReaderPool();
  afterAll(() => pool.close());

  const decode = (b: Uint8Array): string => {
    const text = new TextDecoder().decode(b);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  };
  const norm = (text: string | null): string => JSON.stringify(JSON.parse(text ?? 'null'));
  const RECORD_REASONS =
    /^(invalid UTF-8 at byte offset \d+|nesting deeper than \d+ levels|record exceeds .*)$/;

  async function read(
    data: Uint8Array,
    chunk: number,
    opts: Record<string, unknown> = {},
  ): Promise<ReaderResult> {
    const result = await pool.run({ reader: 'json', data, chunk, opts });
    // Chunking never changes the outcome.
    expect(await pool.run({ reader: 'json', data, chunk: 1 << 30, opts })).toEqual(result);
    return result;
  }

  /** An input whose first value starts with `[`: JSON.parse's answer, or a FatalReadError. */
  function checkArray(data: Uint8Array, r: ReaderResult): void {
    let ref: unknown;
    let refOk = true;
    try {
      ref = JSON.parse(decode(data));
    } catch {
      refOk = false;
    }
    if (!refOk || !Array.isArray(ref)) {
      expect(r.fatal).not.toBeNull();
      expect(r.fatal?.name).toBe('FatalReadError');
      expect(r.fatal?.message).toMatch(/byte offset \d+|the file is empty/);
      return;
    }
    expect(r.fatal).toBeNull();
    // Each element is a row equal to JSON.parse's, or a record-level reject; order is kept.
    expect(r.rows.length + r.errors.length).toBe(ref.length);
    for (const e of r.errors) expect(e.reason).toMatch(RECORD_REASONS);
    const rows = r.rows.map((c) => norm(c[0]));
    const expected = ref.map((v) => JSON.stringify(v));
    let k = 0;
    for (const row of rows) {
      while (k < expected.length && expected[k] !== row) k++;
      expect(k).toBeLessThan(expected.length);
      k++;
    }
  }

  /** JSON Lines: every non-blank line is JSON.parse's value or a reject naming that line. */
  function checkLines(data: Uint8Array, r: ReaderResult): void {
    if (r.fatal) {
      expect(r.fatal.message).toBe('the file is empty');
      expect(decode(data)).toMatch(/^[ \t\r\n]*$/);
      return;
    }
    const lines = decode(data).split('\n');
    const rowAt = new Map(r.lines.map((l, i) => [l, r.rows[i][0]]));
    const errAt = new Map(r.errors.map((e) => [e.line, e.reason]));
    lines.forEach((text, i) => {
      const line = i + 1;
      if (/^[ \t\r]*$/.test(text)) {
        expect(rowAt.has(line) || errAt.has(line)).toBe(false);
        return;
      }
      let ref: string | null;
      try {
        ref = JSON.stringify(JSON.parse(text));
      } catch {
        ref = null;
      }
      if (rowAt.has(line)) expect({ line, row: norm(rowAt.get(line) ?? null) }).toEqual({ line, row: ref });
      else {
        expect(errAt.has(line)).toBe(true);
        if (ref !== null) expect(errAt.get(line)).toMatch(/invalid UTF-8|nesting deeper|exceeds/);
      }
    });
  }

  const values = fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 12 });
  const indent = fc.constantFrom(undefined, 0, 1, 2, '\t');

  it(
    'reads valid arrays exactly as JSON.parse does',
    async () => {
      await fc.assert(
        fc.asyncProperty(values, indent, chunkSize, async (vs, ind, chunk) => {
          const data = Buffer.from(JSON.stringify(vs, null, ind));
          const r = await read(data, chunk);
          expect(r.fatal).toBeNull();
          expect(r.errors).toEqual([]);
          expect(r.rows.map((c) => norm(c[0]))).toEqual(vs.map((v) => JSON.stringify(v)));
        }),
        fuzzParameters(150),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'reads corrupted arrays as JSON.parse does, or fails them with a byte offset',
    async () => {
      await fc.assert(
        fc.asyncProperty(values, indent, mutations('[]{}",:\\ \n'), chunkSize, async (vs, ind, ms, chunk) => {
          const data = applyMutations(Buffer.from(JSON.stringify(vs, null, ind)), ms);
          try {
            const r = await read(data, chunk);
            if (/^[ \t\n\r]*\[/.test(decode(data))) checkArray(data, r);
            else expect(r.fatal?.name ?? 'none').toMatch(/FatalReadError|none/);
          } catch (err) {
            keep('json', data, 'json');
            throw err;
          }
        }),
        fuzzParameters(300),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'reads JSON Lines, valid or corrupted, line by line as JSON.parse does',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          values,
          fc.boolean(),
          mutations('[]{}",:\\ \n\r'),
          chunkSize,
          async (vs, corrupt, ms, chunk) => {
            const clean = Buffer.from(vs.map((v) => JSON.stringify(v)).join('\n'));
            const data = corrupt ? applyMutations(clean, ms) : clean;
            try {
              const r = await read(data, chunk, { lines: true });
              checkLines(data, r);
              if (!corrupt) expect(r.errors).toEqual([]);
            } catch (err) {
              keep('jsonl', data, 'jsonl');
              throw err;
            }
          },
        ),
        fuzzParameters(300),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('stays bounded on deep nesting and huge tokens', async () => {
    const deep = Buffer.from(`[1,${'['.repeat(200_000)}${']'.repeat(200_000)},2]`);
    const r = await read(deep, 65536);
    expect(r.rows.map((c) => c[0])).toEqual(['1', '2']);
    expect(r.errors.map((e) => e.reason)).toEqual(['nesting deeper than 64 levels']);
    const unclosed = await read(Buffer.from('['.repeat(500_000)), 65536);
    expect(unclosed.fatal?.message).toMatch(/ends before the JSON is complete/);
    const huge = await read(Buffer.from(`["${'x'.repeat(3_000_000)}", 7]`), 65536, {
      maxRecordBytes: 1_000_000,
    });
    expect(huge.rows).toEqual([['7']]);
    expect(huge.errors.map((e) => e.reason)).toEqual(['record exceeds 1000000 bytes']);
    const longNumber = await read(Buffer.from(`[${'9'.repeat(2_000_000)}]`), 65536, { maxRecordBytes: 100 });
    expect(longNumber.errors.map((e) => e.reason)).toEqual(['record exceeds 100 bytes']);
  }, 120_000);

  it('replays the regression corpus (test/corpora/json, test/corpora/jsonl)', async () => {
    const cases = [
      ...corpus('json').map((c) => ['json', ...c] as const),
      ...corpus('jsonl').map((c) => ['jsonl', ...c] as const),
    ];
    expect(cases.length).toBeGreaterThan(0);
    for (const [kind, name, data] of cases) {
      const r = await read(data, 1, kind === 'jsonl' ? { lines: true } : {});
      try {
        if (kind === 'jsonl') checkLines(data, r);
        else if (/^[ \t\n\r]*\[/.test(decode(data))) checkArray(data, r);
        else expect(r.fatal?.name ?? 'none').toMatch(/FatalReadError|none/);
      } catch (err) {
        throw new Error(`corpus file ${kind}/${name}: ${(err as Error).message}`, { cause: err });
      }
    }
  }, 120_000);
});
