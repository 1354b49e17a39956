import { Inject, Injectable, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
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
import { AccessCheck, canOn, heldOf, tapGrant } from '@tapyard/auth';
import { PipelineDefinition } from '@tapyard/model';
import { PipelinesService, pipelineScope } from '@tapyard/pipelines';
import { IncidentsService } from '@tapyard/incidents';
import { RunLogEntry, RunMode, RunResult, RunTrigger, TapConfig, TestResult } from './tap.types';
import { TapCaller, UNLIMITED } from './tap-grants';
import { TapExecutor } from './tap-executor';
import { TapPolicy } from './tap-policy';
import { base } from './tap-run-results';
import { TapsRepository } from './taps.repository';
import { TapsService, isScriptOf } from './taps.service';
import { TestTapDto } from './dto/tap-config.dto';
import { TapErrorCode } from './tap-errors';
import { documentViolation } from './tap-rules';

/**
 * Who wrote the code a test runs, for the rights its run key gets (TapRunner.testGrant): the caller
 * (text they sent), the tap (a stored version), or a model (text it wrote, from whatever it read).
 */
export type TestedCode = 'caller' | 'stored' | 'model';

export interface RunOptions {
  mode: RunMode;
  trigger: RunTrigger;
  /** Test mode: sets SERVICE_TAP_TEST_LIMIT when > 0 (spec rule 4). */
  testLimit?: number;
  /** Who started a manual run, checked by TapPolicy; scheduled runs have none (the tap's grant bounds them). */
  access?: AccessCheck;
  /** The history entry's id, when the caller must know it before the run ends (the scheduler's hand-back). */
  runId?: string;
  /** Stops a run: it ends `error` with the signal's reason, nothing of it loaded, its state kept. */
  signal?: AbortSignal;
}

/**
 * Runs taps: resolves script, secret and target pipeline, checks what the run may do, and has
 * TapExecutor run the script in the sandbox and either sample the records (test mode, nothing
 * persisted) or hand them to the ingestion path under one publisher token (run mode). Every run and
 * test through /tap/run or a schedule lands in run history.
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
    private readonly executor: TapExecutor,
    private readonly policy: TapPolicy,
    private readonly incidents: IncidentsService,
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
   * configuration may be tested; an inline script wins over scriptPath), as `access` may. An inline
   * script is the caller's own unless `inline` says a model wrote it. Returns the configuration it
   * tested with the result.
   */
  async testAs(
    access: AccessCheck,
    environment: string,
    body: TestTapDto,
    testLimit: number,
    inline: Exclude<TestedCode, 'stored'> = 'caller',
  ): Promise<{ tap: TapConfig; result: TestResult }> {
    const stored = body.name ? await this.repo.find(environment, body.name) : null;
    const tap = this.taps.merge(stored, body);
    if (body.scriptPath && !isScriptOf(tap.name, body.scriptPath.trim())) {
      throw new ValidationError(`scriptPath must be one of the scripts of tap '${tap.name}'`, [
        { field: 'scriptPath', problem: 'is not a script of this tap' },
      ]).coded(TapErrorCode.InvalidScriptPath);
    }
    this.policy.assertMayTest(access, stored, tap, body.script !== undefined);
    const code = body.script === undefined ? 'stored' : inline;
    const grant = await this.testGrant(environment, tap.name, access.caller, code);
    return { tap, result: await this.test(environment, tap, body.script, testLimit, grant, access.caller) };
  }

  /**
   * The rights a test's run key gets. Code the caller sent acts with the caller's own rights: they
   * vouch for it, as saving it would. The tap's stored code acts with the tap's grant narrowed to the
   * caller, as a manual run does, so testing someone else's tap never lends it the tester's wider
   * rights; a stored version of a tap not saved yet (generated, adopted by nobody) has no grant to act
   * with. Code a model wrote acts with none: it may carry whatever the model read.
   */
  async testGrant(
    environment: string,
    name: string,
    caller: TapCaller | null,
    code: TestedCode,
  ): Promise<string[]> {
    if (!caller) return UNLIMITED; // authentication off: every caller holds everything
    if (code === 'caller') return tapGrant(caller.capabilities);
    if (code === 'model') return [];
    const grant = await this.repo.grant(environment, name);
    return grant === undefined ? [] : heldOf(grant ?? UNLIMITED, caller.ability);
  }

  /**
   * A configuration already checked (testAs, an optimisation's verification, an incident's evidence),
   * its run key holding `grant` (see testGrant). A target pipeline `caller` may not read is as absent.
   */
  async test(
    environment: string,
    tap: TapConfig,
    inlineScript: string | undefined,
    testLimit: number,
    grant: string[],
    caller: TapCaller | null,
  ): Promise<TestResult> {
    const started = Date.now();
    const script = inlineScript ?? (await this.script(environment, tap));
    const target = await this.targetOf(environment, tap, 'test', caller);
    const r = await this.executor.testRun(environment, tap, script, target, testLimit, grant);
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
      runId: opts.runId ?? randomUUID(),
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
          ? await this.executor.testRun(environment, tap, script, target, opts.testLimit ?? 0, grant)
          : await this.executor.persistRun(environment, tap, script, target, grant, entry.runId, opts.signal);
      await this.finish(environment, entry, result);
      if (result.persisted && tap.scriptPath !== null) this.ran(environment, tap.name, tap.scriptPath, entry);
      return { ...result, runId: entry.runId };
    } catch (err) {
      const message = errorMessage(err);
      // A refused run (4xx) is the caller's to fix; anything else is ours.
      const level = err instanceof TapyardError && err.status < 500 ? 'warn' : 'error';
      this.logger[level]({ tap: name, err: message }, 'tap run could not run');
      await this.finish(environment, entry, {
        ...base(tap, opts.mode, 'csv'),
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

  /**
   * The target pipeline, checked (spec rule 1 again at run time); null when the tap feeds nothing. A
   * tester who may not read the target finds it absent (the same answers as a pipeline that does not
   * exist): a test never reveals another scope's pipelines or their shape.
   */
  private async targetOf(
    environment: string,
    tap: TapConfig,
    mode: RunMode,
    tester: TapCaller | null = null,
  ): Promise<PipelineDefinition | null> {
    if (!tap.targetPipeline) return null;
    const seen = await this.pipelines.find(environment, tap.targetPipeline);
    const hidden =
      seen !== null &&
      tester !== null &&
      !canOn(tester.ability, 'read', 'pipeline', pipelineScope(seen.definition));
    if (hidden) {
      const absent = tap.tapType === 'document' ? documentViolation(tap.targetPipeline, null) : null;
      if (absent)
        throw new ValidationError(absent, [{ field: 'targetPipeline', problem: absent }]).coded(
          TapErrorCode.TargetRefused,
        );
      return null;
    }
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

  /** Tells incidents of a run that loaded (in the background: it never fails the run). */
  private ran(environment: string, tap: string, scriptPath: string, entry: RunLogEntry): void {
    this.incidents
      .tapRan({
        environment,
        tap,
        scriptPath,
        runId: entry.runId,
        recordCount: entry.recordCount,
        durationMs: entry.durationMs ?? 0,
      })
      .catch((err: unknown) =>
        this.logger.warn({ tap, err: errorMessage(err) }, 'tap run not added to its incidents'),
      );
  }

  private async finish(environment: string, entry: RunLogEntry, r: RunResult): Promise<void> {
    const finished = new Date();
    // The history keeps telling failed runs apart; the run result reports them in `error` (spec).
    entry.status = r.status === 'success' && r.error !== null ? 'error' : r.status;
    entry.finishedAt = finished.toISOString();
    entry.durationMs = finished.getTime() - Date.parse(entry.startedAt);
    entry.recordCount = r.recordCount;
    entry.persisted = r.persisted;
    entry.persistedReason = r.persistedReason ?? null;
    entry.publisherToken = r.publisherToken ?? null;
    entry.error = r.error;
    r.durationMs = entry.durationMs;
    await this.repo.finishRun(environment, entry);
    this.runs?.inc({ mode: entry.mode, trigger: entry.trigger, outcome: entry.status });
  }
}
