import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { CodegenListener, CodegenService, JobLanded, ScriptChange } from '@tapyard/codegen';
import { AccessCheck, Action, ScopeFields, canOn } from '@tapyard/auth';
import { ConflictError, NotFoundError } from '@tapyard/core';
import { PipelinesService } from '@tapyard/pipelines';
import { RunProfile, Thresholds, dqPassRate } from './evidence';
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
import { TapEvidenceSource, TapRan, TapScriptChange } from './tap-evidence';
import { IncidentThresholds } from './incident-thresholds';
import { IncidentEvidence, withoutValues } from './incident-evidence';
import { summaryOf, tapSummaryOf } from './incident-summaries';

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
    private readonly limits: IncidentThresholds,
    private readonly evidenceBuilder: IncidentEvidence,
  ) {}

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
    if (incident.evidence === null)
      return this.evidenceBuilder.pending(
        environment,
        incident,
        await this.rowsPipeline(environment, incident),
        this.taps,
      );
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
    const evidence = await this.evidenceBuilder.ofTap(
      change.environment,
      change.tap,
      scripts,
      change.access,
      this.taps,
    );
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
    const evidence = await this.evidenceBuilder.ofPipeline(
      change.environment,
      change.pipeline,
      versions,
      this.taps,
    );
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
      const evidence = await this.evidenceBuilder.ofTap(
        environment,
        incident.subjectName,
        incident.tapScripts,
        access,
        this.taps,
      );
      const summary = tapSummaryOf(incident.subjectName, incident.tapScripts, evidence);
      await this.repo.setEvidence(environment, id, evidence, summary);
      return this.get(environment, id, access);
    }
    const pipeline = incident.subjectName;
    const evidence = await this.evidenceBuilder.ofPipeline(
      environment,
      pipeline,
      incident.scriptVersions,
      this.taps,
    );
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
  thresholds(environment: string, pipeline: string): Promise<{ thresholds: Thresholds; custom: boolean }> {
    return this.limits.of(environment, pipeline);
  }

  /** Sets a pipeline's thresholds: given fields over the current ones; the next evidence uses them. */
  setThresholds(
    environment: string,
    pipeline: string,
    changes: Partial<Thresholds>,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    return this.limits.set(environment, pipeline, changes);
  }

  /** Back to the built-in defaults. */
  clearThresholds(
    environment: string,
    pipeline: string,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    return this.limits.clear(environment, pipeline);
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
}

/** Authentication off: no caller, nothing is checked. */
function mayRead(access: AccessCheck, action: Action, resource: 'tap', scope: ScopeFields): boolean {
  return access.caller === null || canOn(access.caller.ability, action, resource, scope);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`incident '${id}' does not exist`).coded(IncidentErrorCode.NotFound);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
