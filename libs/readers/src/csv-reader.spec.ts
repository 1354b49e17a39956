import { chunked, thrown } from '../../../test/support/byte-streams';
import { readCsv, CsvReadOptions } from './csv-reader';
import { FatalReadError, RecordBatch, RowError } from './record-batch';

const BASE: CsvReadOptions = { delimiter: ',', quote: '"', escape: null, encoding: 'utf-8', header: false };

async function batchesOf(data: string | Buffer, opts: Partial<CsvReadOptions> = {}, size = 1) {
  const out: RecordBatch[] = [];
  for await (const b of readCsv(chunked(data, size), { ...BASE, minChunkBytes: 1, ...opts })) out.push(b);
  return out;
}

interface Read {
  header?: string[];
  rows: (string | null)[][];
  lines: number[];
  errors: RowError[];
}

function merge(batches: RecordBatch[]): Read {
  return {
    header: batches[0]?.header,
    rows: batches.flatMap((b) => b.rows),
    lines: batches.flatMap((b) => b.lines),
    errors: batches.flatMap((b) => b.errors),
  };
}

/** Reads with 1-byte, 3-byte and whole-input chunks and checks that all three agree. */
async function read(data: string | Buffer, opts: Partial<CsvReadOptions> = {}): Promise<Read> {
  const whole = merge(await batchesOf(data, opts, 1 << 30));
  expect(merge(await batchesOf(data, opts, 1))).toEqual(whole);
  expect(merge(await batchesOf(data, opts, 3))).toEqual(whole);
  return whole;
}

function fatal(data: string | Buffer, opts: Partial<CsvReadOptions> = {}): Promise<FatalReadError> {
  return thrown(() => batchesOf(data, opts), FatalReadError);
}

