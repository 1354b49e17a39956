import { createWriteStream, readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import type { FieldType, PipelineDefinition, TypedBatch } from '@tapyard/model';
import { BatchBuilder, RowPlan } from '../row-plan';
import { newCounts } from './convert';
import { FastCsvInput } from './fast-csv';

const TYPES: [string, FieldType][] = [
  ['id', 'int'],
  ['amount', 'double'],
  ['label', 'string'],
  ['day', 'date'],
];

function definition(): PipelineDefinition {
  return {
    name: 'fastcsv',
    catalog: null,
    source: {
      fileAttributes: {
        format: 'csv',
        csvAttributes: { delimiter: ',', quote: '"', escape: null, header: true, encoding: 'utf-8' },
        unstructuredAttributes: null,
      },
      schemaProperties: { fields: TYPES.map(([name, type]) => ({ name, type })) },
    },
    dataQuality: { rules: [], aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  };
}

/** `rows` records after a header; `row(i)` may replace record i's text. */
function file(rows: number, eol: string, row: (i: number) => string | null = () => null): Buffer {
  let s = `id,amount,label,day${eol}`;
  for (let i = 1; i <= rows; i++) {
    const d = String(1 + (i % 28)).padStart(2, '0');
    s += (row(i) ?? `${i},${(i * 0.25).toFixed(2)},"label ${i}, quoted é😀",2026-03-${d}`) + eol;
  }
  return Buffer.from(s);
}

/** `bytes` in parts of the given sizes (cycled), each in a buffer of its own, as the runner sends them. */
function parts(bytes: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const n = Math.min(sizes[k % sizes.length], bytes.length - at);
    out.push(Buffer.from(new Uint8Array(bytes.subarray(at, at + n))));
    at += n;
  }
  return out;
}

/** Everything FastCsvInput hands out for `input`, and the rejects' lines. */
async function run(input: Buffer[], fields = definition().source.schemaProperties.fields, window = 0) {
  const dir = mkdtempSync(join(tmpdir(), 'fast-csv-'));
  try {
    const def = definition();
    const fast = new FastCsvInput(
      (async function* () {
        yield* input;
      })(),
      def.source.fileAttributes.csvAttributes,
    );
    const header = await fast.header();
    const columns = header ?? [];
    fast.plan(columns, fields);
    if (window > 0) fast.readInWindows(window);
    const plan = new RowPlan(def, columns);
    const builder = new BatchBuilder(plan.outColumns);
    const counts = newCounts();
    const rejectsPath = join(dir, 'rejects.jsonl');
    const rejects = createWriteStream(rejectsPath);
    const payloads: Payload[] = [];
    const encode = (b: TypedBatch): Payload[] => [b];
    for (;;) {
      const out = await fast.next(plan, builder, encode, counts, rejects);
      if (out === null) break;
      payloads.push(...out);
    }
    await new Promise<void>((r) => rejects.end(() => r()));
    const lines = readFileSync(rejectsPath, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { line: number }).line);
    const csv = payloads.filter((p): p is CsvChunkPayload => typeof p === 'object' && 'kind' in p);
    const parsedRows = payloads
      .filter((p): p is TypedBatch => typeof p === 'object' && 'lines' in p)
      .reduce((n, b) => n + b.lines.length, 0);
    return { header, counts, csv, parsedRows, rejectLines: lines };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('FastCsvInput: clean records checked where they lie', () => {
  it('hands out the parts themselves (no copy) and copies only the records a part boundary cuts', async () => {
    const bytes = file(20_000, '\n');
    const input = parts(bytes, [256 << 10, 100_001]);
    const buffers = new Set(input.map((b) => b.buffer));
    const { header, counts, csv, parsedRows } = await run(input);
    expect(header).toEqual(['id', 'amount', 'label', 'day']);
    expect(parsedRows).toBe(0);
    expect(counts).toMatchObject({ rows: 20_000, unparsed: 20_000, rejected: 0 });
    // Together the payloads are the file after its header, in order.
    const body = bytes.subarray(bytes.indexOf('\n') + 1);
    expect(Buffer.concat(csv.map((p) => p.bytes))).toEqual(body);
    // One payload per part lies in the part's own buffer; the records cut by a boundary come on their own.
    const inPlace = csv.filter((p) => buffers.has(p.bytes.buffer as ArrayBuffer));
    expect(inPlace.length).toBe(input.length);
    const copied = csv.filter((p) => !buffers.has(p.bytes.buffer as ArrayBuffer));
    expect(copied.reduce((n, p) => n + p.bytes.length, 0)).toBeLessThan(body.length / 100);
    expect(new Set(csv.map((p) => p.bytes.buffer)).size).toBe(csv.length);
  });

  it('gives the same rows and reject lines however the file is cut into parts', async () => {
    // Quoted line breaks (each one more physical line), a \r\n file, rejects early and late.
    const bytes = file(3_000, '\r\n', (i) => {
      if (i === 5) return `5,1.5,"two\r\nlines",2026-03-01`;
      if (i === 40) return `40,abc,bad amount,2026-03-01`;
      if (i === 2_999) return `2999,1,"three\nphysical\r\nlines",2026-02-30`;
      return null;
    });
    // Line of record i: i + 1, one more after record 5.
    const expected = [42, 3_001];
    for (const sizes of [[bytes.length], [1], [7, 3], [100, 1, 4096], [64 << 10]]) {
      const { counts, csv, parsedRows, rejectLines } = await run(parts(bytes, sizes));
      expect({ sizes, lines: rejectLines }).toEqual({ sizes, lines: expected });
      expect(counts.rows).toBe(3_000);
      expect(csv.reduce((n, p) => n + p.rows, 0) + parsedRows + counts.rejected).toBe(3_000);
    }
  });

  it('in windows, hands out a part window by window, as views of it, with the lines and rejects of the whole', async () => {
    // A record longer than a window (its window grows), quoted line breaks, a reject late in a part.
    const long = 'x'.repeat(5_000);
    const bytes = file(6_000, '\n', (i) => {
      if (i === 7) return `7,1.5,"two\nlines",2026-03-01`;
      if (i === 2_000) return `2000,2,"${long}",2026-03-02`;
      if (i === 4_321) return `4321,abc,bad amount,2026-03-01`;
      return null;
    });
    const input = parts(bytes, [120_000]);
    const buffers = new Set(input.map((b) => b.buffer));
    const whole = await run(input.map((b) => Buffer.from(new Uint8Array(b))));
    const windowed = await run(input, undefined, 1024);
    expect(windowed.rejectLines).toEqual(whole.rejectLines);
    expect(windowed.rejectLines).toEqual([4_323]);
    // The same counts; more records go out unparsed (those before the refused one's window, not part).
    expect({ ...windowed.counts, unparsed: 0 }).toEqual({ ...whole.counts, unparsed: 0 });
    expect(windowed.counts.unparsed).toBeGreaterThan(whole.counts.unparsed);
    const rows = (csv: CsvChunkPayload[]) => csv.reduce((n, p) => n + p.rows, 0);
    expect(rows(windowed.csv) + windowed.parsedRows).toBe(rows(whole.csv) + whole.parsedRows);
    // Many more chunks, each a window's records (the long one's window grew), most of them views.
    expect(windowed.csv.length).toBeGreaterThan(whole.csv.length * 20);
    expect(Math.max(...windowed.csv.map((p) => p.bytes.length))).toBeGreaterThan(5_000);
    const views = windowed.csv.filter((p) => buffers.has(p.bytes.buffer as ArrayBuffer));
    expect(views.length).toBeGreaterThan(windowed.csv.length * 0.9);
    // Each chunk starts on the line after the last one's line breaks (quoted ones too).
    const clean = windowed.csv.filter((p, k) => k === 0 || p.line > windowed.csv[k - 1].line);
    for (let k = 1; k < clean.length; k++) {
      const before = clean[k - 1];
      if (clean[k].line > 4_000) break; // past the reject, the validating path's chunk is not among them
      const breaks = Buffer.from(before.bytes).toString('latin1').split('\n').length - 1;
      expect(clean[k].line).toBe(before.line + breaks);
    }
    expect(windowed.csv[0].line).toBe(2);
  });

  it('reads every record through the validating path when the schema lacks a file column', async () => {
    const bytes = file(2_000, '\n', (i) => (i === 1_500 ? '1500,x,bad,2026-03-01' : null));
    const fields = definition().source.schemaProperties.fields.filter((f) => f.name !== 'label');
    const { csv, parsedRows, rejectLines } = await run(parts(bytes, [10_000]), fields);
    expect(csv).toEqual([]);
    expect(parsedRows).toBe(1_999);
    expect(rejectLines).toEqual([1_501]);
  });

  it('checks a file with no line break after its last record, and a record longer than a part', async () => {
    const long = 'x'.repeat(200_000);
    const bytes = Buffer.concat([
      file(100, '\n', (i) => (i === 50 ? `50,2,"${long}",2026-03-01` : null)),
      Buffer.from('101,3,last,2026-03-02'),
    ]);
    const { counts, csv, parsedRows } = await run(parts(bytes, [4096]));
    expect(parsedRows).toBe(0);
    expect(counts).toMatchObject({ rows: 101, unparsed: 101 });
    expect(Buffer.concat(csv.map((p) => p.bytes))).toEqual(bytes.subarray(bytes.indexOf('\n') + 1));
  });
});

describe('FastCsvInput: memory bounded by the bytes in flight, not by the file', () => {
  const PART = 1 << 20;
  // Every record the same length, so the bytes handed out follow from the rows counted.
  const record = (i: number) =>
    `${String(i).padStart(9, '0')},1.25,label ${String(i % 1000).padStart(4, '0')},2026-03-01\n`;
  const RECORD_BYTES = record(1).length;
  const HEADER = 'id,amount,label,day\n';

  /**
   * The most bytes read from the input and not yet handed out, over a file of `parts` parts;
   * `bad`: a record the byte check refuses early, so the rest goes through the cutter.
   */
  async function mostHeld(parts: number, bad: boolean): Promise<{ held: number; rows: number }> {
    const perPart = Math.floor(PART / RECORD_BYTES);
    let pulled = 0;
    const input = (async function* () {
      for (let p = 0; p < parts; p++) {
        let s = p === 0 ? HEADER : '';
        for (let k = 0; k < perPart; k++) {
          const i = p * perPart + k + 1;
          s += bad && i === 10 ? `${String(i).padStart(9, '0')},1.2x,label 0000,2026-03-01\n` : record(i);
        }
        const b = Buffer.from(s);
        pulled += b.length;
        yield b;
      }
    })();
    const def = definition();
    const fast = new FastCsvInput(input, def.source.fileAttributes.csvAttributes);
    const columns = (await fast.header()) ?? [];
    fast.plan(columns, def.source.schemaProperties.fields);
    const plan = new RowPlan(def, columns);
    const builder = new BatchBuilder(plan.outColumns);
    const counts = newCounts();
    const dir = mkdtempSync(join(tmpdir(), 'fast-csv-'));
    const rejects = createWriteStream(join(dir, 'rejects.jsonl'));
    let held = 0;
    try {
      for (;;) {
        const out = await fast.next(plan, builder, (b) => [b], counts, rejects);
        if (out === null) break;
        // Rows counts the rejected ones too (the refused record is as long as the others).
        held = Math.max(held, pulled - HEADER.length - counts.rows * RECORD_BYTES);
      }
    } finally {
      await new Promise<void>((r) => rejects.end(() => r()));
      rmSync(dir, { recursive: true, force: true });
    }
    return { held, rows: counts.rows };
  }

  it('holds at most about a part, for a file of 4 parts as for one of 16, clean or through the cutter', async () => {
    for (const bad of [false, true]) {
      const small = await mostHeld(4, bad);
      const large = await mostHeld(16, bad);
      expect(large.rows).toBe(4 * small.rows);
      // A part and the cutter's chunk beside it at most: nothing that grows with the file.
      expect({ bad, small: small.held <= 2 * PART, large: large.held <= 2 * PART }).toEqual({
        bad,
        small: true,
        large: true,
      });
    }
  });
});
