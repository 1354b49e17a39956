import { Readable } from 'node:stream';
import type { CsvAttributes, PipelineDefinition, SchemaField } from '@tapyard/model';
import { compileCsvCheck, readCsv } from '@tapyard/readers';
import {
  CsvChunkPayload,
  CsvEncoderFactory,
  EncoderFactory,
  JsonRowsPayload,
  Payload,
  encoderModule,
  encodesCsv,
  jsonRowText,
} from '@tapyard/destinations';
import { BatchBuilder, RowPlan } from '../row-plan';

// As the stage thread loads them (thread-main.ts): by the module path the destination names.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createEncoder, createCsvEncoder, packRows, CSV_PIECE_ROWS } = require(encoderModule('json-rows')) as {
  createEncoder: EncoderFactory;
  /** The json-rows module's always writes (it needs no shape). */
  createCsvEncoder: (...args: Parameters<CsvEncoderFactory>) => (chunk: CsvChunkPayload) => Iterable<Payload>;
  packRows: (rows: string[], lines: number[]) => JsonRowsPayload;
  CSV_PIECE_ROWS: number;
};

/** The schema, in its own order; the file has its columns in another (FILE_COLUMNS), and lacks `missing`. */
const FIELDS: SchemaField[] = [
  { name: 'id', type: 'bigint' },
  { name: 'label "quoted", too', type: 'string' },
  { name: 'n', type: 'int' },
  { name: 'amount', type: 'decimal', precision: 12, scale: 3 },
  { name: 'free', type: 'decimal' },
  { name: 'ratio', type: 'double' },
  { name: 'single', type: 'float' },
  { name: 'flag', type: 'boolean' },
  { name: 'day', type: 'date' },
  { name: 'at', type: 'timestamp' },
  { name: 'note', type: 'string' },
  { name: 'missing', type: 'int' },
];
const FILE_COLUMNS = [
  'note',
  'at',
  'day',
  'flag',
  'single',
  'ratio',
  'free',
  'amount',
  'n',
  'label "quoted", too',
  'id',
];

/** A seeded generator (mulberry32): the same rows on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generator(seed: number) {
  const rnd = random(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const digits = (n: number): string =>
    Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');
  const int = (max: number): string => {
    const body = digits(1 + Math.floor(rnd() * max)).replace(/^0+(?=.)/, pick(['', '', '', '0', '00']));
    return pick(['', '', '', '-', '+']) + body;
  };
  const num = (): string =>
    pick([
      `${int(6)}.${digits(Math.floor(rnd() * 4))}`,
      `${pick(['', '-'])}.${digits(1 + Math.floor(rnd() * 3))}`,
      `${int(8)}`,
      `${int(3)}e${pick(['', '-', '+'])}${Math.floor(rnd() * 20)}`,
      `${int(2)}.${digits(2)}E${Math.floor(rnd() * 5)}`,
      pick([
        '0',
        '-0',
        '0.0',
        '-.0',
        '3.4e30',
        '1e-30',
        '9007199254740993',
        '0.1',
        '1.5',
        '5.',
        '-0.5',
        '10.25',
      ]),
      // Where String() starts writing exponents or fewer digits than the text has.
      pick([
        '0.000001',
        '0.0000012',
        '0.0000001',
        '123456789012345',
        '1234567890123456',
        '0.1234567890123456',
      ]),
      pick([
        '0.123456789012345',
        '99999999999999.9',
        '999999999999999.9',
        '100000000000000000000',
        '0.30000000000000004',
      ]),
      // Trailing zeros in the fraction, which String() does not write.
      pick([
        '1.50',
        '-0.50',
        '100.00',
        '-0.00',
        '7.',
        '0.0000010',
        '0.00000010',
        '123456789012345.0',
        '123456789012345.10',
        '1234567890123450.0',
        '99999999999999.90',
      ]),
    ]);
  const day = (): string =>
    pick([
      `${pick(['2024', '1999', '0001', '9999', '2100'])}-${pick(['01', '02', '06', '12'])}-${pick(['01', '09', '15', '28'])}`,
      '2024-02-29',
      '2000-12-31',
    ]);
  const time = (): string =>
    pick([
      day(),
      `${day()}${pick(['T', ' ', 't'])}${pick(['00', '09', '23'])}:${pick(['00', '30', '59'])}` +
        pick(['', `:${pick(['00', '07', '59'])}`, `:12.${digits(1 + Math.floor(rnd() * 9))}`]) +
        pick(['', 'Z', 'z', '+05', '-14', '+05:30', '-0930', '+14:00']),
    ]);
  const text = (): string => {
    const parts = [
      'a',
      'b',
      'x y',
      ',',
      '"',
      '\n',
      '\r\n',
      '\r',
      'é',
      '😀',
      '\\',
      '\t',
      ' ',
      'NULL',
      '"a""b"',
      ';',
      "'",
      '{}',
      '\u2028',
    ];
    return Array.from({ length: Math.floor(rnd() * 6) }, () => pick(parts)).join('');
  };
  return { rnd, pick, int, num, day, time, text, digits };
}

/**
 * One field as a file writer would put it: quoted when it must be, and strings sometimes when they
 * need not be (a quoted value elsewhere takes the typed path: the check refuses it).
 */
