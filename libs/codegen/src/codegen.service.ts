import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService, FeatureModel } from '@tapyard/ai';
import { LOGGER, NotFoundError, UnprocessableError, ValidationError, errorMessage } from '@tapyard/core';
import {
  PipelineDefinition,
  PipelinesService,
  SchemaField,
  TypedBatch,
  outputFields,
} from '@tapyard/pipelines';
import { CodegenRepository, NewLive, Origin, ScriptRecord } from './codegen.repository';
import { Candidate, CandidateRefused, ScriptAuthor } from './script-author';
import { CODEGEN_KINDS, CONTRACT_VERSION, CodegenKind, fingerprint, isCodegenKind } from './script-contract';
import { ScriptConflictError, ScriptStore, StoredAt } from './script-store';

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

const NO_PROVIDER =
  "no model provider is configured: create the secret 'ai' (a script is written on the next save, run or regenerate)";

/** The columns a pipeline's scripts are given: the rows as typed and mapped, before any script. */
export function scriptColumns(def: PipelineDefinition): SchemaField[] {
  return outputFields(def.source.schemaProperties.fields, def.transformation.mappings);
}

export function instructionOf(def: PipelineDefinition, kind: CodegenKind): string | null {
  const text = kind === 'dataQuality' ? def.dataQuality.aiInstruction : def.transformation.aiInstruction;
  return text && text.trim() !== '' ? text : null;
}

/**
 * CodeGen scripts of pipelines: entries, version history, regenerate, pull and restore (spec "CodeGen
 * script version restore", addendum "CodeGen scripts"). The model only proposes: a script goes live
 * after the contract's checks and a dry run, through the store (object or repository commit), as a new
 * numbered version; the pipeline's definition version never changes with its scripts.
 */
