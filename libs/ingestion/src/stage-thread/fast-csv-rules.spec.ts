import fc from 'fast-check';
import { Readable } from 'node:stream';
import type { Payload } from '@tapyard/destinations';
import type {
  CsvAttributes,
  DataQualityRule,
  FieldType,
  PipelineDefinition,
  TypedBatch,
} from '@tapyard/model';
import { compileCsvCheck, readCsv, readerInput } from '@tapyard/readers';
import { propertyRuns } from '../../../../test/support/property-runs';
import { fastPathCellRules, rulesOnFastPath } from '../data-quality-rules';
import { BatchBuilder, RowPlan } from '../row-plan';
import { convert, newCounts } from './convert';
import { FastCsvInput } from './fast-csv';
import type { Counts } from './protocol';

/**
 * Data-quality rules on the CSV fast path: the byte check refuses exactly the records the rules
 * reject, so a file loads the same rows, and rejects the same records with the same reasons on the
 * same lines, as on the validating path. Random files, settings and rule sets, seeded.
 */

type Dialect = Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>;
const CSV: Dialect = { delimiter: ',', quote: '"', escape: null };
const DIALECTS: Dialect[] = [
  CSV,
  { delimiter: ';', quote: '"', escape: '\\' },
  { delimiter: '\t', quote: "'", escape: null },
  { delimiter: '|', quote: null, escape: null },
];

/** Cell texts per type: values the byte check takes, among them the edges of the rules below. */
const NUMBERS = [
  '0',
  '7',
  '-3',
  '+5',
  '007',
  '-0',
  '999',
  '1000',
  '1001',
  '10',
  '100.0',
  '999.99',
  '1000.001',
];
const INTEGERS = NUMBERS.filter((n) => !n.includes('.'));
const POOLS: Record<FieldType, string[]> = {
  int: [...INTEGERS, '2147483647'],
  bigint: [...INTEGERS, '9007199254740993', '-123456789012345678'],
  double: [...NUMBERS, '.5', '5.', '1e3', '1.5E-3', '-0.0', '12345678901234567', '0.1000000000000000055'],
  float: [...NUMBERS, '1e-3', '.25'],
  decimal: [...NUMBERS, '0.001', '-12.5'],
  string: ['a', 'abc', ' a', 'a ', '\u00a0a', 'a\u3000', '\ufeffa', 'é', 'Zoë', '', 'say "hi"', 'x,y', 'x;y'],
  boolean: ['true', 'false', 'TRUE', 't', 'f', '1', '0', 'yes', 'no'],
  date: ['2026-03-01', '2026-12-31', '2025-01-01'],
  timestamp: ['2026-03-01T10:00:00Z', '2026-03-01 10:00', '2026-03-01', '2026-03-01T10:00:00+02:00'],
};
POOLS.string.push('12345', '1234', 'NULL', ' ', 'line\nbreak', 'back\\slash', "it's", '\t b\t');
/** And values it refuses (the validating path reads them: some are rejects, some not). */
const JUNK: Record<FieldType, string[]> = {
  int: ['abc', ' 5', '1e3', '2147483648', 'NULL'],
  bigint: ['1_0', '0x1F'],
  double: ['NaN', '1e400', ' 1'],
  float: ['3.4e38'],
  decimal: ['1e2'],
  string: ['NUL\0'],
  boolean: ['maybe', 'NA'],
  date: ['2026-02-30', '2026-3-1'],
  timestamp: ['2026-13-01', '24:00'],
};
const TYPES = Object.keys(POOLS) as FieldType[];
const PATTERNS = [
  '^\\d{5}$',
  '^\\d+$',
  '^[a-z]+$',
  'a',
  '^\\s*a\\s*$',
  '^.{1,3}$',
  '^(true|false)$',
  'é',
  '^-',
  '\\d',
  // Byte forms (see compileLinearRegex's testAscii): a fixed length, a count range, an unbounded run.
  '^\\w{1,3}$',
  '^[a-z]*\\d?$',
  '^[A-Za-z]{2}',
];
const BOUNDS: Record<string, (number | string)[]> = {
  number: [-1, 0, 5, 10, 100, 999.99, 1000, '10', '1e3', 2147483647],
  date: ['2026-01-01', '2026-03-01', '2026-03-01T10:00:00Z', '2026-12-31'],
};

