/** A status entry of `GET /pipeline/status` (the fields the console reads). */
export interface StatusEntry {
  processName: string;
  state: 'begin' | 'processing' | 'end' | 'error';
  description: string;
  epoch: number;
}

export interface RollupJob {
  pipelineToken: string;
  pipeline: string;
  filename: string;
  status: string;
  startedAt: string;
  elapsed: string;
  lastError: { processName: string; description: string } | null;
  rowsLoaded: number | null;
  rowsRejected: number | null;
}

export interface Rollup {
  allDone: boolean;
  status: string;
  jobs: RollupJob[];
}

export type Tone = 'ok' | 'warn' | 'bad' | 'busy';

/** The colour family of a job status: success, warning, a failure (error, timed_out), or still running. */
export function toneOf(status: string): Tone {
  switch (status) {
    case 'success':
      return 'ok';
    case 'warning':
      return 'warn';
    case 'error':
    case 'timed_out':
      return 'bad';
    default:
      return 'busy';
  }
}

export interface StageView {
  name: string;
  state: StatusEntry['state'];
  description: string;
}

/**
 * One line per stage in the order the job reached them (StreamNotifier, JobRunner, DataQuality,
 * Transformation, the loaders), each with its latest state and what that entry said.
 */
export function stagesOf(events: readonly StatusEntry[]): StageView[] {
  const stages = new Map<string, StageView>();
  for (const e of [...events].sort((a, b) => a.epoch - b.epoch)) {
    stages.set(e.processName, { name: e.processName, state: e.state, description: e.description });
  }
  return [...stages.values()];
}

const ROWS_SO_FAR = /(\d+) rows loaded so far; (\d+) rejected/;

/** Rows a running job has loaded and rejected, from its latest loader progress entry; null before any. */
export function rowsSoFar(events: readonly StatusEntry[]): { loaded: number; rejected: number } | null {
  for (const e of [...events].sort((a, b) => b.epoch - a.epoch)) {
    const m = ROWS_SO_FAR.exec(e.description);
    if (m) return { loaded: Number(m[1]), rejected: Number(m[2]) };
  }
  return null;
}

export interface RejectView {
  line: number;
  reason: string;
}

const LINE_REASON = /line (\d+): (.+?)(?:\)?;|\)$|$)/;

/**
 * Rejected rows with their line numbers, as the status tells them: the reason of the first reject when a
 * job loaded nothing (`... (the first: line 3: 'x' is not an int)`) and any error entry naming a line.
 */
export function rejectsOf(job: RollupJob, events: readonly StatusEntry[]): RejectView[] {
  const texts = [
    job.lastError?.description ?? '',
    ...events.filter((e) => e.state === 'error').map((e) => e.description),
  ];
  const seen = new Map<string, RejectView>();
  for (const text of texts) {
    const m = LINE_REASON.exec(text);
    if (m) seen.set(`${m[1]}:${m[2]}`, { line: Number(m[1]), reason: m[2] });
  }
  return [...seen.values()];
}

/** Where a warning job kept its rejected rows (`... rejected rows kept in public.sales_rejects`). */
export function rejectsTable(events: readonly StatusEntry[]): string | null {
  for (const e of events) {
    const m =
      /rejected rows kept in (\S+)/.exec(e.description) ?? /they are kept in (\S+)/.exec(e.description);
    if (m) return m[1];
  }
  return null;
}
