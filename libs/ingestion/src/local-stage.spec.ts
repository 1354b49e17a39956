import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncoderName, encoderModule } from '@tapyard/destinations';
import type { CsvAttributes, DataQualityRule, PipelineDefinition, SchemaField } from '@tapyard/model';
import type { IngestPayload } from '@tapyard/queue';
import { LocalStage, StageRun, runsOnMainThread } from './local-stage';
import { planColumns } from './schema-plan';
import { StageThreadPool } from './stage-thread/stage-thread';

/**
 * A small whole input read on the main thread (LocalStage) gives what the stage thread gives for
 * it: the same header, payloads for every encoder, counts, rejects (line, stage, reason, raw) and
 * failures, over valid files, rejected rows, data-quality rules, schema evolution, odd CSV, JSON and
 * XML, on the fast path and the validating one. The thread is a real one from the worker's pool.
 */

const CSV: CsvAttributes = { delimiter: ',', quote: '"', escape: null, header: true, encoding: 'utf-8' };

interface Case {
  name: string;
  input: string;
  fields: SchemaField[];
  format?: 'csv' | 'json' | 'xml';
  csv?: Partial<CsvAttributes>;
  rules?: DataQualityRule[];
  schema?: { file: string; text: string };
  filename?: string;
  encoders: EncoderName[];
  fast: boolean;
  /** Some rows are rejected. */
  rejects?: true;
  /** The input fails as a whole (a read error). */
  fails?: true;
}

const ID_LABEL: SchemaField[] = [
  { name: 'id', type: 'int' },
  { name: 'label', type: 'string' },
];
const TYPED: SchemaField[] = [
  { name: 'id', type: 'int' },
  { name: 'price', type: 'decimal' },
  { name: 'ok', type: 'boolean' },
  { name: 'at', type: 'timestamp' },
  { name: 'big', type: 'bigint' },
  { name: 'ratio', type: 'double' },
];
const RULES: DataQualityRule[] = [
  { type: 'not_null', column: 'label' },
  { type: 'range', column: 'id', min: 1, max: 100 },
  { type: 'regex', column: 'label', pattern: '^[a-z]+$' },
  { type: 'allowed_values', column: 'label', values: ['a', 'b', 'c', 'zz'] },
];
const ALL: EncoderName[] = ['copy-text', 'json-rows', 'typed'];

function rows(n: number, row: (i: number) => string): string {
  return Array.from({ length: n }, (_, i) => row(i)).join('');
}

