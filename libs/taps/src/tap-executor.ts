import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { CONFIG, TapyardConfig, errorMessage } from '@tapyard/core';
import { ObjectStore } from '@tapyard/objectstore';
import { PipelineDefinition } from '@tapyard/model';
import { EnvironmentQueues } from '@tapyard/queue';
import { StatusService } from '@tapyard/status';
import { Staging } from '@tapyard/intake';
import { SandboxError } from '@tapyard/sandbox';
import { DocumentsLoad } from './documents-load';
import { RecordShapeError, RecordSink, SampleSink } from './record-sinks';
import { RecordsLoad } from './records-load';
import { PersistedReason, RunResult, TapConfig } from './tap.types';
import { TapProcesses, ScriptOutcome } from './tap-processes';
import { ScriptEnv, TapEnvironment } from './tap-environment';
import { TapsRepository } from './taps.repository';
import { LedgerService } from './ledger.service';
import { base, dataTypeOf } from './tap-run-results';
import { TapStateView, TapStates } from './tap-states';

interface Execution {
  outcome: ScriptOutcome;
  /** The first record the platform refused, which stopped the run. */
  shapeError: string | null;
}

/** A persisted run and the state version its script read. */
interface Bookmark {
  runId: string;
  base: TapStateView;
}

/** How much of a state a test's logs show. */
const STATE_NOTE_CHARS = 500;

/**
 * Runs a tap's script in the sandbox with its environment and feeds its records somewhere: a sample
 * (test mode, nothing persisted), the ingestion path under one publisher token (run mode), or one job
 * per document (document taps). TapRunner decides which, and keeps the run history.
 */
