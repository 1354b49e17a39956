import { ColumnProfile, QualityIssue } from './profile.types';
import { ColumnSample, isIdLikeName, isNumericType, sortedNumbers } from './column';
import { baseColumnName } from './normalize';
import { quantile } from './stats';
import { classifyValue, hasLeadingZeros, isNullValue, looksNumeric } from './values';

/** A column with both its raw sample and its computed profile. */
export interface ProfiledColumn {
  sample: ColumnSample;
  profile: ColumnProfile;
}

export interface TableFacts {
  header: string[];
  rows: string[][];
  columns: ProfiledColumn[];
}

/** Above this share of empty cells a column is more gap than data. */
export const HIGH_NULL_RATE = 0.5;
/** Tukey's "far out" fence: 3×IQR flags real anomalies, not a long tail. */
const OUTLIER_IQR_FACTOR = 3;
/** Quartiles of fewer values say nothing about what is unusual. */
const MIN_VALUES_FOR_OUTLIERS = 4;
/** Near-unique columns: at least this many values, of which at least this share distinct. */
const NEAR_UNIQUE_MIN_COUNT = 20;
const NEAR_UNIQUE_RATIO = 0.95;

/**
 * Every issue, in a fixed order: header and row-level issues first, then per column (in column
 * order) mixed types, duplicate values, outliers, nulls, constant, leading zeros, whitespace.
 */
export function findIssues(table: TableFacts): QualityIssue[] {
  const issues: QualityIssue[] = [...headerIssues(table), ...raggedRows(table), ...duplicateRows(table)];
  for (const column of table.columns) {
    for (const check of COLUMN_CHECKS) {
      const issue = check(column);
      if (issue) issues.push(issue);
    }
  }
  return issues;
}

function quote(value: string): string {
  return `'${value}'`;
}

/** Without a header row (empty header) generated names are expected and not reported. */
function headerIssues({ header, columns }: TableFacts): QualityIssue[] {
  if (header.length === 0) return [];
  const issues: QualityIssue[] = [];
  for (const { sample } of columns) {
    const raw = header[sample.index] ?? '';
    const base = baseColumnName(raw);
    if (base === '') {
      const what = raw.trim() === '' ? 'has no header' : `header ${quote(raw)} has no usable characters`;
      issues.push({
        column: sample.name,
        kind: 'blank_header',
        severity: 'warning',
        message: `Column ${sample.index + 1} ${what}; it was named ${quote(sample.name)}`,
      });
    } else if (base !== sample.name) {
      const earlier = columns.find((c) => c.sample.name === base);
      const clash = earlier
        ? ` the same as ${quote(earlier.sample.sourceName)} once normalised`
        : ' already taken';
      issues.push({
        column: sample.name,
        kind: 'duplicate_header',
        severity: 'warning',
        message: `Header ${quote(raw)} (column ${sample.index + 1}) is${clash}; it was named ${quote(sample.name)}`,
      });
    }
  }
  return issues;
}

/** The most common row length, the shorter one on a tie; used when there is no header to compare. */
function modalLength(rows: string[][]): number {
  const counts = new Map<number, number>();
  for (const row of rows) counts.set(row.length, (counts.get(row.length) ?? 0) + 1);
  let best = 0;
  let bestCount = 0;
  for (const [length, count] of counts) {
    if (count > bestCount || (count === bestCount && length < best)) [best, bestCount] = [length, count];
  }
  return best;
}

/** Long rows put values in columns nobody named, which is worse than missing cells. */
function raggedRows({ header, rows }: TableFacts): QualityIssue[] {
  const expected = header.length > 0 ? header.length : modalLength(rows);
  const shorter = rows.filter((row) => row.length < expected).length;
  const longer = rows.filter((row) => row.length > expected).length;
  if (shorter + longer === 0) return [];
  return [
    {
      column: null,
      kind: 'ragged_rows',
      severity: longer > 0 ? 'error' : 'warning',
      message: `${shorter + longer} of ${rows.length} rows do not have ${expected} cells (${shorter} shorter, ${longer} longer)`,
      count: shorter + longer,
    },
  ];
}

/** Rows are compared padded to full width, so a trailing missing cell equals an empty one. */
function duplicateRows({ rows, columns }: TableFacts): QualityIssue[] {
  const seen = new Set<string>();
  let repeats = 0;
  for (const row of rows) {
    const key = JSON.stringify(columns.map(({ sample }) => row[sample.index] ?? ''));
    if (seen.has(key)) repeats++;
    else seen.add(key);
  }
  if (repeats === 0) return [];
  return [
    {
      column: null,
      kind: 'duplicate_rows',
      severity: 'warning',
      message: `${repeats} rows repeat an earlier row exactly`,
      count: repeats,
    },
  ];
}

type ColumnCheck = (column: ProfiledColumn) => QualityIssue | null;

type ValueGroup = 'number' | 'boolean' | 'date/time' | 'text';
/** Tie-break order for the dominant group. */
const GROUP_ORDER: ValueGroup[] = ['number', 'boolean', 'date/time', 'text'];

/** Leading-zero and out-of-range numbers still count as numbers here: that is a separate issue. */
function valueGroup(value: string): ValueGroup {
  if (looksNumeric(value)) return 'number';
  const kind = classifyValue(value);
  if (kind === 'boolean') return 'boolean';
  return kind === 'date' || kind === 'timestamp' ? 'date/time' : 'text';
}

