import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
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
import { AppAbility, canOn } from '@tapyard/auth';
import { ConflictError, NotFoundError } from '@tapyard/core';
import { DESTINATIONS, DestinationRegistry, destinationsFor } from '@tapyard/destinations';
import { DestinationSections, PipelinesService, pipelineScope } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import {
  Check,
  DEFAULT_THRESHOLDS,
  RunProfile,
  diffProfiles,
  dqPassRate,
  runChecks,
  verdictOf,
} from './evidence';
import { ScriptSet, profileRun } from './evidence-run';
import {
  BlastRadius,
  Evidence,
  Incident,
  IncidentListItem,
  PendingEvidence,
  ScriptVersionChange,
} from './incident.types';
import { IncidentsRepository } from './incidents.repository';
import { IncidentErrorCode } from './incident-errors';

/**
 * Incidents of pipelines: every CodeGen script that replaces an earlier version opens one, with evidence
 * computed by platform code, never by a model: the pipeline's scripts before and after the change run
 * in the sandbox over the rows it last landed, and the two outputs are profiled and compared against
 * thresholds. The first real job that runs the change adds its own profile. Verify recomputes; a
 * failing verification restores the earlier version.
 */
@Injectable()
export class IncidentsService implements OnModuleInit, CodegenListener {
  constructor(
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    private readonly codegen: CodegenService,
    private readonly pipelines: PipelinesService,
    private readonly repo: IncidentsRepository,
    private readonly sections: DestinationSections,
  ) {}

  onModuleInit(): void {
    this.codegen.listen(this);
  }

  list(
    environment: string,
    filter: { pipeline?: string; tap?: string; verdict?: string },
  ): Promise<IncidentListItem[]> {
    // Only pipelines have incidents so far (tap script changes do not open any).
    if (filter.tap !== undefined) return Promise.resolve([]);
    return this.repo.list(environment, filter);
  }

  async get(environment: string, id: string): Promise<Incident> {
    const { evidence: _evidence, ...incident } = await this.found(environment, id);
    return incident;
  }

  /**
   * The evidence, with the values it quotes from the pipeline's rows (top values, quantiles) only for a
   * caller who may read those rows: `search:query` over the pipeline's scope, the capability that reads
   * rows from its destination. Counts, rates, types, checks and the verdict are for every reader.
   * `caller` null: nobody is checked (authentication is off). While it is computed: what is known so far.
   */
  async evidence(
    environment: string,
    id: string,
    caller: DataReader | null,
  ): Promise<Evidence | PendingEvidence> {
    const incident = await this.found(environment, id);
    if (incident.evidence === null) return this.pending(environment, incident);
    if (caller === null) return incident.evidence;
    const pipeline = await this.pipelines.find(environment, incident.subjectName);
    const readsRows =
      pipeline !== null && canOn(caller.ability, 'query', 'search', pipelineScope(pipeline.definition));
    return readsRows ? incident.evidence : withoutValues(incident.evidence);
  }

  /** The pipeline an incident is about, for capability checks (null: no such incident). */
  async subjectOf(environment: string, id: string): Promise<string | null> {
    if (!UUID.test(id)) return null;
    return (await this.repo.find(environment, id))?.subjectName ?? null;
  }

  async scriptChanged(change: ScriptChange): Promise<void> {
    const id = randomUUID();
    const versions: ScriptVersionChange[] = [
      { kind: change.kind, before: change.before, after: change.after },
    ];
    await this.repo.insert(change.environment, {
      id,
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
  async verify(environment: string, id: string): Promise<Incident> {
    const incident = await this.found(environment, id);
    if (incident.status === 'resolved')
      throw new ConflictError(`incident '${id}' is resolved`).coded(IncidentErrorCode.Resolved);
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
    return this.get(environment, id);
  }

  async resolve(environment: string, id: string, resolution: string | null): Promise<Incident> {
    await this.found(environment, id);
    await this.repo.resolve(environment, id, resolution);
    return this.get(environment, id);
  }

  deletePipeline(environment: string, pipeline: string): Promise<void> {
    return this.repo.deletePipeline(environment, pipeline);
  }

  private async found(environment: string, id: string): Promise<Incident & { evidence: Evidence | null }> {
    const incident = UUID.test(id) ? await this.repo.find(environment, id) : null;
    if (incident === null)
      throw new NotFoundError(`incident '${id}' does not exist`).coded(IncidentErrorCode.NotFound);
    return incident;
  }

  /** No value of any row yet: nothing here needs the data-read check. */
  private async pending(environment: string, incident: Incident): Promise<PendingEvidence> {
    const pipeline = await this.pipelines.find(environment, incident.subjectName);
    return {
      baseline: null,
      candidate: null,
      real: null,
      diff: null,
      blastRadius: pipeline === null ? null : this.blastRadius(pipeline.definition),
      thresholds: DEFAULT_THRESHOLDS,
      checks: [],
      verdict: 'pending',
      computedAt: null,
      scriptVersions: incident.scriptVersions,
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
    const checks: Check[] = [
      {
        name: 'candidate-runs',
        passed: candidate.error === null,
        observed: candidate.error === null ? 'ran' : candidate.error.split('\n')[0].slice(0, 200),
        limit: 'runs on the sample',
      },
      ...runChecks(diff, candidate.profile, DEFAULT_THRESHOLDS),
    ];
    return {
      baseline: baseline.profile,
      candidate: candidate.profile,
      real: null,
      diff,
      blastRadius: this.blastRadius(def),
      thresholds: DEFAULT_THRESHOLDS,
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

  /** What the pipeline's output reaches: its destinations as configured (no lineage beyond them). */
  private blastRadius(def: PipelineDefinition): BlastRadius {
    const datasets = destinationsFor(this.destinations, def.destination).map((d) => ({
      kind: d.name,
      coords: d.describe(def.destination),
    }));
    return {
      downstreamPipelines: [],
      downstreamDatasets: datasets,
      ucTables: datasets.filter((d) => d.kind === 'databricks').map((d) => d.coords),
      consumersFromContracts: [],
      lastDownstreamRunAt: '',
      agentsThatQueriedLast7d: [],
      secretName: this.sections.namedSecrets(def.destination)[0] ?? '',
    };
  }
}

/** Whoever asks for evidence, as far as its capabilities go. */
export interface DataReader {
  ability: AppAbility;
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

function summaryOf(pipeline: string, versions: ScriptVersionChange[], evidence: Evidence): string {
  const what = versions.map((v) => `${v.kind} ${v.before} → ${v.after}`).join(', ');
  const failed = evidence.checks.filter((c) => !c.passed).map((c) => `${c.name} (${c.observed})`);
  return (
    `'${pipeline}' ${what}: ${evidence.verdict}` +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : '') +
    (evidence.candidate.source === 'landed-sample' ? '' : '; no landed rows to compare on yet')
  );
}