const CASES: Case[] = [
  {
    name: 'a valid file of 200 rows',
    input: 'id,label\n' + rows(200, (i) => `${i},label ${i}\n`),
    fields: ID_LABEL,
    encoders: ALL,
    fast: false,
  },
  {
    name: 'the same on the fast path (COPY as it is)',
    input: 'id,label\n' + rows(200, (i) => `${i},label ${i}\n`),
    fields: ID_LABEL,
    encoders: ['copy-text'],
    fast: true,
  },
  {
    name: 'the fast path into a JSON encoder (clean chunks encoded from their fields)',
    input: 'id,label\n' + rows(50, (i) => `${i},"x,${i}"\n`),
    fields: ID_LABEL,
    encoders: ['json-rows'],
    fast: true,
  },
  {
    name: 'typed values and rejected rows (bad types, wrong width)',
    input:
      'id,price,ok,at,big,ratio\n' +
      '1,9.50,true,2026-01-02T03:04:05Z,9007199254740993,0.5\n' +
      'x,1,true,2026-01-02,1,1\n' +
      '2,abc,maybe,yesterday,1.5,\n' +
      '3,1\n' +
      '4,0.1,false,2026-11-28 01:02:03,-12,1e3,extra\n' +
      ',,,,,\n',
    fields: TYPED,
    encoders: ALL,
    fast: false,
    rejects: true,
  },
  {
    name: 'rejected rows on the fast path (they go through the validating path)',
    input: 'id,label\n1,a\nnope,b\n2\n3,"c"\n4,"unterminated\n',
    fields: ID_LABEL,
    encoders: ['copy-text'],
    fast: true,
    rejects: true,
  },
  {
    name: 'data-quality rules failing',
    input: 'id,label\n1,a\n0,b\n101,c\n5,\n6,Zz\n7,zz\n8,d\n',
    fields: ID_LABEL,
    rules: RULES,
    encoders: ALL,
    fast: false,
    rejects: true,
  },
  {
    name: 'data-quality rules on the fast path',
    input: 'id,label\n1,a\n0,b\n101,c\n5,\n6,Zz\n7,zz\n8,d\n',
    fields: ID_LABEL,
    rules: RULES,
    encoders: ['copy-text'],
    fast: true,
    rejects: true,
  },
  {
    name: 'schema evolution: a new column in the header',
    input: 'id,label,colour\n1,a,red\n2,b,\n3,c,"blue, dark"\n',
    fields: ID_LABEL,
    encoders: ALL,
    fast: false,
  },
  {
    name: 'schema evolution on the fast path',
    input: 'id,label,colour\n1,a,red\n2,b,\n',
    fields: ID_LABEL,
    encoders: ['copy-text'],
    fast: true,
  },
  {
    name: 'odd CSV: BOM, CRLF, quoted newlines and quotes, blank lines, no final newline',
    input: '\ufeffid,label\r\n1,"two\r\nlines"\r\n\r\n2,"say ""hi"""\r\n3,  spaced  \r\n4,é€😀',
    fields: ID_LABEL,
    encoders: ALL,
    fast: false,
  },
  {
    name: 'odd CSV on the fast path',
    input: '\ufeffid,label\r\n1,"two\r\nlines"\r\n\r\n2,"say ""hi"""\r\n3,  spaced  \r\n4,é€😀',
    fields: ID_LABEL,
    encoders: ['copy-text'],
    fast: true,
  },
  {
    name: 'semicolons, a backslash escape and NULL spellings',
    input: 'id;label\n1;"a\\"b"\n\\N;x\nNULL;NA\n2;\n',
    fields: ID_LABEL,
    csv: { delimiter: ';', escape: '\\' },
    encoders: ALL,
    fast: false,
  },
  {
    name: 'no header',
    input: '1,a\n2,b\nx,c\n',
    fields: ID_LABEL,
    csv: { header: false },
    encoders: ALL,
    fast: false,
    rejects: true,
  },
  { name: 'a header alone', input: 'id,label\n', fields: ID_LABEL, encoders: ALL, fast: false },
  { name: 'an empty file', input: '', fields: ID_LABEL, encoders: ['copy-text'], fast: true, fails: true },
  {
    name: 'JSON lines with a validation schema',
    input: '{"id":1,"label":"a"}\n{"id":"x","label":"b"}\nnot json\n{"id":3}\n',
    fields: ID_LABEL,
    format: 'json',
    filename: 'in.jsonl',
    schema: {
      file: 'rows.json',
      text: JSON.stringify({ type: 'object', required: ['label'], properties: { id: { type: 'integer' } } }),
    },
    encoders: ALL,
    fast: false,
    rejects: true,
  },
  {
    name: 'a broken JSON file (a failed input)',
    input: '[{"id":1,"label":"a"},',
    fields: ID_LABEL,
    format: 'json',
    encoders: ['copy-text'],
    fast: false,
    fails: true,
  },
  {
    name: 'XML rows',
    input: '<rows><row><id>1</id><label>a</label></row><row><id>z</id><label>b</label></row></rows>',
    fields: ID_LABEL,
    format: 'xml',
    filename: 'in.xml',
    encoders: ALL,
    fast: false,
    rejects: true,
  },
];

