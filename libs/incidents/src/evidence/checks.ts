import { EvidenceDiff } from './diff';
import { RunProfile } from './run-profile';

export interface Thresholds {
  /** A percentage either way. */
  maxRecordDeltaPct: number;
  allowColumnRemoval: boolean;
  allowTypeChange: boolean;
  /** A fraction 0..1. */
  minDqPassRate: number;
  /** A fraction 0..1, per column. */
  maxNullRateIncrease: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  maxRecordDeltaPct: 20,
  allowColumnRemoval: false,
  allowTypeChange: false,
  minDqPassRate: 0.9,
  maxNullRateIncrease: 0.1,
};

/** `observed` and `limit` are short phrases a person reads next to each other. */
export interface Check {
  name: string;
  passed: boolean;
  observed: string;
  limit: string;
}

/** `pending` is the state before evidence exists; `verdictOf` never returns it. */
export type Verdict = 'pending' | 'pass' | 'fail' | 'needs-human';

/** Names listed in one phrase before the rest is summarised as a count. */
const LISTED = 3;

export function runChecks(diff: EvidenceDiff, candidate: RunProfile, t: Thresholds): Check[] {
  return [
    recordDelta(diff, t),
    {
      name: 'column-removal',
      passed: diff.columnsRemoved.length === 0 || t.allowColumnRemoval,
      observed: diff.columnsRemoved.length === 0 ? 'none' : listed(diff.columnsRemoved),
      limit: t.allowColumnRemoval ? 'removal allowed' : 'no removal',
    },
    {
      name: 'type-change',
      passed: diff.typeChanges.length === 0 || t.allowTypeChange,
      observed:
        diff.typeChanges.length === 0
          ? 'none'
          : listed(diff.typeChanges.map((c) => `${c.column}: ${c.from} → ${c.to}`)),
      limit: t.allowTypeChange ? 'type changes allowed' : 'no type change',
    },
    {
      name: 'dq-pass-rate',
      passed: candidate.dqPassRate >= t.minDqPassRate,
      observed: fraction(candidate.dqPassRate),
      limit: `≥ ${fraction(t.minDqPassRate)}`,
    },
    nullRateIncrease(diff, t),
  ];
}

/** Evidence that could not be grounded in real rows is not a pass, whatever the checks say. */
export function verdictOf(checks: Check[], trustworthy: boolean): Verdict {
  if (!trustworthy) return 'needs-human';
  return checks.every((check) => check.passed) ? 'pass' : 'fail';
}

function recordDelta(diff: EvidenceDiff, t: Thresholds): Check {
  return {
    name: 'record-delta',
    passed: Math.abs(diff.recordDeltaPct) <= t.maxRecordDeltaPct,
    observed: `${signed(diff.recordDeltaPct)}%`,
    limit: `±${t.maxRecordDeltaPct}%`,
  };
}

/** Only the worst column decides, and only increases count: fewer nulls is never a regression. */
function nullRateIncrease(diff: EvidenceDiff, t: Thresholds): Check {
  let worst: { column: string; delta: number } | undefined;
  for (const d of diff.nullRateDeltas) {
    if (d.delta > 0 && (!worst || d.delta > worst.delta)) worst = d;
  }
  return {
    name: 'null-rate-increase',
    passed: !worst || worst.delta <= t.maxNullRateIncrease,
    observed: worst ? `${worst.column} +${fraction(worst.delta)}` : 'no increase',
    limit: `≤ +${fraction(t.maxNullRateIncrease)}`,
  };
}

/** A true minus sign, so "−12.5%" is not read as a hyphenated range. */
function signed(value: number): string {
  if (value > 0) return `+${value}`;
  if (value < 0) return `−${-value}`;
  return '0';
}

function fraction(value: number): string {
  return value.toFixed(4);
}

function listed(items: readonly string[]): string {
  const shown = items.slice(0, LISTED).join(', ');
  return items.length > LISTED ? `${shown} +${items.length - LISTED} more` : shown;
}
