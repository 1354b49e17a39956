import { Injectable } from '@nestjs/common';
import { AiService } from '@tapyard/ai';
import { PipelineDefinition } from '@tapyard/model';
import { CodegenRepository } from './codegen.repository';
import { ScriptRecord } from './script-records';
import { CodegenEntry, NO_PROVIDER, instructionOf, scriptColumns } from './codegen.types';
import { CodegenKind, fingerprint } from '@tapyard/scripts';
import { ScriptStore } from './script-store';

/** A script's entry as the spec shows it: the record, its live text, its drift and whether it is pending. */
@Injectable()
export class EntryView {
  constructor(
    private readonly repo: CodegenRepository,
    private readonly store: ScriptStore,
    private readonly ai: AiService,
  ) {}

  async entryOf(environment: string, def: PipelineDefinition, kind: CodegenKind): Promise<CodegenEntry> {
    const record = await this.repo.find(environment, def.name, kind);
    return this.entry(environment, def, kind, record, await this.currentModel(environment));
  }

  async entry(
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

  async currentModel(environment: string): Promise<string | null> {
    try {
      return (await this.ai.optionalModel(environment, 'codegen'))?.model ?? null;
    } catch {
      return null;
    }
  }
}