function cell(value: string | null, text: boolean, attrs: CsvAttributes, rnd: () => number): string {
  if (value === null) return '';
  const q = attrs.quote;
  if (q === null) return value;
  const esc = attrs.escape ?? q;
  const special = [attrs.delimiter, q, esc, '\r', '\n'].some((c) => value.includes(c));
  if (!special && value !== '' && (!text || rnd() < 0.8)) return value;
  const escaped = [...value].map((c) => (c === q || c === esc ? esc + c : c)).join('');
  return q + escaped + q;
}

/** Rows of the file in the dialect, each with the values of FILE_COLUMNS (null: the empty unquoted field). */
function rows(seed: number, count: number, attrs: CsvAttributes): string[] {
  const g = generator(seed);
  const maybe = (v: () => string): string | null => (g.rnd() < 0.08 ? null : v());
  return Array.from({ length: count }, () => {
    const values: (string | null)[] = [
      g.rnd() < 0.1 ? '' : maybe(g.text),
      maybe(g.time),
      maybe(g.day),
      maybe(() => g.pick(['true', 'FALSE', 'yes', 'No', 't', 'F', 'y', 'n', '1', '0', 'True'])),
      maybe(g.num),
      maybe(g.num),
      maybe(() => g.pick([g.num(), `${g.int(20)}.${g.digits(20)}`])),
      maybe(() => g.pick([`${g.int(9)}.${g.digits(Math.floor(g.rnd() * 4))}`, g.int(9), '-0.000', '.5'])),
      maybe(() => g.pick([g.int(9), '2147483647', '-2147483648'])),
      maybe(g.text),
      maybe(() =>
        g.pick([g.int(19), '9223372036854775807', '-9223372036854775808', '9007199254740993', g.int(16)]),
      ),
    ];
    return values.map((v, k) => cell(v, k === 0 || k === 9, attrs, g.rnd)).join(attrs.delimiter);
  });
}

