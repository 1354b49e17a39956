import { Inject, Injectable, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import {
  CONFIG,
  ConflictError,
  LOGGER,
  METRICS_REGISTRY,
  TapyardConfig,
  TapyardError,
  ValidationError,
  errorMessage,
  sharedMetric,
} from '@tapyard/core';
import { AccessCheck, heldOf, tapGrant } from '@tapyard/auth';
import { ObjectStore } from '@tapyard/objectstore';
import { PipelineDefinition } from '@tapyard/model';
import { PipelinesService } from '@tapyard/pipelines';
import { EnvironmentQueues } from '@tapyard/queue';
import { StatusService } from '@tapyard/status';
import { Staging } from '@tapyard/ingestion';
import { DocumentsLoad } from './documents-load';
import { RecordShapeError, RecordSink, SampleSink } from './record-sinks';
import { RecordsLoad } from './records-load';
import {
  PersistedReason,
  RunLogEntry,
  RunMode,
  RunResult,
  RunTrigger,
  TapConfig,
  TestResult,
} from './tap.types';
import { TapProcesses, ScriptOutcome } from './tap-processes';
import { ScriptEnv, TapEnvironment } from './tap-environment';
import { TapCaller, UNLIMITED } from './tap-grants';
import { TapPolicy } from './tap-policy';
import { TapsRepository } from './taps.repository';
import { TapsService, isScriptOf } from './taps.service';
import { TestTapDto } from './dto/tap-config.dto';
import { LedgerService } from './ledger.service';
import { TapErrorCode } from './tap-errors';
import { TapStateView, TapStates } from './tap-states';

type DataType = 'csv' | 'json' | 'document';

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

export interface RunOptions {
  mode: RunMode;
  trigger: RunTrigger;
  /** Test mode: sets SERVICE_TAP_TEST_LIMIT when > 0 (spec rule 4). */
  testLimit?: number;
  /** Who started a manual run, checked by TapPolicy; scheduled runs have none (the tap's grant bounds them). */
  access?: AccessCheck;
}

/**
 * Runs taps: resolves script, secret and target pipeline, runs the script in the sandbox, and either
 * samples the records (test mode, nothing persisted) or hands them to the ingestion path under one
 * publisher token (run mode). Every run and test through /tap/run or a schedule lands in run history.
 */
@Injectable()
export class TapRunner {
  /** Ended runs, when the process keeps metrics (labels: mode, trigger, status: never the tap's name). */
  private readonly runs: Counter<'mode' | 'trigger' | 'outcome'> | null;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly taps: TapsService,
    private readonly repo: TapsRepository,
    private readonly pipelines: PipelinesService,
    private readonly store: ObjectStore,
    private readonly staging: Staging,
    private readonly status: StatusService,
    private readonly queues: EnvironmentQueues,
    private readonly processes: TapProcesses,
    private readonly ledger: LedgerService,
    private readonly environment: TapEnvironment,
    private readonly policy: TapPolicy,
    private readonly states: TapStates,
    @Optional() @Inject(METRICS_REGISTRY) registry?: Registry,
  ) {
    this.runs = registry
      ? sharedMetric(
          registry,
          'tapyard_tap_runs_total',
          () =>
            new Counter({
              name: 'tapyard_tap_runs_total',
              help: 'Tap runs and tests that ended, by mode, trigger and outcome',
              labelNames: ['mode', 'trigger', 'outcome'],
              registers: [registry],
            }),
        )
      : null;
  }

  /**
   * POST /tap/test and the assistant's test_tap: `body` over the stored tap of its name (an unsaved
   * configuration may be tested; an inline script wins over scriptPath), as `access` may. Returns the
   * configuration it tested with the result.
   */
  async testAs(
    access: AccessCheck,
    environment: string,
    body: TestTapDto,
    testLimit: number,
  ): Promise<{ tap: TapConfig; result: TestResult }> {
    const stored = body.name ? await this.repo.find(environment, body.name) : null;
    const tap = this.taps.merge(stored, body);
    if (body.scriptPath && !isScriptOf(tap.name, body.scriptPath.trim())) {
      throw new ValidationError(`scriptPath must be one of the scripts of tap '${tap.name}'`, [
        { field: 'scriptPath', problem: 'is not a script of this tap' },
      ]).coded(TapErrorCode.InvalidScriptPath);
    }
    this.policy.assertMayTest(access, stored, tap, body.script !== undefined);
    return { tap, result: await this.test(environment, tap, body.script, testLimit, access.caller) };
  }

  /** A configuration already checked (testAs, an optimisation's verification), with the caller's rights. */
  async test(
    environment: string,
    tap: TapConfig,
    inlineScript: string | undefined,
    testLimit: number,
    caller: TapCaller | null,
  ): Promise<TestResult> {
    const started = Date.now();
    const script = inlineScript ?? (await this.script(environment, tap));
    const target = await this.targetOf(environment, tap, 'test');
    // An unsaved configuration acts with its caller's own rights.
    const grant = caller ? tapGrant(caller.capabilities) : UNLIMITED;
    const r = await this.testRun(environment, tap, script, target, testLimit, grant);
    return {
      records: r.records ?? [],
      recordCount: r.recordCount,
      recordsTruncated: r.recordsTruncated ?? false,
      dataType: r.dataType,
      columns: r.columns,
      logs: r.logs,
      error: r.error,
      aiExplanation: null,
      durationMs: Date.now() - started,
      isolation: r.isolation,
    };
  }

  /** POST /tap/run and scheduled fires. */
  async run(environment: string, name: string, opts: RunOptions): Promise<RunResult> {
    const tap = await this.taps.get(environment, name);
    // Refused before the debounce claim and the history entry: a caller who may not feed leaves no trace.
    if (opts.mode === 'run' && opts.access) await this.policy.assertMayRun(opts.access, environment, tap);
    const entry: RunLogEntry = {
      runId: randomUUID(),
      tap: name,
      mode: opts.mode,
      trigger: opts.trigger,
      status: 'running',
      startedAt: new Date().toISOString(),
      finishedAt: null,
      durationMs: null,
      recordCount: 0,
      persisted: false,
      persistedReason: null,
      publisherToken: null,
      error: null,
    };
    if (opts.mode === 'run') {
      const claim = await this.repo.claimRun(
        environment,
        name,
        opts.trigger === 'schedule' ? 0 : this.config.taps.debounceMs,
      );
      if (!claim.claimed) return this.skipped(environment, tap, entry, claim.previous);
    }
    await this.repo.startRun(environment, entry);
    try {
      // A run that cannot start (no script, bad target) answers 4xx and is still in the history.
      const script = await this.script(environment, tap);
      const target = await this.targetOf(environment, tap, opts.mode);
      const grant = await this.runGrant(environment, tap, opts);
      if (opts.mode === 'run' && target) this.policy.assertGrantMayFeed(tap, target, grant);
      const result =
        opts.mode === 'test'
          ? await this.testRun(environment, tap, script, target, opts.testLimit ?? 0, grant)
          : await this.persistRun(environment, tap, script, target, grant, entry.runId);
      await this.finish(environment, entry, result);
      return { ...result, runId: entry.runId };
    } catch (err) {
      const message = errorMessage(err);
      // A refused run (4xx) is the caller's to fix; anything else is ours.
      const level = err instanceof TapyardError && err.status < 500 ? 'warn' : 'error';
      this.logger[level]({ tap: name, err: message }, 'tap run could not run');
      await this.finish(environment, entry, {
        ...base(tap, opts.mode, 'csv'),
        status: 'error',
        persistedReason: 'run_error',
        error: message,
      });
      throw err;
    }
  }

  /**
   * What a run may do: the tap's grant (from whoever last changed its code), and for a manual run no
   * more than its caller holds either.
   */
  private async runGrant(environment: string, tap: TapConfig, opts: RunOptions): Promise<string[]> {
    const stored = (await this.repo.grant(environment, tap.name)) ?? UNLIMITED;
    const caller = opts.access?.caller;
    return caller ? heldOf(stored, caller.ability) : stored;
  }

  private async testRun(
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
      status: error ? 'error' : 'success',
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

  private async persistRun(
    environment: string,
    tap: TapConfig,
    script_: string,
    target: PipelineDefinition | null,
    grant: string[],
    runId: string,
  ): Promise<RunResult> {
    const dataType = dataTypeOf(tap, target);
    const env = await this.environment.build(environment, tap, 0, grant);
    const bookmark: Bookmark = { runId, base: await this.states.current(environment, tap.name) };
    if (tap.tapType === 'document') return this.documentRun(environment, tap, script_, target, env, bookmark);

    if (!target) {
      // The records go nowhere: count them, keep nothing.
      const counted = new SampleSink(dataType);
      const { outcome, shapeError } = await this.execute(
        tap,
        script_,
        env,
        counted,
        bookmark.base.state ?? {},
      );
      const error = shapeError ?? outcome.error;
      return {
        ...base(tap, 'run', dataType),
        status: error ? 'error' : 'success',
        persistedReason: error ? 'run_error' : 'no_target_pipeline',
        recordCount: counted.count,
        columns: counted.columns,
        logs: outcome.logs + (await this.keepState(environment, tap, bookmark, outcome, error, null)),
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
      run = await this.execute(tap, script_, env, load, bookmark.base.state ?? {});
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
      status: error ? 'error' : 'success',
      recordCount: load.count,
      columns: load.count > 0 ? (dataType === 'csv' ? load.namer.columns : load.namer.keys) : null,
      logs: run.outcome.logs + stateNote,
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
    const { outcome, shapeError } = await this.execute(tap, script, env, sink, bookmark.base.state ?? {});
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
      status: error ? 'error' : 'success',
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
  ): Promise<Execution> {
    // Loads store the records' text as it came and let the harness check the rows: no parsing here.
    const textOnly = sink instanceof RecordsLoad;
    try {
      const proc = await this.processes.start(tap, script, env.env, env.secrets, textOnly, state);
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

  private async script(environment: string, tap: TapConfig): Promise<string> {
    if (tap.scriptPath === null && tap.storage !== 'github') {
      throw new ConflictError(`tap '${tap.name}' has no script yet: save one with POST /tap {script}`).coded(
        TapErrorCode.NoScript,
      );
    }
    const script = await this.taps.liveScript(environment, tap);
    if (script === null) {
      throw new ConflictError(
        tap.storage === 'github'
          ? `tap '${tap.name}' cannot run: ${tap.repoPath ?? 'its script'} is missing from commit ${tap.commitSha ?? '?'}`
          : `tap '${tap.name}' cannot run: its script ${tap.scriptPath} is missing from the object store`,
      ).coded(TapErrorCode.NoScript);
    }
    return script;
  }

  /** The target pipeline, checked (spec rule 1 again at run time); null when the tap feeds nothing. */
  private async targetOf(
    environment: string,
    tap: TapConfig,
    mode: RunMode,
  ): Promise<PipelineDefinition | null> {
    if (!tap.targetPipeline) return null;
    await this.taps.assertCompatible(environment, tap);
    const found = await this.pipelines.find(environment, tap.targetPipeline);
    if (!found && mode === 'run') {
      throw new ValidationError(
        `tap '${tap.name}' targets pipeline '${tap.targetPipeline}', which does not exist`,
      ).coded(TapErrorCode.TargetMissing);
    }
    return found?.definition ?? null;
  }

  private async skipped(
    environment: string,
    tap: TapConfig,
    entry: RunLogEntry,
    previous: Date,
  ): Promise<RunResult> {
    const ago = ((Date.now() - previous.getTime()) / 1000).toFixed(1);
    const result: RunResult = {
      ...base(tap, 'run', tap.tapType === 'document' ? 'document' : 'csv'),
      status: 'skipped',
      persistedReason: 'debounced',
      error: `debounced: the previous run of tap '${tap.name}' started ${ago} s ago (window ${this.config.taps.debounceMs / 1000} s)`,
    };
    await this.repo.startRun(environment, entry);
    await this.finish(environment, entry, result);
    return result;
  }

  private async finish(environment: string, entry: RunLogEntry, r: RunResult): Promise<void> {
    const finished = new Date();
    entry.status = r.status;
    entry.finishedAt = finished.toISOString();
    entry.durationMs = finished.getTime() - Date.parse(entry.startedAt);
    entry.recordCount = r.recordCount;
    entry.persisted = r.persisted;
    entry.persistedReason = r.persistedReason ?? null;
    entry.publisherToken = r.publisherToken ?? null;
    entry.error = r.error;
    r.durationMs = entry.durationMs;
    await this.repo.finishRun(environment, entry);
    this.runs?.inc({ mode: entry.mode, trigger: entry.trigger, outcome: r.status });
  }
}

function dataTypeOf(tap: TapConfig, target: PipelineDefinition | null): DataType {
  if (tap.tapType === 'document') return 'document';
  const format = target?.source.fileAttributes.format;
  // JSON and XML pipelines load into the document database, which keeps records as they are.
  return format === 'json' || format === 'xml' ? 'json' : 'csv';
}

function base(tap: TapConfig, mode: RunMode, dataType: string): RunResult {
  return {
    tap: tap.name,
    description: tap.description,
    status: 'success',
    mode,
    targetPipeline: tap.targetPipeline,
    persisted: false,
    pipelineTokens: [],
    recordCount: 0,
    dataType,
    columns: null,
    logs: '',
    isolation: null,
    error: null,
  };
}
