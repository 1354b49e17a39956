import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParquetReader } from '@dsnp/parquetjs';
import type { SchemaField } from '@tapyard/model';
import { openRowWriter } from './file-writers';
import { decimalBytes, decimalFromBytes } from './parquet-decimal';

/** Parquet physical types and converted types (parquet.thrift). */
const TYPE = { BOOLEAN: 0, INT32: 1, INT64: 2, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 };
const CONVERTED = { UTF8: 0, DECIMAL: 5, DATE: 6, TIMESTAMP_MILLIS: 9 };

describe('Parquet row files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tapyard-parquet-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const columns: SchemaField[] = [
    { name: 'ok', type: 'boolean' },
    { name: 'n', type: 'int' },
    { name: 'big', type: 'bigint' },
    { name: 'f', type: 'float' },
    { name: 'd', type: 'double' },
    { name: 's', type: 'string' },
    { name: 'day', type: 'date' },
    { name: 'at', type: 'timestamp' },
    { name: 'price', type: 'decimal', precision: 12, scale: 2 },
    { name: 'wide', type: 'decimal' },
  ];
  const money = (text: string, precision: number, scale: number) =>
    decimalBytes(text, { precision, scale }) as Buffer;

  it('types every column, keeps INT64 and DECIMAL to the digit, and reads back what it wrote', async () => {
    const path = join(dir, 'all.parquet');
    const writer = await openRowWriter('parquet', path, columns);
    const widest = `-${'9'.repeat(29)}.${'9'.repeat(9)}`;
    // More rows than one row group (10,000): a file spans several groups.
    const rows = 25_001;
    for (let i = 0; i < rows; i++) {
      await writer.write([
        i % 2 === 0,
        i,
        i === 0 ? 9007199254740993n : i === 1 ? -9223372036854775808n : i,
        i === 2 ? null : 0.5,
        i / 4,
        `row ${i}`,
        new Date(Date.UTC(2026, 0, 1 + (i % 365))),
        new Date(Date.UTC(2026, 10, 27, 9, 30, 0, i % 1000)),
        money(i === 3 ? '-0.01' : `${i}.25`, 12, 2),
        i === 4 ? money(widest, 38, 9) : null,
      ]);
    }
    await writer.close();

    const reader = await ParquetReader.openFile(path);
    const schema = reader.metadata?.schema ?? [];
    const element = (name: string) => schema.find((e) => e.name === name);
    expect(element('ok')).toMatchObject({ type: TYPE.BOOLEAN });
    expect(element('n')).toMatchObject({ type: TYPE.INT32 });
    expect(element('big')).toMatchObject({ type: TYPE.INT64 });
    expect(element('f')).toMatchObject({ type: TYPE.FLOAT });
    expect(element('d')).toMatchObject({ type: TYPE.DOUBLE });
    expect(element('s')).toMatchObject({ type: TYPE.BYTE_ARRAY, converted_type: CONVERTED.UTF8 });
    expect(element('day')).toMatchObject({ type: TYPE.INT32, converted_type: CONVERTED.DATE });
    expect(element('at')).toMatchObject({ type: TYPE.INT64, converted_type: CONVERTED.TIMESTAMP_MILLIS });
    expect(element('price')).toMatchObject({
      type: TYPE.FIXED_LEN_BYTE_ARRAY,
      type_length: 6,
      converted_type: CONVERTED.DECIMAL,
      precision: 12,
      scale: 2,
    });
    expect(element('wide')).toMatchObject({ type_length: 16, precision: 38, scale: 9 });
    expect(reader.metadata?.row_groups).toHaveLength(3);

    const cursor = reader.getCursor();
    const back: Record<string, unknown>[] = [];
    for (let r = await cursor.next(); r; r = await cursor.next()) back.push(r as Record<string, unknown>);
    await reader.close();
    expect(back).toHaveLength(rows);
    expect(back[0]).toMatchObject({ ok: true, n: 0, big: 9007199254740993n, f: 0.5, d: 0, s: 'row 0' });
    expect(back[0].day).toEqual(new Date('2026-01-01T00:00:00Z'));
    expect(back[0].at).toEqual(new Date('2026-11-27T09:30:00.000Z'));
    expect(back[1].big).toBe(-9223372036854775808n);
    expect(back[2].f ?? null).toBeNull();
    expect(decimalFromBytes(back[3].price as Buffer, 2)).toBe('-0.01');
    expect(decimalFromBytes(back[4].wide as Buffer, 9)).toBe(widest);
    expect(back[5].wide ?? null).toBeNull();
    expect(decimalFromBytes(back[rows - 1].price as Buffer, 2)).toBe(`${rows - 1}.25`);
  });
});
