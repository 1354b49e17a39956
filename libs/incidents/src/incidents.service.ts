import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { CODEGEN_KINDS, ScriptRunSpec } from '@tapyard/scripts';
import {
  CodegenListener,
  CodegenService,
  JobLanded,
  ScriptChange,
  instructionOf,
  scriptColumns,
} from '@tapyard/codegen';
import { AccessCheck, Action, ScopeFields, canOn } from '@tapyard/auth';
import { ConflictError, NotFoundError } from '@tapyard/core';
import { PipelinesService } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import {
  Check,
  DEFAULT_THRESHOLDS,
  RunProfile,
  Thresholds,
  diffProfiles,
  dqPassRate,
  runChecks,
  verdictOf,
} from './evidence';
import { ScriptSet, profileRun, profileTapRun } from './evidence-run';
import {
  Evidence,
  Incident,
  IncidentListItem,
  IncidentSubject,
  PendingEvidence,
  ScriptVersionChange,
  TapScriptVersions,
} from './incident.types';
import { IncidentsRepository, StoredIncident } from './incidents.repository';
import { IncidentErrorCode } from './incident-errors';
import { BlastRadiusReader, emptyBlastRadius } from './blast-radius';
import { TapEvidenceSource, TapRan, TapScriptChange } from './tap-evidence';

/**
 * Incidents of pipelines and taps: every CodeGen script that replaces an earlier version opens one,
 * and so does every tap script change, with evidence computed by platform code, never by a model: the
 * scripts before and after the change run in the sandbox (a pipeline's over the rows it last landed,
 * a tap's as a test run of the tap), and the two outputs are profiled and compared against the
 * pipeline's thresholds. The first real job that runs a pipeline change adds its own profile. Verify
 * recomputes; a failing verification restores a pipeline's earlier version.
 */
@Injectable()
export class IncidentsService implements OnModuleInit, CodegenListener {
  constructor(
    private readonly codegen: CodegenService,
    private readonly pipelines: PipelinesService,
    private readonly repo: IncidentsRepository,
    private readonly reach: BlastRadiusReader,
  ) {}

  /** The taps feeding a pipeline, for its blast radius (none in a process without taps). */
  private readonly feeding = (environment: string, pipeline: string): Promise<string[]> =>
    this.taps === null ? Promise.resolve([]) : this.taps.feeding(environment, pipeline);

  /** Set once by the taps lib at boot; null in a process without taps (no tap incident is opened there). */
  private taps: TapEvidenceSource | null = null;

  onModuleInit(): void {
    this.codegen.listen(this);
  }

  provideTaps(source: TapEvidenceSource): void {
    this.taps = source;
  }

  /**
   * Newest first. The caller's scopes are applied by the route (pipeline incidents) and here for tap
   * incidents: `tap:read` on the tap, as for the tap itself.
   */
  async list(
    environment: string,
    filter: { pipeline?: string; tap?: string; verdict?: string },
    access: AccessCheck,
  ): Promise<IncidentListItem[]> {
    const items = await this.repo.list(environment, filter);
    const visible: IncidentListItem[] = [];
    const scopes = new Map<string, ScopeFields | null>();
    for (const item of items) {
      if (item.subject === 'tap') {
        if (!scopes.has(item.subjectName))
          scopes.set(item.subjectName, (await this.tapSubject(environment, item.subjectName))?.scope ?? null);
        const scope = scopes.get(item.subjectName);
        if (scope === null || scope === undefined || !mayRead(access, 'read', 'tap', scope)) continue;
      }
      visible.push(item);
    }
    return visible;
  }

  async get(environment: string, id: string, access: AccessCheck): Promise<Incident> {
    const {
      evidence: _evidence,
      tapScripts: _scripts,
      ...incident
    } = await this.visible(environment, id, access, 'read');
    return incident;
  }

  /**
   * The evidence, with the values it quotes from rows (top values, quantiles) only for a caller who may
   * read the rows of the pipeline's destination: `search:query` on its database (for a tap, on the
   * database of the pipeline it feeds). Counts, rates, types, checks and the verdict are for every
   * reader. While it is computed: what is known so far.
   */
  async evidence(environment: string, id: string, access: AccessCheck): Promise<Evidence | PendingEvidence> {
    const incident = await this.visible(environment, id, access, 'read');
    if (incident.evidence === null) return this.pending(environment, incident);
    const readsRows = await this.readsRows(environment, incident, access);
    return readsRows ? incident.evidence : withoutValues(incident.evidence);
  }