function ruleFor(column: string, type: FieldType): fc.Arbitrary<DataQualityRule> {
  const pool = POOLS[type];
  const dated = type === 'date' || type === 'timestamp';
  const ranged = dated ? BOUNDS.date : BOUNDS.number;
  const key = (x: number | string): number => (dated ? Date.parse(String(x)) : Number(x));
  const kinds: fc.Arbitrary<DataQualityRule>[] = [
    fc.constant({ type: 'not_null', column }),
    fc.constant({ type: 'type_conformance', column }),
    fc.constantFrom(...PATTERNS).map((pattern) => ({ type: 'regex', column, pattern })),
    fc
      .tuple(
        fc.subarray(pool, { minLength: 1, maxLength: Math.min(4, pool.length) }),
        fc.boolean(),
        fc.boolean(),
      )
      .map(([values, trimmed, long]) => ({
        type: 'allowed_values',
        column,
        // The rules see cells trimmed: ' a' passes as 'a'. A long list is looked up by text, a
        // short one compared by bytes.
        values: [
          ...(trimmed ? values.map((v) => v.trim()) : values),
          ...(long ? Array.from({ length: 20 }, (_, k) => `v${k}`) : []),
        ],
      })),
  ];
  if (type !== 'string' && type !== 'boolean') {
    kinds.push(
      fc
        .tuple(fc.option(fc.constantFrom(...ranged)), fc.option(fc.constantFrom(...ranged)))
        .filter(([min, max]) => min !== null || max !== null)
        // A range that some values pass and others not.
        .map(([a, b]) => (a !== null && b !== null && key(a) > key(b) ? [b, a] : [a, b]))
        .map(([min, max]) => ({
          type: 'range',
          column,
          ...(min === null ? {} : { min }),
          ...(max === null ? {} : { max }),
        })),
    );
  }
  return fc.oneof(...kinds);
}

/** A cell: its text (null: NULL) and whether it is quoted when it need not be. */
type Cell = [string | null, boolean];

const fileCase = fc
  .record({
    dialect: fc.constantFrom(...DIALECTS),
    types: fc.array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 4 }),
    eol: fc.constantFrom('\n', '\r\n'),
  })
  .chain((c) =>
    fc.record({
      dialect: fc.constant(c.dialect),
      types: fc.constant(c.types),
      eol: fc.constant(c.eol),
      rows: fc.array(
        fc.tuple(
          ...c.types.map((t) =>
            fc.tuple(
              fc.oneof(
                { arbitrary: fc.constantFrom(...POOLS[t]), weight: 30 },
                { arbitrary: fc.constantFrom(...JUNK[t]), weight: 1 },
                { arbitrary: fc.constant(null), weight: 3 },
              ),
              // Quoted when it need not be: a string now and then, rarely anything else (then refused).
              fc.nat(t === 'string' ? 3 : 30).map((n) => n === 0),
            ),
          ),
        ) as fc.Arbitrary<Cell[]>,
        { minLength: 1, maxLength: 12 },
      ),
      rules: fc.tuple(...c.types.map((t, k) => fc.array(ruleFor(`c${k}`, t), { maxLength: 1 }))),
      parts: fc.array(fc.integer({ min: 1, max: 80 }), { minLength: 1, maxLength: 4 }),
    }),
  );
type FileCase = typeof fileCase extends fc.Arbitrary<infer T> ? T : never;

function definition(c: Pick<FileCase, 'dialect' | 'types'>, rules: DataQualityRule[]): PipelineDefinition {
  return {
    name: 'rules',
    catalog: null,
    source: {
      fileAttributes: {
        format: 'csv',
        csvAttributes: { ...c.dialect, header: true, encoding: 'utf-8' },
        unstructuredAttributes: null,
      },
      schemaProperties: { fields: c.types.map((type, k) => ({ name: `c${k}`, type })) },
    },
    dataQuality: { rules, aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  };
}

function encode(c: FileCase): Buffer {
  const { delimiter, quote, escape } = c.dialect;
  const d = delimiter ?? ',';
  const field = ([text, quoted]: Cell): string => {
    if (text === null) return '';
    if (quote === null || quote === undefined) return text;
    const needs = text === '' || [d, quote, '\n', '\r'].some((s) => text.includes(s));
    if (!needs && !quoted) return text;
    const body =
      escape === null || escape === undefined
        ? text.replaceAll(quote, quote + quote)
        : text.replaceAll(escape, escape + escape).replaceAll(quote, escape + quote);
    return quote + body + quote;
  };
  const header = c.types.map((_, k) => `c${k}`).join(d);
  return Buffer.from([header, ...c.rows.map((r) => r.map(field).join(d))].join(c.eol) + c.eol);
}

function parts(bytes: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const n = Math.min(sizes[k % sizes.length], bytes.length - at);
    out.push(Buffer.from(new Uint8Array(bytes.subarray(at, at + n))));
    at += n;
  }
  return out;
}

