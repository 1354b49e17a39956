import { ColumnProfile } from './column-profile';

/** One run as incident evidence sees it (spec "Run profile"); used for baseline, candidate and real. */
export interface RunProfile {
  runId: string;
  /** Where the rows came from; `landed-sample` when read back from the destination. */
  source: string;
  recordCount: number;
  columns: ColumnProfile[];
  dqFailures: number;
  /** A fraction 0..1, not a percentage. */
  dqPassRate: number;
  durationMs: number;
  scriptSha: string;
  tapVersion: number;
  pipelineVersion: number;
  sampledRows: number;
  computedAt: string;
}

/**
 * Share of sampled rows that passed data quality. With nothing sampled there is no failure to
 * report, so the rate is 1; failures can outnumber rows (several rules per row), hence the floor at 0.
 */
export function dqPassRate(sampled: number, failures: number): number {
  if (sampled <= 0) return 1;
  return Math.min(1, Math.max(0, (sampled - failures) / sampled));
}