  /** What an incident is about, for capability checks (null: no such incident). */
  async subjectOf(
    environment: string,
    id: string,
  ): Promise<{ subject: IncidentSubject; name: string } | null> {
    if (!UUID.test(id)) return null;
    const found = await this.repo.find(environment, id);
    return found && { subject: found.subject, name: found.subjectName };
  }

  /**
   * A tap script change opens an incident, unless one already compares the same two stored scripts
   * (a generated version, then the save that adopts it). Evidence: both versions run as the tap.
   */
  async tapScriptChanged(change: TapScriptChange): Promise<void> {
    const scripts: TapScriptVersions = { before: change.before, after: change.after, origin: change.origin };
    if (await this.repo.hasTapChange(change.environment, change.tap, scripts)) return;
    const id = randomUUID();
    const what = `script of tap '${change.tap}' went from version ${change.before.version} to ${change.after.version} (${change.origin})`;
    await this.repo.insert(change.environment, {
      id,
      subject: 'tap',
      subjectName: change.tap,
      verdict: 'pending',
      summary: `${what}; evidence pending`,
      scriptVersions: [],
      tapScripts: scripts,
    });
    const evidence = await this.computeTap(change.environment, change.tap, scripts, change.access);
    await this.repo.setEvidence(
      change.environment,
      id,
      evidence,
      tapSummaryOf(change.tap, scripts, evidence),
    );
  }

  async scriptChanged(change: ScriptChange): Promise<void> {
    const id = randomUUID();
    const versions: ScriptVersionChange[] = [
      { kind: change.kind, before: change.before, after: change.after },
    ];
    await this.repo.insert(change.environment, {
      id,
      subject: 'pipeline',
      subjectName: change.pipeline,
      verdict: 'pending',
      summary: `${change.kind} script of '${change.pipeline}' went from version ${change.before} to ${change.after} (${change.origin}); evidence pending`,
      scriptVersions: versions,
    });
    const evidence = await this.compute(change.environment, change.pipeline, versions);
    await this.repo.setEvidence(
      change.environment,
      id,
      evidence,
      summaryOf(change.pipeline, versions, evidence),
    );
  }

  /** The first real run of a tap with an incident's candidate script adds its profile to the evidence. */
  async tapRan(run: TapRan): Promise<void> {
    for (const incident of await this.repo.awaitingTapReal(run.environment, run.tap, run.scriptPath)) {
      const evidence = incident.evidence as Evidence;
      const real: RunProfile = {
        ...evidence.candidate,
        runId: run.runId,
        source: 'tap-run',
        recordCount: run.recordCount,
        // Its records went to the pipeline; they are not profiled column by column here.
        columns: [],
        durationMs: run.durationMs,
        sampledRows: 0,
        computedAt: new Date().toISOString(),
      };
      await this.repo.setEvidence(run.environment, incident.id, { ...evidence, real }, incident.summary);
    }
  }

  /** The first real job running an incident's change adds its profile to the evidence. */
  async jobLanded(job: JobLanded): Promise<void> {
    const waiting = await this.repo.awaitingReal(job.environment, job.pipeline);
    for (const incident of waiting) {
      const ran = incident.scriptVersions.every((c) =>
        job.versions.some((v) => v.kind === c.kind && v.version === c.after),
      );
      if (!ran) continue;
      const { candidate } = incident.evidence;
      const evidence: Evidence = {
        ...incident.evidence,
        real: {
          ...candidate,
          runId: job.pipelineToken,
          source: 'job',
          recordCount: job.loaded,
          // A job's rows are not profiled column by column here: they are in the destination.
          columns: [],
          dqFailures: job.dqFailures,
          dqPassRate: dqPassRate(job.rows, job.dqFailures),
          durationMs: job.durationMs,
          sampledRows: job.rows,
          computedAt: new Date().toISOString(),
        },
      };
      await this.repo.setEvidence(job.environment, incident.id, evidence, incident.summary);
    }
  }