/** Loaded rows as comparable text, the rejects' JSON lines, and the counts. */
interface Outcome {
  rows: string[];
  rejects: string[];
  counts: Counts;
}

const text = (batch: TypedBatch): string[] =>
  batch.lines.map((_, r) =>
    JSON.stringify(
      batch.values.map((col) => col[r]),
      (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v),
    ),
  );

/** The validating path (thread-main without `fast`): the reference reader, then RowPlan. */
async function validating(def: PipelineDefinition, file: Buffer): Promise<Outcome> {
  const plan = new RowPlan(
    def,
    def.source.schemaProperties.fields.map((f) => f.name),
  );
  const builder = new BatchBuilder(plan.outColumns);
  const counts = newCounts();
  const rejects: string[] = [];
  const rows: string[] = [];
  for await (const batch of readCsv(Readable.from([file]), { ...def.source.fileAttributes.csvAttributes })) {
    rows.push(...text(convert(batch, plan, counts, { write: (l) => rejects.push(l) }, null, null, builder)));
  }
  return { rows, rejects, counts };
}

/** The fast path (FastCsvInput); the records it hands out unparsed, typed as the reference types them. */
async function fast(def: PipelineDefinition, input: Buffer[]): Promise<Outcome & { unparsed: number }> {
  const attrs = def.source.fileAttributes.csvAttributes;
  const reader = new FastCsvInput(Readable.from(input), attrs);
  const columns = (await reader.header()) ?? [];
  reader.plan(columns, def.source.schemaProperties.fields, def.dataQuality.rules);
  const plan = new RowPlan(def, columns);
  const builder = new BatchBuilder(plan.outColumns);
  const counts = newCounts();
  const rejects: string[] = [];
  const rows: string[] = [];
  const sink = { write: (l: string) => rejects.push(l) };
  const unrated = new RowPlan(
    definition({ dialect: attrs, types: plan.outColumns.map((c) => c.type) }, []),
    columns,
  );
  for (;;) {
    const out = await reader.next(plan, builder, (b) => [b], counts, sink);
    if (out === null) break;
    for (const p of out as (Payload | TypedBatch)[]) {
      if (typeof p === 'object' && 'kind' in p && p.kind === 'csv') {
        const opts = { ...attrs, header: false, expectedColumns: columns.length };
        for await (const batch of readCsv(Readable.from(readerInput(Buffer.from(p.bytes))), opts)) {
          const own = newCounts();
          rows.push(...text(convert(batch, unrated, own, sink, null, null, builder)));
          expect(own.rejected).toBe(0);
        }
      } else rows.push(...text(p as TypedBatch));
    }
  }
  return { rows, rejects, counts, unparsed: counts.unparsed };
}

/** The next double above `x` (finite). */
function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigInt64(0, view.getBigInt64(0) + (x > 0 ? 1n : -1n));
  return view.getFloat64(0);
}

