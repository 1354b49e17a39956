import { DataQualityRule } from '@tapyard/model';
import { ColumnSample, canonicalValue, isIdLikeName, isNumericType } from './column';
import { suggestPattern } from './patterns';
import { ProfiledColumn } from './quality';
import { compareStrings } from './stats';

/** Low-cardinality text: at most this many distinct values… */
const MAX_ALLOWED_VALUES = 10;
/** …each seen this many times on average, so the list is unlikely to be merely the sample's. */
const MIN_OCCURRENCES_PER_ALLOWED_VALUE = 5;
/** Fewer values than this do not establish a shape. */
const MIN_VALUES_FOR_PATTERN = 3;

/**
 * Rules that the sample satisfies, per column in this order: not_null, unique, range,
 * allowed_values, regex (regex only when allowed_values was not suggested: it would be redundant).
 * Ranges are the exact observed min and max: rounding outward would be a guess about the data the
 * sample did not show; widen them by hand where growth is expected. So they are proposed only when
 * the sample is the whole file (`wholeFile`), and never for an id-like or monotonic column, whose
 * next value is outside any range by design.
 */
export function suggestRules(
  columns: ProfiledColumn[],
  rowCount: number,
  wholeFile: boolean,
): DataQualityRule[] {
  return columns.flatMap((column) => columnRules(column, rowCount, wholeFile));
}

/** Strictly increasing or decreasing in row order (sequences, running timestamps). */
function monotonic(sample: ColumnSample): boolean {
  const keys = sample.values.map(Number);
  if (keys.length < 3 || keys.some((k) => Number.isNaN(k))) return false;
  let up = true;
  let down = true;
  for (let i = 1; i < keys.length && (up || down); i++) {
    if (keys[i] <= keys[i - 1]) up = false;
    if (keys[i] >= keys[i - 1]) down = false;
  }
  return up || down;
}

function columnRules(
  { sample, profile }: ProfiledColumn,
  rowCount: number,
  wholeFile: boolean,
): DataQualityRule[] {
  const column = profile.name;
  const rules: DataQualityRule[] = [];
  if (rowCount >= 2 && profile.nullCount === 0) rules.push({ type: 'not_null', column });
  if (profile.count >= 2 && profile.distinctCount === profile.count && sample.type !== 'boolean') {
    rules.push({ type: 'unique', column });
  }
  const rangeable = wholeFile && !isIdLikeName(sample.name) && !monotonic(sample);
  if (rangeable && isNumericType(sample.type) && profile.min !== null && profile.max !== null) {
    rules.push({ type: 'range', column, min: profile.min, max: profile.max });
  }
  if (sample.type !== 'string') return rules;
  const allowed = allowedValues(sample.values, profile.distinctCount);
  if (allowed) {
    rules.push({ type: 'allowed_values', column, values: allowed });
    return rules;
  }
  const pattern = sample.values.length >= MIN_VALUES_FOR_PATTERN ? suggestPattern(sample.values) : null;
  if (pattern) rules.push({ type: 'regex', column, pattern });
  return rules;
}

function allowedValues(values: string[], distinctCount: number): string[] | null {
  const fits =
    distinctCount > 0 &&
    distinctCount <= MAX_ALLOWED_VALUES &&
    values.length >= MIN_OCCURRENCES_PER_ALLOWED_VALUE * distinctCount;
  if (!fits) return null;
  return [...new Set(values.map((value) => canonicalValue(value, 'string')))].sort(compareStrings);
}