/**
 * A column that fell back to string, or one typed by its majority with outliers (int+float and
 * date+timestamp widen: not mixed).
 */
const mixedTypes: ColumnCheck = ({ sample }) => {
  const all = [...sample.values, ...sample.outliers];
  if ((sample.type !== 'string' && sample.outliers.length === 0) || all.length === 0) return null;
  const counts = new Map<ValueGroup, number>();
  for (const value of all) {
    const group = valueGroup(value);
    counts.set(group, (counts.get(group) ?? 0) + 1);
  }
  if (counts.size < 2) return null;
  const groups = GROUP_ORDER.filter((group) => counts.has(group));
  const dominant = groups.reduce((a, b) => ((counts.get(b) ?? 0) > (counts.get(a) ?? 0) ? b : a));
  const others = groups.filter((group) => group !== dominant);
  const minority = all.length - (counts.get(dominant) ?? 0);
  const example = all.find((value) => valueGroup(value) !== dominant) ?? '';
  const breakdown = others.map((group) => `${counts.get(group)} ${group}`).join(', ');
  const typed =
    sample.type === 'string'
      ? 'it was typed as string'
      : `it was typed as ${sample.type}, and rows with the other values would be rejected`;
  return {
    column: sample.name,
    kind: 'mixed_types',
    severity: 'warning',
    message:
      `Column ${quote(sample.name)} is mostly ${dominant} (${counts.get(dominant)} of ${all.length} values) ` +
      `but also ${breakdown} (e.g. ${quote(example)}); ${typed}`,
    count: minority,
  };
};

/** A key-like column (by name, or almost unique) with repeats is probably a broken key. */
const duplicateValues: ColumnCheck = ({ sample, profile }) => {
  const repeats = profile.count - profile.distinctCount;
  if (repeats === 0 || profile.count < 2 || sample.type === 'boolean') return null;
  const keyLikeName = isIdLikeName(sample.name);
  const keyLikeType = ['int', 'bigint', 'string'].includes(sample.type);
  const nearUnique =
    keyLikeType &&
    profile.count >= NEAR_UNIQUE_MIN_COUNT &&
    profile.distinctCount >= NEAR_UNIQUE_RATIO * profile.count;
  if (!keyLikeName && !nearUnique) return null;
  return {
    column: sample.name,
    kind: 'duplicate_values',
    severity: 'warning',
    message: `Column ${quote(sample.name)} looks like a key but ${repeats} values repeat an earlier one`,
    count: repeats,
  };
};

const outliers: ColumnCheck = ({ sample }) => {
  if (!isNumericType(sample.type) || sample.values.length < MIN_VALUES_FOR_OUTLIERS) return null;
  const numbers = sortedNumbers(sample.values);
  const q1 = quantile(numbers, 0.25);
  const q3 = quantile(numbers, 0.75);
  const low = q1 - OUTLIER_IQR_FACTOR * (q3 - q1);
  const high = q3 + OUTLIER_IQR_FACTOR * (q3 - q1);
  const count = numbers.filter((n) => n < low || n > high).length;
  if (count === 0) return null;
  return {
    column: sample.name,
    kind: 'outliers',
    severity: 'info',
    message: `Column ${quote(sample.name)} has ${count} values outside [${low}, ${high}] (3×IQR beyond the quartiles)`,
    count,
  };
};

const highNullRate: ColumnCheck = ({ sample, profile }) => {
  const rows = profile.count + profile.nullCount;
  if (rows === 0 || profile.nullCount / rows <= HIGH_NULL_RATE) return null;
  const message =
    profile.count === 0
      ? `Column ${quote(sample.name)} has no values`
      : `Column ${quote(sample.name)} is empty in ${profile.nullCount} of ${rows} rows`;
  return {
    column: sample.name,
    kind: 'high_null_rate',
    severity: 'warning',
    message,
    count: profile.nullCount,
  };
};

const constantColumn: ColumnCheck = ({ sample, profile }) => {
  if (profile.count < 2 || profile.distinctCount !== 1) return null;
  return {
    column: sample.name,
    kind: 'constant_column',
    severity: 'info',
    message: `Column ${quote(sample.name)} has the single value ${quote(profile.topValues[0]?.value ?? sample.values[0])}`,
  };
};

const leadingZeros: ColumnCheck = ({ sample }) => {
  const matches = sample.values.filter(hasLeadingZeros);
  if (matches.length === 0) return null;
  return {
    column: sample.name,
    kind: 'leading_zeros',
    severity: 'info',
    message: `Column ${quote(sample.name)} has ${matches.length} values with leading zeros (e.g. ${quote(matches[0])}); they stay text so the zeros survive`,
    count: matches.length,
  };
};

/** Padding breaks equality and joins even when it does not break typing. */
const whitespace: ColumnCheck = ({ sample }) => {
  const padded = sample.cells.filter((cell) => !isNullValue(cell) && cell !== cell.trim());
  if (padded.length === 0) return null;
  return {
    column: sample.name,
    kind: 'whitespace',
    severity: 'warning',
    message: `Column ${quote(sample.name)} has ${padded.length} values with leading or trailing whitespace`,
    count: padded.length,
  };
};

const COLUMN_CHECKS: ColumnCheck[] = [
  mixedTypes,
  duplicateValues,
  outliers,
  highNullRate,
  constantColumn,
  leadingZeros,
  whitespace,
];
