import fc from 'fast-check';
import { Readable } from 'node:stream';
import { CsvReadOptions, readCsv } from '../csv-reader';
import { FatalReadError } from '../record-batch';
import { CsvChunk, CsvHeaderPart, CsvRowsOptions, CsvRowsPart, csvRows, readerInput } from './csv-rows';
import { propertyRuns } from '../../../../test/support/property-runs';

const BASE: CsvRowsOptions = { delimiter: ',', quote: '"', escape: null, header: false, encoding: 'utf-8' };

function pieces(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, i + size));
  return out;
}

async function* from(buffers: Buffer[]): AsyncGenerator<Buffer> {
  for (const b of buffers) yield b;
}

async function partsOf(data: string | Buffer, opts: Partial<CsvRowsOptions> = {}, size = 1 << 30) {
  const buf = typeof data === 'string' ? Buffer.from(data) : data;
  const out: CsvRowsPart[] = [];
  for await (const p of csvRows(from(pieces(buf, size)), { ...BASE, ...opts })) out.push(p);
  return out;
}

const chunksOf = (parts: CsvRowsPart[]): CsvChunk[] => parts.filter((p): p is CsvChunk => p.kind === 'chunk');

/** What a test needs of a chunk: its text and numbers. */
function summary(c: CsvChunk) {
  return {
    text: c.bytes.toString('utf8'),
    startLine: c.startLine,
    firstLine: c.firstLine,
    records: c.records,
    continues: c.continues,
    open: c.open,
  };
}

/** One record as the reference reports it: a row or a row error, at its line. */
type RefRecord = { line: number; row: (string | null)[] } | { line: number; reason: string; raw: string };

interface RefRead {
  header?: string[];
  records: RefRecord[];
}

/** Reads `buffers` with the reference reader; line numbers are shifted by `lineOffset`. */
async function reference(
  buffers: Buffer[],
  opts: CsvReadOptions,
  lineOffset = 0,
): Promise<RefRead | { fatal: string }> {
  const records: RefRecord[] = [];
  let header: string[] | undefined;
  try {
    for await (const batch of readCsv(Readable.from(buffers), { ...opts, minChunkBytes: 1 })) {
      header ??= batch.header;
      batch.rows.forEach((row, k) => records.push({ line: batch.lines[k] + lineOffset, row: [...row] }));
      for (const e of batch.errors) {
        // The one reason that names a line: shift it like the record's own line.
        const reason = e.reason.replace(
          /^unterminated quoted field starting at line (\d+)$/,
          (_, n: string) => `unterminated quoted field starting at line ${Number(n) + lineOffset}`,
        );
        records.push({ line: e.line + lineOffset, reason, raw: e.raw });
      }
    }
  } catch (err) {
    if (err instanceof FatalReadError) return { fatal: err.message };
    throw err;
  }
  records.sort((a, b) => a.line - b.line);
  return { header, records };
}

