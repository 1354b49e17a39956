import { FieldType, SchemaField } from '@tapyard/model';
import { columnCells, columnCount, columnNames } from './table';
import { FLOAT_SIGNIFICANT_DIGITS, ValueKind, classifyValue, significantDigits } from './values';

export interface InferSchemaOptions {
  /** Skip inference and type every column as 'string' (a raw landing table). */
  allStrings?: boolean;
}

const NUMERIC_KINDS: ReadonlySet<ValueKind> = new Set(['int', 'bigint', 'float', 'double']);
const TEMPORAL_KINDS: ReadonlySet<ValueKind> = new Set(['date', 'timestamp']);

/** Every non-null kind seen, plus whether an integer has more digits than a float keeps. */
interface KindTally {
  kinds: Set<ValueKind>;
  wideInteger: boolean;
}

function tally(values: string[]): KindTally {
  const kinds = new Set<ValueKind>();
  let wideInteger = false;
  for (const value of values) {
    const kind = classifyValue(value);
    if (kind === 'null') continue;
    kinds.add(kind);
    if (kind === 'int' && significantDigits(value) > FLOAT_SIGNIFICANT_DIGITS) wideInteger = true;
  }
  return { kinds, wideInteger };
}

function allIn(kinds: Set<ValueKind>, allowed: ReadonlySet<ValueKind>): boolean {
  return [...kinds].every((kind) => allowed.has(kind));
}

/**
 * Integers mixed with decimals widen to a floating type; float only while every value, integers
 * included, fits float32's precision (a bigint never does, so it forces double).
 */
function numericType({ kinds, wideInteger }: KindTally): FieldType {
  if (!kinds.has('float') && !kinds.has('double')) return kinds.has('bigint') ? 'bigint' : 'int';
  return kinds.has('double') || kinds.has('bigint') || wideInteger ? 'double' : 'float';
}

/**
 * The most specific type every non-null value fits. Nulls (empty, whitespace, NULL/NA/N/A/\N) are
 * ignored; a column with no values is 'string', the type that accepts whatever arrives later.
 */
export function inferFieldType(values: string[]): FieldType {
  const counted = tally(values);
  const { kinds } = counted;
  if (kinds.size === 0 || kinds.has('string')) return 'string';
  if (kinds.size === 1 && kinds.has('boolean')) return 'boolean';
  if (allIn(kinds, NUMERIC_KINDS)) return numericType(counted);
  if (allIn(kinds, TEMPORAL_KINDS)) return kinds.has('timestamp') ? 'timestamp' : 'date';
  return 'string';
}

/**
 * One field per column: names from the header (normalised and unique), types from the rows. The
 * table is as wide as its longest row; columns past the header are named `column_<n>`.
 */
export function inferSchema(
  header: string[],
  rows: string[][],
  opts: InferSchemaOptions = {},
): SchemaField[] {
  const names = columnNames(header, columnCount(header, rows));
  return names.map((name, i) => ({
    name,
    type: opts.allStrings ? 'string' : inferFieldType(columnCells(rows, i)),
  }));
}
