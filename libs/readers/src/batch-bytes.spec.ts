import { Readable } from 'node:stream';
import { chunked } from '../../../test/support/byte-streams';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_ROWS, DEFAULT_MAX_BYTES } from './batch-sink';
import { CsvReadOptions, readCsv } from './csv-reader';
import { compileCsvCheck } from './fastpath/csv-check';
import { readJson } from './json-reader';
import { RecordBatch } from './record-batch';
import { readTapRecords } from './tap-records';
import { readXml } from './xml-reader';

/**
 * Batches are cut by bytes as well as by rows, and a CSV record is bounded as a whole, not only field
 * by field: large records make short batches instead of one batch of up to 5,000 of them (192
 * records of 1 MiB were one batch of 192 MiB).
 */

const MiB = 1024 * 1024;
const CSV: CsvReadOptions = { delimiter: ',', quote: '"', escape: null, encoding: 'utf-8', header: false };

/** `count` records made by `record`, streamed one at a time (the input is never whole in memory). */
function streamed(count: number, record: (i: number) => Buffer, head = '', tail = ''): Readable {
  return Readable.from(
    (function* () {
      if (head !== '') yield Buffer.from(head);
      for (let i = 0; i < count; i++) yield record(i);
      if (tail !== '') yield Buffer.from(tail);
    })(),
  );
}

/** A record of about 1 MiB: `before`, a MiB of `x`, `after`. */
function big(before: string, after: string): Buffer {
  return Buffer.concat([Buffer.from(before), Buffer.alloc(MiB, 'x'), Buffer.from(after)]);
}

interface Shape {
  rows: number;
  errors: number;
  /** The characters of the batch's cells. */
  chars: number;
}

/** Each batch's size, keeping nothing of it (the rows of a test are hundreds of MiB in all). */
async function shapes(batches: AsyncIterable<RecordBatch>): Promise<Shape[]> {
  const out: Shape[] = [];
  for await (const b of batches) {
    let chars = 0;
    for (const row of b.rows) for (const cell of row) chars += cell?.length ?? 0;
    out.push({ rows: b.rows.length, errors: b.errors.length, chars });
  }
  return out;
}

describe('batches by bytes', () => {
  it('cut 1 MiB CSV records into batches of 32 MiB, not one of all of them', async () => {
    expect(DEFAULT_BATCH_BYTES).toBe(32 * MiB);
    const got = await shapes(
      readCsv(
        streamed(72, (i) => big(`${i},`, '\n')),
        CSV,
      ),
    );
    // The 32nd record takes a batch past 32 MiB: 32, 32, then the 8 left.
    expect(got.map((b) => b.rows)).toEqual([32, 32, 8]);
    for (const b of got.slice(0, 2)) {
      expect(b.chars).toBeGreaterThan(32 * MiB - 32 * 32);
      expect(b.chars).toBeLessThan(33 * MiB);
    }
  });

  it('cut 1 MiB JSON records the same way, in an array and as JSON Lines', async () => {
    const array = streamed(72, (i) => big(`${i === 0 ? '' : ','}{"a":"`, '"}'), '[', ']');
    expect((await shapes(readJson(array))).map((b) => b.rows)).toEqual([32, 32, 8]);
    const lines = streamed(40, () => big('{"a":"', '"}\n'));
    expect((await shapes(readJson(lines, { lines: true }))).map((b) => b.rows)).toEqual([32, 8]);
  });

  it('cut 1 MiB XML records the same way', async () => {
    const xml = streamed(40, () => big('<row><a>', '</a></row>'), '<rows>', '</rows>');
    expect((await shapes(readXml(xml, { rowElement: 'row' }))).map((b) => b.rows)).toEqual([32, 8]);
  });

  it('cut tap records the same way', async () => {
    const lines = streamed(40, () => big('{"a":"', '"}\n'));
    const got = await shapes(readTapRecords(lines, { keys: ['a'], columns: ['a'] }));
    expect(got.map((b) => b.rows)).toEqual([32, 8]);
  });

  it('keep cutting ordinary rows by count, and count cells and row errors toward the bytes', async () => {
    const rows = streamed(12_000, (i) => Buffer.from(`${i},some text\n`));
    expect((await shapes(readCsv(rows, CSV))).map((b) => b.rows)).toEqual([
      DEFAULT_BATCH_ROWS,
      DEFAULT_BATCH_ROWS,
      2_000,
    ]);
    // Empty cells cost a pointer each (8 bytes): 100 fields of nothing are 800 bytes a row.
    const wide = ','.repeat(99) + '\n';
    const narrow = await shapes(readCsv(chunked(wide.repeat(10), 7), { ...CSV, batchBytes: 2_000 }));
    expect(narrow.map((b) => b.rows)).toEqual([3, 3, 3, 1]);
    // A row error counts its reason and raw text.
    const errors = await shapes(
      readCsv(chunked('a,b\nc\nd\ne\nf,g\n', 3), { ...CSV, batchBytes: 40, minChunkBytes: 1 }),
    );
    expect(errors.map((b) => [b.rows, b.errors])).toEqual([
      [1, 1],
      [0, 2],
      [1, 0],
    ]);
  });
});

