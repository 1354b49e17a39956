import type { PipelineDefinition, SchemaField } from '@tapyard/model';
import { outputFields } from '@tapyard/pipelines';
import type { Origin } from './script-records';
import type { CodegenKind } from '@tapyard/scripts';

/** Spec "CodeGen script entry". */
export interface CodegenEntry {
  kind: CodegenKind;
  instruction: string;
  script: string | null;
  generatedAt: string | null;
  model: string | null;
  modelIsCurrent: boolean;
  status: 'ready' | 'pending';
  pendingReason: string | null;
  origin: Origin | null;
  version?: number;
  fingerprint: string | null;
  storage: 'minio' | 'github' | null;
  repoPath: string | null;
  commitSha: string | null;
  drift: boolean;
  headSha?: string;
  conflict?: boolean;
  conflictReason?: string;
  noop?: true;
}

export interface VersionItem {
  version: number;
  origin: Origin | null;
  model: string | null;
  generatedAt: string | null;
  fingerprint: string | null;
  commitSha: string | null;
}

/** A new live script replaced an earlier version (what an incident is opened for). */
export interface ScriptChange {
  environment: string;
  pipeline: string;
  kind: CodegenKind;
  before: number;
  after: number;
  origin: Origin;
}

/** A job that ran a pipeline's scripts landed: rows read, rows loaded, rows its DQ rejected. */
export interface JobLanded {
  environment: string;
  pipeline: string;
  pipelineToken: string;
  versions: { kind: CodegenKind; version: number | null }[];
  rows: number;
  loaded: number;
  dqFailures: number;
  durationMs: number;
}

/** Told of script changes and landed jobs (incidents); a listener's failure never fails the change. */
export interface CodegenListener {
  scriptChanged(change: ScriptChange): Promise<void>;
  jobLanded(job: JobLanded): Promise<void>;
}

export const NO_PROVIDER =
  "no model provider is configured: create the secret 'ai' (a script is written on the next save, run or regenerate)";

/** The columns a pipeline's scripts are given: the rows as typed and mapped, before any script. */
export function scriptColumns(def: PipelineDefinition): SchemaField[] {
  return outputFields(def.source.schemaProperties.fields, def.transformation.mappings);
}

export function instructionOf(def: PipelineDefinition, kind: CodegenKind): string | null {
  const text = kind === 'dataQuality' ? def.dataQuality.aiInstruction : def.transformation.aiInstruction;
  return text && text.trim() !== '' ? text : null;
}
