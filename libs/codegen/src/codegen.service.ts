import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService } from '@tapyard/ai';
import { LOGGER, NotFoundError, UnprocessableError, ValidationError, errorMessage } from '@tapyard/core';
import { PipelineDefinition, SchemaField, TypedBatch } from '@tapyard/model';
import { PipelinesService } from '@tapyard/pipelines';
import { CodegenErrorCode } from './codegen-errors';
import { CodegenRepository } from './codegen.repository';
import { Origin } from './script-records';
import { ScriptAuthor } from './script-author';
import type { ScriptRunSpec } from '@tapyard/scripts';
import { CODEGEN_KINDS, CONTRACT_VERSION, CodegenKind, fingerprint, isCodegenKind } from '@tapyard/scripts';
import { ScriptStore } from './script-store';
import {
  CodegenEntry,
  CodegenListener,
  JobLanded,
  VersionItem,
  instructionOf,
  scriptColumns,
} from './codegen.types';
import { EntryView } from './entry-view';
import { ScriptLifecycle } from './script-lifecycle';
import { ScriptUpkeep } from './script-upkeep';

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
    private readonly lifecycle: ScriptLifecycle,
    private readonly view: EntryView,
    private readonly upkeep: ScriptUpkeep,
  ) {}

  listen(listener: CodegenListener): void {
    this.lifecycle.listen(listener);
  }

  /** After a job that ran scripts: its output ratio (for the next evidence) and the listeners. */
  jobLanded(job: JobLanded): Promise<void> {
    return this.lifecycle.jobLanded(job);
  }

  async entries(environment: string, pipeline: string): Promise<Record<CodegenKind, CodegenEntry | null>> {
    const def = (await this.pipelines.get(environment, pipeline)).definition;
    const current = await this.view.currentModel(environment);
    const out = { dataQuality: null, transformation: null } as Record<CodegenKind, CodegenEntry | null>;
    for (const kind of CODEGEN_KINDS) {
      const record = await this.repo.find(environment, pipeline, kind);
      if (instructionOf(def, kind) === null && record === null) continue;
      out[kind] = await this.view.entry(environment, def, kind, record, current);
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

  /** One version as listed, with its text: what a reader compares before restoring it. */
  async versionWithScript(
    environment: string,
    pipeline: string,
    kind: string,
    version: number,
  ): Promise<VersionItem & { script: string }> {
    const { def, k } = await this.target(environment, pipeline, kind, false);
    await this.numberFirst(environment, def.name, k);
    const v = await this.repo.version(environment, def.name, k, version);
    if (v === null) {
      throw new NotFoundError(`the ${k} script of pipeline '${def.name}' has no version ${version}`).coded(
        CodegenErrorCode.VersionNotFound,
      );
    }
    return {
      version: v.version,
      origin: v.origin,
      model: v.model,
      generatedAt: v.generatedAt,
      fingerprint: v.fingerprint,
      commitSha: v.commitSha,
      script: v.script,
    };
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
    await this.lifecycle.generate(
      environment,
      def,
      k,
      instruction as string,
      model,
      origin,
      overwrite,
      signal,
    );
    return this.view.entryOf(environment, def, k);
  }

  /** Adopts the repository head's file (origin `repository`); clears a conflict. */
  async pull(environment: string, pipeline: string, kind: string): Promise<CodegenEntry> {
    const { def, k, instruction } = await this.target(environment, pipeline, kind, true);
    const record = await this.repo.find(environment, def.name, k);
    if (record === null || record.storage !== 'github' || record.repoPath === null) {
      throw new ValidationError(
        `the ${k} script of pipeline '${def.name}' is not stored in a code repository`,
      ).coded(CodegenErrorCode.NotInRepository);
    }
    const head = await this.store.head(environment, record);
    if (head === null || head.text === null) {
      throw new UnprocessableError(
        `${record.repoPath} is not on the repository's branch head: nothing to pull`,
      ).coded(CodegenErrorCode.NothingToPull);
    }
    const live = await this.store.read(environment, record);
    if (head.text === live) {
      // Nothing to adopt (the head moved for other files, or the edit was undone): a conflict is over.
      if (record.conflictReason !== null) await this.repo.setConflict(environment, def.name, k, null);
    } else {
      await this.lifecycle.adopt(environment, def, k, record, head.sha, head.text, instruction as string);
    }
    return this.view.entryOf(environment, def, k);
  }

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
      throw new NotFoundError(`the ${k} script of pipeline '${def.name}' has no version ${version}`).coded(
        CodegenErrorCode.VersionNotFound,
      );
    }
    const record = await this.repo.find(environment, def.name, k);
    const live = record ? await this.store.read(environment, record) : null;
    if (record !== null && live === wanted.script) {
      return { ...(await this.view.entryOf(environment, def, k)), noop: true };
    }
    const columns = scriptColumns(def);
    const now = fingerprint(instruction as string, columns);
    if (wanted.contractVersion !== CONTRACT_VERSION) {
      throw new UnprocessableError(
        `version ${version} was written for script contract ${wanted.contractVersion}, not ${CONTRACT_VERSION}; nothing changed`,
      ).coded(CodegenErrorCode.VersionMismatch);
    }
    if (wanted.fingerprint !== now) {
      throw new UnprocessableError(
        `version ${version} was written for a different instruction or source schema than the pipeline has now; nothing changed`,
      ).coded(CodegenErrorCode.VersionMismatch);
    }
    const checked = await this.author.check(k, wanted.script, columns);
    if (checked.problems.length > 0) {
      throw new UnprocessableError(
        `version ${version} no longer passes the script checks: ${checked.problems.join('; ')}`,
      ).coded(CodegenErrorCode.ChecksFailed);
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
    await this.lifecycle.goLive(environment, def.name, k, record, options.quiet === true, {
      origin: 'restore-version',
      model: wanted.model,
      generatedAt: wanted.generatedAt,
      fingerprint: wanted.fingerprint,
      contractVersion: wanted.contractVersion,
      outputColumns: checked.outputColumns,
      script: wanted.script,
      ...at,
    });
    return this.view.entryOf(environment, def, k);
  }

  /**
   * After a pipeline was saved: its scripts are brought up to date (ScriptUpkeep.writeAfterSave). Runs in
   * the background of the save (a model call must not hold the save up, nor fail it): its outcome shows in
   * the entry.
   */
  afterSave(environment: string, pipeline: string): void {
    this.upkeep.writeAfterSave(environment, pipeline).catch((err: unknown) => {
      this.logger.warn({ pipeline, err: errorMessage(err) }, 'codegen after save failed');
    });
  }

  /** The live script of a kind for a job, written first when none fits (ScriptUpkeep.forRun). */
  forRun(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
  ): Promise<{ script: string; outputColumns: SchemaField[]; version: number | null } | null> {
    return this.upkeep.forRun(environment, def, kind);
  }

  /** The live script of a kind when forRun would take no model call nor write (ScriptUpkeep.readyForRun). */
  readyForRun(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
  ): Promise<{ script: string; outputColumns: SchemaField[]; version: number } | null | undefined> {
    return this.upkeep.readyForRun(environment, def, kind);
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

  /** What a process needs to run a script (the stage thread starts it from this). */
  runSpec(kind: CodegenKind, script: string, outputColumns: SchemaField[]): Promise<ScriptRunSpec> {
    return this.author.runSpec(kind, script, outputColumns);
  }

  deletePipeline(environment: string, pipeline: string): Promise<void> {
    return this.repo.deletePipeline(environment, pipeline);
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
      ]).coded(CodegenErrorCode.UnknownKind);
    }
    const instruction = instructionOf(def, kind);
    if (needsInstruction && instruction === null) {
      const field = kind === 'dataQuality' ? 'dataQuality.aiInstruction' : 'transformation.aiInstruction';
      throw new ValidationError(`pipeline '${pipeline}' has no ${field}`, [
        { field, problem: 'is not set' },
      ]).coded(CodegenErrorCode.NoInstruction);
    }
    return { def, k: kind, instruction };
  }
}
