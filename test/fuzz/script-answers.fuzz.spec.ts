import fc from 'fast-check';
import type { FieldType, SchemaField, TypedBatch, Value } from '@tapyard/model';
import type { CodegenKind } from '../../libs/scripts/src/script-contract';
import { AnswerPool, type AnswerJob, type AnswerResult } from './support/answer-pool';
import { FUZZ_TEST_TIMEOUT, fuzzParameters } from './support/fuzz-options';
import { applyMutations, chunkSize, mutations } from './support/mutate';

/**
 * A CodeGen script's answer is hostile input: the script shares the interpreter with the driver that
 * writes the answer, so it can forge any line on its record channel. Every answer, well formed or
 * not, is read within a time and heap bound (a thread with a heap limit) and ends as a batch that
 * accounts for each input row exactly once (loaded or rejected, values of their columns' types), or
 * as a ScriptFailure / a corrupted channel: never a thrown bug, a hang or an exhausted heap.
 */
describe('CodeGen script answers fuzz (hostile answers against the batch invariants)', () => {
  const pool = new AnswerPool();
  afterAll(() => pool.close());
  const MAX_RECORD = 1 << 24;

  const INPUTS: SchemaField[] = [
    { name: 'id', type: 'int' },
    { name: 'amount', type: 'double' },
    { name: 'label', type: 'string' },
    { name: 'big', type: 'bigint' },
    { name: 'flag', type: 'boolean' },
  ];
  const OUTPUTS: SchemaField[] = [
    { name: 'extra', type: 'double' },
    { name: 'note', type: 'string' },
  ];

  const valueOf: Record<string, fc.Arbitrary<Value>> = {
    int: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    double: fc.double({ noNaN: true, noDefaultInfinity: true }),
    string: fc.string({ maxLength: 6 }),
    bigint: fc.oneof(fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
    boolean: fc.boolean(),
  };

  /** A batch of 1–12 rows; row i is line 10 + 3i, so a loaded line names its row. */
  const batchArb: fc.Arbitrary<TypedBatch> = fc
    .integer({ min: 1, max: 12 })
    .chain((n) =>
      fc
        .tuple(
          ...INPUTS.map((c) =>
            fc.array(fc.option(valueOf[c.type], { freq: 4 }), { minLength: n, maxLength: n }),
          ),
        )
        .map((values) => ({ columns: INPUTS, values, lines: values[0].map((_, i) => 10 + 3 * i) })),
    );

  /** A cell a script (or a forger) may write: any JSON value, deep ones included. */
  const anyCell = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom<unknown>(1e308, -0, 2 ** 53 + 1, '2026-01-01', 'true', '', '\u0000', [[[[[]]]]]),
  );

  function packed(values: number[], nulls: number[]): { f8: string; nulls: number[] } {
    return { f8: Buffer.from(new Float64Array(values).buffer).toString('base64'), nulls };
  }

  /** A well-formed transformation answer by column for `batch`. */
  function columnarArb(batch: TypedBatch): fc.Arbitrary<Record<string, unknown>> {
    const n = batch.lines.length;
    return fc.subarray([...Array(n).keys()]).chain((dropped) => {
      const kept = [...Array(n).keys()].filter((i) => !dropped.includes(i));
      const column = (k: number): fc.Arbitrary<unknown> => {
        const given = k < INPUTS.length ? batch.values[k] : null;
        const fresh = fc.array(anyCell, { minLength: kept.length, maxLength: kept.length });
        const doubles = fc
          .tuple(
            fc.array(fc.double(), { minLength: kept.length, maxLength: kept.length }),
            fc.subarray([...kept.keys()]),
          )
          .map(([v, nulls]) => packed(v, nulls));
        const options: fc.Arbitrary<unknown>[] = [fresh, doubles];
        if (given !== null)
          options.push(
            fc.constant(null),
            // The values given (JSON has no bigint: those go back as their number).
            fc.constant(kept.map((i) => (typeof given[i] === 'bigint' ? Number(given[i]) : given[i]))),
          );
        return fc.oneof(...options);
      };
      return fc
        .tuple(...[...INPUTS, ...OUTPUTS].map((_, k) => column(k)))
        .map((columns) => ({ columns, dropped }));
    });
  }

  /** What a forger changes in an answer by column. */
  const breakage = fc.oneof(
    fc.record({
      dropped: fc.constantFrom<unknown>(
        ['x'],
        [null],
        [true],
        [1.5],
        [-1],
        [1e308],
        [2 ** 31],
        [3_000_000_000],
        [[0]],
        [{}],
        'all',
      ),
    }),
    fc.record({ droppedEdit: fc.constantFrom('duplicate', 'reverse', 'past-end', 'every-and-more') }),
    fc.record({
      column: fc.nat(),
      to: fc.constantFrom(
        'shorter',
        'longer',
        'string',
        'number',
        'object',
        'f8-width',
        'f8-rows',
        'f8-huge',
        'f8-not-base64',
        'f8-nulls-out',
        'f8-nulls-kind',
        'f8-no-nulls',
        'deep',
      ),
    }),
    fc.record({ columnsEdit: fc.constantFrom('remove', 'add', 'none', 'not-a-list') }),
  );

  function broken(answer: Record<string, unknown>, n: number, how: Record<string, unknown>): unknown {
    const a = structuredClone(answer) as { columns: unknown[]; dropped: unknown };
    const dropped = a.dropped as number[];
    if ('dropped' in how) a.dropped = how.dropped === 'all' ? 'all' : how.dropped;
    else if (how.droppedEdit === 'duplicate') a.dropped = [...dropped, ...dropped, 0, 0];
    else if (how.droppedEdit === 'reverse') a.dropped = [n - 1, 0];
    else if (how.droppedEdit === 'past-end') a.dropped = [...dropped, n];
    else if (how.droppedEdit === 'every-and-more') a.dropped = [...Array(n + 1).keys()];
    else if (how.columnsEdit === 'remove') a.columns.pop();
    else if (how.columnsEdit === 'add') a.columns.push(null);
    else if (how.columnsEdit === 'none') delete (a as Partial<typeof a>).columns;
    else if (how.columnsEdit === 'not-a-list') a.columns = { 0: null } as unknown as unknown[];
    else {
      const k = (how.column as number) % a.columns.length;
      const rows = n - dropped.length;
      const col = a.columns[k];
      const list = Array.isArray(col) ? col : new Array<unknown>(rows).fill(1);
      a.columns[k] = {
        shorter: list.slice(1),
        longer: [...list, 1],
        string: 'x'.repeat(rows),
        number: rows,
        object: { length: rows },
        'f8-width': { f8: Buffer.alloc(8 * rows + 4).toString('base64'), nulls: [] },
        'f8-rows': packed(new Array<number>(rows + 1).fill(1), []),
        // A section claiming a billion doubles (its base64 would be 10 GB): refused by its length.
        'f8-huge': { f8: 'AAAA'.repeat(4), nulls: [], rows: 1_000_000_000 },
        'f8-not-base64': { f8: '!'.repeat(Math.ceil((8 * rows) / 3) * 4), nulls: [] },
        'f8-nulls-out': { ...packed(new Array<number>(rows).fill(1), []), nulls: [rows, -1, 2 ** 32] },
        'f8-nulls-kind': { ...packed(new Array<number>(rows).fill(1), []), nulls: ['0', 0.5, null] },
        'f8-no-nulls': { f8: packed(new Array<number>(rows).fill(1), []).f8 },
        deep: list.map(() => JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`) as unknown),
      }[how.to as string];
    }
    return a;
  }

  const TYPE_OK: Record<FieldType, (v: Value) => boolean> = {
    int: (v) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 31,
    double: (v) => typeof v === 'number' && Number.isFinite(v),
    string: (v) => typeof v === 'string',
    bigint: (v) => typeof v === 'bigint' || Number.isSafeInteger(v),
    boolean: (v) => typeof v === 'boolean',
    float: () => false,
    date: () => false,
    timestamp: () => false,
    decimal: () => false,
  };

  /** A read answer accounts for every input row exactly once, with values of its columns' types. */
  function checkRead(kind: CodegenKind, batch: TypedBatch, r: AnswerResult, mayFail: boolean): void {
    if (r.outcome === 'bug') throw new Error(`the answer reader threw: ${r.message}`);
    if (r.outcome !== 'ok') {
      expect(mayFail).toBe(true);
      expect(r.message.length).toBeGreaterThan(0);
      return;
    }
    const n = batch.lines.length;
    const loaded = r.batch.lines.map((line) => (line - 10) / 3);
    for (const i of loaded) expect(Number.isInteger(i) && i >= 0 && i < n).toBe(true);
    for (let k = 1; k < loaded.length; k++) expect(loaded[k]).toBeGreaterThan(loaded[k - 1]);
    expect(r.rejects.reasons).toHaveLength(r.rejects.rows.length);
    expect([...loaded, ...r.rejects.rows].sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
    const columns = kind === 'transformation' ? [...INPUTS, ...OUTPUTS] : INPUTS;
    expect(r.batch.columns.map((c) => c.name)).toEqual(columns.map((c) => c.name));
    r.batch.values.forEach((col, k) => {
      expect(col).toHaveLength(loaded.length);
      for (const v of col)
        if (v !== null && !TYPE_OK[columns[k].type](v)) throw new Error(`${String(v)} in ${k}`);
    });
    // A data-quality script only chooses rows: the loaded ones are the given ones, unchanged.
    if (kind === 'dataQuality')
      r.batch.values.forEach((col, k) => expect(col).toEqual(loaded.map((i) => batch.values[k][i])));
  }

  function job(kind: CodegenKind, batch: TypedBatch, channel: Uint8Array, chunk = 1 << 20): AnswerJob {
    return { kind, outputColumns: OUTPUTS, batch, channel, chunk, maxRecordBytes: MAX_RECORD };
  }

  const line = (answer: unknown): Buffer => Buffer.from(`${JSON.stringify(answer)}\n`);

  it(
    'a transformation answer by column, well formed or broken by a forger: read within the bound, rows accounted for',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          batchArb.chain((b) => fc.tuple(fc.constant(b), columnarArb(b))),
          fc.option(breakage, { freq: 2 }),
          chunkSize,
          async ([batch, answer], how, chunk) => {
            const sent = how === null ? answer : broken(answer, batch.lines.length, how);
            const r = await pool.run(job('transformation', batch, line(sent), chunk));
            checkRead('transformation', batch, r, how !== null);
            // What the driver itself writes is always read.
            if (how !== null) return;
            expect(r.outcome).toBe('ok');
            if (r.outcome !== 'ok') return;
            // Each loaded row is its own: a column answered unchanged holds that row's given values.
            const rows = r.batch.lines.map((line) => (line - 10) / 3);
            (answer.columns as unknown[]).forEach((col, k) => {
              if (col === null) expect(r.batch.values[k]).toEqual(rows.map((i) => batch.values[k][i]));
            });
            expect(r.rejects.rows.filter((i) => (answer.dropped as number[]).includes(i))).toEqual(
              answer.dropped,
            );
          },
        ),
        fuzzParameters(250),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'row-wise answers of either kind, any JSON in them: read within the bound, rows accounted for',
    async () => {
      const entry = fc.oneof(
        fc.constantFrom<unknown>(null, true, false, '', 'bad row'),
        fc.dictionary(
          fc.constantFrom('id', 'amount', 'label', 'big', 'flag', 'extra', 'note', 'constructor'),
          anyCell,
        ),
        anyCell,
      );
      await fc.assert(
        fc.asyncProperty(
          batchArb,
          fc.constantFrom<CodegenKind>('dataQuality', 'transformation'),
          fc.integer({ min: -1, max: 1 }),
          fc.array(entry, { maxLength: 14 }),
          fc.constantFrom('result', 'pass', 'bare', 'other'),
          async (batch, kind, offBy, entries, shape) => {
            const n = batch.lines.length;
            const list = Array.from(
              { length: Math.max(0, n + offBy) },
              (_, i) => entries[i % Math.max(1, entries.length)] ?? null,
            );
            const answer =
              shape === 'result'
                ? { result: list }
                : shape === 'pass'
                  ? { pass: true }
                  : shape === 'bare'
                    ? list
                    : { pass: 1, result: 'x' };
            const r = await pool.run(job(kind, batch, line(answer)));
            checkRead(kind, batch, r, true);
            if (shape === 'pass' && kind === 'dataQuality') expect(r.outcome).toBe('ok');
          },
        ),
        fuzzParameters(250),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'corrupted channel bytes (truncated, flipped, interleaved): read within the bound, rows accounted for',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          batchArb.chain((b) => fc.tuple(fc.constant(b), columnarArb(b))),
          mutations('{}[]",:\n!#0-9.e'),
          chunkSize,
          async ([batch, answer], ms, chunk) => {
            const data = applyMutations(line(answer), ms);
            checkRead(
              'transformation',
              batch,
              await pool.run(job('transformation', batch, data, chunk)),
              true,
            );
          },
        ),
        fuzzParameters(250),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  describe('named hostile answers end as a failure of the script', () => {
    const batch: TypedBatch = {
      columns: INPUTS,
      values: [
        [1, 2, 3],
        [1.5, null, 2],
        ['a', 'b', null],
        [1n, 2, null],
        [true, false, null],
      ],
      lines: [10, 13, 16],
    };
    const text = (s: string): Buffer => Buffer.from(s);
    const cases: [string, CodegenKind, Buffer, AnswerResult['outcome'][]][] = [
      [
        'dropped names no row (would loop forever)',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2, 3], ['a', 'b', 'c']], dropped: ['x'] }),
        ['failure'],
      ],
      [
        'dropped twice the same row',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2], ['a', 'b']], dropped: [0, 0] }),
        ['failure'],
      ],
      [
        'dropped past the batch',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2, 3], ['a', 'b', 'c']], dropped: [7] }),
        ['failure'],
      ],
      [
        'dropped out of order',
        'transformation',
        line({ columns: [null, null, null, null, null, [1], ['a']], dropped: [2, 0] }),
        ['failure'],
      ],
      [
        'dropped claims billions of rows',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2, 3], ['a', 'b', 'c']], dropped: [3e9] }),
        ['failure'],
      ],
      [
        'packed doubles of the wrong width',
        'transformation',
        line({
          columns: [
            null,
            null,
            null,
            null,
            null,
            { f8: Buffer.alloc(20).toString('base64'), nulls: [] },
            ['a', 'b', 'c'],
          ],
          dropped: [],
        }),
        ['failure'],
      ],
      [
        'packed doubles for more rows than the batch',
        'transformation',
        line({
          columns: [null, null, null, null, null, packed([1, 2, 3, 4], []), ['a', 'b', 'c']],
          dropped: [],
        }),
        ['failure'],
      ],
      [
        'packed nulls past the column',
        'transformation',
        line({
          columns: [null, null, null, null, null, packed([1, 2, 3], [3]), ['a', 'b', 'c']],
          dropped: [],
        }),
        ['failure'],
      ],
      [
        'one column too few',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2, 3]], dropped: [] }),
        ['failure'],
      ],
      [
        'the answer for another batch (4 rows)',
        'transformation',
        line({ columns: [null, null, null, null, null, [1, 2, 3, 4], ['a', 'b', 'c', 'd']], dropped: [] }),
        ['failure'],
      ],
      [
        'a data-quality verdict list for another batch',
        'dataQuality',
        line({ result: [null, null] }),
        ['failure'],
      ],
      ['a pass flag from a transformation', 'transformation', line({ pass: true }), ['failure']],
      [
        'a non-JSON line (interleaved log output)',
        'transformation',
        text('processing rows...\n{"pass": true}\n'),
        ['channel'],
      ],
      ['a forged control line', 'dataQuality', text('!{"type":"done","records":"x"}\n'), ['channel']],
      [
        'NaN in the JSON',
        'transformation',
        text('{"columns":[null,null,null,null,null,[NaN,1,2],["a","b","c"]],"dropped":[]}\n'),
        ['channel'],
      ],
      ['a truncated answer', 'transformation', text('{"columns":[null,null,null,null,null,[1,2'), ['none']],
      [
        'deeply nested JSON',
        'dataQuality',
        text(`{"result":[${'['.repeat(500_000)}${']'.repeat(500_000)},null,null]}\n`),
        ['failure', 'channel'],
      ],
      // The channel has no length prefix: its equivalent is a line that never ends, bounded by the record limit.
      [
        'an unterminated line past the record limit',
        'dataQuality',
        Buffer.alloc(MAX_RECORD + 1, 0x5b),
        ['channel'],
      ],
    ];
    it.each(cases)('%s', async (_name, kind, channel, outcomes) => {
      const r = await pool.run(job(kind, batch, channel, 1 << 16));
      expect(outcomes).toContain(r.outcome);
    });
  });
});
