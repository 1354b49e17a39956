/**
 * The Taps pages' plain logic: what the list shows of a tap's history, which taps are failing, how a test's
 * records become a table. No React and no API calls here, so the unit project tests it as functions.
 */

/** The fields of a run history entry (`GET /tap/runs`) the pages read. */
export interface RunEntry {
  mode: string;
  trigger: string;
  status: string;
  startedAt: string;
  error: string | null;
}

/**
 * The newest real run (history is newest first): test runs read and load nothing, so they say nothing of
 * whether the tap works for its pipeline; a run still `running` is the latest word all the same.
 */
export function lastRun<R extends RunEntry>(runs: readonly R[]): R | null {
  return runs.find((r) => r.mode === 'run') ?? null;
}

/** Failing: its latest run ended `error`. A later success clears it; skipped (debounced) runs say nothing. */
export function isFailing(runs: readonly RunEntry[]): boolean {
  const last = runs.find((r) => r.mode === 'run' && r.status !== 'skipped');
  return last?.status === 'error';
}

/** The failing taps of a list, most recently failed first, with the error of that run. */
export function failingTaps<R extends RunEntry>(
  taps: readonly { name: string; runs: readonly R[] }[],
): { name: string; run: R }[] {
  return taps
    .flatMap((t) => {
      if (!isFailing(t.runs)) return [];
      const run = t.runs.find((r) => r.mode === 'run' && r.status !== 'skipped') as R;
      return [{ name: t.name, run }];
    })
    .sort((a, b) => b.run.startedAt.localeCompare(a.run.startedAt));
}

/** `requests==2.32.3, httpx` (commas, spaces or lines) → the list `POST /tap` takes. */
export function parsePackages(text: string): string[] {
  return text.split(/[\s,]+/).filter((p) => p !== '');
}

/** The columns of a test's records table: the result's own (csv), else every key in first-seen order. */
export function recordColumns(records: readonly unknown[], columns: readonly string[] | null): string[] {
  if (columns && columns.length > 0) return [...columns];
  const seen = new Set<string>();
  for (const r of records)
    if (r && typeof r === 'object' && !Array.isArray(r)) for (const k of Object.keys(r)) seen.add(k);
  return [...seen];
}

/** A record's value as a table cell: strings as they are, anything else as JSON; absent is empty. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** Why a tap has no next fire time, or null when its schedule fires. */
export function scheduleNote(tap: { cronExpression: string | null; enabled: boolean }): string | null {
  if (!tap.cronExpression) return 'not scheduled';
  return tap.enabled ? null : 'schedule disabled';
}