describe('readCsv', () => {
  it('reads RFC 4180 records: quotes with delimiters, newlines and doubled quotes, CRLF', async () => {
    const r = await read('id,text\r\n1,"a,b"\r\n2,"say ""hi""\r\nnext line"\r\n3,plain\r\n');
    expect(r.rows).toEqual([
      ['id', 'text'],
      ['1', 'a,b'],
      ['2', 'say "hi"\r\nnext line'],
      ['3', 'plain'],
    ]);
    expect(r.lines).toEqual([1, 2, 3, 5]);
    expect(r.errors).toEqual([]);
  });

  it('accepts \\n, \\r\\n and \\r line endings, mixed', async () => {
    const r = await read('a,b\nc,d\r\ne,f\rg,h');
    expect(r.rows).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      ['e', 'f'],
      ['g', 'h'],
    ]);
    expect(r.lines).toEqual([1, 2, 3, 4]);
  });

  it('treats a final line without newline as a record, skips blank and trailing empty lines', async () => {
    const r = await read('\n\na,b\n\n\r\n   \nc,d\n\n');
    expect(r.rows).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(r.lines).toEqual([3, 7]);
    expect((await read('x,y')).rows).toEqual([['x', 'y']]);
  });

  it('reads an unquoted empty field as null and a quoted one as the empty string, as PostgreSQL does', async () => {
    const r = await read('a,,c\n"",x,\n1,"",""\n');
    expect(r.rows).toEqual([
      ['a', null, 'c'],
      ['', 'x', null],
      ['1', '', ''],
    ]);
    expect((await read('a,"",\n', { header: true, expectedColumns: 3 })).header).toEqual(['a', '', '']);
  });

  it('reads an empty field after a quoted-then-continued field as null at any chunk size (found by fuzzing)', async () => {
    expect((await read('""aa,,\nx,"y"z,\n')).rows).toEqual([
      ['aa', null, null],
      ['x', 'yz', null],
    ]);
  });

  it('reads the unquoted nullValues of the pipeline as null, and no others', async () => {
    const r = await read('NA,"NA",,""\n\\N,x,-,\n', { nullValues: ['NA', '-'] });
    expect(r.rows).toEqual([
      [null, 'NA', '', ''],
      ['\\N', 'x', null, ''],
    ]);
    expect((await read('a,,b\n', { nullValues: [] })).rows).toEqual([['a', '', 'b']]);
    // A one-field line that is a null marker is a record, a blank one is skipped.
    expect((await read('NA\n  \nx\n', { nullValues: ['NA'] })).rows).toEqual([[null], ['x']]);
  });

  it('is lenient with text after a closing quote and quotes inside unquoted fields', async () => {
    const r = await read('"ab"cd,5" screen\n');
    expect(r.rows).toEqual([['abcd', '5" screen']]);
  });

  it('supports a custom delimiter, no quoting, and a backslash escape', async () => {
    expect((await read('a\tb\n"x\ty"\tz\n', { delimiter: '\t' })).rows).toEqual([
      ['a', 'b'],
      ['x\ty', 'z'],
    ]);
    expect((await read('a;"b;c"\n', { delimiter: ';', quote: null })).rows).toEqual([['a', '"b', 'c"']]);
    const esc = await read('"say \\"hi\\"",x\n"back\\\\slash","keep\\n"\n', { escape: '\\' });
    expect(esc.rows).toEqual([
      ['say "hi"', 'x'],
      ['back\\slash', 'keep\\n'],
    ]);
  });

  it('reads a semicolon file with the wrong delimiter as one column', async () => {
    expect((await read('a;b;c\n1;2;3\n')).rows).toEqual([['a;b;c'], ['1;2;3']]);
  });

  it('exposes the header on the first batch only, and not as a row', async () => {
    const batches = await batchesOf('name,age\nann,30\nbob,40\ncid,50\n', { header: true, batchRows: 2 }, 4);
    expect(batches.map((b) => b.header)).toEqual([['name', 'age'], undefined]);
    expect(batches.map((b) => b.rows)).toEqual([
      [
        ['ann', '30'],
        ['bob', '40'],
      ],
      [['cid', '50']],
    ]);
    expect(batches.flatMap((b) => b.lines)).toEqual([2, 3, 4]);
  });

  it('yields one batch with the header and no rows for a header-only file', async () => {
    const batches = await batchesOf('a,b,c\r\n', { header: true });
    expect(batches).toEqual([{ header: ['a', 'b', 'c'], rows: [], lines: [], errors: [] }]);
  });

  it('refuses an empty file', async () => {
    expect((await fatal('')).message).toBe('the file is empty');
    expect((await fatal(' \n\r\n\t\n')).message).toBe('the file is empty');
    expect((await fatal('\n\n', { header: true })).message).toBe('the file is empty');
  });

  it('reports ragged rows as errors against the header width and keeps the others', async () => {
    const r = await read('a,b,c\n1,2,3\n1,2\n1,2,3,4,5\n4,5,6\n', { header: true });
    expect(r.rows).toEqual([
      ['1', '2', '3'],
      ['4', '5', '6'],
    ]);
    expect(r.errors).toEqual([
      { line: 3, reason: 'row has 2 fields, expected 3', raw: '1,2' },
      { line: 4, reason: 'row has 5 fields, expected 3', raw: '1,2,3,4,5' },
    ]);
  });

  it('takes the width from the first record without a header, or from expectedColumns', async () => {
    expect((await read('1,2\n3\n')).errors).toEqual([
      { line: 2, reason: 'row has 1 fields, expected 2', raw: '3' },
    ]);
    expect((await read('a,b\n1,2,3\n', { header: true, expectedColumns: 3 })).header).toEqual(['a', 'b']);
    const r = await read('1,2\n3,4,5\n', { expectedColumns: 3 });
    expect(r.rows).toEqual([['3', '4', '5']]);
    expect(r.errors.map((e) => e.reason)).toEqual(['row has 2 fields, expected 3']);
  });

  it('reports an unterminated quote once, at the end of the file', async () => {
    const r = await read('a,b\n1,2\n3,"never closed\n4,5\n6,7\n');
    expect(r.rows).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(r.errors).toEqual([
      { line: 3, reason: 'unterminated quoted field starting at line 3', raw: '3,"never closed\n4,5\n6,7\n' },
    ]);
  });

  it('refuses a header that is unusable', async () => {
    expect((await fatal('"a,b\n1,2\n', { header: true })).message).toBe(
      'the header row is unusable: unterminated quoted field starting at line 1',
    );
  });

  it('reports a field over maxFieldBytes and continues at the next record', async () => {
    const big = 'x'.repeat(50);
    const r = await read(`1,ok\n2,${big}\n3,"${big}\n${big}"\n4,fine\n`, { maxFieldBytes: 40 });
    expect(r.rows).toEqual([
      ['1', 'ok'],
      ['4', 'fine'],
    ]);
    expect(r.errors.map((e) => [e.line, e.reason])).toEqual([
      [2, 'field 2 exceeds 40 bytes'],
      [3, 'field 2 exceeds 40 bytes'],
    ]);
    expect(r.errors[0].raw).toBe(`2,${big}`);
  });

  it('stops buffering an unterminated quoted field at maxFieldBytes and reports it once', async () => {
    const rest = 'y,'.repeat(5_000);
    const r = await read(`a,b\n1,"open\n${rest}\n`, { maxFieldBytes: 100 });
    expect(r.rows).toEqual([['a', 'b']]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].reason).toBe('unterminated quoted field starting at line 2');
    expect(r.errors[0].raw).toHaveLength(1000);
  });

  it('reads a 10 MB field (default limit 16 MiB)', async () => {
    const big = 'é'.repeat(5 * 1024 * 1024); // 10 MiB of UTF-8
    const batches = await batchesOf(`a,"${big}",c\nd,e,f\n`, { minChunkBytes: undefined }, 64 * 1024);
    const r = merge(batches);
    expect(r.errors).toEqual([]);
    expect(r.rows).toHaveLength(2);
    expect(r.rows[0][1]?.length).toBe(big.length);
    expect(r.rows[0][1] === big).toBe(true);
  });

  it('makes a row with invalid UTF-8 an error and keeps the other rows', async () => {
    const data = Buffer.concat([
      Buffer.from('id,name\n1,Zoë\n2,'),
      Buffer.from([0x62, 0xff, 0x61]),
      Buffer.from('d\n3,ok\n4,€\n'),
    ]);
    const r = await read(data, { header: true });
    expect(r.rows).toEqual([
      ['1', 'Zoë'],
      ['3', 'ok'],
      ['4', '€'],
    ]);
    expect(r.errors).toEqual([{ line: 3, reason: 'invalid UTF-8 at byte offset 18', raw: '2,b\uFFFDad' }]);
  });

  it('reports a multi-byte character cut off at the end of the file', async () => {
    const r = await read(Buffer.concat([Buffer.from('a,b\nc,d'), Buffer.from([0xe2, 0x82])]));
    expect(r.rows).toEqual([['a', 'b']]);
    expect(r.errors.map((e) => e.reason)).toEqual(['invalid UTF-8 at byte offset 7']);
  });

  it('decodes multi-byte characters split across chunks', async () => {
    const text = 'ü,€,𝄞\n日本,"語,😀",x\n';
    expect((await read(text)).rows).toEqual([
      ['ü', '€', '𝄞'],
      ['日本', '語,😀', 'x'],
    ]);
    for (const size of [2, 5]) expect(merge(await batchesOf(text, {}, size)).rows[1][1]).toBe('語,😀');
  });

  it('strips a UTF-8 BOM at the start of the file, even split across chunks', async () => {
    const r = await read('\uFEFFa,b\n1,2\n', { header: true });
    expect(r.header).toEqual(['a', 'b']);
    expect(r.rows).toEqual([['1', '2']]);
  });

  it('decodes latin1', async () => {
    const r = await read(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2c, 0xff, 0x0a]), { encoding: 'latin1' });
    expect(r.rows).toEqual([['café', 'ÿ']]);
  });

  it('makes a row with a NUL byte an error', async () => {
    const r = await read('a,b\n1,x\0y\n2,z\n');
    expect(r.rows).toEqual([
      ['a', 'b'],
      ['2', 'z'],
    ]);
    expect(r.errors).toEqual([{ line: 2, reason: 'NUL byte in field 2', raw: '1,x\uFFFDy' }]);
  });

  it('reads 5,000 columns and refuses more than maxColumns', async () => {
    const header = Array.from({ length: 5000 }, (_, i) => `c${i}`).join(',');
    const row = Array.from({ length: 5000 }, (_, i) => String(i)).join(',');
    const batches = await batchesOf(`${header}\n${row}\n`, { header: true, minChunkBytes: undefined }, 4096);
    expect(batches[0].header).toHaveLength(5000);
    expect(batches[0].rows[0][4999]).toBe('4999');
    expect((await fatal('a,b,c\n', { header: true, maxColumns: 2 })).message).toBe(
      'the header has 3 columns, more than the limit of 2',
    );
    expect((await fatal('a,b,c\n', { maxColumns: 2 })).message).toBe(
      'the first record has 3 fields, more than the limit of 2',
    );
  });

  it('cuts batches of batchRows records, counting errors', async () => {
    const lines = Array.from({ length: 7 }, (_, i) => (i === 3 ? 'bad' : `${i},x`)).join('\n');
    const batches = await batchesOf(lines, { batchRows: 3 }, 5);
    expect(batches.map((b) => b.rows.length + b.errors.length)).toEqual([3, 3, 1]);
    expect(batches[1].errors).toHaveLength(1);
  });

  it('truncates RowError.raw to 1,000 characters', async () => {
    const r = await read(`a,b\n${'z'.repeat(3000)}\n`);
    expect(r.errors[0].raw).toBe('z'.repeat(1000));
  });

  it('refuses invalid options', async () => {
    expect((await fatal('a\n', { delimiter: ';;' })).message).toMatch(
      /delimiter must be a single ASCII character/,
    );
    expect((await fatal('a\n', { delimiter: '"' })).message).toMatch(/must differ/);
  });

  it('round-trips random records at random chunk sizes (seeded)', async () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ['a', 'b', ' ', ',', '"', '\n', '\r', '\r\n', 'é', '€', '😀', '\\', ';', '\t'];
    for (let round = 0; round < 40; round++) {
      const width = 2 + rand(4);
      const records = Array.from({ length: 1 + rand(20) }, () =>
        Array.from({ length: width }, () =>
          Array.from({ length: rand(8) }, () => alphabet[rand(alphabet.length)]).join(''),
        ),
      );
      const eol = ['\n', '\r\n', '\r'][rand(3)];
      const backslash = rand(2) === 1;
      const quoteField = (f: string) =>
        backslash ? `"${f.replace(/[\\"]/g, (c) => `\\${c}`)}"` : `"${f.replace(/"/g, '""')}"`;
      const serialized = records.map((r) =>
        r.map((f) => (/[",\r\n\\]/.test(f) || f === '' ? quoteField(f) : f)).join(','),
      );
      const text = serialized.join(eol) + (rand(2) ? eol : '');
      const lines: number[] = [];
      let line = 1;
      for (const rec of serialized) {
        lines.push(line);
        line += (rec.match(/\r\n|\r|\n/g) ?? []).length + 1;
      }
      const bytes = Buffer.from(text);
      const size = 1 + rand(17);
      const opts = { batchRows: 1 + rand(5), escape: backslash ? '\\' : null };
      const r = merge(await batchesOf(bytes, opts, size));
      expect(r.errors).toEqual([]);
      expect(r.rows).toEqual(records);
      expect(r.lines).toEqual(lines);
    }
  });

  it('gives the same rows and errors at any chunk size for malformed input (seeded)', async () => {
    let seed = 99;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = [
      [0x61],
      [0x2c],
      [0x22],
      [0x0a],
      [0x0d],
      [0x00],
      [0xff],
      [0xc3, 0xa9],
      [0xe2, 0x82],
      [0x5c],
      [0x20],
    ];
    for (let round = 0; round < 150; round++) {
      const bytes = Buffer.from(Array.from({ length: rand(120) }, () => pieces[rand(pieces.length)]).flat());
      const opts: Partial<CsvReadOptions> = {
        header: rand(2) === 1,
        escape: rand(2) ? '\\' : null,
        maxFieldBytes: rand(2) ? 5 : undefined,
        batchRows: 1 + rand(4),
      };
      let whole: Read | string;
      try {
        whole = merge(await batchesOf(bytes, opts, 1 << 30));
      } catch (err) {
        whole = (err as Error).message;
      }
      for (const size of [1, 2, 7]) {
        let got: Read | string;
        try {
          got = merge(await batchesOf(bytes, opts, size));
        } catch (err) {
          got = (err as Error).message;
        }
        expect(got).toEqual(whole);
      }
    }
  });

  // What the throughput runs (now `npm run bench:csv`) also checked: every row of a multi-buffer file
  // with quoted delimiters and non-ASCII text cut between buffers, at the production buffer size.
  it('reads every row of mixed CSV fed in 64 KiB buffers, non-ASCII names cut between them', async () => {
    const names = ['Jonathan Smith', 'Zoë Müller', 'Ann Lee', 'Jürgen Groß'];
    const lines = ['id,created_at,name,email,amount,active,note,code\n'];
    for (let i = 0; i < 8000; i++) {
      lines.push(
        `${i},2024-03-${String((i % 28) + 1).padStart(2, '0')} 12:${String(i % 60).padStart(2, '0')}:56,` +
          `${names[i % names.length]},user${i}@example.com,${(i * 1.37).toFixed(2)},${i % 2 ? 'true' : 'false'},` +
          `"Note ${i}, with a comma",ABC-${i % 1000}\n`,
      );
    }
    const data = Buffer.from(lines.join(''));
    const rows: (string | null)[][] = [];
    for await (const batch of readCsv(chunked(data, 64 * 1024), { ...BASE, header: true })) {
      expect(batch.errors).toEqual([]);
      rows.push(...batch.rows);
    }
    expect(data.length).toBeGreaterThan(10 * 64 * 1024);
    expect(rows).toHaveLength(8000);
    expect(rows[7999]).toEqual([
      '7999',
      '2024-03-20 12:19:56',
      'Jürgen Groß',
      'user7999@example.com',
      (7999 * 1.37).toFixed(2),
      'true',
      'Note 7999, with a comma',
      'ABC-999',
    ]);
  });
});