@Injectable()
export class CodegenService {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly pipelines: PipelinesService,
    private readonly repo: CodegenRepository,
    private readonly store: ScriptStore,
    private readonly author: ScriptAuthor,
    private readonly ai: AiService,
  ) {}

  private readonly listeners: CodegenListener[] = [];

  listen(listener: CodegenListener): void {
    this.listeners.push(listener);
  }

  private notify(what: string, call: (l: CodegenListener) => Promise<void>): void {
    for (const l of this.listeners) {
      call(l).catch((err: unknown) =>
        this.logger.warn({ err: errorMessage(err) }, `codegen listener failed (${what})`),
      );
    }
  }

  async entries(environment: string, pipeline: string): Promise<Record<CodegenKind, CodegenEntry | null>> {
    const def = (await this.pipelines.get(environment, pipeline)).definition;
    const current = await this.currentModel(environment);
    const out = { dataQuality: null, transformation: null } as Record<CodegenKind, CodegenEntry | null>;
    for (const kind of CODEGEN_KINDS) {
      const record = await this.repo.find(environment, pipeline, kind);
      if (instructionOf(def, kind) === null && record === null) continue;
      out[kind] = await this.entry(environment, def, kind, record, current);
    }
    return out;
  }

  async versions(environment: string, pipeline: string, kind: string): Promise<VersionItem[]> {
    const { def, k } = await this.target(environment, pipeline, kind, false);
    await this.numberFirst(environment, def.name, k);
    return (await this.repo.versions(environment, def.name, k)).map((v) => ({
      version: v.version,
      origin: v.origin,
      model: v.model,
      generatedAt: v.generatedAt,
      fingerprint: v.fingerprint,
      commitSha: v.commitSha,
    }));
  }

  /**
   * Writes a new script with the model. A script that fails its checks or dry run leaves the entry
   * pending with the reason (the live one keeps running); a repository file edited since the recorded
   * commit is not overwritten unless `overwrite` (the entry carries the conflict instead).
   */
  async regenerate(
    environment: string,
    pipeline: string,
    kind: string,
    overwrite: boolean,
    origin: Origin = 'regenerate',
    signal?: AbortSignal,
  ): Promise<CodegenEntry> {
    const { def, k, instruction } = await this.target(environment, pipeline, kind, true);
    const model = await this.ai.model(environment, 'codegen');
    await this.generate(environment, def, k, instruction as string, model, origin, overwrite, signal);
    return this.entryOf(environment, def, k);
  }

  /** Adopts the repository head's file (origin `repository`); clears a conflict. */
  async pull(environment: string, pipeline: string, kind: string): Promise<CodegenEntry> {
    const { def, k, instruction } = await this.target(environment, pipeline, kind, true);
    const record = await this.repo.find(environment, def.name, k);
    if (record === null || record.storage !== 'github' || record.repoPath === null) {
      throw new ValidationError(
        `the ${k} script of pipeline '${def.name}' is not stored in a code repository`,
      );
    }
    const head = await this.store.head(environment, record);
    if (head === null || head.text === null) {
      throw new UnprocessableError(
        `${record.repoPath} is not on the repository's branch head: nothing to pull`,
      );
    }
    const live = await this.store.read(environment, record);
    if (head.text === live) {
      // Nothing to adopt (the head moved for other files, or the edit was undone): a conflict is over.
      if (record.conflictReason !== null) await this.repo.setConflict(environment, def.name, k, null);
    } else {
      await this.adopt(environment, def, k, record, head.sha, head.text, instruction as string);
    }
    return this.entryOf(environment, def, k);
  }

  /** Spec "CodeGen script version restore", rules 1-4 (the route checks rule 5's capability). */
  /**
   * `actor` (the caller's key label or `session:<username>`): audited as
   * `codegen-script-restore-version:<kind>`, refused or not. `quiet`: no listener hears of it (an
   * incident's own verification restoring the earlier version).
   */
  async restore(
    environment: string,
    pipeline: string,
    kind: string,
    version: number,
    options: { quiet?: boolean; actor?: string } = {},
  ): Promise<CodegenEntry> {
    if (options.actor === undefined)
      return this.restoreVersion(environment, pipeline, kind, version, options);
    const audit = { event: `codegen-script-restore-version:${kind}`, key: options.actor, pipeline, version };
    try {
      const entry = await this.restoreVersion(environment, pipeline, kind, version, options);
      this.logger.info(
        { ...audit, outcome: entry.noop ? 'noop' : 'restored', newVersion: entry.version },
        'audit',
      );
      return entry;
    } catch (err) {
      this.logger.warn({ ...audit, outcome: 'refused', reason: errorMessage(err) }, 'audit');
      throw err;
    }
  }

  private async restoreVersion(
    environment: string,
    pipeline: string,
    kind: string,
    version: number,
    options: { quiet?: boolean },
  ): Promise<CodegenEntry> {
    const { def, k, instruction } = await this.target(environment, pipeline, kind, true);
    await this.numberFirst(environment, def.name, k);
    const wanted = await this.repo.version(environment, def.name, k, version);
    if (wanted === null) {
      throw new NotFoundError(`the ${k} script of pipeline '${def.name}' has no version ${version}`);
    }
    const record = await this.repo.find(environment, def.name, k);
    const live = record ? await this.store.read(environment, record) : null;
    if (record !== null && live === wanted.script) {
      return { ...(await this.entryOf(environment, def, k)), noop: true };
    }
    const columns = scriptColumns(def);
    const now = fingerprint(instruction as string, columns);
    if (wanted.contractVersion !== CONTRACT_VERSION) {
      throw new UnprocessableError(
        `version ${version} was written for script contract ${wanted.contractVersion}, not ${CONTRACT_VERSION}; nothing changed`,
      );
    }
    if (wanted.fingerprint !== now) {
      throw new UnprocessableError(
        `version ${version} was written for a different instruction or source schema than the pipeline has now; nothing changed`,
      );
    }
    const checked = await this.author.check(k, wanted.script, columns);
    if (checked.problems.length > 0) {
      throw new UnprocessableError(
        `version ${version} no longer passes the script checks: ${checked.problems.join('; ')}`,
      );
    }
    const at = await this.store.write(
      environment,
      def.name,
      k,
      wanted.script,
      `Restore ${k} script of ${def.name} to version ${version}`,
      record,
      false,
    );
    await this.goLive(environment, def.name, k, record, options.quiet === true, {
      origin: 'restore-version',
      model: wanted.model,
      generatedAt: wanted.generatedAt,
      fingerprint: wanted.fingerprint,
      contractVersion: wanted.contractVersion,
      outputColumns: checked.outputColumns,
      script: wanted.script,
      ...at,
    });
    return this.entryOf(environment, def, k);
  }

  /**
   * After a pipeline was saved: a kind whose instruction or columns changed gets a new script (origin
   * `save`); without a provider it waits as pending. Runs in the background of the save (a model call
   * must not hold the save up, nor fail it): its outcome shows in the entry.
   */
  afterSave(environment: string, pipeline: string): void {
    this.writeAfterSave(environment, pipeline).catch((err: unknown) => {
      this.logger.warn({ pipeline, err: errorMessage(err) }, 'codegen after save failed');
    });
  }

  private async writeAfterSave(environment: string, pipeline: string): Promise<void> {
    const def = (await this.pipelines.get(environment, pipeline)).definition;
    for (const kind of CODEGEN_KINDS) {
      const instruction = instructionOf(def, kind);
      if (instruction === null) continue;
      const record = await this.repo.find(environment, pipeline, kind);
      if (record?.fingerprint === fingerprint(instruction, scriptColumns(def))) continue;
      if (record?.conflictReason) continue;
      const model = await this.ai.optionalModel(environment, 'codegen');
      if (model === null) {
        await this.repo.setPending(
          environment,
          pipeline,
          kind,
          NO_PROVIDER,
          record?.storage ?? 'minio',
          CONTRACT_VERSION,
        );
        continue;
      }
      await this.generate(environment, def, kind, instruction, model, 'save', false).catch((err: unknown) => {
        this.logger.warn({ pipeline, kind, err: errorMessage(err) }, 'codegen script not generated on save');
      });
    }
  }

  /**
   * The live script of a kind for a job, generated now (origin `run`) when the instruction has none that
   * fits yet. A conflict runs the recorded commit without a model call. Null when the kind has no
   * instruction; throws when there is no script to run, saying why.
   */
  async forRun(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
  ): Promise<{ script: string; outputColumns: SchemaField[]; version: number | null } | null> {
    const instruction = instructionOf(def, kind);
    if (instruction === null) return null;
    let record = await this.repo.find(environment, def.name, kind);
    const fits = record?.fingerprint === fingerprint(instruction, scriptColumns(def));
    if (!fits && !record?.conflictReason) {
      const model = await this.ai.optionalModel(environment, 'codegen');
      if (model === null) {
        await this.repo.setPending(
          environment,
          def.name,
          kind,
          NO_PROVIDER,
          record?.storage ?? 'minio',
          CONTRACT_VERSION,
        );
      } else {
        await this.generate(environment, def, kind, instruction, model, 'run', false).catch(
          (err: unknown) => {
            this.logger.warn(
              { pipeline: def.name, kind, err: errorMessage(err) },
              'codegen script not generated on run',
            );
          },
        );
      }
      record = await this.repo.find(environment, def.name, kind);
    }
    const script = record && record.version !== null ? await this.store.read(environment, record) : null;
    if (record === null || script === null) {
      const why = record?.pendingReason ?? 'no script has been written for it yet';
      throw new Error(`the pipeline's ${kind} instruction has no script to run: ${why}`);
    }
    return { script, outputColumns: record.outputColumns, version: record.version };
  }

  /** A sample of the rows a job landed, for the next dry run. */
  saveSample(
    environment: string,
    pipeline: string,
    columns: SchemaField[],
    rows: Record<string, unknown>[],
  ): Promise<void> {
    return this.repo.saveSample(environment, pipeline, columns, rows);
  }

  get runSpec(): ScriptAuthor['runSpec'] {
    return this.author.runSpec.bind(this.author);
  }

  deletePipeline(environment: string, pipeline: string): Promise<void> {
    return this.repo.deletePipeline(environment, pipeline);
  }

  private async generate(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
    instruction: string,
    model: FeatureModel,
    origin: Origin,
    overwrite: boolean,
    signal?: AbortSignal,
  ): Promise<void> {
    const record = await this.repo.find(environment, def.name, kind);
    const columns = scriptColumns(def);
    const current = record ? await this.store.read(environment, record).catch(() => null) : null;
    let candidate: Candidate;
    try {
      candidate = await this.author.write(model, kind, instruction, columns, current, signal);
      await this.author.dryRun(
        environment,
        def.name,
        kind,
        candidate.script,
        columns,
        candidate.outputColumns,
      );
    } catch (err) {
      if (!(err instanceof CandidateRefused)) throw err;
      await this.repo.setPending(
        environment,
        def.name,
        kind,
        err.message,
        record?.storage ?? 'minio',
        CONTRACT_VERSION,
      );
      return;
    }
    let at: StoredAt;
    try {
      at = await this.store.write(
        environment,
        def.name,
        kind,
        candidate.script,
        `${origin === 'regenerate' ? 'Regenerate' : 'Generate'} ${kind} script of ${def.name} (${candidate.model})`,
        record,
        overwrite,
      );
    } catch (err) {
      if (!(err instanceof ScriptConflictError) || record === null) throw err;
      await this.repo.setConflict(environment, def.name, kind, err.message);
      return;
    }
    await this.goLive(environment, def.name, kind, record, false, {
      origin,
      model: candidate.model,
      generatedAt: new Date().toISOString(),
      fingerprint: fingerprint(instruction, columns),
      contractVersion: CONTRACT_VERSION,
      outputColumns: candidate.outputColumns,
      script: candidate.script,
      ...at,
    });
  }

  private async adopt(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
    record: ScriptRecord,
    sha: string,
    text: string,
    instruction: string,
  ): Promise<void> {
    const columns = scriptColumns(def);
    const checked = await this.author.check(kind, text, columns);
    if (checked.problems.length > 0) {
      throw new UnprocessableError(
        `${record.repoPath ?? 'the file'} at ${sha.slice(0, 12)} does not meet the script contract: ${checked.problems.join('; ')}`,
      );
    }
    await this.goLive(environment, def.name, kind, record, false, {
      origin: 'repository',
      model: null,
      generatedAt: new Date().toISOString(),
      fingerprint: fingerprint(instruction, columns),
      contractVersion: CONTRACT_VERSION,
      outputColumns: checked.outputColumns,
      script: text,
      storage: 'github',
      objectKey: null,
      repoPath: record.repoPath,
      commitSha: sha,
    });
  }

  /** Records a new live script and tells the listeners when it replaced an earlier version. */
  private async goLive(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    previous: ScriptRecord | null,
    quiet: boolean,
    live: NewLive,
  ): Promise<void> {
    const after = await this.repo.addLive(environment, pipeline, kind, live);
    const before = previous?.version ?? null;
    if (before === null || quiet) return;
    this.notify('scriptChanged', (l) =>
      l.scriptChanged({ environment, pipeline, kind, before, after, origin: live.origin }),
    );
  }

  /** After a job that ran scripts: its output ratio (for the next evidence) and the listeners. */
  async jobLanded(job: JobLanded): Promise<void> {
    if (job.rows > 0) await this.repo.addRatio(job.environment, job.pipeline, job.loaded / job.rows);
    this.notify('jobLanded', (l) => l.jobLanded(job));
  }

  /** A version's text and declared columns (null: no such version). */
  async version(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    version: number,
  ): Promise<{ script: string; outputColumns: SchemaField[] } | null> {
    const v = await this.repo.version(environment, pipeline, kind, version);
    return v && { script: v.script, outputColumns: v.outputColumns };
  }

  /** The live script of a kind as recorded (its text, its declared columns), or null. */
  async live(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
  ): Promise<{ script: string; outputColumns: SchemaField[]; version: number | null } | null> {
    const record = await this.repo.find(environment, pipeline, kind);
    if (record === null) return null;
    const script = await this.store.read(environment, record);
    return script === null ? null : { script, outputColumns: record.outputColumns, version: record.version };
  }

  /** What evidence is computed on: the last landed rows (or a synthetic pair), and recent output ratios. */
  async sample(
    environment: string,
    pipeline: string,
    columns: SchemaField[],
  ): Promise<{ batch: TypedBatch; landed: boolean; recentRatios: number[] }> {
    return this.author.sample(environment, pipeline, columns);
  }

  private async numberFirst(environment: string, pipeline: string, kind: CodegenKind): Promise<void> {
    const record = await this.repo.find(environment, pipeline, kind);
    if (record === null || record.version !== null) return;
    const script = await this.store.read(environment, record);
    if (script !== null) await this.repo.numberFirst(environment, pipeline, kind, script);
  }

  /** 404 unknown pipeline, 400 unknown kind or (when needed) no instruction of that kind. */
  private async target(
    environment: string,
    pipeline: string,
    kind: string,
    needsInstruction: boolean,
  ): Promise<{ def: PipelineDefinition; k: CodegenKind; instruction: string | null }> {
    const def = (await this.pipelines.get(environment, pipeline)).definition;
    if (!isCodegenKind(kind)) {
      throw new ValidationError(`unknown script kind '${kind}': dataQuality or transformation`, [
        { field: 'kind', problem: 'is not dataQuality or transformation' },
      ]);
    }
    const instruction = instructionOf(def, kind);
    if (needsInstruction && instruction === null) {
      const field = kind === 'dataQuality' ? 'dataQuality.aiInstruction' : 'transformation.aiInstruction';
      throw new ValidationError(`pipeline '${pipeline}' has no ${field}`, [{ field, problem: 'is not set' }]);
    }
    return { def, k: kind, instruction };
  }

  private async entryOf(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
  ): Promise<CodegenEntry> {
    const record = await this.repo.find(environment, def.name, kind);
    return this.entry(environment, def, kind, record, await this.currentModel(environment));
  }

  private async entry(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
    record: ScriptRecord | null,
    currentModel: string | null,
  ): Promise<CodegenEntry> {
    const instruction = instructionOf(def, kind) ?? '';
    const script = record ? await this.store.read(environment, record) : null;
    const fits = record?.fingerprint === fingerprint(instruction, scriptColumns(def));
    // "No provider" stops being the reason once one is configured: the next save, run or regenerate writes it.
    const stored =
      record?.pendingReason === NO_PROVIDER && currentModel !== null ? null : record?.pendingReason;
    const pendingReason =
      stored ??
      (script === null
        ? 'no script has been written yet: it is written on the next save, run or regenerate'
        : fits
          ? null
          : 'the instruction or the source schema changed since the script was written; it is rewritten on the next save, run or regenerate');
    const drift = record ? await this.store.drift(environment, record) : { drift: false, headSha: null };
    const entry: CodegenEntry = {
      kind,
      instruction,
      script,
      generatedAt: record?.generatedAt ?? null,
      model: record?.model ?? null,
      modelIsCurrent: record?.model != null && record.model === currentModel,
      status: pendingReason === null ? 'ready' : 'pending',
      pendingReason,
      origin: record?.origin ?? null,
      fingerprint: record?.fingerprint ?? null,
      storage: record?.storage ?? null,
      repoPath: record?.repoPath ?? null,
      commitSha: record?.commitSha ?? null,
      drift: drift.drift,
    };
    if (record?.version != null) entry.version = record.version;
    if (drift.headSha !== null) entry.headSha = drift.headSha;
    if (record !== null) {
      entry.conflict = record.conflictReason !== null;
      if (record.conflictReason !== null) entry.conflictReason = record.conflictReason;
    }
    return entry;
  }

  private async currentModel(environment: string): Promise<string | null> {
    try {
      return (await this.ai.optionalModel(environment, 'codegen'))?.model ?? null;
    } catch {
      return null;
    }
  }
}
