import { createHash, randomUUID } from 'node:crypto';
import { CodegenKind, RunningScript, ScriptRunSpec, failureWithoutValues } from '@tapyard/scripts';
import { TypedBatch, rowObject } from '@tapyard/model';
import { looksSensitive } from '@tapyard/profiling';
import { DeclaredColumn, RunProfile, dqPassRate, profileColumns } from './evidence';
import { TapSampleRun } from './tap-evidence';

/** A pipeline's scripts as one run would execute them, in stage order. */
export interface ScriptSet {
  specs: ScriptRunSpec[];
  pipelineVersion: number;
}

/**
 * Runs the scripts over the sample in the sandbox, as a job would (data quality, then transformation),
 * and profiles what comes out. A script that fails gives an empty output and its error.
 */
export async function profileRun(
  set: ScriptSet,
  batch: TypedBatch,
  landed: boolean,
): Promise<{ profile: RunProfile; error: string | null }> {
  const started = Date.now();
  let current = batch;
  let dqFailures = 0;
  let error: string | null = null;
  for (const spec of set.specs) {
    let running: RunningScript | null = null;
    try {
      running = await RunningScript.start(spec);
      const out = await running.apply(current);
      if (spec.kind === 'dataQuality') dqFailures += out.rejects.rows.length;
      current = out.batch;
      await running.close();
      running = null;
    } catch (err) {
      // Evidence is read with pipeline:read alone: the failure never quotes a row.
      error = `the ${spec.kind} script failed on the sample: ${failureWithoutValues(err)}`;
      current = { columns: current.columns, values: current.columns.map(() => []), lines: [] };
      break;
    } finally {
      running?.kill();
    }
  }
  const rows = current.lines.map((_, r) => rowObject(current, r));
  return {
    error,
    profile: {
      runId: randomUUID(),
      source: landed ? 'landed-sample' : 'synthetic-sample',
      recordCount: current.lines.length,
      columns: profileColumns(rows, current.columns, looksSensitive),
      dqFailures,
      dqPassRate: dqPassRate(batch.lines.length, dqFailures),
      durationMs: Date.now() - started,
      scriptSha: scriptSha(set.specs),
      tapVersion: 0,
      pipelineVersion: set.pipelineVersion,
      sampledRows: batch.lines.length,
      computedAt: new Date().toISOString(),
    },
  };
}

/** sha-256 of the scripts a run executes, in stage order: which code produced a profile. */
export function scriptSha(specs: readonly { kind: CodegenKind; script: string }[]): string {
  const h = createHash('sha256');
  for (const s of specs) h.update(`${s.kind}\0${s.script}\0`);
  return h.digest('hex');
}

/**
 * Profiles a tap script's test run: its records as it produced them (no data quality runs on a tap),
 * columns named and typed from the values of the records kept.
 */
export function profileTapRun(
  run: TapSampleRun,
  script: string,
  tapVersion: number,
  pipelineVersion: number,
): { profile: RunProfile; error: string | null } {
  return {
    error: run.error,
    profile: {
      runId: randomUUID(),
      source: 'tap-test-run',
      recordCount: run.recordCount,
      columns: profileColumns(run.rows, recordColumns(run.rows), looksSensitive),
      dqFailures: 0,
      dqPassRate: 1,
      durationMs: run.durationMs,
      scriptSha: createHash('sha256').update(script).digest('hex'),
      tapVersion,
      pipelineVersion,
      sampledRows: run.rows.length,
      computedAt: new Date().toISOString(),
    },
  };
}

/** Keys in order of first appearance; a column's type is its values' one JS type, `string` when mixed. */
function recordColumns(rows: readonly Record<string, unknown>[]): DeclaredColumn[] {
  const types = new Map<string, string | null>();
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) {
      const type = valueType(value);
      const seen = types.get(name);
      if (seen === undefined || seen === null) types.set(name, type);
      else if (type !== null && type !== seen) types.set(name, 'string');
    }
  }
  return [...types].map(([name, type]) => ({ name, type: type ?? 'string' }));
}

function valueType(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return 'double';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  return 'json';
}