  /**
   * Recomputes the evidence on the rows the pipeline last landed. A failing verdict restores the
   * earlier version (while the change is still the live script): `after` then equals `before`.
   */
  async verify(environment: string, id: string, access: AccessCheck): Promise<Incident> {
    const incident = await this.visible(environment, id, access, 'update');
    if (incident.status === 'resolved')
      throw new ConflictError(`incident '${id}' is resolved`).coded(IncidentErrorCode.Resolved);
    if (incident.tapScripts !== null) {
      // A tap's change is recomputed, never undone here: the tap's own routes roll a script back.
      const evidence = await this.computeTap(environment, incident.subjectName, incident.tapScripts, access);
      const summary = tapSummaryOf(incident.subjectName, incident.tapScripts, evidence);
      await this.repo.setEvidence(environment, id, evidence, summary);
      return this.get(environment, id, access);
    }
    const pipeline = incident.subjectName;
    const evidence = await this.compute(environment, pipeline, incident.scriptVersions);
    let versions = incident.scriptVersions;
    if (evidence.verdict === 'fail') {
      for (const c of incident.scriptVersions) {
        if (c.after === c.before) continue;
        const live = await this.codegen.live(environment, pipeline, c.kind);
        const changed = await this.codegen.version(environment, pipeline, c.kind, c.after);
        if (live === null || changed === null || live.script !== changed.script) {
          throw new ConflictError(
            `the ${c.kind} script of '${pipeline}' changed since version ${c.after}: nothing was restored`,
          ).coded(IncidentErrorCode.ScriptChanged);
        }
        await this.codegen.restore(environment, pipeline, c.kind, c.before, { quiet: true });
      }
      versions = incident.scriptVersions.map((c) => ({ ...c, after: c.before }));
    }
    const verified = { ...evidence, scriptVersions: versions };
    const summary =
      summaryOf(pipeline, incident.scriptVersions, evidence) +
      (evidence.verdict === 'fail'
        ? `; verification failed, version ${versions.map((v) => v.before).join(', ')} restored`
        : '');
    await this.repo.setEvidence(environment, id, verified, summary, versions);
    return this.get(environment, id, access);
  }

  async resolve(
    environment: string,
    id: string,
    resolution: string | null,
    access: AccessCheck,
  ): Promise<Incident> {
    await this.visible(environment, id, access, 'update');
    await this.repo.resolve(environment, id, resolution);
    return this.get(environment, id, access);
  }

  /** The thresholds a pipeline's evidence is checked against, and whether they are its own. */
  async thresholds(
    environment: string,
    pipeline: string,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    await this.pipelines.get(environment, pipeline);
    const own = await this.repo.thresholds(environment, pipeline);
    return { thresholds: { ...DEFAULT_THRESHOLDS, ...own }, custom: own !== null };
  }

  /** Sets a pipeline's thresholds: given fields over the current ones; the next evidence uses them. */
  async setThresholds(
    environment: string,
    pipeline: string,
    changes: Partial<Thresholds>,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    const { thresholds } = await this.thresholds(environment, pipeline);
    const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    await this.repo.setThresholds(environment, pipeline, { ...thresholds, ...defined });
    return this.thresholds(environment, pipeline);
  }

  /** Back to the built-in defaults. */
  async clearThresholds(
    environment: string,
    pipeline: string,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    await this.pipelines.get(environment, pipeline);
    await this.repo.clearThresholds(environment, pipeline);
    return this.thresholds(environment, pipeline);
  }

  deletePipeline(environment: string, pipeline: string): Promise<void> {
    return this.repo.deletePipeline(environment, pipeline);
  }

  deleteTap(environment: string, tap: string): Promise<void> {
    return this.repo.deleteTap(environment, tap);
  }

  private async found(environment: string, id: string): Promise<StoredIncident> {
    const incident = UUID.test(id) ? await this.repo.find(environment, id) : null;
    if (incident === null) throw notFound(id);
    return incident;
  }

