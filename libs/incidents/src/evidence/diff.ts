import { ColumnProfile, Quantiles } from './column-profile';
import { RunProfile } from './run-profile';

export interface TypeChange {
  column: string;
  from: string;
  to: string;
}

export interface ColumnDelta {
  column: string;
  delta: number;
}

export interface QuantileShift {
  column: string;
  shift: number;
}

/** Field names follow the spec's evidence `diff` object. */
export interface EvidenceDiff {
  columnsAdded: string[];
  columnsRemoved: string[];
  typeChanges: TypeChange[];
  /** A percentage, rounded to 2 decimals. */
  recordDeltaPct: number;
  /** A percentage, rounded to 2 decimals. */
  recordDeltaVsMeanOfLastN: number;
  lastN: number;
  nullRateDeltas: ColumnDelta[];
  quantileShift: QuantileShift[];
  dqPassRateDelta: number;
}

/** Older jobs say little about the current shape of a source. */
const MAX_RECENT = 10;

/** A pipeline run's output ratio, rows out over rows in: what recent jobs are compared on. */
export function outputRatio(p: RunProfile): number {
  return p.sampledRows === 0 ? 0 : p.recordCount / p.sampledRows;
}

/**
 * `recent`: the same measure of recent real runs, newest first (a pipeline's output ratios by
 * default; a tap compares its record count with its last outputs).
 */
export function diffProfiles(
  baseline: RunProfile,
  candidate: RunProfile,
  recentRatios: readonly number[],
  measure: (p: RunProfile) => number = outputRatio,
): EvidenceDiff {
  const before = byName(baseline.columns);
  const after = byName(candidate.columns);
  const recent = recentRatios.filter(Number.isFinite).slice(0, MAX_RECENT);

  const typeChanges: TypeChange[] = [];
  const nullRateDeltas: ColumnDelta[] = [];
  const quantileShift: QuantileShift[] = [];
  for (const [name, c] of [...after].sort(([x], [y]) => compareText(x, y))) {
    const b = before.get(name);
    if (!b) continue;
    if (b.inferredType !== c.inferredType)
      typeChanges.push({ column: name, from: b.inferredType, to: c.inferredType });
    const delta = round(c.nullRate - b.nullRate, 4);
    if (delta !== 0) nullRateDeltas.push({ column: name, delta });
    if (b.quantiles && c.quantiles) {
      const shift = round(medianShift(b.quantiles, c.quantiles), 4);
      if (shift !== 0) quantileShift.push({ column: name, shift });
    }
  }

  return {
    columnsAdded: [...after.keys()].filter((name) => !before.has(name)).sort(compareText),
    columnsRemoved: [...before.keys()].filter((name) => !after.has(name)).sort(compareText),
    typeChanges,
    recordDeltaPct: round(recordDeltaPct(baseline.recordCount, candidate.recordCount), 2),
    recordDeltaVsMeanOfLastN: round(deltaVsMean(measure(candidate), recent), 2),
    lastN: recent.length,
    nullRateDeltas,
    quantileShift,
    dqPassRateDelta: round(candidate.dqPassRate - baseline.dqPassRate, 4),
  };
}

function recordDeltaPct(baseline: number, candidate: number): number {
  if (baseline === 0) return candidate === 0 ? 0 : 100;
  return ((candidate - baseline) / baseline) * 100;
}

/** How far the candidate's measure sits from the mean of what recent real runs gave. */
function deltaVsMean(value: number, recent: readonly number[]): number {
  if (recent.length === 0) return 0;
  const mean = recent.reduce((sum, r) => sum + r, 0) / recent.length;
  if (mean === 0) return 0;
  return ((value - mean) / mean) * 100;
}

/**
 * The median's move in units of the baseline's spread, so a shift reads alike for cents and
 * millions. A constant baseline has no spread; its own magnitude (at least 1) stands in.
 */
function medianShift(baseline: Quantiles, candidate: Quantiles): number {
  const iqr = baseline.p75 - baseline.p25;
  const scale = iqr > 0 ? iqr : Math.max(Math.abs(baseline.p50), 1);
  return Math.abs(candidate.p50 - baseline.p50) / scale;
}

/** Duplicate names cannot come from a schema; if they do, the last one describes the column. */
function byName(columns: readonly ColumnProfile[]): Map<string, ColumnProfile> {
  return new Map(columns.map((column) => [column.name, column]));
}

function compareText(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** Half away from zero, so −12.345 and 12.345 round alike; never −0, which Object.is tells from 0. */
function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  const rounded = (Math.sign(value) * Math.round(Math.abs(value) * factor)) / factor;
  return rounded === 0 ? 0 : rounded;
}
