import type { SchemaField, TypedBatch, Value } from '@tapyard/model';
import { JsonRowsPayload, encoderModule } from '../destination';
import { createEncoder, fieldText } from './json-rows';
import { jsonRowText } from '../sinks/json-rows';

const COLUMNS: SchemaField[] = [
  { name: 'id', type: 'bigint' },
  { name: 'label "quoted", too', type: 'string' },
  { name: 'amount', type: 'float' },
  { name: 'flag', type: 'boolean' },
  { name: 'day', type: 'date' },
];

function batch(rows: Value[][]): TypedBatch {
  return {
    columns: COLUMNS,
    values: COLUMNS.map((_, c) => rows.map((r) => r[c])),
    lines: rows.map((_, i) => i + 2),
  };
}

function texts(p: JsonRowsPayload): string[] {
  return Array.from(p.ends, (_, r) => jsonRowText(p, r));
}

describe('json-rows encoder', () => {
  it('is an encoder a sink can name (the stage thread requires it by name)', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(encoderModule('json-rows')) as { createEncoder: unknown };
    expect(typeof mod.createEncoder).toBe('function');
  });

  it('writes each row as JSON.stringify would, names in column order, with the lines', () => {
    const rows: Value[][] = [
      [1, 'a,b}{:"\\\n\u0000é😀', 0.37, true, '2026-03-01'],
      [null, null, null, null, null],
      [-5, '', -0, false, '1999-12-31'],
    ];
    const out = createEncoder(COLUMNS)(batch(rows)) as JsonRowsPayload;
    expect(out.kind).toBe('json-rows');
    expect([...out.lines]).toEqual([2, 3, 4]);
    texts(out).forEach((text, r) => {
      const expected = Object.fromEntries(COLUMNS.map((c, i) => [c.name, rows[r][i]]));
      expect(text).toBe(JSON.stringify(expected));
    });
  });

  it('keeps every digit of a bigint, as a JSON number', () => {
    const out = createEncoder(COLUMNS)(batch([[12345678901234567890n, 'x', 1.5, true, null]]));
    expect(texts(out)[0].startsWith('{"id":12345678901234567890,')).toBe(true);
  });

  it('writes a number JSON has no text for as null, as JSON.stringify does', () => {
    const out = createEncoder(COLUMNS)(batch([[1, 'x', Number.NaN, true, null]]));
    expect(JSON.parse(texts(out)[0]).amount).toBeNull();
  });

  it('finds each value of a written row by column, strings with commas, quotes and braces included', () => {
    const out = createEncoder(COLUMNS)(batch([[7n, 'a,"b"}:{\\', 2.5, false, null]]));
    expect([0, 1, 2, 3, 4].map((c) => fieldText(texts(out)[0], c))).toEqual([
      '7',
      JSON.stringify('a,"b"}:{\\'),
      '2.5',
      'false',
      'null',
    ]);
  });
});
