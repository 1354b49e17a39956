import { chunked, thrown } from '../../../test/support/byte-streams';
import { JSON_SHAPE_ERROR, JsonReadOptions, readJson } from './json-reader';
import { FatalReadError, RecordBatch, RowError } from './record-batch';

async function batchesOf(data: string | Buffer, opts: JsonReadOptions = {}, size = 1) {
  const out: RecordBatch[] = [];
  for await (const b of readJson(chunked(data, size), { minChunkBytes: 1, ...opts })) out.push(b);
  return out;
}

interface Read {
  rows: string[];
  lines: number[];
  errors: RowError[];
}

function merge(batches: RecordBatch[]): Read {
  return {
    rows: batches.flatMap((b) => b.rows.map((r) => r[0] ?? '')),
    lines: batches.flatMap((b) => b.lines),
    errors: batches.flatMap((b) => b.errors),
  };
}

/** Reads with 1-byte, 5-byte and whole-input chunks and checks that all three agree. */
async function read(data: string | Buffer, opts: JsonReadOptions = {}): Promise<Read> {
  const whole = merge(await batchesOf(data, opts, 1 << 30));
  expect(merge(await batchesOf(data, opts, 1))).toEqual(whole);
  expect(merge(await batchesOf(data, opts, 5))).toEqual(whole);
  return whole;
}

function fatal(data: string | Buffer, opts: JsonReadOptions = {}): Promise<FatalReadError> {
  return thrown(() => batchesOf(data, opts), FatalReadError);
}

