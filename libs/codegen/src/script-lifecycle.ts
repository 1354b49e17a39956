import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { FeatureModel } from '@tapyard/ai';
import { LOGGER, UnprocessableError, errorMessage } from '@tapyard/core';
import { PipelineDefinition } from '@tapyard/model';
import { CodegenErrorCode } from './codegen-errors';
import { CodegenRepository } from './codegen.repository';
import { NewLive, Origin, ScriptRecord } from './script-records';
import { CodegenListener, JobLanded, scriptColumns } from './codegen.types';
import { Candidate, CandidateRefused, ScriptAuthor } from './script-author';
import { CONTRACT_VERSION, CodegenKind, fingerprint } from '@tapyard/scripts';
import { ScriptConflictError, ScriptStore, StoredAt } from './script-store';

/** A writer's mark unrenewed this long is a dead process's (it is renewed every third of it). */
const GENERATION_STALE_S = 30;
/** How often a caller waiting on another's model call looks again. */
const GENERATION_POLL_MS = 200;

/**
 * How a script becomes live: written by the model (checked, dry-run) or adopted from the repository,
 * stored, recorded as the next version; and who hears of it (incidents listen to changes and to the
 * jobs that ran them).
 */
@Injectable()
export class ScriptLifecycle {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly repo: CodegenRepository,
    private readonly store: ScriptStore,
    private readonly author: ScriptAuthor,
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

  /**
   * Writes a script with the model; it goes live only after the checks and the dry run, else the entry is
   * pending with the reason. A repository file edited since the recorded commit is not overwritten unless
   * `overwrite` (the entry carries the conflict instead). While another process's model call writes the
   * same script (same instruction and columns), this one waits for its outcome instead of a second call;
   * an explicit regenerate does not wait.
   */
  async generate(
    environment: string,
    def: PipelineDefinition,
    kind: CodegenKind,
    instruction: string,
    model: FeatureModel,
    origin: Origin,
    overwrite: boolean,
    signal?: AbortSignal,
  ): Promise<void> {
    const columns = scriptColumns(def);
    const wanted = fingerprint(instruction, columns);
    const release = await this.markCall(environment, def.name, kind, wanted, origin === 'regenerate');
    if (release === null) return;
    try {
      const record = await this.repo.find(environment, def.name, kind);
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
      // One writer at a time per script, in this process and then across processes: jobs and saves racing
      // for the same stale script put one version live (the first to finish); the others find it fits and
      // stand down. In-process first, so waiting writers do not each hold a database connection.
      const write = async (): Promise<void> => {
        const now = await this.repo.find(environment, def.name, kind);
        if (
          origin !== 'regenerate' &&
          now?.fingerprint === wanted &&
          now.version !== (record?.version ?? null)
        ) {
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
            now,
            overwrite,
          );
        } catch (err) {
          if (!(err instanceof ScriptConflictError) || now === null) throw err;
          await this.repo.setConflict(environment, def.name, kind, err.message);
          return;
        }
        await this.goLive(environment, def.name, kind, now, false, {
          origin,
          model: candidate.model,
          generatedAt: new Date().toISOString(),
          fingerprint: wanted,
          contractVersion: CONTRACT_VERSION,
          outputColumns: candidate.outputColumns,
          script: candidate.script,
          ...at,
        });
      };
      await this.serially(`${environment}\0${def.name}\0${kind}`, () =>
        this.repo.exclusively(environment, def.name, kind, write),
      );
    } finally {
      await release();
    }
  }

  /**
   * Marks this process's model call for the script (`wanted`: its instruction and columns), renewed while
   * it runs; the answer releases the mark. While another process's call for the same script runs, waits
   * for it: null when that call wrote a script that fits (or left a conflict), so there is nothing to ask.
   * `force` (an explicit regenerate) takes the mark at once.
   */
  private async markCall(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    wanted: string,
    force: boolean,
  ): Promise<(() => Promise<void>) | null> {
    for (;;) {
      const holder = randomUUID();
      if (
        await this.repo.markGeneration(environment, pipeline, kind, wanted, holder, force, GENERATION_STALE_S)
      ) {
        const renew = setInterval(
          () => {
            this.repo.renewGeneration(environment, pipeline, kind, holder).catch((err: unknown) => {
              this.logger.warn({ pipeline, kind, err: errorMessage(err) }, 'codegen mark not renewed');
            });
          },
          (GENERATION_STALE_S * 1000) / 3,
        );
        renew.unref();
        return async () => {
          clearInterval(renew);
          await this.repo.unmarkGeneration(environment, pipeline, kind, holder).catch(() => undefined);
        };
      }
      // Another process (the pipeline's save, another job) is asking the model for this very script:
      // its outcome is ours. Only when it wrote nothing that fits does this caller ask in turn.
      while (await this.repo.generating(environment, pipeline, kind, wanted, GENERATION_STALE_S)) {
        await new Promise((r) => setTimeout(r, GENERATION_POLL_MS));
      }
      const now = await this.repo.find(environment, pipeline, kind);
      if ((now?.fingerprint === wanted && now.version !== null) || now?.conflictReason) return null;
    }
  }

  private readonly queues = new Map<string, Promise<void>>();

  private async serially(key: string, work: () => Promise<void>): Promise<void> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const mine = previous.then(work, work);
    const settled = mine.catch(() => undefined);
    this.queues.set(key, settled);
    try {
      await mine;
    } finally {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    }
  }

  /** Adopts a repository file (origin `repository`) after the contract's static checks. */
  async adopt(
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
      ).coded(CodegenErrorCode.ChecksFailed);
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
  async goLive(
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
}
