import { isIdLikeName } from './column';
import { ColumnProfile, QualityIssue } from './profile.types';
import { ProfiledColumn } from './quality';

/** Keys are short identifiers, not free text. */
const MAX_KEY_LENGTH = 64;
/** `31/12/2024`, `12-31-24`, `31.12.2024`: dates a loader cannot read without knowing the order. */
const REGIONAL_DATE_RE = /^\d{1,2}[./-]\d{1,2}[./-](\d{2}|\d{4})$/;

/**
 * Short, actionable sentences: one per issue (header issues collapse into one sentence each), then
 * type-based advice (regional dates) and at most one key suggestion. Duplicates are dropped.
 */
export function recommend(issues: QualityIssue[], columns: ProfiledColumn[]): string[] {
  const sentences = [
    ...issues.map((issue) => adviceFor(issue, columns)),
    ...columns.map(regionalDateAdvice),
    ...columns.map(decimalAdvice),
    keyAdvice(columns),
  ];
  return [...new Set(sentences.filter((sentence): sentence is string => sentence !== null))];
}

function adviceFor(issue: QualityIssue, columns: ProfiledColumn[]): string | null {
  const c = `'${issue.column ?? ''}'`;
  switch (issue.kind) {
    case 'mixed_types':
      return `Column ${c} mixes types: fix the ${issue.count} odd values or keep it as string.`;
    case 'duplicate_rows':
      return `Remove the ${issue.count} duplicate rows, or confirm that repeated rows are expected.`;
    case 'duplicate_values':
      return `Column ${c} looks like a key but has duplicates: deduplicate it or choose another key.`;
    case 'outliers':
      return `Column ${c} has ${issue.count} outliers: check them before relying on a range rule.`;
    case 'blank_header':
      return 'Name every column in the header: generated names (column_<n>) change when columns move.';
    case 'duplicate_header':
      return 'Rename header cells that collide once normalised, so names do not depend on column order.';
    case 'high_null_rate':
      return isAlwaysEmpty(issue.column, columns)
        ? `Column ${c} is always empty: drop it or check the export.`
        : `Column ${c} is mostly empty: check the source, or keep it nullable.`;
    case 'constant_column':
      return `Column ${c} holds a single value: drop it or document it as a constant.`;
    case 'ragged_rows':
      return `${issue.count} rows have the wrong number of cells: check the delimiter and quoting.`;
    case 'leading_zeros':
      return `Column ${c} has leading zeros: keep it as string.`;
    case 'whitespace':
      return `Column ${c} has values with surrounding whitespace: trim them before loading.`;
  }
}

function isAlwaysEmpty(name: string | null, columns: ProfiledColumn[]): boolean {
  return columns.some(({ profile }) => profile.name === name && profile.count === 0);
}

function regionalDateAdvice({ sample }: ProfiledColumn): string | null {
  if (sample.type !== 'string' || sample.values.length === 0) return null;
  if (!sample.values.every((value) => REGIONAL_DATE_RE.test(value))) return null;
  return `Column '${sample.name}' holds dates in a regional format: convert them to YYYY-MM-DD to load them as dates.`;
}

/** Money and quantities: exact, never single-precision float. */
function decimalAdvice({ profile }: ProfiledColumn): string | null {
  if (profile.inferredType !== 'decimal') return null;
  const type =
    profile.precision === undefined ? 'decimal' : `decimal(${profile.precision},${profile.scale ?? 0})`;
  return `Column '${profile.name}' has a fixed number of places: load it as ${type}, exact, not as float or double.`;
}

function isKeyCandidate({ sample, profile }: ProfiledColumn): boolean {
  const total = profile.count + profile.nullCount;
  const keyType = sample.type === 'int' || sample.type === 'bigint' || sample.type === 'string';
  return (
    keyType &&
    total >= 2 &&
    profile.nullCount === 0 &&
    profile.distinctCount === profile.count &&
    profile.lengthQuantiles.p99 <= MAX_KEY_LENGTH
  );
}

/** One key at most: an id-like name first, then the first integer column, then the first text one. */
function keyAdvice(columns: ProfiledColumn[]): string | null {
  const candidates = columns.filter(isKeyCandidate);
  const pick =
    candidates.find(({ profile }) => isIdLikeName(profile.name)) ??
    candidates.find(({ profile }) => isInteger(profile)) ??
    candidates[0];
  if (!pick) return null;
  return `Column '${pick.profile.name}' is unique and never null: a good key; consider a unique rule.`;
}

function isInteger(profile: ColumnProfile): boolean {
  return profile.inferredType === 'int' || profile.inferredType === 'bigint';
}