function definitionOf(c: Case): PipelineDefinition {
  return {
    name: 'local',
    catalog: null,
    source: {
      fileAttributes: {
        format: c.format ?? 'csv',
        csvAttributes: { ...CSV, ...c.csv },
        xmlAttributes: { rowElement: 'row' },
        unstructuredAttributes: null,
      },
      schemaProperties: { fields: c.fields },
    },
    dataQuality: { rules: c.rules ?? [], aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  } as PipelineDefinition;
}

/** Payloads as comparable text: bytes as hex, typed arrays as arrays, BigInt and dates spelt out. */
function comparable(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Uint8Array)
      return `bytes:${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
    if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
    return v;
  });
}

interface Outcome {
  first: unknown;
  batches: string[];
  end: unknown;
  rejects: string;
  failure: string | null;
}

/** Runs one case through a stage (the runner's order: first, the column plan, plan, next to the end). */
async function drive(c: Case, run: StageRun, rejects: () => Promise<string>): Promise<Outcome> {
  const out: Outcome = { first: null, batches: [], end: null, rejects: '', failure: null };
  try {
    const def = definitionOf(c);
    const first = await run.first();
    out.first = first;
    const { fileColumns, evolve } = planColumns(def, first);
    const fields = [...c.fields, ...evolve.map((name) => ({ name, type: 'string' as const }))];
    const evolved = { ...def, source: { ...def.source, schemaProperties: { fields } } };
    await run.plan(
      evolved,
      fileColumns,
      c.schema ?? null,
      c.encoders.map((e) => ({
        module: encoderModule(e),
        maxBatchRows: e === 'json-rows' ? 7 : null,
        shape: null,
      })),
      [],
    );
    for (let i = 0; i < 1000 && !run.finished; i++) {
      const r = await run.next();
      if ('end' in r) out.end = r.end;
      else out.batches.push(comparable(r));
    }
    out.rejects = await rejects();
  } catch (err) {
    out.failure = `${(err as Error).constructor.name}: ${comparable(err)} ${(err as Error).message}`;
  } finally {
    run.end();
  }
  return out;
}

describe('a small whole input on the main thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'local-stage-'));
  const pool = new StageThreadPool();

  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(CASES.map((c) => [c.name, c] as const))(
    'gives what the stage thread gives: %s',
    async (_name, c) => {
      const bytes = Buffer.from(c.input);
      const filename = c.filename ?? 'in.csv';
      const rejectsPath = join(dir, `${c.name.replace(/\W+/g, '-')}.rejects`);
      const whole = new Uint8Array(bytes).buffer;
      const session = await pool.start(
        {
          input: whole,
          records: null,
          definition: definitionOf(c),
          filename,
          rejectsPath,
          spinOn: null,
          fast: c.fast,
        },
        { stallMs: 60_000, maxIdle: 1, maxBusy: 4 },
      );
      const threaded = await drive(c, session, () => readFile(rejectsPath, 'utf8'));

      const local = new LocalStage({ input: bytes, definition: definitionOf(c), filename, fast: c.fast });
      const onMain = await drive(c, local, async () => {
        let text = '';
        for await (const r of local.rejects()) text += JSON.stringify(r) + '\n';
        return text;
      });

      expect(onMain).toEqual(threaded);
      // Each case shows what it is about (a run that read nothing would compare equal too).
      if (c.fails) expect(threaded.failure).toMatch(/^StageThreadError: \{"failure":"read"/);
      else expect(threaded.end).toMatchObject({ rows: expect.any(Number) });
      if (c.rejects) expect(threaded.rejects).not.toBe('');
    },
  );
});

describe('which small whole inputs run on the main thread', () => {
  const payload = { inline: Buffer.from('id,label\n').toString('base64') } as IngestPayload;
  const withRules = (rules: DataQualityRule[]): PipelineDefinition =>
    definitionOf({ name: 'rules', input: '', fields: ID_LABEL, rules, encoders: ALL, fast: false });
  const regex = (pattern: string): DataQualityRule[] => [{ type: 'regex', column: 'label', pattern }];

  it('those whose rule patterns V8 runs within its step bound; a pattern re2js runs keeps the thread', () => {
    expect(runsOnMainThread(payload, withRules(RULES), null, null)).toBe(true);
    expect(runsOnMainThread(payload, withRules(regex('^[A-Z]{2}\\d+$')), null, null)).toBe(true);
    // re2js's worst case per character grows with the pattern: microseconds, not nanoseconds.
    expect(runsOnMainThread(payload, withRules(regex('^\\w+\\d{0,8}$')), null, null)).toBe(false);
    expect(runsOnMainThread(payload, withRules(regex('^(a+)+$')), null, null)).toBe(false);
    expect(runsOnMainThread(payload, withRules(regex('^a*?$')), null, null)).toBe(false);
    // The thread reports a pattern that does not compile, as for a larger file.
    expect(runsOnMainThread(payload, withRules(regex('(')), null, null)).toBe(false);
  });

  // Audit finding 4: a JSON Schema's patterns ran on the main thread, without a watchdog, whatever they cost.
  it('those whose JSON Schema has no pattern, no recursion and few subschemas; an XSD has its own thread', () => {
    const withSchema = (file: string): PipelineDefinition => {
      const def = withRules([]);
      return { ...def, dataQuality: { ...def.dataQuality, validationSchema: file } };
    };
    const json = (schema: unknown) => ({ file: 's.json', text: JSON.stringify(schema) });
    const plain = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] };
    expect(runsOnMainThread(payload, withSchema('s.json'), null, json(plain))).toBe(true);
    expect(
      runsOnMainThread(payload, withSchema('s.xsd'), null, { file: 's.xsd', text: '<xs:schema/>' }),
    ).toBe(true);
    const patterned = { properties: { id: { type: 'string', pattern: '^[a-z]+$' } } };
    expect(runsOnMainThread(payload, withSchema('s.json'), null, json(patterned))).toBe(false);
    const keys = { patternProperties: { '^x-': { type: 'string' } } };
    expect(runsOnMainThread(payload, withSchema('s.json'), null, json(keys))).toBe(false);
    const tree = {
      $defs: { n: { properties: { kids: { items: { $ref: '#/$defs/n' } } } } },
      $ref: '#/$defs/n',
    };
    expect(runsOnMainThread(payload, withSchema('s.json'), null, json(tree))).toBe(false);
    const wide = { properties: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, {}])) };
    expect(runsOnMainThread(payload, withSchema('s.json'), null, json(wide))).toBe(false);
    // Not read (missing, or the store failed): the thread reads it again and reports it.
    expect(runsOnMainThread(payload, withSchema('s.json'), null, null)).toBe(false);
    expect(runsOnMainThread(payload, withSchema('s.json'), null, { file: 'other.json', text: '{}' })).toBe(
      false,
    );
  });
});
