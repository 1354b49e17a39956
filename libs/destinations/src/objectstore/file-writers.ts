import { createWriteStream, WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { FieldDefinition, ParquetType } from '@dsnp/parquetjs';
import { FieldType, ObjectFormat, SchemaField } from '@tapyard/model';
import { decimalWidth, fixedDecimal } from './parquet-decimal';

/**
 * Writes rows (typed values, null for missing) to one local file in a format. In Parquet, a
 * decimal's value is its unscaled integer in the column's fixed width (parquet-decimal.ts,
 * decimalBytes) and a bigint an exact INT64 (number or BigInt).
 */
export interface RowFileWriter {
  write(row: unknown[]): Promise<void>;
  close(): Promise<void>;
}

const PARQUET_TYPES: Record<FieldType, ParquetType> = {
  boolean: 'BOOLEAN',
  int: 'INT32',
  bigint: 'INT64',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'UTF8',
  date: 'DATE',
  timestamp: 'TIMESTAMP_MILLIS',
  decimal: 'DECIMAL',
};

/**
 * A decimal is a FIXED_LEN_BYTE_ARRAY of the width its precision needs, whatever the precision: the
 * library's INT64 decimals go through doubles. Its min/max statistics would compare the bytes
 * unsigned: none rather than wrong ones.
 */
function parquetField(c: SchemaField): FieldDefinition {
  if (c.type !== 'decimal') return { type: PARQUET_TYPES[c.type], optional: true };
  const d = fixedDecimal(c);
  return {
    type: 'DECIMAL',
    optional: true,
    precision: d.precision,
    scale: d.scale,
    typeLength: decimalWidth(d),
    statistics: false,
  };
}

/** Rows per Parquet row group: the writer holds one group in memory, whatever the file size. */
const ROW_GROUP = 10_000;

export async function openRowWriter(
  format: ObjectFormat,
  path: string,
  columns: SchemaField[],
): Promise<RowFileWriter> {
  if (format === 'parquet') {
    // Loaded by the first Parquet file written: a process that writes none never pays for it.
    const { ParquetSchema, ParquetWriter } = await import('@dsnp/parquetjs');
    const schema = new ParquetSchema(Object.fromEntries(columns.map((c) => [c.name, parquetField(c)])));
    const writer = await ParquetWriter.openFile(schema, path, { rowGroupSize: ROW_GROUP, mode: 0o600 });
    return {
      write: (row) => {
        const record: Record<string, unknown> = {};
        columns.forEach((c, i) => {
          if (row[i] !== null) record[c.name] = row[i];
        });
        return writer.appendRow(record);
      },
      close: () => writer.close(),
    };
  }
  const out = localFile(path);
  const line =
    format === 'csv'
      ? (row: unknown[]) => row.map(csvCell).join(',') + '\n'
      : (row: unknown[]) =>
          JSON.stringify(Object.fromEntries(columns.map((c, i) => [c.name, jsonValue(row[i])]))) + '\n';
  if (format === 'csv') await write(out, columns.map((c) => csvCell(c.name)).join(',') + '\n');
  return {
    write: (row) => write(out, line(row)),
    close: () => endFile(out),
  };
}

/**
 * A local work file whose failures (a full disk) reach the writer through `writeLine`/`endFile`
 * instead of an unhandled `'error'` event.
 */
export function localFile(path: string): WriteStream {
  const out = createWriteStream(path, { mode: 0o600 });
  out.on('error', () => undefined);
  return out;
}

/** Writes, waiting for the stream to drain; a failed stream rejects instead of waiting forever. */
export async function write(out: WriteStream, text: string): Promise<void> {
  if (out.errored) throw out.errored;
  if (!out.write(text)) await once(out, 'drain');
}

export async function endFile(out: WriteStream): Promise<void> {
  if (out.errored) throw out.errored;
  out.end();
  await once(out, 'close');
  if (out.errored) throw out.errored;
}

/** RFC 4180: quoted when it holds a comma, quote or line break; null is an empty cell. */
function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = v instanceof Date ? v.toISOString() : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function jsonValue(v: unknown): unknown {
  // JSON has no BigInt; a string keeps every digit.
  return typeof v === 'bigint' ? v.toString() : v;
}
