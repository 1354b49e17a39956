import { errorMessage } from '@tapyard/core';
import { CodegenService } from '@tapyard/codegen';
import { ConfigFilesService } from '@tapyard/configfiles';
import { PipelineDefinition, SchemaField } from '@tapyard/model';
import { IngestPayload } from '@tapyard/queue';
import { CODEGEN_KINDS, ScriptRunSpec } from '@tapyard/scripts';
import { StageError } from './stage-error';
import { Counts } from './stage-thread/protocol';

/** A CodeGen script a job runs, with the version its status entries name. */
export type JobScript = ScriptRunSpec & { version: number | null };

/**
 * The pipeline's CodeGen scripts for this job, in stage order; a kind whose instruction has no script
 * to run (none written yet, no provider) fails its stage, saying why: rows are never loaded unchecked.
 */
export async function jobScripts(
  codegen: CodegenService,
  environment: string,
  def: PipelineDefinition,
): Promise<JobScript[]> {
  const out: JobScript[] = [];
  for (const kind of CODEGEN_KINDS) {
    const stage = kind === 'dataQuality' ? 'DataQuality' : 'Transformation';
    try {
      const live = await codegen.forRun(environment, def, kind);
      if (live === null) continue;
      out.push({
        ...(await codegen.runSpec(kind, live.script, live.outputColumns)),
        version: live.version,
      });
    } catch (err) {
      throw new StageError(stage, errorMessage(err));
    }
  }
  return out;
}

/**
 * The scripts jobScripts would give when that takes no model call and no write, looked up before
 * the job is planned so their sandboxes start while its input is read; null when a kind has none
 * ready (or the lookup fails): jobScripts then decides, after the plan, as before.
 */
export async function readyJobScripts(
  codegen: CodegenService,
  environment: string,
  def: PipelineDefinition,
): Promise<JobScript[] | null> {
  try {
    const out: JobScript[] = [];
    for (const kind of CODEGEN_KINDS) {
      const live = await codegen.readyForRun(environment, def, kind);
      if (live === undefined) return null;
      if (live === null) continue;
      out.push({ ...(await codegen.runSpec(kind, live.script, live.outputColumns)), version: live.version });
    }
    return out;
  } catch {
    return null;
  }
}

/** The text of the pipeline's validation schema, for the stage thread to compile; a missing one fails the job. */
export async function validationSchemaOf(
  configFiles: ConfigFilesService,
  environment: string,
  def: PipelineDefinition,
): Promise<{ file: string; text: string } | null> {
  const file = def.dataQuality.validationSchema;
  if (!file) return null;
  try {
    return { file, text: await configFiles.readValidationSchema(environment, file) };
  } catch (err) {
    throw new StageError('DataQuality', errorMessage(err));
  }
}

/**
 * What the next CodeGen script is dry-run on and its evidence computed from (kept only for
 * pipelines with scripts: it is data); losing it only means a synthetic sample.
 */
export async function recordLanded(
  codegen: CodegenService,
  p: IngestPayload,
  landed: {
    columns: SchemaField[];
    sample: Record<string, unknown>[];
    scripts: JobScript[];
    counts: Counts;
    loaded: number;
    durationMs: number;
  },
): Promise<void> {
  await codegen
    .saveSample(p.environment, p.pipeline, landed.columns, landed.sample)
    .then(() =>
      codegen.jobLanded({
        environment: p.environment,
        pipeline: p.pipeline,
        pipelineToken: p.pipelineToken,
        versions: landed.scripts.map((s) => ({ kind: s.kind, version: s.version })),
        rows: landed.counts.rows,
        loaded: landed.loaded,
        dqFailures: landed.counts.dq,
        durationMs: landed.durationMs,
      }),
    )
    .catch(() => undefined);
}
