import { FieldType } from '@tapyard/model';
import { isIsoDate, isIsoTimestamp } from './temporal';

/**
 * Classification of single cells. Cells are trimmed first: surrounding whitespace is reported as a
 * quality issue, but it should not turn a numeric column into text.
 */

/** Spellings of "no value" that exporters commonly write (`\N` is the MySQL/Postgres dump form). */
export const NULL_TOKENS: ReadonlySet<string> = new Set(['NULL', 'null', 'NA', 'N/A', '\\N']);

/** 0/1 are left out on purpose: they are far more often integers than flags. */
const BOOLEAN_TOKENS: ReadonlySet<string> = new Set(['true', 'false', 't', 'f', 'yes', 'no']);

const INTEGER_RE = /^[+-]?(\d+)$/;
/** `.5` and `5.` are accepted: Postgres reads both, and some exporters drop the zero. */
const DECIMAL_RE = /^[+-]?(?:(\d+)\.(\d*)|\.(\d+))(?:[eE][+-]?\d+)?$|^[+-]?(\d+)[eE][+-]?\d+$/;

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const FLOAT32_MAX = 3.4028234663852886e38;
/** Below the smallest normal float32 the value goes subnormal and loses digits. */
const FLOAT32_MIN_NORMAL = 1.1754943508222875e-38;
/** A float32 carries about 7 decimal digits; more than that needs a double. */
export const FLOAT_SIGNIFICANT_DIGITS = 7;

/** A cell's kind: a FieldType it fits exactly, or 'null' for an empty cell. */
export type ValueKind = FieldType | 'null';

export function isNullValue(raw: string): boolean {
  const value = raw.trim();
  return value === '' || NULL_TOKENS.has(value);
}

export function isBooleanToken(value: string): boolean {
  return BOOLEAN_TOKENS.has(value.trim().toLowerCase());
}

/** `true`/`t`/`yes` → true; callers check isBooleanToken first. */
export function booleanValue(value: string): boolean {
  return ['true', 't', 'yes'].includes(value.trim().toLowerCase());
}

interface NumberParts {
  integerDigits: string;
  fractionDigits: string;
  isInteger: boolean;
}

/** Splits a plain decimal literal; null for anything else (thousands separators, NaN, hex…). */
function numberParts(value: string): NumberParts | null {
  const int = INTEGER_RE.exec(value);
  if (int) return { integerDigits: int[1], fractionDigits: '', isInteger: true };
  const dec = DECIMAL_RE.exec(value);
  if (!dec) return null;
  return { integerDigits: dec[1] ?? dec[4] ?? '', fractionDigits: dec[2] ?? dec[3] ?? '', isInteger: false };
}

/** Numeric syntax regardless of range or leading zeros: "looks like a number" to a human. */
export function looksNumeric(raw: string): boolean {
  return numberParts(raw.trim()) !== null;
}

/** `007`, `00501`, `01.5`: zip codes and identifiers whose zeros a numeric type would drop. */
export function hasLeadingZeros(raw: string): boolean {
  const parts = numberParts(raw.trim());
  return parts !== null && parts.integerDigits.length > 1 && parts.integerDigits.startsWith('0');
}

/** Digits needed to write the value; leading and trailing zeros carry no precision. */
export function significantDigits(raw: string): number {
  const parts = numberParts(raw.trim());
  if (!parts) return 0;
  const digits = parts.integerDigits + parts.fractionDigits;
  let start = 0;
  while (start < digits.length && digits[start] === '0') start++;
  return Math.max(0, withoutTrailingZeros(digits).length - start);
}

/**
 * `digits` up to its last non-zero character. A loop from the end, not `/0+$/`: that regex retries
 * from every zero of a run, so a cell `1.000…0001` of a few MB held the thread for minutes.
 */
export function withoutTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits[end - 1] === '0') end--;
  return digits.slice(0, end);
}

/** Integers beyond int64 stay text: a double would silently round their last digits. */
function classifyInteger(value: string): ValueKind {
  const n = BigInt(value);
  if (n >= INT32_MIN && n <= INT32_MAX) return 'int';
  if (n >= INT64_MIN && n <= INT64_MAX) return 'bigint';
  return 'string';
}

function classifyDecimal(value: string): ValueKind {
  const n = Math.abs(Number(value));
  const digits = significantDigits(value);
  // Outside double range (1e400 → Infinity, 1e-400 → 0) the value cannot be stored as written.
  if (!Number.isFinite(n) || (n === 0 && digits > 0)) return 'string';
  const outsideFloat32 = n > FLOAT32_MAX || (n !== 0 && n < FLOAT32_MIN_NORMAL);
  return outsideFloat32 || digits > FLOAT_SIGNIFICANT_DIGITS ? 'double' : 'float';
}

function classifyNumber(value: string): ValueKind | null {
  const parts = numberParts(value);
  if (!parts) return null;
  if (hasLeadingZeros(value)) return 'string';
  return parts.isInteger ? classifyInteger(value) : classifyDecimal(value);
}

/** The most specific kind a single cell fits. */
export function classifyValue(raw: string): ValueKind {
  const value = raw.trim();
  if (isNullValue(value)) return 'null';
  if (isBooleanToken(value)) return 'boolean';
  const numeric = classifyNumber(value);
  if (numeric !== null) return numeric;
  if (isIsoDate(value)) return 'date';
  if (isIsoTimestamp(value)) return 'timestamp';
  return 'string';
}
