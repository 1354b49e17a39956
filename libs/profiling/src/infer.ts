import { FieldType, SchemaField } from '@tapyard/model';
import { columnCells, columnCount, columnNames } from './table';
import { ValueKind, classifyValue, hasLeadingZeros, isNullValue } from './values';

export interface InferSchemaOptions {
  /** Skip inference and type every column as 'string' (a raw landing table). */
  allStrings?: boolean;
}

/** Why a column got its type, when that needs saying (a decimal's scale, values that do not fit). */
export interface TypeNote {
  /** One or two sentences. */
  reason: string;
  /** Sampled values that do not read as the proposed type (their rows would be rejected). */
  outliers: number;
  /** Up to three of them, as written. */
  examples: string[];
}

/** A column's proposed type: a SchemaField without its name, and the note that explains it. */
export interface InferredType {
  type: FieldType;
  precision?: number;
  scale?: number;
  note: TypeNote | null;
}

/**
 * At most this share of a column's values may not fit the type the others agree on: then the
 * column takes that type and the outliers are counted, rather than the column becoming string.
 */
export const MAX_OUTLIER_SHARE = 0.05;
/** Fixed-scale columns (money, quantities) have this many digits after the point… */
const DECIMAL_SCALES = { min: 2, max: 4 };
/** …and a precision that leaves room to grow: the usual money width, or the warehouses' maximum. */
const DECIMAL_PRECISIONS = [18, 38];
const MAX_EXAMPLES = 3;

type Family = 'number' | 'boolean' | 'date/time' | 'text';
/** Tie-break order for the dominant family. */
const FAMILIES: Family[] = ['number', 'boolean', 'date/time', 'text'];

function familyOf(kind: Exclude<ValueKind, 'null'>): Family {
  switch (kind) {
    case 'int':
    case 'bigint':
    case 'float':
    case 'double':
    case 'decimal':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'date':
    case 'timestamp':
      return 'date/time';
    case 'string':
      return 'text';
  }
}

/** `[+-]digits[.digits]` written out (no exponent): its digits before and after the point. */
const PLAIN_DECIMAL = /^[+-]?(\d*)(?:\.(\d*))?$/;

/**
 * A fractional column is `decimal` when it is written with a fixed scale of 2 to 4 places (the
 * most common number of places among its fractional values, ties to the larger, is 2 to 4, none
 * has more than 4, none uses an exponent): money and quantities, which a floating type would
 * round. Its scale is the largest seen, so no sampled value is refused. Any other is `double`,
 * never single-precision `float`.
 */
function fractionalType(values: string[]): InferredType {
  let maxScale = 0;
  let maxInteger = 0;
  const scales = new Map<number, number>();
  for (const value of values) {
    const m = PLAIN_DECIMAL.exec(value);
    if (m === null) return { type: 'double', note: null };
    const integer = (m[1] ?? '').replace(/^0+/, '').length;
    const scale = (m[2] ?? '').length;
    if (scale > 0) scales.set(scale, (scales.get(scale) ?? 0) + 1);
    maxScale = Math.max(maxScale, scale);
    maxInteger = Math.max(maxInteger, integer);
  }
  const modal = [...scales].reduce(
    (a, b) => (b[1] > a[1] || (b[1] === a[1] && b[0] > a[0]) ? b : a),
    [0, 0],
  )[0];
  if (modal < DECIMAL_SCALES.min || maxScale > DECIMAL_SCALES.max) return { type: 'double', note: null };
  const precision = DECIMAL_PRECISIONS.find((p) => p >= maxInteger + maxScale);
  const example = values.find((v) => PLAIN_DECIMAL.exec(v)?.[2]?.length === modal) ?? '';
  const reason =
    `Values are written with ${modal} places after the point (e.g. '${example}')` +
    `${maxScale > modal ? `, some with ${maxScale}` : ''}: decimal keeps them exact, where a floating type would round sums.`;
  return precision === undefined
    ? { type: 'decimal', note: { reason, outliers: 0, examples: [] } }
    : { type: 'decimal', precision, scale: maxScale, note: { reason, outliers: 0, examples: [] } };
}

/** Integers mixed with fractions widen to a fractional type; integers alone to int or bigint. */
function numericType(values: string[], kinds: Set<ValueKind>): InferredType {
  if (!kinds.has('float') && !kinds.has('double'))
    return { type: kinds.has('bigint') ? 'bigint' : 'int', note: null };
  return fractionalType(values);
}

function typeOf(family: Family, values: string[], kinds: Set<ValueKind>): InferredType {
  switch (family) {
    case 'number':
      return numericType(values, kinds);
    case 'boolean':
      return { type: 'boolean', note: null };
    case 'date/time':
      return { type: kinds.has('timestamp') ? 'timestamp' : 'date', note: null };
    case 'text':
      return { type: 'string', note: null };
  }
}

const quoted = (values: string[]): string => values.map((v) => `'${v.slice(0, 40)}'`).join(', ');

