/**
 * Parquet DECIMAL: the unscaled integer as big-endian two's complement in a FIXED_LEN_BYTE_ARRAY
 * as wide as the column's precision needs (decimalWidth), exact at any precision; the writer puts
 * precision and scale in the footer's schema.
 */
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
  return twosComplement(neg ? -BigInt(digits) : BigInt(digits), decimalWidth(d));
}

/** Bytes of a FIXED_LEN_BYTE_ARRAY whose two's complement holds every value of `d.precision` digits. */
export function decimalWidth(d: FixedDecimal): number {
  const largest = 10n ** BigInt(d.precision) - 1n;
  let bytes = 1;
  while (largest >= 1n << BigInt(8 * bytes - 1)) bytes++;
  return bytes;
}

/** `v` in `bytes` bytes of two's complement (it fits: decimalBytes checked the digits). */
function twosComplement(v: bigint, bytes: number): Buffer {
  const bits = BigInt(8 * bytes);
  const unsigned = v < 0n ? (1n << bits) + v : v;
  return Buffer.from(unsigned.toString(16).padStart(bytes * 2, '0'), 'hex');
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