  /** No value of any row yet: nothing here needs the data-read check. */
  private async pending(environment: string, incident: StoredIncident): Promise<PendingEvidence> {
    const name = await this.rowsPipeline(environment, incident);
    const pipeline = name === null ? null : await this.pipelines.find(environment, name);
    return {
      baseline: null,
      candidate: null,
      real: null,
      diff: null,
      blastRadius:
        pipeline !== null
          ? await this.reach.of(environment, pipeline.definition, this.feeding)
          : incident.subject === 'tap'
            ? emptyBlastRadius()
            : null,
      thresholds:
        pipeline === null
          ? DEFAULT_THRESHOLDS
          : (await this.thresholds(environment, pipeline.definition.name)).thresholds,
      checks: [],
      verdict: 'pending',
      computedAt: null,
      scriptVersions: incident.scriptVersions,
    };
  }

  /**
   * The incident, if the caller may `action` it. A pipeline's is checked by the route (its pipeline's
   * scope); a tap's needs the same capability on the tap, and is answered as absent otherwise.
   */
  private async visible(
    environment: string,
    id: string,
    access: AccessCheck,
    action: Action,
  ): Promise<StoredIncident> {
    const incident = await this.found(environment, id);
    if (incident.subject === 'tap') {
      const tap = await this.tapSubject(environment, incident.subjectName);
      if (tap === null) throw notFound(id);
      access.assertVisible(action, 'tap', tap.scope, `incident '${id}' does not exist`);
    }
    return incident;
  }

  /** `search:query` on the database of the pipeline whose rows the evidence quotes (a tap's target). */
  private async readsRows(
    environment: string,
    incident: StoredIncident,
    access: AccessCheck,
  ): Promise<boolean> {
    const caller = access.caller;
    if (caller === null) return true;
    const name = await this.rowsPipeline(environment, incident);
    const pipeline = name === null ? null : await this.pipelines.find(environment, name);
    return canOn(caller.ability, 'query', 'search', {
      database: pipeline?.definition.destination?.database?.dbName ?? null,
    });
  }

  /** The pipeline whose rows and thresholds an incident concerns: its own, or the one its tap feeds. */
  private async rowsPipeline(environment: string, incident: StoredIncident): Promise<string | null> {
    if (incident.subject === 'pipeline') return incident.subjectName;
    return (await this.tapSubject(environment, incident.subjectName))?.targetPipeline ?? null;
  }

  private async tapSubject(environment: string, tap: string) {
    return this.taps === null ? null : this.taps.subject(environment, tap);
  }

  /**
   * Both tap scripts run as test runs of the tap (nothing loaded) and their outputs are compared with
   * each other and with the tap's last outputs, against the thresholds of the pipeline it feeds.
   */
  private async computeTap(
    environment: string,
    tap: string,
    scripts: TapScriptVersions,
    access: AccessCheck,
  ): Promise<Evidence> {
    const source = this.taps;
    if (source === null) throw new Error('tap incidents need the taps module');
    const subject = await source.subject(environment, tap);
    const target = subject?.targetPipeline
      ? await this.pipelines.find(environment, subject.targetPipeline)
      : null;
    const side = async (pick: 'before' | 'after') => {
      const version = scripts[pick];
      const text = await source.script(environment, tap, version.scriptPath);
      const run =
        text === null
          ? { recordCount: 0, rows: [], error: `script version ${version.version} is gone`, durationMs: 0 }
          : await source.sample(environment, tap, text, access);
      return profileTapRun(run, text ?? '', version.version, target?.version ?? 0);
    };
    const baseline = await side('before');
    const candidate = await side('after');
    const lastOutputs = await source.lastOutputs(environment, tap);
    const diff = diffProfiles(baseline.profile, candidate.profile, lastOutputs, (p) => p.recordCount);
    const thresholds = target
      ? (await this.thresholds(environment, target.definition.name)).thresholds
      : DEFAULT_THRESHOLDS;
    const checks: Check[] = [
      candidateRuns(candidate.error),
      ...runChecks(diff, candidate.profile, thresholds),
    ];
    return {
      baseline: baseline.profile,
      candidate: candidate.profile,
      real: null,
      diff,
      blastRadius: target
        ? await this.reach.of(environment, target.definition, this.feeding)
        : emptyBlastRadius(),
      thresholds,
      checks,
      // A baseline that does not run leaves nothing to compare with.
      verdict: verdictOf(checks, baseline.error === null),
      computedAt: new Date().toISOString(),
    };
  }