/**
 * The type the column's values agree on, with a note saying why when that is not plain. Nulls
 * (empty, whitespace, NULL/NA/N/A/\N) are ignored; a column with no values is 'string', the type
 * that accepts whatever arrives later. When a few values (at most MAX_OUTLIER_SHARE) do not fit
 * the type the others share, that type is proposed and they are counted; more, and the column is
 * string, with the reason. Numbers with leading zeros (codes) keep the column string.
 */
export function inferColumnType(cells: string[]): InferredType {
  const values = cells.filter((c) => !isNullValue(c)).map((c) => c.trim());
  if (values.length === 0) return { type: 'string', note: null };
  const kinds = values.map((v) => classifyValue(v) as Exclude<ValueKind, 'null'>);
  const zeros = values.filter(hasLeadingZeros);
  if (zeros.length > 0) {
    const note =
      zeros.length === values.length
        ? null
        : {
            reason: `${zeros.length} of ${values.length} values have leading zeros, which a number would drop: kept as string.`,
            outliers: 0,
            examples: zeros.slice(0, MAX_EXAMPLES),
          };
    return { type: 'string', note };
  }
  const counts = new Map<Family, number>();
  for (const k of kinds) counts.set(familyOf(k), (counts.get(familyOf(k)) ?? 0) + 1);
  const dominant = FAMILIES.filter((f) => counts.has(f)).reduce((a, b) =>
    (counts.get(b) ?? 0) > (counts.get(a) ?? 0) ? b : a,
  );
  const fitting = values.filter((_, i) => familyOf(kinds[i]) === dominant);
  const others = values.filter((_, i) => familyOf(kinds[i]) !== dominant);
  const fittingKinds = new Set(kinds.filter((k) => familyOf(k) === dominant));
  if (others.length === 0) return typeOf(dominant, fitting, fittingKinds);
  const proposed = typeOf(dominant, fitting, fittingKinds);
  const examples = others.slice(0, MAX_EXAMPLES);
  if (dominant !== 'text' && others.length <= values.length * MAX_OUTLIER_SHARE) {
    const reason =
      `${others.length} of ${values.length} sampled values are not ${dominant === 'date/time' ? 'dates' : `${dominant}s`} ` +
      `(e.g. ${quoted(examples)}): proposed ${proposed.type} for the others; rows with such values would be ` +
      `rejected at load, with the reason. Use string to keep them as text.` +
      (proposed.note ? ` ${proposed.note.reason}` : '');
    return { ...proposed, note: { reason, outliers: others.length, examples } };
  }
  if (dominant === 'text') {
    const mixed = FAMILIES.filter((f) => f !== 'text' && counts.has(f));
    if (mixed.length === 0) return { type: 'string', note: null };
    return {
      type: 'string',
      note: {
        reason: `Mostly text, with ${mixed.map((f) => `${counts.get(f)} ${f}`).join(', ')} values: string.`,
        outliers: 0,
        examples: [],
      },
    };
  }
  return {
    type: 'string',
    note: {
      reason:
        `${fitting.length} of ${values.length} sampled values are ${dominant === 'date/time' ? 'dates' : `${dominant}s`}, ` +
        `but ${others.length} (more than ${MAX_OUTLIER_SHARE * 100}%) are not (e.g. ${quoted(examples)}): kept as string.`,
      outliers: others.length,
      examples,
    },
  };
}

/** Whether a (trimmed, non-null) value reads as the type inference proposed (see inferColumnType). */
export function fitsType(value: string, type: FieldType): boolean {
  if (type === 'string') return true;
  const kind = classifyValue(value);
  if (kind === 'null') return true;
  return familyOf(kind) === familyOf(type);
}

/** The proposed type alone (see inferColumnType). */
export function inferFieldType(values: string[]): FieldType {
  return inferColumnType(values).type;
}

/** A column's SchemaField: its name, type, and a decimal's precision and scale. */
export function fieldOf(name: string, t: InferredType): SchemaField {
  return {
    name,
    type: t.type,
    ...(t.precision !== undefined ? { precision: t.precision } : {}),
    ...(t.scale !== undefined ? { scale: t.scale } : {}),
  };
}

/**
 * One field per column: names from the header (normalised and unique), types from the rows. The
 * table is as wide as its longest row; columns past the header are named `column_<n>`. `notes`
 * receives the columns whose type needs explaining.
 */
export function inferSchema(
  header: string[],
  rows: string[][],
  opts: InferSchemaOptions = {},
  notes?: (TypeNote & { column: string; type: FieldType })[],
): SchemaField[] {
  const names = columnNames(header, columnCount(header, rows));
  return names.map((name, i) => {
    if (opts.allStrings) return { name, type: 'string' };
    const inferred = inferColumnType(columnCells(rows, i));
    if (inferred.note !== null) notes?.push({ column: name, type: inferred.type, ...inferred.note });
    return fieldOf(name, inferred);
  });
}