describe('readJson', () => {
  it('streams an array of records, normalising each with JSON.stringify', async () => {
    const r = await read(
      '[\n  {"a": 1, "s": "x\\"y,]}"},\n  {"b": [1, {"c": null}]} ,\n  "text", 3.5, true\n]\n',
    );
    expect(r.rows).toEqual(['{"a":1,"s":"x\\"y,]}"}', '{"b":[1,{"c":null}]}', '"text"', '3.5', 'true']);
    expect(r.lines).toEqual([2, 3, 4, 4, 4]);
    expect(r.errors).toEqual([]);
  });

  it('keeps the original text of a record with a number JSON.parse would round', async () => {
    const r = await read(
      '[{"id": 12345678901234567890, "x": 1}, {"d": 0.12345678901234567}, {"e": 1.5e300}]',
    );
    expect(r.rows).toEqual([
      '{"id": 12345678901234567890, "x": 1}',
      '{"d": 0.12345678901234567}',
      '{"e":1.5e+300}',
    ]);
  });

  it('decodes multi-byte characters and escapes split across chunks', async () => {
    const r = await read('[{"n":"Zoë €😀","u":"\\u00e9\\\\"}]');
    expect(r.rows.map((t) => JSON.parse(t) as unknown)).toEqual([{ n: 'Zoë €😀', u: 'é\\' }]);
  });

  it('strips a BOM', async () => {
    expect((await read('\uFEFF[{"a":1}]')).rows).toEqual(['{"a":1}']);
  });

  it('fails a malformed array at its byte offset, loading nothing of it', async () => {
    expect((await fatal('[{"a":1},\n{"a": tru},\n{"a":3}]')).message).toBe(
      "the JSON array is not well-formed at byte offset 19 (line 2): '}' in 'true'",
    );
    expect((await fatal('[{"a":1},\n{"b":2},\n{"c": [1, 2')).message).toBe(
      "the JSON array is not well-formed at byte offset 30 (line 3): the input ends before the JSON is complete (expected ',' or ']')",
    );
    expect((await fatal('[{"a":1},')).message).toMatch(
      /ends before the JSON is complete \(expected a value\)/,
    );
  });

  it('ends with an error on a control byte outside a string (it used to spin forever)', async () => {
    for (const bad of ['[\u0000]', '[\f]', '[1,\u0000]', '{"a":\u0001}', '[\u000b1]']) {
      expect((await fatal(bad)).message).toMatch(
        /is not well-formed at byte offset \d+ \(line 1\): .*byte 0x0/,
      );
    }
    expect((await read('\u0000\n{"a":1}\n', { lines: true })).errors[0].reason).toMatch(
      /^line 1 is not valid JSON: /,
    );
  });

  it('never loads values a malformed array or document does not hold', async () => {
    const cases: [string, RegExp][] = [
      ['["",]', /byte offset 4 \(line 1\): expected a value, found '\]'/],
      ['[1,]', /byte offset 3 \(line 1\): expected a value, found '\]'/],
      ['[1,,2]', /byte offset 3 \(line 1\): expected a value, found ','/],
      ['[,1]', /byte offset 1 \(line 1\): expected a value or '\]', found ','/],
      ['[1 2]', /byte offset 3 \(line 1\): expected ',' or '\]', found '2'/],
      ['[{"a":1}', /byte offset 8 \(line 1\): the input ends before the JSON is complete/],
      ['[1]]', /^unexpected data after the end of the JSON array at byte offset 3/],
      ['{\n"a":"b"}#', /^unexpected data after the end of the JSON document at byte offset 10 \(line 2\)/],
      ['{\n"a": true} "x"', /^unexpected data after the end of the JSON document at byte offset 13/],
      ['[{"a":1}, {"a":2]]', /byte offset 16 \(line 1\): expected ',' or '}', found '\]'/],
      ['["\\x"]', /'x' after a backslash/],
      ['["\\u12G4"]', /'G' in a \\u escape/],
      ['[01]', /a number with a leading zero/],
      ['[1.]', /'\]' in a number/],
      ['[-]', /'\]' after '-'/],
      ['[tru]', /'\]' in 'true'/],
    ];
    for (const [text, pattern] of cases) expect((await fatal(text)).message).toMatch(pattern);
  });

  it('JSON Lines: a line holding two values, or none complete, is rejected; nothing else is invented', async () => {
    const r = await read('{"a": true} "x"\n{"b":1}\n{"c":2}#\n');
    expect(r.rows).toEqual(['{"b":1}']);
    expect(r.errors.map((e) => [e.line, e.reason])).toEqual([
      [1, "line 1 holds more than one JSON value ('\"' after the end of the JSON value)"],
      [3, "line 3 holds more than one JSON value ('#' after the end of the JSON value)"],
    ]);
    expect(r.errors.map((e) => e.raw)).toEqual(['{"a": true} "', '{"c":2}#']);
  });

  it('reads a .jsonl file as JSON Lines from its first line, scalars and arrays included', async () => {
    const r = await read('[1,2]\n"x"\n{"a": tru}\n\n7\n', { lines: true });
    expect(r.rows).toEqual(['[1,2]', '"x"', '7']);
    expect(r.lines).toEqual([1, 2, 5]);
    expect(r.errors.map((e) => [e.line, e.raw])).toEqual([[3, '{"a": tru}']]);
    expect((await fatal('\n \n', { lines: true })).message).toBe('the file is empty');
  });

  it('fails on data after the end of a top-level array, hinting at JSON Lines', async () => {
    const err = await fatal('[{"a":1}]\n[{"b":2}]');
    expect(err.message).toMatch(
      /^unexpected data after the end of the JSON array at byte offset 10 \(line 2\): '\[' after the end of the JSON value; .*\.jsonl or \.ndjson/,
    );
    expect(err.line).toBe(2);
  });

  it('reads NDJSON: a bad line is a row error and the rest continues', async () => {
    const r = await read('{"a":1}\n{"a": 2\n\n{"a":3}\r\n[1,2]\n{"a":4}');
    expect(r.rows).toEqual(['{"a":1}', '{"a":3}', '[1,2]', '{"a":4}']);
    expect(r.lines).toEqual([1, 4, 5, 6]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].line).toBe(2);
    expect(r.errors[0].reason).toMatch(/^line 2 is not valid JSON: /);
    expect(r.errors[0].raw).toBe('{"a": 2');
  });

  it('keeps NDJSON lines apart even when one holds an unterminated string', async () => {
    const r = await read('{"a":1}\n{"a":"open}\n{"a":3}\n');
    expect(r.rows).toEqual(['{"a":1}', '{"a":3}']);
    expect(r.errors.map((e) => e.line)).toEqual([2]);
  });

  it('reads a single (pretty-printed) object document as one record', async () => {
    const r = await read('{\n  "name": "x",\n  "items": [1, 2]\n}\n');
    expect(r.rows).toEqual(['{"name":"x","items":[1,2]}']);
    expect(r.lines).toEqual([1]);
  });

  it('streams the array at recordPath and skips the rest of the document', async () => {
    const doc = JSON.stringify(
      {
        meta: { items: 'not this', list: [{ data: { items: [] } }], 'a\\"b': '{[' },
        data: { count: 2, items: [{ id: 1 }, { id: 2, tags: ['x'] }], more: true },
        tail: [1, 2, 3],
      },
      null,
      2,
    );
    const r = await read(doc, { recordPath: 'data.items' });
    expect(r.rows).toEqual(['{"id":1}', '{"id":2,"tags":["x"]}']);
    expect(r.lines).toEqual([16, 19]);
  });

  it('checks the rest of the document after the array at recordPath', async () => {
    const r = await read('{"items": [{"a":1}], "rest": [1, {"x": null}]}', { recordPath: 'items' });
    expect(r).toEqual({ rows: ['{"a":1}'], lines: [1], errors: [] });
    expect(
      (await fatal('{"items": [{"a":1}], "rest": [ this is not JSON', { recordPath: 'items' })).message,
    ).toMatch(/^the JSON document is not well-formed at byte offset 32 \(line 1\): 'h' in 'true'/);
  });

  it('refuses a recordPath that is missing or not an array', async () => {
    expect((await fatal('{"data": {"items": {"a": 1}}}', { recordPath: 'data.items' })).message).toBe(
      "the value at 'data.items' (recordPath 'data.items') is not an array",
    );
    expect((await fatal('{"data": 5}', { recordPath: 'data.items' })).message).toBe(
      "the value at 'data' (recordPath 'data.items') is not an object",
    );
    expect((await fatal('{"data": {"other": []}}', { recordPath: 'data.items' })).message).toMatch(
      /^no array was found at recordPath 'data.items'/,
    );
    expect((await fatal('{"data": {"other": 1', { recordPath: 'data.items' })).message).toMatch(
      /ends before the JSON is complete/,
    );
    expect((await fatal('[{"a":1}]', { recordPath: 'data' })).message).toMatch(
      /needs a JSON object at the top level/,
    );
  });

  it('refuses a scalar or garbage at the top level, and an empty file', async () => {
    expect((await fatal('42')).message).toBe(JSON_SHAPE_ERROR);
    expect((await fatal('  "text"')).message).toBe(JSON_SHAPE_ERROR);
    expect((await fatal('hello,world\n1,2')).message).toBe(JSON_SHAPE_ERROR);
    expect((await fatal('')).message).toBe('the file is empty');
    expect((await fatal(' \n ')).message).toBe('the file is empty');
  });

  it('makes a record nested deeper than maxDepth an error without parsing it (100,000 levels)', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const batches = await batchesOf(`[{"a":1},\n${deep},\n{"b":2}]`, { minChunkBytes: undefined }, 64 * 1024);
    const r = merge(batches);
    expect(r.rows).toEqual(['{"a":1}', '{"b":2}']);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ line: 2, reason: 'nesting deeper than 64 levels' });
    expect(r.errors[0].raw).toBe('['.repeat(1000));
    await expect(batchesOf(`[${'['.repeat(100_000)}`, {}, 64 * 1024)).rejects.toThrow(
      /ends before the JSON is complete/,
    );
    const ndjson = merge(await batchesOf(`{"a":1}\n${'{"a":'.repeat(100_000)}\n{"b":2}\n`, {}, 64 * 1024));
    expect(ndjson.rows).toEqual(['{"a":1}', '{"b":2}']);
    expect(ndjson.errors.map((e) => e.reason)).toEqual([
      'line 2 is not valid JSON: a line break before the value is complete (a JSON Lines record must fit on one line)',
    ]);
  });

  it('accepts exactly maxDepth levels', async () => {
    const ok = '['.repeat(3) + ']'.repeat(3);
    expect((await read(`[${ok}]`, { maxDepth: 3 })).rows).toEqual(['[[[]]]']);
    expect((await read(`[[${ok}]]`, { maxDepth: 3 })).errors.map((e) => e.reason)).toEqual([
      'nesting deeper than 3 levels',
    ]);
  });

  it('makes a record over maxRecordBytes an error', async () => {
    const r = await read(`[{"a":"${'x'.repeat(100)}"}, {"b":1}]`, { maxRecordBytes: 50 });
    expect(r.rows).toEqual(['{"b":1}']);
    expect(r.errors.map((e) => e.reason)).toEqual(['record exceeds 50 bytes']);
    expect(r.errors[0].raw.startsWith('{"a":"xxx')).toBe(true);
  });

  it('makes a record with invalid UTF-8 an error', async () => {
    const data = Buffer.concat([
      Buffer.from('{"a":"ok"}\n{"a":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}\n{"a":1}\n'),
    ]);
    const r = await read(data);
    expect(r.rows).toEqual(['{"a":"ok"}', '{"a":1}']);
    expect(r.errors.map((e) => [e.line, e.reason])).toEqual([[2, 'invalid UTF-8 at byte offset 17']]);
  });

  it('cuts batches of batchRows records', async () => {
    const text = `[${Array.from({ length: 7 }, (_, i) => `{"i":${i}}`).join(',')}]`;
    const batches = await batchesOf(text, { batchRows: 3 }, 4);
    expect(batches.map((b) => b.rows.length)).toEqual([3, 3, 1]);
  });

  it('round-trips random values as arrays, NDJSON and recordPath documents at random chunk sizes (seeded)', async () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = ['a', '"', '\\', '[', ']', '{', '}', ',', ':', ' ', 'é', '😀', '\n', '\u0001'];
    const value = (depth: number): unknown => {
      switch (rand(depth > 3 ? 4 : 6)) {
        case 0:
          return rand(1000) - 500;
        case 1:
          return Array.from({ length: rand(4) }, () => pieces[rand(pieces.length)]).join('');
        case 2:
          return [true, false, null][rand(3)];
        case 3:
          return rand(1000) / 8;
        case 4:
          return Array.from({ length: rand(4) }, () => value(depth + 1));
        default:
          return Object.fromEntries(
            Array.from({ length: rand(4) }, (_, i) => [
              `k${i}${pieces[rand(pieces.length)]}`,
              value(depth + 1),
            ]),
          );
      }
    };
    for (let round = 0; round < 60; round++) {
      const records = Array.from({ length: 1 + rand(8) }, () => ({ id: rand(100), v: value(0) }));
      const expected = records.map((r) => JSON.stringify(r));
      const pretty = rand(2) === 1 ? 2 : undefined;
      const shape = rand(3);
      const text =
        shape === 0
          ? JSON.stringify(records, null, pretty)
          : shape === 1
            ? expected.join(rand(2) ? '\n' : '\r\n')
            : JSON.stringify({ before: value(0), data: { items: records }, after: value(0) }, null, pretty);
      const opts = shape === 2 ? { recordPath: 'data.items' } : {};
      const r = merge(await batchesOf(text, { ...opts, batchRows: 1 + rand(4) }, 1 + rand(13)));
      expect(r.errors).toEqual([]);
      expect(r.rows).toEqual(expected);
    }
  });

  it('gives the same rows and errors at any chunk size for malformed input (seeded)', async () => {
    let seed = 5;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = [
      '{',
      '}',
      '[',
      ']',
      '"',
      '\\',
      ',',
      ':',
      '\n',
      ' ',
      '1',
      'a',
      'true',
      '"items"',
      'é',
      '\uFFFD',
    ];
    const starts = ['[', '{', '{"items":[', '{"a":1}\n'];
    for (let round = 0; round < 200; round++) {
      const text =
        starts[rand(starts.length)] +
        Array.from({ length: rand(60) }, () => pieces[rand(pieces.length)]).join('');
      const bytes = Buffer.concat([Buffer.from(text), Buffer.from(rand(4) === 0 ? [0xff] : [])]);
      const opts: JsonReadOptions = {
        recordPath: rand(3) === 0 ? 'items' : null,
        maxDepth: 1 + rand(4),
        maxRecordBytes: rand(2) ? 8 : undefined,
        batchRows: 1 + rand(3),
      };
      const run = async (size: number): Promise<Read | string> => {
        try {
          return merge(await batchesOf(bytes, opts, size));
        } catch (err) {
          return (err as Error).message;
        }
      };
      const whole = await run(1 << 30);
      for (const size of [1, 2, 7]) expect(await run(size)).toEqual(whole);
    }
  });
});