function definition(attrs: CsvAttributes): PipelineDefinition {
  return {
    name: 'p',
    catalog: null,
    source: {
      fileAttributes: { format: 'csv', csvAttributes: attrs, unstructuredAttributes: null },
      schemaProperties: { fields: FIELDS },
    },
    dataQuality: { rules: [], aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  };
}

/** What the typed path writes for a chunk: the reference reader, the row plan, the json-rows encoder. */
async function reference(chunk: Buffer, attrs: CsvAttributes): Promise<{ rows: string[]; lines: number[] }> {
  const plan = new RowPlan(definition(attrs), FILE_COLUMNS);
  const builder = new BatchBuilder(plan.outColumns);
  const encode = createEncoder(plan.outColumns);
  const out = { rows: [] as string[], lines: [] as number[] };
  const opts = { ...attrs, header: false, expectedColumns: FILE_COLUMNS.length };
  for await (const batch of readCsv(Readable.from([chunk]), opts)) {
    expect(batch.errors).toEqual([]);
    batch.rows.forEach((row, i) => expect(plan.process(row, batch.lines[i], builder)).toBeNull());
    const p = encode(builder.take()) as JsonRowsPayload;
    out.rows.push(...texts(p));
    out.lines.push(...p.lines);
  }
  return out;
}

/** A chunk's pieces as one payload (their rows and lines in order); checks each piece's size. */
function whole(pieces: Iterable<Payload>): JsonRowsPayload {
  const all = [...pieces] as JsonRowsPayload[];
  for (const p of all) expect(p.ends.length).toBeLessThanOrEqual(CSV_PIECE_ROWS);
  return packRows(
    all.flatMap((p) => texts(p)),
    all.flatMap((p) => [...p.lines]),
  );
}

function texts(p: JsonRowsPayload): string[] {
  return Array.from(p.ends, (_, r) => jsonRowText(p, r));
}

const RFC: CsvAttributes = { delimiter: ',', header: true, quote: '"', escape: '"', encoding: 'utf-8' };

describe('json-rows from clean CSV chunks (the fast path into sinks)', () => {
  it('is what the json-rows encoder offers the stage thread (the copy-text one writes only for a known table)', () => {
    expect(encodesCsv('json-rows')).toBe(true);
    expect(typeof createCsvEncoder).toBe('function');
    expect(encodesCsv('copy-text')).toBe(false);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const copyText = require(encoderModule('copy-text')) as { createCsvEncoder: CsvEncoderFactory };
    // Without what the destination read of its table, clean chunks go out as they are.
    expect(copyText.createCsvEncoder(FIELDS, FILE_COLUMNS, RFC)).toBeNull();
  });

  it.each<[string, CsvAttributes, string]>([
    ['RFC 4180, LF', RFC, '\n'],
    ['RFC 4180, CRLF', RFC, '\r\n'],
    ['semicolons, a backslash escape, CR', { ...RFC, delimiter: ';', escape: '\\' }, '\r'],
    ['tabs and single quotes', { ...RFC, delimiter: '\t', quote: "'", escape: "'" }, '\n'],
  ])('writes the typed path’s rows and lines for random rows: %s', async (_, attrs, eol) => {
    const types = FILE_COLUMNS.map((c) => (FIELDS.find((f) => f.name === c) as SchemaField).type);
    const limits = FILE_COLUMNS.map((c) => FIELDS.find((f) => f.name === c) as SchemaField);
    const check = compileCsvCheck({ ...attrs, types, limits });
    // Rows the check passes alone (the others would take the typed path, as in a real upload).
    const clean = rows(7, 3000, attrs).filter((r) => check(Buffer.from(r + eol)).clean);
    expect(clean.length).toBeGreaterThan(600);
    const encode = createCsvEncoder(FIELDS, FILE_COLUMNS, attrs);
    let compared = 0;
    let multiline = 0;
    for (let from = 0; from < clean.length; from += 97) {
      // Every few chunks without a last line break, as the end of a file may be.
      const last = from % 3 === 0 ? '' : eol;
      const chunk = Buffer.from(clean.slice(from, from + 97).join(eol) + last);
      const v = check(chunk);
      if (!v.clean) throw new Error(`a chunk of clean rows was refused: ${v.reason}`);
      const startLine = 2 + from * 3;
      const payload: CsvChunkPayload = {
        kind: 'csv',
        bytes: new Uint8Array(chunk),
        rows: v.records,
        line: startLine,
        eol: v.eol,
        copyOptions: '',
        columns: FILE_COLUMNS,
      };
      const expected = await reference(chunk, attrs);
      const got = whole(encode(payload));
      expect(texts(got)).toEqual(expected.rows);
      // The chunk's bytes are the inside of a JSON array of its rows, whatever their characters.
      expect(Buffer.from(got.bytes).toString('utf8')).toBe(expected.rows.join(','));
      expect([...got.lines]).toEqual(expected.lines.map((l) => l + startLine - 1));
      compared += got.ends.length;
      multiline += got.lines.filter((l, i) => i > 0 && l - got.lines[i - 1] > 1).length;
    }
    expect(compared).toBe(clean.length);
    // The run covered what it is about: quoted line breaks, nulls, every kind of value.
    expect(multiline).toBeGreaterThan(10);
    const all = clean.join('\n');
    for (const shape of ['😀', '+', 'e', '9223372036854775807', '.5', '0.0000001', '1234567890123456'])
      expect(all).toContain(shape);
  });

  it('writes a large chunk in pieces, rows spanning lines continuing across them', async () => {
    const attrs = RFC;
    const types = FILE_COLUMNS.map((c) => (FIELDS.find((f) => f.name === c) as SchemaField).type);
    const limits = FILE_COLUMNS.map((c) => FIELDS.find((f) => f.name === c) as SchemaField);
    const check = compileCsvCheck({ ...attrs, types, limits });
    const clean = rows(11, 10_000, attrs).filter((r) => check(Buffer.from(r + '\n')).clean);
    expect(clean.length).toBeGreaterThan(2 * CSV_PIECE_ROWS);
    const chunk = Buffer.from(clean.join('\n'));
    const v = check(chunk);
    if (!v.clean) throw new Error(`the chunk was refused: ${v.reason}`);
    const pieces = [
      ...createCsvEncoder(
        FIELDS,
        FILE_COLUMNS,
        attrs,
      )({
        kind: 'csv',
        bytes: new Uint8Array(chunk),
        rows: v.records,
        line: 2,
        eol: v.eol,
        copyOptions: '',
        columns: FILE_COLUMNS,
      }),
    ] as JsonRowsPayload[];
    expect(pieces.map((p) => p.ends.length)).toEqual([
      CSV_PIECE_ROWS,
      CSV_PIECE_ROWS,
      clean.length - 2 * CSV_PIECE_ROWS,
    ]);
    const expected = await reference(chunk, attrs);
    const got = whole(pieces);
    expect(texts(got)).toEqual(expected.rows);
    expect([...got.lines]).toEqual(expected.lines.map((l) => l + 1));
    // Quoted line breaks before the cuts: the pieces' lines continue from the physical lines.
    expect(got.lines.filter((l, i) => i > 0 && l - got.lines[i - 1] > 1).length).toBeGreaterThan(10);
  });

  it('sizes a piece from the rows before it, and grows it past rows far longer than those', () => {
    const fields: SchemaField[] = [
      { name: 's', type: 'string' },
      { name: 'n', type: 'int' },
    ];
    const encode = createCsvEncoder(fields, ['s', 'n'], RFC);
    const chunk = (lines: string[], line: number): CsvChunkPayload => ({
      kind: 'csv',
      bytes: new Uint8Array(Buffer.from(lines.join('\n') + '\n')),
      rows: lines.length,
      line,
      eol: 'lf',
      copyOptions: '',
      columns: ['s', 'n'],
    });
    // Short rows first (the bytes per row a next piece is sized by), then rows whose control
    // characters each take six bytes in JSON, in a piece sized for the short ones.
    const short = Array.from({ length: 300 }, (_, i) => `a,${i}`);
    expect(texts(whole(encode(chunk(short, 2))))).toEqual(short.map((_, i) => `{"s":"a","n":${i}}`));
    const wide = '\u0001'.repeat(2000);
    const long = Array.from({ length: 50 }, (_, i) => `"${wide}${i}",${i}`);
    const got = whole(encode(chunk(long, 302)));
    expect(texts(got)).toEqual(long.map((_, i) => JSON.stringify({ s: `${wide}${i}`, n: i })));
    expect([...got.lines]).toEqual(long.map((_, i) => 302 + i));
    // Without columns, each row is an empty object.
    const none = createCsvEncoder([], ['s', 'n'], RFC);
    expect(texts(whole(none(chunk(['x,1', 'y,2'], 1))))).toEqual(['{}', '{}']);
  });

  it('writes null for the schema columns the file lacks, and for empty unquoted fields', () => {
    const encode = createCsvEncoder(
      [
        { name: 's', type: 'string' },
        { name: 'n', type: 'int' },
        { name: 'gone', type: 'date' },
      ],
      ['n', 's'],
      RFC,
    );
    const chunk = Buffer.from(',\n7,""\n');
    const payload: CsvChunkPayload = {
      kind: 'csv',
      bytes: new Uint8Array(chunk),
      rows: 2,
      line: 5,
      eol: 'lf',
      copyOptions: '',
      columns: ['n', 's'],
    };
    const got = whole(encode(payload));
    expect(texts(got)).toEqual(['{"s":null,"n":null,"gone":null}', '{"s":"","n":7,"gone":null}']);
    expect([...got.lines]).toEqual([5, 6]);
  });
});
