import fc from 'fast-check';
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { localDatabaseUrl } from './support/local-peers';
import { propertyRuns, propertyTimeout } from './support/property-runs';
import type { CsvAttributes, FieldType, PipelineDefinition } from '../libs/model/src/pipeline.types';
import { readCsv } from '../libs/readers/src/csv-reader';
import { BatchBuilder, RowPlan } from '../libs/ingestion/src/row-plan';
import { createEncoder } from '../libs/destinations/src/postgres/copy-text';
import {
  CsvCheckOptions,
  CsvVerdict,
  compileCsvCheck,
  compileCsvPrefixCheck,
  copyCsvOptions,
  fastPathBlocker,
} from '../libs/readers/src/fastpath/csv-check';
import { csvRows, readerInput } from '../libs/readers/src/fastpath/csv-rows';
import { PG_TYPES } from '../libs/destinations/src/postgres/postgres.destination';
import {
  BINARY_HEADER,
  BINARY_TRAILER,
  createCsvEncoder as createBinaryEncoder,
} from '../libs/destinations/src/postgres/copy-binary';

type Attrs = Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>;
const CSV: Attrs = { delimiter: ',', quote: '"', escape: null };

/** The destination's column types (libs/destinations/src/postgres/postgres.destination.ts). */

function pipeline(attrs: Attrs, types: FieldType[]): PipelineDefinition {
  return {
    name: 'fastpath',
    catalog: null,
    source: {
      fileAttributes: {
        format: 'csv',
        csvAttributes: { ...attrs, header: false, encoding: 'utf-8' },
        unstructuredAttributes: null,
      },
      schemaProperties: { fields: types.map((type, k) => ({ name: `c${k}`, type })) },
    },
    dataQuality: { rules: [], aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  };
}

function verdict(attrs: Attrs, types: FieldType[], chunk: string | Buffer): CsvVerdict {
  return compileCsvCheck({ ...attrs, types })(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
}

/**
 * The reference path on one chunk (or, `wholeFile`, on a file: a BOM at its start is no data):
 * records read, row errors and rejections, and the COPY text.
 */
async function referencePath(
  attrs: Attrs,
  types: FieldType[],
  chunk: Buffer,
  wholeFile = false,
): Promise<{ records: number; rejected: number; copyText: string }> {
  const plan = new RowPlan(
    pipeline(attrs, types),
    types.map((_, k) => `c${k}`),
  );
  const builder = new BatchBuilder(plan.outColumns);
  const encode = createEncoder(plan.outColumns);
  let records = 0;
  let rejected = 0;
  let copyText = '';
  const input = Readable.from(wholeFile ? [chunk] : readerInput(chunk));
  const opts = { ...attrs, header: false, encoding: 'utf-8' as const, expectedColumns: types.length };
  for await (const batch of readCsv(input, opts)) {
    records += batch.rows.length + batch.errors.length;
    rejected += batch.errors.length;
    batch.rows.forEach((row, i) => {
      if (plan.process(row, batch.lines[i], builder) !== null) rejected++;
    });
    copyText += encode(builder.take());
  }
  return { records, rejected, copyText };
}

/** PostgreSQL, one transaction per comparison (rolled back): the values a COPY stores, as text. */
class Postgres {
  private client: Client | null = null;

  async connect(): Promise<void> {
    this.client = new Client({ connectionString: localDatabaseUrl('tapyard_test') });
    await this.client.connect();
  }

  async close(): Promise<void> {
    await this.client?.end();
  }

  /** Rows stored by COPY of `data` with `options`, or the error. */
  store(
    types: FieldType[],
    data: Buffer | string,
    options: string,
  ): Promise<{ rows: (string | null)[][] } | { error: string }> {
    return this.storeAll(types, [{ data, options }]);
  }

  /** Rows stored by one COPY per load, in order, into one table; or the first error. */
  async storeAll(
    types: FieldType[],
    loads: { data: Buffer | string; options: string }[],
  ): Promise<{ rows: (string | null)[][] } | { error: string }> {
    const c = this.client as Client;
    const cols = types.map((_, k) => `c${k}`);
    await c.query('BEGIN');
    try {
      await c.query(`SET LOCAL TimeZone = 'UTC'`);
      await c.query(`SET LOCAL DateStyle = 'ISO'`);
      await c.query(
        `CREATE TEMP TABLE fastpath_check (seq serial, ${types.map((t, k) => `c${k} ${PG_TYPES[t]}`).join(', ')})`,
      );
      for (const { data, options } of loads) {
        await new Promise<void>((resolve, reject) => {
          const stream = c.query(
            copyFrom(`COPY fastpath_check (${cols.join(', ')}) FROM STDIN (${options})`),
          );
          stream.on('finish', resolve);
          stream.on('error', reject);
          stream.end(Buffer.from(data));
        });
      }
      const res = await c.query<(string | null)[]>({
        text: `SELECT ${cols.map((n) => `${n}::text`).join(', ')} FROM fastpath_check ORDER BY seq`,
        rowMode: 'array',
      });
      return { rows: res.rows };
    } catch (err) {
      return { error: (err as Error).message };
    } finally {
      await c.query('ROLLBACK');
    }
  }
}

const pg = new Postgres();
beforeAll(() => pg.connect());
afterAll(() => pg.close());

/** What the fast path and the reference path store for a chunk, and whether they differ. */
async function bothPaths(attrs: Attrs, types: FieldType[], chunk: Buffer) {
  const ref = await referencePath(attrs, types, chunk);
  const viaRef = await pg.store(types, ref.copyText, 'FORMAT text');
  const viaCsv = await pg.store(types, chunk, copyCsvOptions(attrs));
  const same =
    ref.rejected === 0 &&
    'rows' in viaRef &&
    'rows' in viaCsv &&
    viaCsv.rows.length === ref.records &&
    JSON.stringify(viaRef.rows) === JSON.stringify(viaCsv.rows);
  return { ref, viaRef, viaCsv, same };
}

/**
 * The binary COPY the PostgreSQL encoder writes for a clean chunk (copy-binary.ts, its columns declared
 * as the destination creates them), header and trailer included; null when a type keeps it on CSV.
 */
function binaryCopy(attrs: Attrs, types: FieldType[], chunk: Buffer, records: number): Buffer | null {
  const columns = types.map((type, k) => ({ name: `c${k}`, type }));
  const shape = { columnTypes: Object.fromEntries(columns.map((c) => [c.name, PG_TYPES[c.type]])) };
  const names = columns.map((c) => c.name);
  const encode = createBinaryEncoder(columns, names, attrs, shape, 0);
  if (encode === null) return null;
  const pieces: Uint8Array[] = [BINARY_HEADER];
  const payload = {
    kind: 'csv' as const,
    bytes: chunk,
    rows: records,
    line: 1,
    eol: null,
    copyOptions: '',
    columns: names,
  };
  for (const p of encode(payload)) {
    if (p.kind !== 'pg-binary') throw new Error('the binary encoder handed back its CSV chunk');
    pieces.push(p.bytes);
  }
  pieces.push(BINARY_TRAILER);
  return Buffer.concat(pieces);
}

/** What binary COPY stores for a clean chunk, when its types take it (null otherwise). */
async function viaBinary(attrs: Attrs, types: FieldType[], chunk: Buffer, records: number) {
  const data = binaryCopy(attrs, types, chunk, records);
  return data === null ? null : pg.store(types, data, 'FORMAT binary');
}

/** A chunk the check calls clean must load exactly as the reference path loads it, as CSV and as binary. */
async function expectCleanAndSame(attrs: Attrs, types: FieldType[], text: string | Buffer): Promise<void> {
  const chunk = typeof text === 'string' ? Buffer.from(text) : text;
  const v = verdict(attrs, types, chunk);
  expect(v).toMatchObject({ clean: true });
  const both = await bothPaths(attrs, types, chunk);
  expect(both.ref.rejected).toBe(0);
  expect(both.viaCsv).toEqual(both.viaRef);
  if (!v.clean) return;
  expect(both.ref.records).toBe(v.records);
  const binary = await viaBinary(attrs, types, chunk, v.records);
  if (binary !== null) expect(binary).toEqual(both.viaRef);
}

describe('compileCsvCheck: hand-written cases, checked against PostgreSQL', () => {
  const ALL: FieldType[] = ['int', 'bigint', 'float', 'double', 'boolean', 'date', 'timestamp', 'string'];

  it('accepts plain decimals and loads them as the reference (numeric keeps their scale)', async () => {
    await expectCleanAndSame(
      CSV,
      ['decimal', 'decimal'],
      ['12.50,-.5', '+0012.5,5.', '-0.00,0', `${'9'.repeat(40)}.${'1'.repeat(20)},`].join('\n') + '\n',
    );
  });

  it('refuses decimals beyond the column scale or precision: PostgreSQL would round them', () => {
    const check = compileCsvCheck({ ...CSV, types: ['decimal'], limits: [{ precision: 6, scale: 2 }] });
    expect(check(Buffer.from('1234.56\n-0001234.5\n.5\n'))).toMatchObject({ clean: true });
    expect(check(Buffer.from('12.345\n'))).toMatchObject({
      clean: false,
      reason: 'not a plain decimal value',
    });
    expect(check(Buffer.from('12345.6\n'))).toMatchObject({ clean: false });
    const integral = compileCsvCheck({ ...CSV, types: ['decimal'], limits: [{ precision: 3 }] });
    expect(integral(Buffer.from('999\n'))).toMatchObject({ clean: true });
    expect(integral(Buffer.from('9.5\n'))).toMatchObject({ clean: false });
  });

  it('accepts clean values of every type, NULLs and quoted strings, and loads them as the reference', async () => {
    await expectCleanAndSame(
      CSV,
      ALL,
      [
        '1,-9223372036854775808,1.5,-.5e-3,true,2024-02-29,2024-01-31T12:00:00Z,plain',
        '+2147483647,9223372036854775807,3e37,1e307,FALSE,0001-01-01,2024-01-31 12:00+05:30,"a,b"',
        '-2147483648,007,-0,5.,yEs,9999-12-31,2024-01-31t23:59:59.123456789z,"line\nbreak"',
        ',,,,,,,""',
        '0,0,.0,0e0,n,2000-02-29,2024-01-31,"say ""hi"""',
        '-0,+0,1E+05,-1.7e+300,1,1996-12-31,2024-06-30T00:00:00-0800,ünï😀\\N',
        '00000000000000002147483647,1,0.000001,1e-300,0,2024-01-01,2024-01-01T00:00:00.5+14,NULL',
        '3,4,1e-37,123456789012345678901234567890,Y,2024-12-31,2024-12-31T23:59+00,  spaces  ',
      ].join('\n') + '\n',
    );
  });

  it('writes binary COPY that stores what CSV stores, at the edges of each type it takes', async () => {
    const types: FieldType[] = ['int', 'bigint', 'double', 'boolean', 'date', 'string'];
    // The encoder takes these types (as the destination declares them): the comparison below runs.
    expect(binaryCopy(CSV, types, Buffer.from('1,2,3,t,2024-01-01,x\n'), 1)).not.toBeNull();
    await expectCleanAndSame(
      CSV,
      types,
      [
        '2147483647,9223372036854775807,1.7976931348623157e307,TRUE,9999-12-31,"a""b"',
        '-2147483648,-9223372036854775808,-0,f,0001-01-01,""',
        '+0000000000000000000000012,+000000000000000000000000000000012,0.1,Yes,2000-02-29,ünï😀',
        '-0,9007199254740993,123456789012345.6,N,1900-03-01,"line\nbreak"',
        '007,-999999999999999,0.30000000000000004,1,2024-02-29,x',
        ',,,,,',
        '1,123456789012345,.5e-3,0,1970-01-01,\\N',
        '2,1234567890123456,5.,y,1999-12-31,NULL',
        '3,-0,-0.0,T,1582-10-10,"say ""hi"", twice"',
        '4,-1,1e-307,no,0004-02-29,',
      ].join('\n') + '\n',
    );
    await expectCleanAndSame(
      { delimiter: '\t', quote: '"', escape: '\\' },
      ['string', 'int'],
      '"a\\"b\\\\c\\n"\t1\n"x\ny"\t\n',
    );
    // Types it does not write exactly (real, numeric, timestamptz) keep the job on CSV.
    for (const other of ['float', 'decimal', 'timestamp'] as FieldType[])
      expect(binaryCopy(CSV, ['int', other], Buffer.from('1,1\n'), 1)).toBeNull();
  });

  it("takes a binary piece's memory only for a job that goes binary, not for a small one left on CSV", () => {
    const columns = [{ name: 'c0', type: 'int' as FieldType }];
    const shape = { columnTypes: { c0: PG_TYPES.int } };
    const chunk = (bytes: Buffer) => ({
      kind: 'csv' as const,
      bytes,
      rows: 1,
      line: 1,
      eol: null,
      copyOptions: '',
      columns: ['c0'],
    });
    // A piece is a MiB: a small job (most of them) allocating one cost the worker a full collection
    // every ~60 jobs.
    const pieces = jest.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      const small = createBinaryEncoder(columns, ['c0'], CSV, shape);
      expect([...small!(chunk(Buffer.from('1\n')))].map((p) => p.kind)).toEqual(['csv']);
      expect(pieces.mock.calls.filter(([n]) => n >= 1 << 20)).toHaveLength(0);
      const large = createBinaryEncoder(columns, ['c0'], CSV, shape, 0);
      expect([...large!(chunk(Buffer.from('1\n')))].map((p) => p.kind)).toEqual(['pg-binary']);
      expect(pieces.mock.calls.filter(([n]) => n >= 1 << 20).length).toBeGreaterThan(0);
    } finally {
      pieces.mockRestore();
    }
  });

  it('accepts every line ending (one per chunk), a last record without one, and reports it', async () => {
    for (const [eol, name] of [
      ['\n', 'lf'],
      ['\r\n', 'crlf'],
      ['\r', 'cr'],
    ] as const) {
      const text = `1,"a${eol}b"${eol}2,c${eol}3,d`;
      expect(verdict(CSV, ['int', 'string'], text)).toEqual({ clean: true, records: 3, eol: name });
      await expectCleanAndSame(CSV, ['int', 'string'], text);
    }
    expect(verdict(CSV, ['int'], '1')).toEqual({ clean: true, records: 1, eol: null });
    expect(verdict(CSV, ['int'], '')).toEqual({ clean: false, reason: 'no records', offset: 0 });
  });

  it('accepts other delimiters, quotes, escapes, and no quoting', async () => {
    await expectCleanAndSame({ delimiter: ';', quote: "'", escape: null }, ['string', 'int'], "'a;''b';1\n");
    await expectCleanAndSame(
      { delimiter: '\t', quote: '"', escape: '\\' },
      ['string', 'string'],
      '"a\\"b\\\\c\\n"\t"x\ny"\n',
    );
    await expectCleanAndSame(
      { delimiter: '|', quote: null, escape: null },
      ['string', 'int'],
      '"a"b"|1\n\'|2\n',
    );
  });

  /** Refused cases; `differs`: the two paths really do store different things (or one fails). */
  const refused: [string, Attrs, FieldType[], string, boolean][] = [
    ['a NUL byte', CSV, ['string'], 'a\0b\n', true],
    ['invalid UTF-8', CSV, ['string'], 'a\xff\n', true],
    ['a blank line', CSV, ['string', 'string'], 'a,b\n\nc,d\n', true],
    ['a blank line, one column', CSV, ['int'], '1\n\n2\n', true],
    ['a line of spaces, one column', CSV, ['string'], 'a\n  \nb\n', true],
    ['\\. alone on a line', CSV, ['string'], 'a\n\\.\nb\n', true],
    ['\\. starting a line', CSV, ['string', 'string'], 'a,b\n\\.x,y\n', false],
    ['\\. after a quoted line break', CSV, ['string'], '"a\n\\.\n"\n', false],
    ['a ragged row (short)', CSV, ['string', 'string'], 'a,b\nc\n', true],
    ['a ragged row (long)', CSV, ['string', 'string'], 'a,b\nc,d,e\n', true],
    ['mixed line endings', CSV, ['string'], 'a\r\nb\n', true],
    ['a lone CR among CRLFs', CSV, ['string', 'string'], 'a,b\r\nc,d\re,f\r\n', true],
    ['a quote inside an unquoted field', CSV, ['string', 'string'], '5" screen,x\n', true],
    ['text after a closing quote', CSV, ['string', 'string'], '"ab"c"d",x\n', true],
    ['text after a closing quote (same to both)', CSV, ['string', 'string'], '"ab"cd,x\n', false],
    ['a space before a quote', CSV, ['string', 'string'], ' "a",x\n', true],
    ['a quote character inside a number', { ...CSV, quote: '5' }, ['int', 'int'], '151,2\n', true],
    ['a doubled quote with a backslash escape', { ...CSV, escape: '\\' }, ['string'], '"a""b"\n', true],
    ['an unterminated quote', CSV, ['string'], '"abc\n', true],
    ['the no-quote sentinel byte', { ...CSV, quote: null }, ['string'], 'a\x01b\n', true],
    ['a quoted int', CSV, ['int'], '"1"\n', false],
    ['an empty quoted int', CSV, ['int'], '""\n', true],
    ['NULL in an int column', CSV, ['int'], 'NULL\n', true],
    ['\\N in a date column', CSV, ['date'], '\\N\n', true],
    ['NA in a boolean column', CSV, ['boolean'], 'NA\n', true],
    ['N/A in a double column', CSV, ['double'], 'N/A\n', true],
    ['spaces around an int', CSV, ['int', 'int'], ' 1,2 \n', false],
    ['only spaces in an int column', CSV, ['int', 'int'], '  ,1\n', true],
    ['int out of range', CSV, ['int'], '2147483648\n', true],
    ['bigint out of range', CSV, ['bigint'], '-9223372036854775809\n', true],
    ['int with a decimal point', CSV, ['int'], '1.0\n', true],
    ['int with an underscore', CSV, ['int'], '1_000\n', true],
    ['hex int', CSV, ['int'], '0x1F\n', true],
    ['real overflow', CSV, ['float'], '3.5e38\n', true],
    ['real magnitude past the margin', CSV, ['float'], '1e38\n', false],
    ['real underflow', CSV, ['float'], '1e-46\n', true],
    ['real hidden underflow', CSV, ['float'], `0.${'0'.repeat(50)}1\n`, true],
    ['double overflow', CSV, ['double'], '1e309\n', true],
    ['double past the margin', CSV, ['double'], '1e308\n', false],
    ['double exponent too long', CSV, ['double'], '1e00001\n', false],
    ['NaN', CSV, ['double'], 'NaN\n', true],
    ['Infinity', CSV, ['double'], 'Infinity\n', true],
    ['a comma decimal', { ...CSV, delimiter: ';' }, ['double'], '1,5\n', true],
    ['an exponent in a decimal column', CSV, ['decimal'], '1e5\n', true],
    ['NaN in a decimal column', CSV, ['decimal'], 'NaN\n', true],
    ['Infinity in a decimal column', CSV, ['decimal'], 'Infinity\n', true],
    ['two points in a decimal', CSV, ['decimal'], '1.2.3\n', true],
    ['a lone sign in a decimal column', CSV, ['decimal'], '-\n', true],
    ['a boolean PostgreSQL reads but the reference does not', CSV, ['boolean'], 'on\n', true],
    ['a boolean prefix', CSV, ['boolean'], 'tru\n', true],
    ['an impossible date', CSV, ['date'], '2023-02-29\n', true],
    ['year zero', CSV, ['date'], '0000-01-01\n', true],
    ['a short date', CSV, ['date'], '2024-1-5\n', true],
    ['a date with a time in a date column', CSV, ['date'], '2024-01-05T10:00\n', true],
    ['24:00', CSV, ['timestamp'], '2024-01-01T24:00:00\n', false],
    ['a leap second', CSV, ['timestamp'], '2016-12-31T23:59:60Z\n', false],
    ['a zone hour of 15', CSV, ['timestamp'], '2024-01-01T10:00+15\n', false],
    ['a 10-digit fraction', CSV, ['timestamp'], '2024-01-01T10:00:00.1234567890\n', false],
    ['a named zone', CSV, ['timestamp'], '2024-01-01 10:00 UTC\n', true],
  ];

  it.each(refused)('refuses %s', async (_, attrs, types, text, differs) => {
    const chunk = Buffer.from(text, 'latin1');
    expect(verdict(attrs, types, chunk)).toMatchObject({ clean: false });
    const both = await bothPaths(attrs, types, chunk);
    expect(both.same).toBe(!differs);
  });

  it('names the reason and where it was decided', () => {
    expect(verdict(CSV, ['int', 'string'], '1,a\nx,b\n')).toEqual({
      clean: false,
      reason: 'not a plain int value',
      offset: 4,
    });
  });

  it('refuses a field longer than the limit', () => {
    const check = compileCsvCheck({ ...CSV, types: ['string', 'string'], maxFieldBytes: 4 });
    expect(check(Buffer.from('abcd,"abcd"\n'))).toMatchObject({ clean: true });
    expect(check(Buffer.from('abcde,x\n'))).toMatchObject({ clean: false });
    expect(check(Buffer.from('x,"abcde"\n'))).toMatchObject({ clean: false });
  });

  it('applies only to utf-8 pipelines with the default null handling', () => {
    expect(fastPathBlocker({ encoding: 'utf-8' })).toBeNull();
    expect(fastPathBlocker({ encoding: 'latin1' })).toMatch(/latin1/);
    expect(fastPathBlocker({ encoding: 'utf-8', nullValues: [''] })).toMatch(/nullValues/);
    const opts: CsvCheckOptions = { ...CSV, encoding: 'latin1', types: ['string'] };
    expect(() => compileCsvCheck(opts)).toThrow(/does not apply/);
    expect(() => compileCsvCheck({ ...CSV, types: [] })).toThrow(/at least one column/);
  });

  it('gives PostgreSQL options that quote safely', () => {
    expect(copyCsvOptions({ delimiter: "'", quote: '"', escape: '\\' })).toBe(
      `FORMAT csv, DELIMITER E'\\x27', QUOTE E'\\x22', ESCAPE E'\\x5c'`,
    );
    expect(copyCsvOptions({ delimiter: ',', quote: null, escape: '\\' })).toBe(
      `FORMAT csv, DELIMITER E'\\x2c', QUOTE E'\\x01', ESCAPE E'\\x01'`,
    );
  });
});

/**
 * Runs per property in `npm test` (seeded), a fifth of what they were when each was also time-boxed;
 * `npm run fuzz` multiplies them (test/support/property-runs.ts).
 */
const RUNS_PG = 300;
const RUNS_FILES = 60;
const RUNS_REFERENCE = 2000;

describe('compileCsvCheck: property, clean chunks load exactly as the reference path loads them', () => {
  const junk = fc.constantFrom(
    '',
    ' ',
    'NULL',
    'null',
    '\\N',
    'NA',
    'N/A',
    ' 1',
    '1 ',
    '\u00a01',
    'abc',
    '1_000',
    '0x1F',
    '1.0',
    '1e3',
    'NaN',
    '-Infinity',
    '+',
    '.',
    'on',
    'off',
    '2024-02-30',
    '24:00',
    '\\.',
  );
  const sign = fc.constantFrom('', '', '+', '-');
  const digits = (max: number) =>
    fc.string({ unit: fc.constantFrom('0', '1', '5', '9'), minLength: 1, maxLength: max });
  const pad2 = (n: number) => String(n).padStart(2, '0');

  const intText = fc.oneof(
    fc.integer().map(String),
    fc.tuple(sign, digits(20)).map(([s, d]) => s + d),
    fc.constantFrom(
      '2147483647',
      '-2147483648',
      '2147483648',
      '9223372036854775807',
      '-9223372036854775808',
      '9223372036854775808',
      '+7',
      '007',
      '-0',
    ),
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
  );
  const floatText = fc.oneof(
    fc.double().map(String),
    fc.float().map(String),
    fc
      .tuple(
        sign,
        fc.option(digits(6)),
        fc.option(digits(6)),
        fc.option(fc.tuple(fc.constantFrom('e', 'E'), sign, fc.integer({ min: 0, max: 400 }))),
      )
      .map(
        ([s, i, f, e]) =>
          s + (i ?? '') + (f === null ? '' : `.${f}`) + (e === null ? '' : e[0] + e[1] + String(e[2])),
      ),
    fc.constantFrom(
      '3.4e38',
      '3.5e38',
      '1e-38',
      '1e-45',
      '1.7976931348623157e308',
      '4.9e-324',
      '.5',
      '5.',
      '-.5e-3',
      `0.${'0'.repeat(40)}1`,
    ),
  );
  const boolText = fc
    .tuple(
      fc.constantFrom('true', 'false', 't', 'f', 'yes', 'no', 'y', 'n', '1', '0', 'on', 'tr', 'ye'),
      fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
    )
    .map(([v, up]) => [...v].map((ch, k) => (up[k] ? ch.toUpperCase() : ch)).join(''));
  const dateOf = (y: number, m: number, d: number) => `${String(y).padStart(4, '0')}-${pad2(m)}-${pad2(d)}`;
  const dateText = fc.oneof(
    fc
      .tuple(
        fc.integer({ min: 1, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 28 }),
      )
      .map(([y, m, d]) => dateOf(y, m, d)),
    fc.constantFrom(
      '0000-01-01',
      '0001-01-01',
      '9999-12-31',
      '2000-02-29',
      '1900-02-29',
      '2024-02-30',
      '2023-02-29',
      '2024-04-31',
      '2024-13-01',
      '2024-00-10',
      '2024-01-00',
      '2024-1-01',
      '20240101',
      '+2024-01-01',
      '10000-01-01',
    ),
    fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
      )
      .map(([y, m, d]) => dateOf(y, m, d)),
  );
  const zone = fc.oneof(
    fc.constantFrom('', 'Z', 'z', '+00', '-00'),
    fc
      .tuple(
        fc.constantFrom('+', '-'),
        fc.integer({ min: 0, max: 16 }),
        fc.constantFrom('', ':', 'x'),
        fc.integer({ min: 0, max: 60 }),
      )
      .map(([s, h, sep, m]) => s + pad2(h) + (sep === 'x' ? '' : sep + pad2(m))),
  );
  const tsText = fc.oneof(
    dateText,
    fc.constantFrom(
      '2024-01-01T23:59:59.999999999',
      '2024-01-01T24:00',
      '2024-01-01T23:60',
      '2024-01-01T00:00:60',
      '2024-01-01T00:00+14:59',
      '2024-01-01T00:00+15',
      '2024-01-01T00:00-1400',
      '2024-01-01T00:00:00.',
      '2024-01-01T00',
      '2024-01-01T00:0',
      '2024-01-01 00:00 +05',
      '2024-01-01T00:00:00.1234567890',
      '2024-01-01T00:00+05:',
      '2024-01-01T00:00+5',
      '0001-01-01T00:00+14',
      '9999-12-31T23:59-14',
    ),
    fc
      .tuple(
        dateText,
        fc.constantFrom('T', 't', ' '),
        fc.integer({ min: 0, max: 24 }),
        fc.integer({ min: 0, max: 60 }),
        fc.option(fc.integer({ min: 0, max: 60 })),
        fc.option(digits(10)),
        zone,
      )
      .map(
        ([d, sep, h, m, s, frac, z]) =>
          `${d}${sep}${pad2(h)}:${pad2(m)}${s === null ? '' : `:${pad2(s)}${frac === null ? '' : `.${frac}`}`}${z}`,
      ),
  );
  const stringText = fc.string({
    unit: fc.constantFrom(
      'a',
      'Z',
      ' ',
      '\t',
      ',',
      ';',
      '|',
      '"',
      "'",
      '\\',
      '\n',
      '\r',
      '.',
      'é',
      '😀',
      '\uFEFF',
      'N',
    ),
    maxLength: 8,
  });
  /** Anything near the edges of each grammar, valid or not. */
  const EDGY: Record<FieldType, fc.Arbitrary<string>> = {
    int: intText,
    bigint: intText,
    float: floatText,
    double: floatText,
    boolean: boolText,
    date: dateText,
    timestamp: tsText,
    string: stringText,
    decimal: floatText,
  };
  /** Values of the type, in all their shapes (most of them clean). */
  const withSign = (a: fc.Arbitrary<string>) =>
    fc.tuple(fc.constantFrom('', '', '+', '0', '-0'), a).map(([p, v]) => (v.startsWith('-') ? v : p + v));
  const VALID: Record<FieldType, fc.Arbitrary<string>> = {
    int: withSign(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map(String)),
    bigint: withSign(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String)),
    float: fc
      .tuple(
        sign,
        fc.option(digits(5)),
        fc.option(digits(4)),
        fc.option(fc.tuple(fc.constantFrom('e', 'E'), sign, fc.integer({ min: 0, max: 30 }))),
      )
      .filter(([, i, f]) => i !== null || f !== null)
      .map(
        ([s, i, f, e]) =>
          s + (i ?? '') + (f === null ? '' : `.${f}`) + (e === null ? '' : e[0] + e[1] + String(e[2])),
      ),
    double: fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 }).map(String),
    decimal: fc
      .tuple(sign, fc.option(digits(20)), fc.option(digits(12)))
      .filter(([, i, f]) => i !== null || f !== null)
      .map(([s, i, f]) => s + (i ?? '') + (f === null ? '' : `.${f}`)),
    boolean: boolText.filter((v) => !['on', 'tr', 'ye'].includes(v.toLowerCase())),
    date: fc
      .tuple(
        fc.integer({ min: 1, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 28 }),
      )
      .map(([y, m, d]) => dateOf(y, m, d)),
    timestamp: fc
      .tuple(
        fc.integer({ min: 1, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 28 }),
        fc.constantFrom('T', 't', ' '),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.option(fc.integer({ min: 0, max: 59 })),
        fc.option(digits(9)),
        fc.constantFrom('', 'Z', 'z', '+00', '-05', '+05:30', '-0930', '+14', '-14:00'),
      )
      .map(
        ([y, mo, d, sep, h, mi, s, frac, z]) =>
          `${dateOf(y, mo, d)}${sep}${pad2(h)}:${pad2(mi)}${s === null ? '' : `:${pad2(s)}${frac === null ? '' : `.${frac}`}`}${z}`,
      ),
    string: stringText,
  };

  /** String cells written as they are: quoting that the two readers read differently. */
  const rawFragments = fc.constantFrom(
    '"ab"cd',
    '"ab"c"d"',
    ' "a"',
    '5" x',
    '"a""b"',
    "'ab'cd",
    "'ab'c'd'",
    "5' x",
    "'a''b'",
    'a\\"b',
    '"a\\"b"',
    '"a\\\\"',
    '"\\x"',
    '"a\\""b"',
  );

  const settings = fc.constantFrom<Attrs>(
    CSV,
    CSV,
    { delimiter: ',', quote: '"', escape: '\\' },
    { delimiter: ';', quote: '"', escape: '"' },
    { delimiter: '\t', quote: "'", escape: null },
    { delimiter: ',', quote: '"', escape: '\\' },
    { delimiter: '|', quote: null, escape: null },
  );
  const fieldTypes = fc.array(
    fc.constantFrom<FieldType>(
      'int',
      'bigint',
      'float',
      'double',
      'boolean',
      'date',
      'timestamp',
      'string',
      'decimal',
    ),
    { minLength: 1, maxLength: 4 },
  );

  /** How a cell is written: quoted when needed, always quoted, as it is, or quoted with doubled quotes. */
  type How = 'needed' | 'quoted' | 'raw' | 'doubled';
  type Cell = [string | null, How];
  const how = fc.constantFrom<How>('needed', 'needed', 'quoted', 'raw', 'doubled');
  const SHAPES = ['short', 'long', 'blank', 'spaces', 'eod', 'eol'] as const;
  type Shape = 'ok' | (typeof SHAPES)[number];

  /**
   * A chunk of clean rows (NULLs included) with up to two changes: a value near an edge of its
   * grammar (or junk, or raw quoting) written some way, and maybe one odd row. Most chunks stay
   * clean or nearly so, which is where a wrong `true` would hide.
   */
  const caseOf = (columnTypes: fc.Arbitrary<FieldType[]>) =>
    fc
      .tuple(settings, columnTypes, fc.constantFrom('\n', '\r\n', '\r'), fc.boolean())
      .chain(([attrs, types, eol, finalEol]) =>
        fc.record({
          attrs: fc.constant(attrs),
          types: fc.constant(types),
          eol: fc.constant(eol),
          finalEol: fc.constant(finalEol),
          rows: fc.array(fc.tuple(...types.map((t) => fc.option(VALID[t], { freq: 6 }))), {
            minLength: 1,
            maxLength: 6,
          }),
          changes: fc.oneof(
            fc.constant([]),
            fc.array(
              fc.nat({ max: types.length - 1 }).chain((col) =>
                fc.record({
                  row: fc.nat(),
                  col: fc.constant(col),
                  cell: fc.oneof(
                    { arbitrary: fc.tuple(EDGY[types[col]], how), weight: 4 },
                    fc.tuple(junk, how),
                    // Raw quoting is only interesting as it is.
                    {
                      arbitrary: fc.tuple(rawFragments, fc.constant<How>('raw')),
                      weight: types[col] === 'string' ? 3 : 0,
                    },
                  ),
                }),
              ),
              { minLength: 1, maxLength: 2 },
            ),
          ),
          shape: fc.oneof(
            { arbitrary: fc.constant(null), weight: 4 },
            fc.record({ row: fc.nat(), shape: fc.constantFrom(...SHAPES) }),
          ),
        }),
      );

  const chunkCase = caseOf(fieldTypes);
  /** Chunks of the types the binary encoder writes (copy-binary.ts). */
  const binaryCase = caseOf(
    fc.array(fc.constantFrom<FieldType>('int', 'bigint', 'double', 'boolean', 'date', 'string'), {
      minLength: 1,
      maxLength: 4,
    }),
  );
  type ChunkCase = typeof chunkCase extends fc.Arbitrary<infer T> ? T : never;

  function encode(c: ChunkCase): Buffer {
    const { delimiter, quote, escape } = c.attrs;
    const field = ([v, how]: Cell): string => {
      if (v === null) return '';
      if (quote === null || how === 'raw') return v;
      if (how === 'doubled') return quote + v.replaceAll(quote, quote + quote) + quote;
      const needs =
        v === '' ||
        [delimiter, quote, '\n', '\r'].some((s) => v.includes(s)) ||
        /^[ \t]*$/.test(v) ||
        v.startsWith('\\.');
      if (!needs && how !== 'quoted') return v;
      const esc = escape !== null && escape !== quote ? escape : quote;
      const body =
        esc === quote
          ? v.replaceAll(quote, quote + quote)
          : v.replaceAll(esc, esc + esc).replaceAll(quote, esc + quote);
      return quote + body + quote;
    };
    const cells: Cell[][] = c.rows.map((r) => r.map((v): Cell => [v, 'needed']));
    for (const ch of c.changes) cells[ch.row % cells.length][ch.col] = ch.cell;
    const shapes: Shape[] = cells.map(() => 'ok');
    if (c.shape !== null) shapes[c.shape.row % shapes.length] = c.shape.shape;
    const lines = cells.map((row, k) => {
      const texts = row.map(field);
      switch (shapes[k]) {
        case 'short':
          return texts.slice(0, -1).join(delimiter);
        case 'long':
          return [...texts, 'x'].join(delimiter);
        case 'blank':
          return '';
        case 'spaces':
          return ' \t';
        case 'eod':
          return '\\.';
        default:
          return texts.join(delimiter);
      }
    });
    let text = '';
    lines.forEach((line, k) => {
      const last = k === lines.length - 1;
      const other = c.eol === '\n' ? '\r\n' : '\n';
      text += line + (last && !c.finalEol ? '' : shapes[k] === 'eol' ? other : c.eol);
    });
    return Buffer.from(text);
  }

  it(
    'holds for random chunks, column types and settings (real PostgreSQL, bounded runs)',
    async () => {
      let clean = 0;
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(chunkCase, async (c) => {
          runs++;
          const chunk = encode(c);
          const v = verdict(c.attrs, c.types, chunk);
          if (!v.clean) return;
          clean++;
          const both = await bothPaths(c.attrs, c.types, chunk);
          expect({ rejected: both.ref.rejected, records: both.ref.records }).toEqual({
            rejected: 0,
            records: v.records,
          });
          expect(both.viaCsv).toEqual(both.viaRef);
        }),
        propertyRuns(RUNS_PG, 18),
      );
      console.log(`csv-check property: ${clean} clean chunks of ${runs} compared with PostgreSQL`);
      // The generator must keep producing chunks that exercise `true`.
      expect(clean).toBeGreaterThan(runs / 5);
    },
    propertyTimeout(120_000),
  );

  it(
    'binary COPY of clean chunks stores what COPY CSV stores (real PostgreSQL, bounded runs)',
    async () => {
      let compared = 0;
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(binaryCase, async (c) => {
          runs++;
          const chunk = encode(c);
          const v = verdict(c.attrs, c.types, chunk);
          if (!v.clean) return;
          const binary = await viaBinary(c.attrs, c.types, chunk, v.records);
          if (binary === null) throw new Error(`the binary encoder refused the types ${c.types.join(', ')}`);
          compared++;
          expect(binary).toEqual(await pg.store(c.types, chunk, copyCsvOptions(c.attrs)));
        }),
        propertyRuns(RUNS_PG, 21),
      );
      console.log(`copy-binary property: ${compared} clean chunks of ${runs} stored both ways`);
      expect(compared).toBeGreaterThan(runs / 5);
    },
    propertyTimeout(120_000),
  );

  it(
    'loads whole files chunk by chunk as the reference path loads the file (csvRows + check)',
    async () => {
      let cleanChunks = 0;
      let otherChunks = 0;
      await fc.assert(
        fc.asyncProperty(chunkCase, fc.integer({ min: 1, max: 48 }), async (c, targetBytes) => {
          const file = encode(c);
          let whole: Awaited<ReturnType<typeof referencePath>>;
          try {
            whole = await referencePath(c.attrs, c.types, file, true);
          } catch {
            return; // no records at all: the reference reports an empty file
          }
          const check = compileCsvCheck({ ...c.attrs, types: c.types });
          const loads: { data: Buffer | string; options: string }[] = [];
          let rejected = 0;
          async function* input(): AsyncGenerator<Buffer> {
            yield file;
          }
          for await (const part of csvRows(input(), { ...c.attrs, header: false, targetBytes })) {
            if (part.kind !== 'chunk' || part.records === 0) continue;
            const v = check(part.bytes);
            if (v.clean) {
              cleanChunks++;
              loads.push({ data: part.bytes, options: copyCsvOptions(c.attrs) });
            } else {
              otherChunks++;
              const ref = await referencePath(c.attrs, c.types, part.bytes);
              rejected += ref.rejected;
              loads.push({ data: ref.copyText, options: 'FORMAT text' });
            }
          }
          expect(rejected).toBe(whole.rejected);
          expect(await pg.storeAll(c.types, loads)).toEqual(
            await pg.store(c.types, whole.copyText, 'FORMAT text'),
          );
        }),
        propertyRuns(RUNS_FILES, 20),
      );
      console.log(
        `csv-check end to end: ${cleanChunks} chunks loaded as CSV, ${otherChunks} by the reference`,
      );
      expect(cleanChunks).toBeGreaterThan(100);
    },
    propertyTimeout(120_000),
  );

  it(
    'holds against the reference reader alone, many more runs (no database)',
    async () => {
      let clean = 0;
      await fc.assert(
        fc.asyncProperty(chunkCase, async (c) => {
          const chunk = encode(c);
          const v = verdict(c.attrs, c.types, chunk);
          if (!v.clean) return;
          clean++;
          const ref = await referencePath(c.attrs, c.types, chunk);
          expect({ rejected: ref.rejected, records: ref.records }).toEqual({
            rejected: 0,
            records: v.records,
          });
        }),
        propertyRuns(RUNS_REFERENCE, 19),
      );
      expect(clean).toBeGreaterThan(RUNS_REFERENCE / 25);
    },
    propertyTimeout(120_000),
  );
  it(
    'checks the start of a chunk as it arrives: stops at a record end, as the whole chunk is checked (no database)',
    async () => {
      let clean = 0;
      let cut = 0;
      await fc.assert(
        fc.asyncProperty(chunkCase, fc.nat(), async (c, at) => {
          const chunk = encode(c);
          const whole = verdict(c.attrs, c.types, chunk);
          if (!whole.clean) return;
          clean++;
          const k = at % (chunk.length + 1);
          const v = compileCsvPrefixCheck({ ...c.attrs, types: c.types })(chunk.subarray(0, k));
          if (!v.clean) throw new Error(`a start of a clean chunk refused: ${v.reason}`);
          expect(v.end).toBeLessThanOrEqual(k);
          const done = chunk.subarray(0, v.end);
          // Whole records, each with its line break, on the physical lines the cutter counts.
          if (v.records > 0) {
            expect(verdict(c.attrs, c.types, done)).toEqual({ clean: true, records: v.records, eol: v.eol });
            expect(done[v.end - 1] === 10 || done[v.end - 1] === 13).toBe(true);
          }
          const breaks = [...done].filter((b, i) => b === 13 || (b === 10 && done[i - 1] !== 13)).length;
          expect(v.lines).toBe(breaks);
          // The rest is whole records too: checked on their own, they make up the chunk's count.
          if (v.end < chunk.length) {
            const rest = verdict(c.attrs, c.types, chunk.subarray(v.end));
            expect(rest.clean && rest.records).toBe(whole.records - v.records);
          } else expect(v.records).toBe(whole.records);
          if (v.end < k) cut++;
        }),
        propertyRuns(RUNS_REFERENCE, 23),
      );
      // Clean chunks, and cuts inside a record, must be common.
      expect(clean).toBeGreaterThan(RUNS_REFERENCE / 25);
      expect(cut).toBeGreaterThan(clean / 3);
    },
    propertyTimeout(120_000),
  );
});
