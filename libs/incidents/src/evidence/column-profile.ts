/**
 * Column profiles for incident evidence: computed by platform code from sampled rows, never by a
 * model, and shaped so that values of sensitive columns cannot leak into an incident record.
 */
import { Quantiles, quantiles } from '@tapyard/profiling';

export type { Quantiles };

export interface TopValue {
  value: string;
  count: number;
}

export interface ColumnProfile {
  name: string;
  inferredType: string;
  nullRate: number;
  distinct: number;
  quantiles?: Quantiles;
  lengthQuantiles?: Quantiles;
  topK?: TopValue[];
}

export interface DeclaredColumn {
  name: string;
  type: string;
}

const TOP_K = 5;
const TOP_VALUE_CHARS = 100;
const NUMERIC_TYPES: ReadonlySet<string> = new Set(['int', 'bigint', 'float', 'double', 'decimal']);
// Few distinct values by nature, so their most frequent ones describe the column without quantiles.
const TOP_K_TYPES: ReadonlySet<string> = new Set(['string', 'boolean', 'date', 'timestamp']);
// Accepted only in numeric columns: bigint and decimal columns arrive as digit strings to keep precision.
const NUMERIC_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function quantilesOf(values: number[]): Quantiles | undefined {
  return values.length === 0 ? undefined : quantiles(values.sort((x, y) => x - y));
}

export function inferredTypeOf(declared: string): string {
  if (NUMERIC_TYPES.has(declared)) return 'number';
  return declared;
}

export function profileColumns(
  rows: readonly Record<string, unknown>[],
  columns: readonly DeclaredColumn[],
  sensitive: (name: string) => boolean,
): ColumnProfile[] {
  return columns.map((column) => profileColumn(rows, column, sensitive(column.name)));
}

function profileColumn(
  rows: readonly Record<string, unknown>[],
  column: DeclaredColumn,
  isSensitive: boolean,
): ColumnProfile {
  const values: unknown[] = [];
  for (const row of rows) {
    const value = row[column.name];
    if (value !== null && value !== undefined) values.push(value);
  }
  const profile: ColumnProfile = {
    name: column.name,
    inferredType: inferredTypeOf(column.type),
    nullRate: rows.length === 0 ? 0 : (rows.length - values.length) / rows.length,
    distinct: new Set(values.map(jsonText)).size,
  };
  if (NUMERIC_TYPES.has(column.type) && !isSensitive) {
    const quantiles = quantilesOf(numbersOf(values));
    if (quantiles) profile.quantiles = quantiles;
  }
  if (column.type === 'string') {
    const lengthQuantiles = quantilesOf(values.map((v) => codePoints(displayText(v))));
    if (lengthQuantiles) profile.lengthQuantiles = lengthQuantiles;
  }
  // An empty topK still says "nothing to show"; an absent one says "withheld".
  if (TOP_K_TYPES.has(column.type) && !isSensitive) profile.topK = topValues(values);
  return profile;
}

function numbersOf(values: readonly unknown[]): number[] {
  const numbers: number[] = [];
  for (const value of values) {
    let n = Number.NaN;
    if (typeof value === 'number') n = value;
    else if (typeof value === 'bigint') n = Number(value);
    else if (typeof value === 'string' && NUMERIC_TEXT.test(value.trim())) n = Number(value);
    if (Number.isFinite(n)) numbers.push(n);
  }
  return numbers;
}

/** Counts by the shown text, so topK never lists one text twice; ties go to the lower value. */
function topValues(values: readonly unknown[]): TopValue[] {
  const counts = new Map<string, number>();
  for (const value of values) {
    const text = displayText(value);
    counts.set(text, (counts.get(text) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a, countA], [b, countB]) => countB - countA || compareText(a, b))
    .slice(0, TOP_K)
    .map(([value, count]) => ({ value: cut(value, TOP_VALUE_CHARS), count }));
}

/** Code-unit order: the same on every machine and locale, unlike localeCompare. */
function compareText(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** JSON text as the identity of a value; JSON.stringify alone throws on bigint. */
function jsonText(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return text ?? String(value);
}

function displayText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  return jsonText(value);
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** Cuts by code points so a surrogate pair is never split into invalid text. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}