describe('data-quality rules on the CSV fast path', () => {
  it('takes the rules it can check on bytes, and leaves `unique` to the validating path', () => {
    expect(
      rulesOnFastPath([
        { type: 'not_null', column: 'a' },
        { type: 'regex', column: 'a', pattern: 'x' },
      ]),
    ).toBe(true);
    expect(rulesOnFastPath([{ type: 'unique', column: 'a' }])).toBe(false);
    const fields = [
      { name: 'a', type: 'int' as const },
      { name: 'b', type: 'string' as const },
    ];
    // A rule on a schema column the file lacks: every record would be rejected (not_null), or none.
    expect(fastPathCellRules([{ type: 'not_null', column: 'b' }], fields, ['a'])).toBeNull();
    expect(fastPathCellRules([{ type: 'regex', column: 'b', pattern: 'x' }], fields, ['a'])).toEqual([null]);
  });

  it('compares allowed values as the text would: a lone surrogate is no U+FFFD', () => {
    const fields = [{ name: 'c0', type: 'string' as const }];
    const rule = { type: 'allowed_values' as const, column: 'c0', values: ['x\ud800y', 'é'] };
    const check = compileCsvCheck({
      ...CSV,
      types: ['string'],
      cellRules: fastPathCellRules([rule], fields, ['c0']) ?? [],
    });
    expect(check(Buffer.from('é\n')).clean).toBe(true);
    expect(check(Buffer.from('x\ufffdy\n')).clean).toBe(false);
  });

  it('reads a number for a range as Number reads it (random decimal texts)', () => {
    const digits = (min: number, max: number) =>
      fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
    const plain = fc
      .tuple(
        fc.constantFrom('', '-', '+'),
        digits(1, 20),
        fc.option(digits(0, 25)),
        fc.option(fc.integer({ min: -30, max: 30 })),
      )
      .map(
        ([sign, int, frac, exp]) =>
          sign + int + (frac === null ? '' : `.${frac}`) + (exp === null ? '' : `e${exp}`),
      );
    // And small numbers: many zeros after the point, few digits that count.
    const small = fc
      .tuple(fc.constantFrom('', '-'), fc.nat(30), digits(1, 5))
      .map(([sign, zeros, d]) => `${sign}0.${'0'.repeat(zeros)}${d}`);
    const numberText = fc.oneof(plain, small);
    const fields = [{ name: 'c0', type: 'double' as const }];
    fc.assert(
      fc.property(numberText, (text) => {
        const n = Number(text);
        // Ranges next to that one number: the cell passes exactly those that hold Number's reading.
        const passes = (range: { min?: number; max?: number }): boolean | string => {
          const rule = { type: 'range' as const, column: 'c0', ...range };
          const cellRules = fastPathCellRules([rule], fields, ['c0']) ?? [];
          const v = compileCsvCheck({ ...CSV, types: ['double'], cellRules })(Buffer.from(`${text}\n`));
          return v.clean || (v.reason === 'a value that fails a data-quality rule' ? false : v.reason);
        };
        const at = passes({ min: n, max: n });
        if (typeof at === 'string') return; // outside the byte check's grammar
        expect({ text, at, above: passes({ min: nextUp(n) }), below: passes({ max: -nextUp(-n) }) }).toEqual({
          text,
          at: true,
          above: false,
          below: false,
        });
      }),
      propertyRuns(3000, 43),
    );
  });

  it('refuses a record exactly when the validating path rejects it (random records and rules)', async () => {
    let refused = 0;
    let clean = 0;
    await fc.assert(
      fc.asyncProperty(fileCase, async (c) => {
        const def = definition(c, c.rules.flat());
        const fields = def.source.schemaProperties.fields;
        const names = fields.map((f) => f.name);
        const opts = { ...c.dialect, types: c.types };
        const plain = compileCsvCheck(opts);
        const ruled = compileCsvCheck({
          ...opts,
          cellRules: fastPathCellRules(c.rules.flat(), fields, names) ?? [],
        });
        const plan = new RowPlan(def, names);
        const read = {
          ...c.dialect,
          encoding: 'utf-8' as const,
          header: false,
          expectedColumns: c.types.length,
        };
        // Each record on its own: one that the check takes without rules is refused with them
        // exactly when RowPlan rejects it.
        for (const row of c.rows) {
          const record = encode({ ...c, rows: [row] }).subarray(encode({ ...c, rows: [] }).length);
          if (!plain(record).clean) continue;
          const counts = newCounts();
          for await (const batch of readCsv(Readable.from(readerInput(record)), read)) {
            convert(
              batch,
              plan,
              counts,
              { write: () => undefined },
              null,
              null,
              new BatchBuilder(plan.outColumns),
            );
          }
          expect({ record: record.toString(), clean: ruled(record).clean }).toEqual({
            record: record.toString(),
            clean: counts.rejected === 0,
          });
          if (counts.rejected === 0) clean++;
          else refused++;
        }
      }),
      propertyRuns(1000, 41),
    );
    // Both answers must be common, or the property says little.
    expect(clean).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(1000);
  });

  it('loads the same rows and rejects the same records, reasons and lines as the validating path', async () => {
    let unparsed = 0;
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(fileCase, async (c) => {
        const def = definition(c, c.rules.flat());
        const file = encode(c);
        const reference = await validating(def, file);
        const got = await fast(def, parts(file, c.parts));
        expect({ rows: got.rows, rejects: got.rejects, counts: got.counts }).toEqual({
          ...reference,
          counts: { ...reference.counts, unparsed: got.counts.unparsed },
        });
        unparsed += got.unparsed;
        rejected += got.counts.rejected;
      }),
      propertyRuns(600, 42),
    );
    // Rows out unparsed and rejects must both be common, or the property says little.
    expect(unparsed).toBeGreaterThan(600);
    expect(rejected).toBeGreaterThan(600);
  });
});