describe('csvRows', () => {
  it('cuts at record boundaries once a chunk reaches the target, with exact lines and counts', async () => {
    const parts = await partsOf('id,name\n1,a\n2,b\n3,c\n', { header: true, targetBytes: 6 });
    expect(parts[0]).toEqual({ kind: 'header', bytes: Buffer.from('id,name\n'), offset: 0 });
    expect(chunksOf(parts).map(summary)).toEqual([
      { text: '1,a\n2,b\n', startLine: 2, firstLine: 2, records: 2, continues: false, open: false },
      { text: '3,c\n', startLine: 4, firstLine: 4, records: 1, continues: false, open: false },
    ]);
    expect(chunksOf(parts).map((c) => c.offset)).toEqual([8, 16]);
  });

  it('gives the same chunks whatever the input buffer sizes', async () => {
    const data = '\uFEFFa,"b\r\nc",d\r\n\r\n  \r\n"x""y",z\r\n5" screen,"q"\r\n';
    const whole = (await partsOf(data, { header: true, targetBytes: 4 })).map((p) =>
      p.kind === 'chunk' ? summary(p) : p.bytes.toString(),
    );
    for (const size of [1, 2, 3, 7]) {
      const parts = await partsOf(data, { header: true, targetBytes: 4 }, size);
      expect(parts.map((p) => (p.kind === 'chunk' ? summary(p) : p.bytes.toString()))).toEqual(whole);
    }
    expect(whole).toEqual([
      'a,"b\r\nc",d\r\n',
      // Blank lines are cut like records once the target is reached; they are not records.
      { text: '\r\n  \r\n', startLine: 3, firstLine: 3, records: 0, continues: false, open: false },
      { text: '"x""y",z\r\n', startLine: 5, firstLine: 5, records: 1, continues: false, open: false },
      { text: '5" screen,"q"\r\n', startLine: 6, firstLine: 6, records: 1, continues: false, open: false },
    ]);
  });

  it('drops a UTF-8 BOM at the start only (split across buffers too), and counts it in offsets', async () => {
    for (const size of [1, 2, 64]) {
      const parts = await partsOf('\uFEFFa\n\uFEFFb\n', { targetBytes: 1 }, size);
      expect(chunksOf(parts).map((c) => [c.bytes.toString(), c.offset])).toEqual([
        ['a\n', 3],
        ['\uFEFFb\n', 5],
      ]);
    }
    // latin1 keeps the bytes.
    const latin = await partsOf(Buffer.from([0xef, 0xbb, 0xbf, 0x61]), { encoding: 'latin1' });
    expect(chunksOf(latin)[0].bytes).toEqual(Buffer.from([0xef, 0xbb, 0xbf, 0x61]));
  });

  it('never cuts inside quotes, between \\r and \\n, or after a quote that is literal to the reference', async () => {
    const data = 'a,"1\n2\r\n3"\r\nb,"x"\rc,5" d\ne,"f""\ng"\n';
    for (const size of [1, 1 << 20]) {
      const chunks = chunksOf(await partsOf(data, { targetBytes: 1 }, size));
      expect(chunks.map(summary)).toEqual([
        { text: 'a,"1\n2\r\n3"\r\n', startLine: 1, firstLine: 1, records: 1, continues: false, open: false },
        { text: 'b,"x"\r', startLine: 4, firstLine: 4, records: 1, continues: false, open: false },
        { text: 'c,5" d\n', startLine: 5, firstLine: 5, records: 1, continues: false, open: false },
        { text: 'e,"f""\ng"\n', startLine: 6, firstLine: 6, records: 1, continues: false, open: false },
      ]);
    }
  });

  it('follows the reference after a closing quote (text joins the field, a quote there is literal)', async () => {
    const data = '"ab"c"d\ne,f\n';
    expect(chunksOf(await partsOf(data, { targetBytes: 1 })).map((c) => c.bytes.toString())).toEqual([
      '"ab"c"d\n',
      'e,f\n',
    ]);
  });

  it('handles an escape other than the quote as the reference does', async () => {
    const data = '"a\\"b\nc",1\n"d\\\\"\n,2\n"\\x\ny"\n';
    const chunks = chunksOf(await partsOf(data, { escape: '\\', targetBytes: 1 }, 1));
    expect(chunks.map((c) => c.bytes.toString())).toEqual([
      '"a\\"b\nc",1\n',
      '"d\\\\"\n',
      ',2\n',
      '"\\x\ny"\n',
    ]);
    expect(chunks.map((c) => c.firstLine)).toEqual([1, 3, 4, 5]);
  });

  it('treats quotes as data when quoting is off', async () => {
    const chunks = chunksOf(await partsOf('"a\nb"\n', { quote: null, targetBytes: 1 }));
    expect(chunks.map((c) => c.bytes.toString())).toEqual(['"a\n', 'b"\n']);
  });

  it('skips blank lines and lines of spaces as the reference does, cutting among them when large', async () => {
    const chunks = chunksOf(await partsOf('\n\n \t\na\n\r\n\n', { targetBytes: 6 }));
    expect(chunks.map(summary)).toEqual([
      { text: '\n\n \t\na\n', startLine: 1, firstLine: 4, records: 1, continues: false, open: false },
      { text: '\r\n\n', startLine: 5, firstLine: 5, records: 0, continues: false, open: false },
    ]);
    // Memory stays bounded by blank lines too.
    expect(chunksOf(await partsOf('\n\n\n\n', { targetBytes: 2 })).map((c) => c.bytes.toString())).toEqual([
      '\n\n',
      '\n\n',
    ]);
    // With a tab delimiter a line of tabs is a record; with a space quote, a leading space quotes.
    expect(chunksOf(await partsOf('\t\n', { delimiter: '\t' }))[0].records).toBe(1);
    expect(chunksOf(await partsOf(' \n', { quote: ' ' }))[0].records).toBe(1);
  });

  it('handles lone \\r line endings and a last record without a line break', async () => {
    const chunks = chunksOf(await partsOf('a\rb\r\rc', { targetBytes: 1 }, 1));
    expect(chunks.map(summary)).toEqual([
      { text: 'a\r', startLine: 1, firstLine: 1, records: 1, continues: false, open: false },
      { text: 'b\r', startLine: 2, firstLine: 2, records: 1, continues: false, open: false },
      { text: '\r', startLine: 3, firstLine: 3, records: 0, continues: false, open: false },
      { text: 'c', startLine: 4, firstLine: 4, records: 1, continues: false, open: false },
    ]);
  });

  it('emits a record longer than maxRecordBytes as a run of pieces, holding at most a piece', async () => {
    const long = `x,"${'y'.repeat(50)}\n${'z'.repeat(50)}"`;
    const data = `a,1\nb,2\n${long}\nc,3\nd,4\n`;
    const chunks = chunksOf(await partsOf(data, { targetBytes: 100, maxRecordBytes: 20 }, 8));
    expect(chunks.map((c) => c.bytes.toString()).join('')).toBe(data);
    expect(chunks[0]).toMatchObject({
      records: 2,
      continues: false,
      open: false,
      startLine: 1,
      firstLine: 1,
    });
    expect(chunks[0].bytes.toString()).toBe('a,1\nb,2\n');
    const run = chunks.slice(1, chunks.findIndex((c, k) => k > 0 && !c.open) + 1);
    expect(run[0]).toMatchObject({ records: 1, continues: false, open: true, startLine: 3, firstLine: 3 });
    expect(run.slice(1).every((c) => c.continues && c.records === 0)).toBe(true);
    expect(run[run.length - 1].open).toBe(false);
    expect(run.map((c) => c.bytes.toString()).join('')).toBe(`${long}\n`);
    for (const c of chunks) expect(c.bytes.length).toBeLessThanOrEqual(20 + 8 + 1);
    const rest = chunks.slice(1 + run.length);
    expect(rest.map(summary)).toEqual([
      { text: 'c,3\nd,4\n', startLine: 5, firstLine: 5, records: 2, continues: false, open: false },
    ]);
  });

  it('ends a run at the end of the input with a piece that is not open', async () => {
    const chunks = chunksOf(await partsOf('"unterminated\nquote and more', { maxRecordBytes: 4 }, 3));
    expect(chunks[0]).toMatchObject({ open: true, continues: false, records: 1 });
    expect(chunks[chunks.length - 1]).toMatchObject({ open: false, continues: true });
    expect(chunks.map((c) => c.bytes.toString()).join('')).toBe('"unterminated\nquote and more');
  });

  it('refuses a header longer than maxRecordBytes', async () => {
    await expect(partsOf('"a very long header', { header: true, maxRecordBytes: 4 }, 2)).rejects.toThrow(
      FatalReadError,
    );
  });

  it('yields the header alone for a header-only or empty file', async () => {
    expect(await partsOf('a,b\n', { header: true })).toEqual([
      { kind: 'header', bytes: Buffer.from('a,b\n'), offset: 0 },
    ]);
    expect(await partsOf('', { header: true })).toEqual([
      { kind: 'header', bytes: Buffer.alloc(0), offset: 0 },
    ]);
    expect(await partsOf('', { header: false })).toEqual([]);
  });

  it('rejects the same bad settings as the reference reader', async () => {
    await expect(partsOf('a', { delimiter: ',', quote: ',' })).rejects.toThrow(FatalReadError);
    await expect(partsOf('a', { delimiter: 'ab' })).rejects.toThrow(FatalReadError);
  });

  describe('property: chunks are the reference reader’s records, cut at record boundaries', () => {
    const unit = fc.constantFrom(
      'a',
      'b',
      ' ',
      '\t',
      ',',
      ';',
      '"',
      "'",
      '\\',
      '\n',
      '\r',
      '\r\n',
      'é',
      '😀',
      '\uFEFF',
      '\0',
    );
    const settings = fc.record({
      delimiter: fc.constantFrom(',', ';', '\t'),
      quote: fc.constantFrom<string | null>('"', "'", null),
      escape: fc.constantFrom<string | null>(null, '"', '\\'),
      header: fc.boolean(),
    });
    // Mostly well-formed records (quoted fields with line breaks, doubled and escaped quotes,
    // blank lines, every line ending), some raw noise.
    const plain = fc.string({
      unit: fc.constantFrom('a', 'b', ' ', 'é', '😀', '\uFEFF', '\\', '.'),
      maxLength: 5,
    });
    const quotedField = fc
      .tuple(fc.constantFrom('"', "'"), fc.string({ unit, maxLength: 6 }))
      .map(([q, v]) => q + v.replaceAll(q, q + q) + q);
    const field = fc.oneof(
      { arbitrary: plain, weight: 4 },
      { arbitrary: quotedField, weight: 2 },
      fc.string({ unit, maxLength: 3 }),
    );
    const line = fc
      .tuple(
        fc.array(field, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(',', ';', '\t'),
        fc.constantFrom('\n', '\r\n', '\r', '\n\n', ' \n'),
      )
      .map(([fields, d, eol]) => fields.join(d) + eol);
    const text = fc.oneof(
      { arbitrary: fc.array(line, { maxLength: 12 }).map((l) => l.join('')), weight: 3 },
      fc.string({ unit, maxLength: 80 }),
    );
    const input = fc.record({
      text,
      bom: fc.boolean(),
      pieceSize: fc.integer({ min: 1, max: 40 }),
      targetBytes: fc.integer({ min: 1, max: 40 }),
      maxRecordBytes: fc.integer({ min: 1, max: 60 }),
      width: fc.integer({ min: 1, max: 4 }),
    });

    it('holds for random CSV, settings, buffer sizes and targets', async () => {
      await fc.assert(
        fc.asyncProperty(settings, input, async (s, inp) => {
          if (s.delimiter === s.quote || s.delimiter === s.escape) return;
          const data = Buffer.from((inp.bom ? '\uFEFF' : '') + inp.text);
          const body = data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf ? data.subarray(3) : data;
          const opts: CsvRowsOptions = {
            ...s,
            encoding: 'utf-8',
            targetBytes: inp.targetBytes,
            maxRecordBytes: inp.maxRecordBytes,
          };
          const readOpts: CsvReadOptions = { ...s, encoding: 'utf-8', expectedColumns: inp.width };
          const whole = await reference([data], readOpts);

          let parts: CsvRowsPart[];
          try {
            parts = [];
            for await (const p of csvRows(from(pieces(data, inp.pieceSize)), opts)) parts.push(p);
          } catch (err) {
            // Only a long header may stop it.
            expect(s.header).toBe(true);
            expect((err as Error).message).toMatch(/^the header row is longer than/);
            return;
          }
          const header = parts[0]?.kind === 'header' ? (parts[0] as CsvHeaderPart) : null;
          expect(header !== null).toBe(s.header);
          const chunks = chunksOf(parts);
          expect(chunks.length + (header ? 1 : 0)).toBe(parts.length);
          expect(Buffer.concat(parts.map((p) => p.bytes))).toEqual(body);

          // Offsets, memory bound, and how runs link up.
          let offset = data.length - body.length + (header ? header.bytes.length : 0);
          let prevOpen = false;
          for (const c of chunks) {
            expect(c.offset).toBe(offset);
            offset += c.bytes.length;
            expect(c.continues).toBe(prevOpen);
            prevOpen = c.open;
            expect(c.bytes.length).toBeLessThanOrEqual(
              inp.targetBytes + inp.maxRecordBytes + inp.pieceSize + 4,
            );
          }
          expect(prevOpen).toBe(false);

          if ('fatal' in whole) {
            if (header)
              expect(await reference(readerInput(header.bytes), { ...readOpts, header: true })).toEqual(
                whole,
              );
            else expect(chunks.reduce((n, c) => n + c.records, 0)).toBe(0);
            return;
          }
          if (header) {
            const h = await reference(readerInput(header.bytes), { ...readOpts, header: true });
            expect(h).toEqual({ header: whole.header, records: [] });
          }

          // Each chunk (a run: its pieces together) read alone gives the whole read's records.
          const got: RefRecord[] = [];
          for (let k = 0; k < chunks.length;) {
            let end = k;
            while (chunks[end].open) end++;
            const run = chunks.slice(k, end + 1);
            k = end + 1;
            const records = run.reduce((n, c) => n + c.records, 0);
            const read = await reference(
              readerInput(run.map((c) => c.bytes)),
              { ...readOpts, header: false },
              run[0].startLine - 1,
            );
            if (records === 0) {
              expect(read).toEqual({ fatal: 'the file is empty' });
              continue;
            }
            expect('records' in read).toBe(true);
            if (!('records' in read)) return;
            expect(read.records.length).toBe(records);
            const first = run.find((c) => c.records > 0) as CsvChunk;
            expect(read.records[0].line).toBe(first.firstLine);
            if (run.length === 1) expect(run[0].firstLine).toBe(read.records[0].line);
            got.push(...read.records);
          }
          expect(got).toEqual(whole.records);
        }),
        // 300 in `npm test` (1,500 before); `npm run fuzz` multiplies them.
        propertyRuns(300, 7),
      );
    });
  });

  // What the throughput run (now `npm run bench:csv`) also checked: the count over many input
  // buffers at the production buffer size and chunk target.
  it('counts every record of a multi-buffer file fed in 64 KiB buffers', async () => {
    const lines = ['id,amount,label,flag,day\n'];
    for (let i = 0; i < 40_000; i++)
      lines.push(`${i},${(i % 9973) / 100},L${i % 100},${i % 3 ? 'true' : 'false'},2024-01-02\n`);
    const data = Buffer.from(lines.join(''));
    expect(data.length).toBeGreaterThan(16 * 64 * 1024);
    const parts = await partsOf(data, { header: true }, 64 * 1024);
    const chunks = chunksOf(parts);
    expect(chunks.reduce((n, c) => n + c.records, 0)).toBe(40_000);
    expect(Buffer.concat(chunks.map((c) => c.bytes)).toString()).toBe(lines.slice(1).join(''));
  });
});
