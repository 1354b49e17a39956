import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService } from '@tapyard/ai';
import { LOGGER, errorMessage } from '@tapyard/core';
import { PipelineDefinition, SchemaField } from '@tapyard/model';
import { PipelinesService } from '@tapyard/pipelines';
import { CodegenRepository } from './codegen.repository';
import { CODEGEN_KINDS, CONTRACT_VERSION, CodegenKind, fingerprint } from '@tapyard/scripts';
import { ScriptStore } from './script-store';
import { NO_PROVIDER, instructionOf, scriptColumns } from './codegen.types';
import { ScriptLifecycle } from './script-lifecycle';

/**
 * Keeps each kind's script fitting its pipeline without being asked: rewritten after a save, or before a
 * job that finds none that fits; without a model provider the entry waits as pending.
 */
@Injectable()
export class ScriptUpkeep {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly pipelines: PipelinesService,
    private readonly repo: CodegenRepository,
    private readonly store: ScriptStore,
    private readonly ai: AiService,
    private readonly lifecycle: ScriptLifecycle,
  ) {}

  /**
   * A kind whose instruction or columns changed gets a new script (origin `save`); without a provider it
   * waits as pending.
   */
  async writeAfterSave(environment: string, pipeline: string): Promise<void> {
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
      await this.lifecycle
        .generate(environment, def, kind, instruction, model, 'save', false)
        .catch((err: unknown) => {
          this.logger.warn(
            { pipeline, kind, err: errorMessage(err) },
            'codegen script not generated on save',
          );
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
        await this.lifecycle
          .generate(environment, def, kind, instruction, model, 'run', false)
          .catch((err: unknown) => {
            this.logger.warn(
              { pipeline: def.name, kind, err: errorMessage(err) },
              'codegen script not generated on run',
            );
          });
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

  /**
   * The live script of a kind as forRun gives it when that takes no model call and no write (a
   * script fits, or a conflict keeps the recorded commit): what a job starts before it has planned
   * its load. Undefined when forRun would have more to do; null when the kind has no instruction.
   */
  async readyForRun(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
  ): Promise<{ script: string; outputColumns: SchemaField[]; version: number } | null | undefined> {
    const instruction = instructionOf(def, kind);
    if (instruction === null) return null;
    const record = await this.repo.find(environment, def.name, kind);
    if (record === null || record.version === null) return undefined;
    if (record.fingerprint !== fingerprint(instruction, scriptColumns(def)) && !record.conflictReason)
      return undefined;
    const script = await this.store.read(environment, record);
    return script === null
      ? undefined
      : { script, outputColumns: record.outputColumns, version: record.version };
  }
}
