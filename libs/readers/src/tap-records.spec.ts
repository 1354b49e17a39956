import { Readable } from 'node:stream';
import { readTapRecords } from './tap-records';

async function all(input: Readable, keys: string[], columns: string[], batchRows?: number) {
  const batches = [];
  for await (const b of readTapRecords(input, { keys, columns }, batchRows)) batches.push(b);
  return batches;
}

describe('readTapRecords', () => {
  it('maps each JSON line onto cells in key order, with the normalised header on the first batch', async () => {
    const text =
      '{"Order ID":1,"n%":2.5,"x":null}\n{"n%":true,"Order ID":"a","extra":1}\n{"x":{"k":[1]},"n%":""}\n';
    const [b] = await all(
      Readable.from([Buffer.from(text)]),
      ['Order ID', 'n%', 'x'],
      ['order_id', 'n_percent', 'x'],
    );
    expect(b.header).toEqual(['order_id', 'n_percent', 'x']);
    expect(b.rows).toEqual([
      ['1', '2.5', null],
      ['a', 'true', null],
      [null, '', '{"k":[1]}'],
    ]);
    expect(b.lines).toEqual([1, 2, 3]);
  });

  it('keeps multi-byte characters split across chunks and records split across chunks', async () => {
    const line = Buffer.from('{"name":"Zoë — 東京"}\n{"name":"ok"}');
    const chunks = Array.from(line, (byte) => Buffer.from([byte]));
    const batches = await all(Readable.from(chunks), ['name'], ['name']);
    expect(batches.flatMap((b) => b.rows)).toEqual([['Zoë — 東京'], ['ok']]);
  });

  it('reports a broken line as a row error and goes on', async () => {
    const [b] = await all(Readable.from([Buffer.from('{"a":1}\n{oops\n{"a":2}\n')]), ['a'], ['a']);
    expect(b.rows).toEqual([['1'], ['2']]);
    expect(b.errors).toEqual([{ line: 2, reason: 'record is not valid JSON', raw: '{oops' }]);
  });

  it('cuts batches', async () => {
    const text = Array.from({ length: 10 }, (_, i) => JSON.stringify({ i })).join('\n');
    const batches = await all(
      Readable.from([Buffer.from(text.slice(0, 30)), Buffer.from(text.slice(30))]),
      ['i'],
      ['i'],
      3,
    );
    expect(batches.flatMap((b) => b.rows).map((r) => r[0])).toEqual([
      '0',
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      '9',
    ]);
    expect(batches[0].header).toEqual(['i']);
  });
});
