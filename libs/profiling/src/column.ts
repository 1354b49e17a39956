import { FieldType } from '@tapyard/model';
import { ColumnProfile, TopValue } from './profile.types';
import { compareStrings, mean, quantiles, Quantiles, roundTo, stddev } from './stats';
import { compareTemporalKeys, temporalKey, TemporalKey } from './temporal';
import { booleanValue, isNullValue, withoutTrailingZeros } from './values';

/** One column of the sample, as the profiler and the quality checks read it. */
export interface ColumnSample {
  index: number;
  name: string;
  sourceName: string;
  type: FieldType;
  /** Raw cells, one per row ('' where a short row had none). */
  cells: string[];
  /** Trimmed non-null values of the type, in row order. */
  values: string[];
  /** Trimmed non-null values that do not read as the type (see inferColumnType), in row order. */
  outliers: string[];
}

export const NUMERIC_TYPES: ReadonlySet<FieldType> = new Set(['int', 'bigint', 'float', 'double', 'decimal']);

export function isNumericType(type: FieldType): boolean {
  return NUMERIC_TYPES.has(type);
}

/** `id`, `uuid`, `customer_id`…: names people give to keys. */
export function isIdLikeName(name: string): boolean {
  return /^(id|uuid|guid|key)$|_(id|uuid|guid|key)$/.test(name);
}

export function buildSample(
  index: number,
  name: string,
  sourceName: string,
  cells: string[],
  type: FieldType,
  fits: (value: string) => boolean = () => true,
): ColumnSample {
  const present = cells.filter((cell) => !isNullValue(cell)).map((cell) => cell.trim());
  return {
    index,
    name,
    sourceName,
    type,
    cells,
    values: present.filter(fits),
    outliers: present.filter((v) => !fits(v)),
  };
}

/**
 * The value as the loader will store it, so distinct counts and rules agree with the loaded data:
 * `+5` and `5` are one int, `1.50` and `1.5` one float, `YES` and `true` one boolean.
 */
export function canonicalValue(value: string, type: FieldType): string {
  switch (type) {
    case 'boolean':
      return String(booleanValue(value));
    case 'int':
    case 'bigint':
      return BigInt(value).toString();
    case 'float':
    case 'double':
      return String(Number(value));
    case 'decimal':
      return decimalText(value);
    default:
      return value;
  }
}

/** `+012.50` → `12.5`: one text per decimal value, every digit kept. */
function decimalText(value: string): string {
  const neg = value.startsWith('-');
  const [int, frac = ''] = value.replace(/^[+-]/, '').split('.');
  const i = int.replace(/^0+/, '') || '0';
  const f = withoutTrailingZeros(frac);
  const text = f ? `${i}.${f}` : i;
  return neg && text !== '0' ? `-${text}` : text;
}

/** Numeric values ascending; bigints lose digits past 2^53 here, which statistics tolerate. */
export function sortedNumbers(values: string[]): number[] {
  return values.map(Number).sort((a, b) => a - b);
}

/** Exact bigint bounds: a plain number while it is exact, else its digits. */
function bigintBound(n: bigint): number | string {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(n)
    : n.toString();
}

type Bounds = { min: string | number | null; max: string | number | null };

function bigintBounds(values: string[]): Bounds {
  const numbers = values.map((value) => BigInt(value));
  const min = numbers.reduce((a, b) => (b < a ? b : a));
  const max = numbers.reduce((a, b) => (b > a ? b : a));
  return { min: bigintBound(min), max: bigintBound(max) };
}

/**
 * Earliest and latest by instant; on a tie the first written form wins. Every value parses: the
 * column was typed date/timestamp only because they all did.
 */
function temporalBounds(values: string[]): Bounds {
  const keyed = values.map((value) => ({ value, key: temporalKey(value) as TemporalKey }));
  const min = keyed.reduce((a, b) => (compareTemporalKeys(b.key, a.key) < 0 ? b : a));
  const max = keyed.reduce((a, b) => (compareTemporalKeys(b.key, a.key) > 0 ? b : a));
  return { min: min.value, max: max.value };
}

function textBounds(values: string[]): Bounds {
  const sorted = [...values].sort(compareStrings);
  return { min: sorted[0], max: sorted[sorted.length - 1] };
}

function bounds(sample: ColumnSample, canonical: string[], numbers: number[]): Bounds {
  if (sample.values.length === 0) return { min: null, max: null };
  if (sample.type === 'bigint') return bigintBounds(sample.values);
  if (isNumericType(sample.type)) return { min: numbers[0], max: numbers[numbers.length - 1] };
  if (sample.type === 'date' || sample.type === 'timestamp') return temporalBounds(sample.values);
  return textBounds(canonical);
}

function topValues(canonical: string[], topK: number): TopValue[] {
  const counts = new Map<string, number>();
  for (const value of canonical) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || compareStrings(a.value, b.value))
    .slice(0, topK);
}

const ZERO_QUANTILES: Quantiles = { p1: 0, p25: 0, p50: 0, p75: 0, p99: 0 };

/** Lengths in characters (code points), as a varchar(n) limit counts them. */
function lengthQuantiles(values: string[]): Quantiles {
  if (values.length === 0) return { ...ZERO_QUANTILES };
  return quantiles(values.map((value) => [...value].length).sort((a, b) => a - b));
}

export function profileColumn(sample: ColumnSample, rowCount: number, topK: number): ColumnProfile {
  const canonical = sample.values.map((value) => canonicalValue(value, sample.type));
  const numeric = isNumericType(sample.type) && sample.values.length > 0;
  const numbers = numeric ? sortedNumbers(sample.values) : [];
  const nullCount = rowCount - sample.values.length - sample.outliers.length;
  const profile: ColumnProfile = {
    name: sample.name,
    sourceName: sample.sourceName,
    inferredType: sample.type,
    count: sample.values.length,
    nullCount,
    nullRate: rowCount === 0 ? 0 : roundTo(nullCount / rowCount, 4),
    distinctCount: new Set(canonical).size,
    ...bounds(sample, canonical, numbers),
    quantiles: numeric ? quantiles(numbers) : null,
    lengthQuantiles: lengthQuantiles(sample.values),
    topValues: topValues(canonical, topK),
  };
  if (numeric) {
    profile.mean = mean(numbers);
    profile.stddev = stddev(numbers, profile.mean);
  }
  return profile;
}