describe('the CSV record limit', () => {
  it('makes a record whose fields pass 16 MiB together a row error naming the limit, and reads on', async () => {
    // 20 fields of 1 MiB, each well within the field limit: such a row was held whole (300 of them, 4.8 GB).
    const header = Array.from({ length: 20 }, (_, k) => `c${k}`).join(',');
    const small = Array.from({ length: 20 }, (_, k) => `${k}`).join(',');
    const wide = streamed(22, (i) =>
      i === 0
        ? Buffer.from(`${header}\n${small}\n`)
        : i <= 20
          ? big('', i < 20 ? ',' : '\n')
          : Buffer.from(`${small}\n`),
    );
    const batches: RecordBatch[] = [];
    for await (const b of readCsv(wide, { ...CSV, header: true })) batches.push(b);
    expect(batches.flatMap((b) => b.rows)).toEqual([small.split(','), small.split(',')]);
    const errors = batches.flatMap((b) => b.errors);
    expect(errors.map((e) => [e.line, e.reason, e.raw.length])).toEqual([[3, 'record exceeds 16 MiB', 1000]]);
    expect(DEFAULT_MAX_BYTES).toBe(16 * MiB);
  });

  it('counts the kept text of every field, quoted, escaped or across chunks, against maxRecordBytes', async () => {
    const read = async (text: string, size: number) => {
      const rows: (string | null)[][] = [];
      const reasons: string[] = [];
      const opts = { ...CSV, escape: '\\', minChunkBytes: 1, maxRecordBytes: 10 };
      for await (const b of readCsv(chunked(text, size), opts)) {
        rows.push(...b.rows);
        reasons.push(...b.errors.map((e) => `${e.line}: ${e.reason}`));
      }
      return { rows, reasons };
    };
    // Kept text: 2 + 3 (`c"d`, the escape dropped) + 4 bytes; then 11; 10; 11; nothing; 11 in one field.
    const text = 'ab,"c\\"d",efgh\nab,"c\\"d",efghij\nabcd,efg,hij\nabcd,efg,hijk\n,,\n"abcdefghijk",,\n';
    for (const size of [1, 2, 3, 1000]) {
      expect(await read(text, size)).toEqual({
        rows: [
          ['ab', 'c"d', 'efgh'],
          ['abcd', 'efg', 'hij'],
          [null, null, null],
        ],
        reasons: ['2: record exceeds 10 bytes', '4: record exceeds 10 bytes', '6: record exceeds 10 bytes'],
      });
    }
  });

  it('refuses a header past the limit, as an unusable header', async () => {
    const read = readCsv(chunked('abcdef,ghijkl\n1,2\n', 4), {
      ...CSV,
      header: true,
      minChunkBytes: 1,
      maxRecordBytes: 10,
    });
    await expect(read.next()).rejects.toThrow('the header row is unusable: record exceeds 10 bytes');
  });

  it('sends a record past the limit from the fast path to the reference reader', () => {
    const check = compileCsvCheck({ delimiter: ',', quote: '"', escape: null, types: ['string', 'string'] });
    expect(check(Buffer.from('ab,cd\n'))).toMatchObject({ clean: true });
    const bounded = compileCsvCheck({
      delimiter: ',',
      quote: '"',
      escape: null,
      types: ['string', 'string'],
      maxRecordBytes: 10,
    });
    expect(bounded(Buffer.from('abcd,efgh\n'))).toMatchObject({ clean: true });
    expect(bounded(Buffer.from('abcd,efgh\nabcde,fghij\n'))).toEqual({
      clean: false,
      reason: 'a record longer than the limit',
      offset: 10,
    });
  });
});
