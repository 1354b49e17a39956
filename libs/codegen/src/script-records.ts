import type { SchemaField } from '@tapyard/model';
import type { CodegenKind } from '@tapyard/scripts';

export type Origin = 'save' | 'run' | 'regenerate' | 'repository' | 'restore' | 'restore-version';
export type Storage = 'minio' | 'github';

/** The live script of a pipeline and kind, as recorded (its text lives in the store it names). */
export interface ScriptRecord {
  pipeline: string;
  kind: CodegenKind;
  version: number | null;
  origin: Origin | null;
  model: string | null;
  generatedAt: string | null;
  fingerprint: string | null;
  contractVersion: number;
  outputColumns: SchemaField[];
  storage: Storage;
  objectKey: string | null;
  repoPath: string | null;
  commitSha: string | null;
  pendingReason: string | null;
  conflictReason: string | null;
}

export interface ScriptVersion {
  version: number;
  origin: Origin | null;
  model: string | null;
  generatedAt: string | null;
  fingerprint: string | null;
  contractVersion: number;
  outputColumns: SchemaField[];
  script: string;
  commitSha: string | null;
}

export interface RecordRow {
  pipeline: string;
  kind: CodegenKind;
  version: number | null;
  origin: Origin | null;
  model: string | null;
  generated_at: Date | null;
  fingerprint: string | null;
  contract_version: number;
  output_columns: SchemaField[];
  storage: Storage;
  object_key: string | null;
  repo_path: string | null;
  commit_sha: string | null;
  pending_reason: string | null;
  conflict_reason: string | null;
}

export interface VersionRow {
  version: number;
  origin: Origin | null;
  model: string | null;
  generated_at: Date | null;
  fingerprint: string | null;
  contract_version: number;
  output_columns: SchemaField[];
  script: string;
  commit_sha: string | null;
}

/** What records and versions share: who wrote the script, for what, and where it was committed. */
export const authorship = (r: Omit<VersionRow, 'version' | 'script'>) => ({
  origin: r.origin,
  model: r.model,
  generatedAt: r.generated_at?.toISOString() ?? null,
  fingerprint: r.fingerprint,
  contractVersion: r.contract_version,
  outputColumns: r.output_columns,
  commitSha: r.commit_sha,
});

export const toRecord = (r: RecordRow): ScriptRecord => ({
  ...authorship(r),
  pipeline: r.pipeline,
  kind: r.kind,
  version: r.version,
  storage: r.storage,
  objectKey: r.object_key,
  repoPath: r.repo_path,
  pendingReason: r.pending_reason,
  conflictReason: r.conflict_reason,
});

export const toVersion = (r: VersionRow): ScriptVersion => ({
  ...authorship(r),
  version: r.version,
  script: r.script,
});

export const RECORD_COLUMNS = `pipeline, kind, version, origin, model, generated_at, fingerprint, contract_version,
  output_columns, storage, object_key, repo_path, commit_sha, pending_reason, conflict_reason`;
export const VERSION_COLUMNS = `version, origin, model, generated_at, fingerprint, contract_version, output_columns,
  script, commit_sha`;

/** A new live script: the record and the version it adds, written together. */
export interface NewLive {
  origin: Origin;
  model: string | null;
  generatedAt: string | null;
  fingerprint: string | null;
  contractVersion: number;
  outputColumns: SchemaField[];
  script: string;
  storage: Storage;
  objectKey: string | null;
  repoPath: string | null;
  commitSha: string | null;
}
