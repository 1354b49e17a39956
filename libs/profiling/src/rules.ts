import { DataQualityRule } from '@tapyard/model';
import { canonicalValue, isNumericType } from './column';
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
 * sample did not show; widen them by hand where growth is expected.
 */
export function suggestRules(columns: ProfiledColumn[], rowCount: number): DataQualityRule[] {
  return columns.flatMap((column) => columnRules(column, rowCount));
}

function columnRules({ sample, profile }: ProfiledColumn, rowCount: number): DataQualityRule[] {
  const column = profile.name;
  const rules: DataQualityRule[] = [];
  if (rowCount >= 2 && profile.nullCount === 0) rules.push({ type: 'not_null', column });
  if (profile.count >= 2 && profile.distinctCount === profile.count && sample.type !== 'boolean') {
    rules.push({ type: 'unique', column });
  }
  if (isNumericType(sample.type) && profile.min !== null && profile.max !== null) {
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