  /** Baseline (the scripts before the change) and candidate (after) on the same sample, compared. */
  private async compute(
    environment: string,
    pipeline: string,
    versions: ScriptVersionChange[],
  ): Promise<Evidence> {
    const stored = await this.pipelines.get(environment, pipeline);
    const def = stored.definition;
    const { batch, landed, recentRatios } = await this.codegen.sample(
      environment,
      pipeline,
      scriptColumns(def),
    );
    const side = async (pick: 'before' | 'after'): Promise<ScriptSet> => ({
      specs: await this.specs(environment, def, versions, pick),
      pipelineVersion: stored.version,
    });
    const baseline = await profileRun(await side('before'), batch, landed);
    const candidate = await profileRun(await side('after'), batch, landed);
    const diff = diffProfiles(baseline.profile, candidate.profile, recentRatios);
    const { thresholds } = await this.thresholds(environment, pipeline);
    const checks: Check[] = [
      candidateRuns(candidate.error),
      ...runChecks(diff, candidate.profile, thresholds),
    ];
    return {
      baseline: baseline.profile,
      candidate: candidate.profile,
      real: null,
      diff,
      blastRadius: await this.reach.of(environment, def, this.feeding),
      thresholds,
      checks,
      // Evidence from a synthetic sample (nothing landed yet) is not enough to pass or fail a change.
      verdict: verdictOf(checks, landed),
      computedAt: new Date().toISOString(),
      scriptVersions: versions,
    };
  }

  /** The run specs of one side: changed kinds at their `before` or `after` version, others as live. */
  private async specs(
    environment: string,
    def: PipelineDefinition,
    versions: ScriptVersionChange[],
    pick: 'before' | 'after',
  ): Promise<ScriptRunSpec[]> {
    const specs: ScriptRunSpec[] = [];
    for (const kind of CODEGEN_KINDS) {
      if (instructionOf(def, kind) === null) continue;
      const change = versions.find((c) => c.kind === kind);
      const text = change
        ? await this.codegen.version(environment, def.name, kind, change[pick])
        : await this.codegen.live(environment, def.name, kind);
      if (text === null) continue;
      specs.push(await this.codegen.runSpec(kind, text.script, text.outputColumns));
    }
    return specs;
  }
}

function candidateRuns(error: string | null): Check {
  return {
    name: 'candidate-runs',
    passed: error === null,
    observed: error === null ? 'ran' : error.split('\n')[0].slice(0, 200),
    limit: 'runs on the sample',
  };
}

/** Authentication off: no caller, nothing is checked. */
function mayRead(access: AccessCheck, action: Action, resource: 'tap', scope: ScopeFields): boolean {
  return access.caller === null || canOn(access.caller.ability, action, resource, scope);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`incident '${id}' does not exist`).coded(IncidentErrorCode.NotFound);
}

/** The evidence without any value quoted from rows: no top values, no value quantiles. */
function withoutValues(evidence: Evidence): Evidence {
  const strip = (p: RunProfile): RunProfile => ({
    ...p,
    columns: p.columns.map(({ topK: _topK, quantiles: _quantiles, ...column }) => column),
  });
  return {
    ...evidence,
    baseline: strip(evidence.baseline),
    candidate: strip(evidence.candidate),
    real: evidence.real === null ? null : strip(evidence.real),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function tapSummaryOf(tap: string, scripts: TapScriptVersions, evidence: Evidence): string {
  const failed = evidence.checks.filter((c) => !c.passed).map((c) => `${c.name} (${c.observed})`);
  return (
    `tap '${tap}' script ${scripts.before.version} → ${scripts.after.version} (${scripts.origin}): ${evidence.verdict}` +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : '')
  );
}

function summaryOf(pipeline: string, versions: ScriptVersionChange[], evidence: Evidence): string {
  const what = versions.map((v) => `${v.kind} ${v.before} → ${v.after}`).join(', ');
  const failed = evidence.checks.filter((c) => !c.passed).map((c) => `${c.name} (${c.observed})`);
  return (
    `'${pipeline}' ${what}: ${evidence.verdict}` +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : '') +
    (evidence.candidate.source === 'landed-sample' ? '' : '; no landed rows to compare on yet')
  );
}
