/**
 * Parquet DECIMAL for parquetjs-lite, which has no such type: values are written as BYTE_ARRAY
 * (the unscaled integer, big-endian two's complement, any precision), and the column's
 * precision and scale, which its writer cannot set, are put into the footer once the file is
 * closed. Its reader then reads the column back as those bytes (see decimalFromBytes).
 */
import { open } from 'node:fs/promises';
import { ValidationError } from '@tapyard/core';
import type { SchemaField } from '@tapyard/model';
import { DestinationErrorCode } from '../destination-errors';

/** Precision and scale of a decimal column in a file or warehouse that needs both fixed. */
export interface FixedDecimal {
  precision: number;
  scale: number;
}

/**
 * A decimal without declared limits, where a fixed precision and scale are required (Parquet,
 * Snowflake, Databricks): 38 digits, the warehouses' maximum, 9 of them after the point.
 */
export const UNDECLARED_DECIMAL: FixedDecimal = { precision: 38, scale: 9 };

export function fixedDecimal(c: Pick<SchemaField, 'precision' | 'scale'>): FixedDecimal {
  if (c.precision === undefined) return UNDECLARED_DECIMAL;
  return { precision: c.precision, scale: c.scale ?? 0 };
}

/** The warehouses' own limit on a decimal's digits. */
const WAREHOUSE_MAX_PRECISION = 38;

/**
 * A decimal column's type in a warehouse loaded from Parquet (`NUMBER(p,s)`, `DECIMAL(p,s)`); one
 * declared wider than the warehouse holds is refused rather than loaded rounded.
 */
export function warehouseDecimal(c: SchemaField, warehouse: string, typeName: string): string {
  const d = fixedDecimal(c);
  if (d.precision > WAREHOUSE_MAX_PRECISION)
    throw new ValidationError(
      `${warehouse} holds decimals of at most ${WAREHOUSE_MAX_PRECISION} digits; column '${c.name}' is decimal(${d.precision},${d.scale})`,
    ).coded(DestinationErrorCode.LoadRefused);
  return `${typeName}(${d.precision},${d.scale})`;
}

/**
 * The unscaled integer of a canonical decimal text (see the model's coercer) as Parquet stores it,
 * or why it does not fit `d` exactly (never rounded).
 */
export function decimalBytes(text: string, d: FixedDecimal): Buffer | string {
  const neg = text.startsWith('-');
  const [int, frac = ''] = (neg ? text.slice(1) : text).split('.');
  if (frac.length > d.scale)
    return `${text} has more digits after the point than the scale ${d.scale} of decimal(${d.precision},${d.scale})`;
  const digits = (int + frac.padEnd(d.scale, '0')).replace(/^0+(?=\d)/, '');
  if (digits.length > d.precision && /[1-9]/.test(digits))
    return `${text} has more digits than decimal(${d.precision},${d.scale}) holds`;
  return twosComplement(neg ? -BigInt(digits) : BigInt(digits));
}

/** The fewest bytes whose two's complement holds `v`. */
function twosComplement(v: bigint): Buffer {
  let bits = 8n;
  while (v < -(1n << (bits - 1n)) || v >= 1n << (bits - 1n)) bits += 8n;
  const unsigned = v < 0n ? (1n << bits) + v : v;
  return Buffer.from(unsigned.toString(16).padStart(Number(bits / 4n), '0'), 'hex');
}

/** The decimal text of a Parquet DECIMAL value read back as bytes. */
export function decimalFromBytes(bytes: Buffer, scale: number): string {
  let v = bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
  if (bytes.length > 0 && bytes[0] & 0x80) v -= 1n << BigInt(bytes.length * 8);
  const neg = v < 0n;
  const digits = (neg ? -v : v).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg ? `-${text}` : text;
}

/** Makes parquetjs-lite's schema, writer and reader accept the type `DECIMAL` (bytes as they are). */
export async function registerParquetDecimal(): Promise<void> {
  const { PARQUET_LOGICAL_TYPES } = await import('parquetjs-lite/lib/types');
  PARQUET_LOGICAL_TYPES.DECIMAL ??= {
    primitiveType: 'BYTE_ARRAY',
    originalType: 'DECIMAL',
    toPrimitive: (v: unknown) => {
      if (!Buffer.isBuffer(v)) throw new Error('a Parquet DECIMAL value must be its unscaled bytes');
      return v;
    },
  };
}

/**
 * Sets precision and scale on the footer's schema elements of `decimals` (by column name): the
 * footer is rewritten after the data pages, whose offsets it keeps.
 */
export async function setDecimalFooter(path: string, decimals: Map<string, FixedDecimal>): Promise<void> {
  if (decimals.size === 0) return;
  const { FileMetaData } = await import('parquetjs-lite/gen-nodejs/parquet_types');
  const { decodeThrift, serializeThrift } = await import('parquetjs-lite/lib/util');
  const file = await open(path, 'r+');
  try {
    const size = (await file.stat()).size;
    const trailer = Buffer.alloc(8);
    await file.read(trailer, 0, 8, size - 8);
    if (trailer.subarray(4).toString() !== 'PAR1') throw new Error(`${path} is not a Parquet file`);
    const footerSize = trailer.readUInt32LE(0);
    const footerAt = size - 8 - footerSize;
    const footer = Buffer.alloc(footerSize);
    await file.read(footer, 0, footerSize, footerAt);
    const metadata = new FileMetaData();
    decodeThrift(metadata, footer);
    for (const element of metadata.schema) {
      const d = decimals.get(element.name);
      if (d === undefined) continue;
      element.precision = d.precision;
      element.scale = d.scale;
    }
    const encoded = serializeThrift(metadata);
    const tail = Buffer.alloc(8);
    tail.writeUInt32LE(encoded.length, 0);
    tail.write('PAR1', 4);
    await file.truncate(footerAt);
    await file.write(Buffer.concat([encoded, tail]), 0, encoded.length + 8, footerAt);
  } finally {
    await file.close();
  }
}
