/**
 * What the incident page draws from an evidence (docs/incidents.md): baseline against candidate, per column,
 * as the series of three charts: null rates, value quantiles, most frequent values. Fields the caller may
 * not see (values of sensitive columns, or without `search:query` on the destination) are simply absent,
 * so a chart with nothing to show is left out rather than drawn empty.
 */
export interface Quantiles {
  p1: number;
  p25: number;
  p50: number;
  p75: number;
  p99: number;
}

export interface ColumnProfile {
  name: string;
  inferredType: string;
  nullRate: number;
  distinct: number;
  quantiles?: Quantiles;
  lengthQuantiles?: Quantiles;
  topK?: { value: string; count: number }[];
}

export interface RunProfile {
  source: string;
  recordCount: number;
  dqPassRate: number;
  columns: ColumnProfile[];
}

export interface Check {
  name: string;
  passed: boolean;
  observed: string;
  limit: string;
}

export interface Evidence {
  baseline: RunProfile | null;
  candidate: RunProfile | null;
  checks: Check[];
  verdict: string;
  scriptVersions?: { kind: string; before: number; after: number }[];
}

/** One chart: a label per bar group, a baseline and a candidate value per label (null: not measured). */
export interface Series {
  title: string;
  labels: string[];
  baseline: (number | null)[];
  candidate: (number | null)[];
}

export const QUANTILE_KEYS = ['p1', 'p25', 'p50', 'p75', 'p99'] as const;

export function nullRateSeries(e: Evidence): Series | null {
  if (!e.baseline || !e.candidate) return null;
  const names = columnNames(e.baseline, e.candidate);
  if (names.length === 0) return null;
  return {
    title: 'Null rate per column',
    labels: names,
    baseline: names.map((n) => column(e.baseline, n)?.nullRate ?? null),
    candidate: names.map((n) => column(e.candidate, n)?.nullRate ?? null),
  };
}

export function quantileSeries(e: Evidence): Series[] {
  if (!e.baseline || !e.candidate) return [];
  return columnNames(e.baseline, e.candidate).flatMap((n) => {
    const b = column(e.baseline, n)?.quantiles;
    const c = column(e.candidate, n)?.quantiles;
    if (!b && !c) return [];
    return [
      {
        title: `Quantiles of ${n}`,
        labels: [...QUANTILE_KEYS],
        baseline: QUANTILE_KEYS.map((k) => b?.[k] ?? null),
        candidate: QUANTILE_KEYS.map((k) => c?.[k] ?? null),
      },
    ];
  });
}

export function topValueSeries(e: Evidence): Series[] {
  if (!e.baseline || !e.candidate) return [];
  return columnNames(e.baseline, e.candidate).flatMap((n) => {
    const b = column(e.baseline, n)?.topK;
    const c = column(e.candidate, n)?.topK;
    if (!b?.length && !c?.length) return [];
    const values = unique([...(b ?? []), ...(c ?? [])].map((t) => t.value));
    const count = (list: typeof b, v: string): number | null =>
      list ? (list.find((t) => t.value === v)?.count ?? 0) : null;
    return [
      {
        title: `Most frequent values of ${n}`,
        labels: values,
        baseline: values.map((v) => count(b, v)),
        candidate: values.map((v) => count(c, v)),
      },
    ];
  });
}

/** The checks that failed, in the order the evidence lists them: what the verdict rests on. */
export function failedChecks(e: Evidence): Check[] {
  return e.checks.filter((c) => !c.passed);
}

function column(p: RunProfile | null, name: string): ColumnProfile | undefined {
  return p?.columns.find((c) => c.name === name);
}

function columnNames(a: RunProfile, b: RunProfile): string[] {
  return unique([...a.columns, ...b.columns].map((c) => c.name));
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
