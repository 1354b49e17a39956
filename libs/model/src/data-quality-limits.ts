import type { DataQualityRule } from './pipeline.types';

/**
 * Most data-quality rules on one column. Every rule of a column runs on each of its values, so the
 * rules multiply what one value costs; on a small inline upload that is the worker's main thread
 * (32 KiB under 16 rules of 16 backtracking steps a character: about 13 ms, see linear-regex.ts).
 * A column needs one rule of each kind at most, and a few patterns: 16 leaves room to spare.
 */
export const MAX_RULES_PER_COLUMN = 16;

/** The columns with more than MAX_RULES_PER_COLUMN rules, in the order of their first rule. */
export function columnsOverRuleLimit(
  rules: readonly Pick<DataQualityRule, 'column'>[],
): { column: string; rules: number }[] {
  const counts = new Map<string, number>();
  for (const { column } of rules) counts.set(column, (counts.get(column) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > MAX_RULES_PER_COLUMN).map(([column, n]) => ({ column, rules: n }));
}
