import { Injectable } from '@nestjs/common';
import { CODEGEN_KINDS, ScriptRunSpec } from '@tapyard/scripts';
import { CodegenService, instructionOf, scriptColumns } from '@tapyard/codegen';
import { AccessCheck } from '@tapyard/auth';
import { PipelinesService } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import { Check, DEFAULT_THRESHOLDS, RunProfile, diffProfiles, runChecks, verdictOf } from './evidence';
import { ScriptSet, profileRun, profileTapRun } from './evidence-run';
import { Evidence, PendingEvidence, ScriptVersionChange, TapScriptVersions } from './incident.types';
import { StoredIncident } from './incidents.repository';
import { BlastRadiusReader, emptyBlastRadius } from './blast-radius';
import { IncidentThresholds } from './incident-thresholds';
import { TapEvidenceSource } from './tap-evidence';

/**
 * An incident's evidence, computed by platform code, never by a model: the scripts before and after a
 * change run in the sandbox (a pipeline's over the rows it last landed, a tap's as a test run of the
 * tap), and the two outputs are profiled and compared against the pipeline's thresholds.
 */
@Injectable()
export class IncidentEvidence {
  constructor(
    private readonly codegen: CodegenService,
    private readonly pipelines: PipelinesService,
    private readonly reach: BlastRadiusReader,
    private readonly limits: IncidentThresholds,
  ) {}

  /**
   * No value of any row yet: nothing here needs the data-read check. `name`: the pipeline whose rows
   * and thresholds the incident concerns (its own, or the one its tap feeds).
   */
  async pending(
    environment: string,
    incident: StoredIncident,
    name: string | null,
    taps: TapEvidenceSource | null,
  ): Promise<PendingEvidence> {
    const pipeline = name === null ? null : await this.pipelines.find(environment, name);
    return {
      baseline: null,
      candidate: null,
      real: null,
      diff: null,
      blastRadius:
        pipeline !== null
          ? await this.reach.of(environment, pipeline.definition, feedingOf(taps))
          : incident.subject === 'tap'
            ? emptyBlastRadius()
            : null,
      thresholds:
        pipeline === null
          ? DEFAULT_THRESHOLDS
          : (await this.limits.of(environment, pipeline.definition.name)).thresholds,
      checks: [],
      verdict: 'pending',
      computedAt: null,
      scriptVersions: incident.scriptVersions,
    };
  }

  /**
   * Both tap scripts run as test runs of the tap (nothing loaded) and their outputs are compared with
   * each other and with the tap's last outputs, against the thresholds of the pipeline it feeds.
   */
  async ofTap(
    environment: string,
    tap: string,
    scripts: TapScriptVersions,
    access: AccessCheck,
    source: TapEvidenceSource | null,
  ): Promise<Evidence> {
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
          : await source.sample(environment, tap, text, version.grant ?? [], access);
      return profileTapRun(run, text ?? '', version.version, target?.version ?? 0);
    };
    const baseline = await side('before');
    const candidate = await side('after');
    const lastOutputs = await source.lastOutputs(environment, tap);
    const diff = diffProfiles(baseline.profile, candidate.profile, lastOutputs, (p) => p.recordCount);
    const thresholds = target
      ? (await this.limits.of(environment, target.definition.name)).thresholds
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
        ? await this.reach.of(environment, target.definition, feedingOf(source))
        : emptyBlastRadius(),
      thresholds,
      checks,
      // A baseline that does not run leaves nothing to compare with.
      verdict: verdictOf(checks, baseline.error === null),
      computedAt: new Date().toISOString(),
    };
  }

  /** Baseline (the scripts before the change) and candidate (after) on the same sample, compared. */
  async ofPipeline(
    environment: string,
    pipeline: string,
    versions: ScriptVersionChange[],
    taps: TapEvidenceSource | null,
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
    const { thresholds } = await this.limits.of(environment, pipeline);
    const checks: Check[] = [
      candidateRuns(candidate.error),
      ...runChecks(diff, candidate.profile, thresholds),
    ];
    return {
      baseline: baseline.profile,
      candidate: candidate.profile,
      real: null,
      diff,
      blastRadius: await this.reach.of(environment, def, feedingOf(taps)),
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

/** The taps feeding a pipeline, for its blast radius (none in a process without taps). */
function feedingOf(
  taps: TapEvidenceSource | null,
): (environment: string, pipeline: string) => Promise<string[]> {
  return (environment, pipeline) =>
    taps === null ? Promise.resolve([]) : taps.feeding(environment, pipeline);
}

function candidateRuns(error: string | null): Check {
  return {
    name: 'candidate-runs',
    passed: error === null,
    observed: error === null ? 'ran' : error.split('\n')[0].slice(0, 200),
    limit: 'runs on the sample',
  };
}
/** The evidence without any value quoted from rows: no top values, no value quantiles. */
export function withoutValues(evidence: Evidence): Evidence {
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
