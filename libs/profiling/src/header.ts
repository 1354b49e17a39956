import { FieldType } from '@tapyard/model';
import { inferFieldType } from './infer';
import { classifyValue, isNullValue, looksNumeric } from './values';

/**
 * Header detection, for sources that do not say whether their first row names the columns.
 *
 * Heuristic (first match wins):
 * 1. No rows → false (nothing to name).
 * 2. The first row must look like names: every cell non-empty, not a number (leading zeros, huge
 *    integers and digit-and-punctuation strings such as `1,234` or `01/02/2024` count as numbers),
 *    not an ISO date/timestamp. Otherwise → false.
 * 3. A single row that passes 2 → true.
 * 4. Typed evidence: some column whose other rows infer to a non-string type while its first cell
 *    does not fit that type (`amount` above numbers) → true.
 *    Past this point, two equal first-row cells (case-insensitive) → false.
 * 5. Data evidence: a first cell that fits its column's non-string type (`yes` above booleans) or
 *    reappears below it (`Paris` above `Paris`) → false.
 * 6. Otherwise a vote per text column whose other values all share one length (codes like `FR`,
 *    `DE`): +1 when the first cell's length differs, −1 when it matches. A negative total → false;
 *    otherwise true, matching the CSV default of "has a header" when nothing argues against it.
 */
export function detectHeader(rows: string[][]): boolean {
  if (rows.length === 0) return false;
  const first = rows[0];
  if (!looksLikeNames(first)) return false;
  if (rows.length === 1) return true;
  const body = rows.slice(1);
  const columns = first.map((cell, i) => ({ cell, values: body.map((row) => row[i] ?? '') }));
  const typed = columns.map((column) => ({ ...column, type: inferFieldType(column.values) }));
  if (typed.some(({ cell, type }) => type !== 'string' && !fitsType(cell, type))) return true;
  // Without typed evidence, repeated names argue for data (real headers may repeat a name, data rows often do).
  if (!distinct(first)) return false;
  // Past the line above, a typed column's first cell fits its type: it reads as data.
  if (typed.some(({ cell, type, values }) => type !== 'string' || reappears(cell, values))) return false;
  return lengthVote(typed) >= 0;
}

/** Digits with separators, signs or slashes: amounts, local dates, times, phone numbers. */
const DIGITS_AND_PUNCTUATION_RE = /^[\d\s.,:/+-]+$/;

function isNameLike(cell: string): boolean {
  if (isNullValue(cell) || looksNumeric(cell)) return false;
  const kind = classifyValue(cell);
  return kind !== 'date' && kind !== 'timestamp' && !DIGITS_AND_PUNCTUATION_RE.test(cell.trim());
}

function looksLikeNames(cells: string[]): boolean {
  return cells.length > 0 && cells.every(isNameLike);
}

function distinct(cells: string[]): boolean {
  return new Set(cells.map((cell) => cell.trim().toLowerCase())).size === cells.length;
}

/** In practice only a boolean column can match, since name-like cells are never numbers or dates. */
function fitsType(cell: string, type: FieldType): boolean {
  return inferFieldType([cell]) === type;
}

function reappears(cell: string, values: string[]): boolean {
  const needle = cell.trim().toLowerCase();
  return values.some((value) => value.trim().toLowerCase() === needle);
}

function textLength(value: string): number {
  return [...value.trim()].length;
}

function lengthVote(columns: { cell: string; values: string[] }[]): number {
  let score = 0;
  for (const { cell, values } of columns) {
    const present = values.filter((value) => !isNullValue(value));
    const lengths = new Set(present.map(textLength));
    if (present.length < 2 || lengths.size !== 1) continue;
    score += lengths.has(textLength(cell)) ? -1 : 1;
  }
  return score;
}