@Injectable()
export class TapExecutor {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly repo: TapsRepository,
    private readonly store: ObjectStore,
    private readonly staging: Staging,
    private readonly status: StatusService,
    private readonly queues: EnvironmentQueues,
    private readonly processes: TapProcesses,
    private readonly ledger: LedgerService,
    private readonly environment: TapEnvironment,
    private readonly states: TapStates,
  ) {}

  async testRun(
    environment: string,
    tap: TapConfig,
    script: string,
    target: PipelineDefinition | null,
    testLimit: number,
    grant: string[],
  ): Promise<RunResult> {
    const dataType = dataTypeOf(tap, target);
    const sink = new SampleSink(dataType);
    const env = await this.environment.build(environment, tap, testLimit, grant);
    const { state } = await this.states.current(environment, tap.name);
    const { outcome, shapeError } = await this.execute(tap, script, env, sink, state ?? {});
    const error = shapeError ?? outcome.error;
    const note =
      outcome.state && !error
        ? `[tapyard] state after this test (not kept): ${JSON.stringify(outcome.state).slice(0, STATE_NOTE_CHARS)}\n`
        : '';
    return {
      ...base(tap, 'test', dataType),
      persistedReason: 'test_mode',
      recordCount: sink.count,
      columns: sink.columns,
      logs: outcome.logs + note,
      isolation: outcome.isolation,
      error,
      records: sink.records,
      recordsTruncated: sink.count > sink.records.length,
    };
  }

  async persistRun(
    environment: string,
    tap: TapConfig,
    script_: string,
    target: PipelineDefinition | null,
    grant: string[],
    runId: string,
    signal?: AbortSignal,
  ): Promise<RunResult> {
    const dataType = dataTypeOf(tap, target);
    const env = await this.environment.build(environment, tap, 0, grant);
    const bookmark: Bookmark = { runId, base: await this.states.current(environment, tap.name) };
    if (tap.tapType === 'document')
      return this.documentRun(environment, tap, script_, target, env, bookmark, signal);

    if (!target) {
      // The records go nowhere: counted for the logs, none submitted.
      const counted = new SampleSink(dataType);
      const { outcome, shapeError } = await this.execute(
        tap,
        script_,
        env,
        counted,
        bookmark.base.state ?? {},
        signal,
      );
      const error = shapeError ?? outcome.error;
      return {
        ...base(tap, 'run', dataType),
        persistedReason: error ? 'run_error' : 'no_target_pipeline',
        columns: counted.columns,
        logs:
          outcome.logs +
          notSubmitted(counted.count, 'the tap has no target pipeline') +
          (await this.keepState(environment, tap, bookmark, outcome, error, null)),
        isolation: outcome.isolation,
        error,
      };
    }
    const publisherToken = randomUUID();
    const load = new RecordsLoad(
      {
        environment,
        tap: tap.name,
        pipeline: tap.targetPipeline,
        publisherToken,
        mapKeys: dataType === 'csv',
        streamAfter: this.config.taps.streamAfter,
        staleMs: this.config.taps.timeoutMs + 60_000,
      },
      { config: this.config, staging: this.staging, status: this.status, queues: this.queues },
    );
    let run: Execution;
    try {
      run = await this.execute(tap, script_, env, load, bookmark.base.state ?? {}, signal);
    } catch (err) {
      await load.finish(errorMessage(err)).catch(() => undefined);
      throw err;
    }
    const error = run.shapeError ?? run.outcome.error;
    // A failed script loads nothing: half of a source is worse than none, and the next run has it all.
    const loaded = await load.finish(error);
    const stateNote = await this.keepState(
      environment,
      tap,
      bookmark,
      run.outcome,
      error,
      // Records that could not be staged are not loaded: their state must not move past them.
      loaded.persisted ? loaded.pipelineTokens : load.count === 0 ? [] : null,
    );
    const result: RunResult = {
      ...base(tap, 'run', dataType),
      // Spec: records submitted. A failed run submits none, whatever the script yielded before failing.
      recordCount: loaded.persisted ? load.count : 0,
      columns: load.count > 0 ? (dataType === 'csv' ? load.namer.columns : load.namer.keys) : null,
      logs:
        run.outcome.logs +
        (loaded.persisted ? '' : notSubmitted(load.count, 'the run failed, so none was loaded')) +
        stateNote,
      isolation: run.outcome.isolation,
      error,
      ...(loaded.pipelineTokens.length > 0 ? { publisherToken, pipelineTokens: loaded.pipelineTokens } : {}),
    };
    if (error) return { ...result, persistedReason: 'run_error' };
    if (!loaded.persisted) return { ...result, persistedReason: 'no_records' };
    return { ...result, persisted: true };
  }

  /**
   * Document taps: one job per new or changed document (same content hash as the ledger: skipped),
   * each staged in the environment's staged bucket, all under the run's publisher token.
   */
  private async documentRun(
    environment: string,
    tap: TapConfig,
    script: string,
    target: PipelineDefinition | null,
    env: ScriptEnv,
    bookmark: Bookmark,
    signal?: AbortSignal,
  ): Promise<RunResult> {
    const publisherToken = randomUUID();
    const sink = new DocumentsLoad(
      { environment, tap: tap.name, pipeline: target ? tap.targetPipeline : null, publisherToken },
      {
        config: this.config,
        store: this.store,
        status: this.status,
        queues: this.queues,
        repo: this.repo,
        ledger: this.ledger,
      },
    );
    const { outcome, shapeError } = await this.execute(
      tap,
      script,
      env,
      sink,
      bookmark.base.state ?? {},
      signal,
    );
    const error = shapeError ?? outcome.error;
    const { pipelineTokens, unchanged } = sink;
    const stateNote = await this.keepState(
      environment,
      tap,
      bookmark,
      outcome,
      error,
      target ? pipelineTokens : null,
    );
    const persisted = pipelineTokens.length > 0;
    const reason: PersistedReason | undefined = persisted
      ? undefined
      : error
        ? 'run_error'
        : !target
          ? 'no_target_pipeline'
          : 'no_records';
    const logs =
      (unchanged > 0
        ? `${outcome.logs}[tapyard] ${unchanged} unchanged document(s) skipped\n`
        : outcome.logs) + stateNote;
    return {
      ...base(tap, 'run', 'document'),
      persisted,
      ...(reason ? { persistedReason: reason } : {}),
      ...(persisted ? { publisherToken } : {}),
      pipelineTokens,
      recordCount: pipelineTokens.length,
      logs,
      isolation: outcome.isolation,
      error,
    };
  }

  /** Runs the script and feeds every record to the sink; a refused record stops the script. */
  private async execute(
    tap: TapConfig,
    script: string,
    env: ScriptEnv,
    sink: RecordSink,
    state: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Execution> {
    // Loads store the records' text as it came and let the harness check the rows: no parsing here.
    const textOnly = sink instanceof RecordsLoad;
    let stop: (() => void) | undefined;
    try {
      const proc = await this.processes.start(
        env.environment,
        tap,
        script,
        env.env,
        env.secrets,
        textOnly,
        state,
      );
      // A stopped run ends like a failed one (nothing of it loaded, its state kept), saying why.
      stop = () => proc.kill(new SandboxError('killed', String(signal?.reason ?? 'the run was stopped')));
      if (signal?.aborted) stop();
      else signal?.addEventListener('abort', stop, { once: true });
      let shapeError: string | null = null;
      let index = 0;
      try {
        for await (const chunk of proc.chunks) {
          await sink.add(chunk, index);
          index += chunk.count;
        }
      } catch (err) {
        if (!(err instanceof RecordShapeError)) {
          proc.kill();
          await proc.done.catch(() => undefined);
          throw err;
        }
        shapeError = err.message;
        proc.kill();
      }
      return { outcome: await proc.done, shapeError };
    } finally {
      if (stop) signal?.removeEventListener('abort', stop);
      // The key dies with the run; its time to live covers a process that never gets here.
      await this.environment.release(env);
    }
  }
  /**
   * Keeps the state a run's fetch(state) left as the tap's next version: waiting for the jobs its
   * records went to (`pipelineTokens`), or committed at once when there was nothing to load. A failed
   * run, or records that were not loaded (null: no target pipeline, or they could not be staged), keep
   * the old one. Returns a note for the logs.
   */
  private async keepState(
    environment: string,
    tap: TapConfig,
    bookmark: Bookmark,
    outcome: ScriptOutcome,
    error: string | null,
    pipelineTokens: string[] | null,
  ): Promise<string> {
    const { state } = outcome;
    if (!state || isDeepStrictEqual(state, bookmark.base.state ?? {})) return '';
    const kept = `version ${bookmark.base.version} stays the tap's state`;
    if (error) return `[tapyard] new state not kept (the run failed): ${kept}\n`;
    if (pipelineTokens === null)
      return `[tapyard] new state not kept (its records were not loaded): ${kept}\n`;
    const status = await this.states.recordRun(environment, tap.name, {
      runId: bookmark.runId,
      base: bookmark.base.version,
      state,
      pipelineTokens,
    });
    if (status === 'discarded')
      return '[tapyard] new state discarded: the state was set through PUT /tap/state while this run ran\n';
    if (status === 'committed') return '[tapyard] new state committed (nothing needed loading)\n';
    return `[tapyard] new state committed once job(s) ${pipelineTokens.join(', ')} have loaded\n`;
  }
}

/** A line for the logs when the script yielded records that were not submitted. */
function notSubmitted(yielded: number, why: string): string {
  return yielded > 0 ? `[tapyard] the script yielded ${yielded} record(s); none was submitted: ${why}\n` : '';
}
