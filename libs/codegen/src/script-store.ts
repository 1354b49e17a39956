import { Injectable } from '@nestjs/common';
import { CodeRepositoryService, OpenRepository, RepositoryConflictError } from '@tapyard/code-repository';
import { ConflictError, DomainCode, TapyardError, UpstreamError, errorMessage } from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';
import { CodegenErrorCode } from './codegen-errors';
import { CodegenKind, SCRIPT_FILES } from '@tapyard/scripts';
import type { ScriptRecord, Storage } from './script-records';

/** Where a script was written. */
export interface StoredAt {
  storage: Storage;
  objectKey: string | null;
  repoPath: string | null;
  commitSha: string | null;
}

/** The repository file was edited since the recorded commit: nothing was committed. */
export class ScriptConflictError extends ConflictError {
  override domainCode: DomainCode = CodegenErrorCode.RepositoryEdited;
}

const MAX_SCRIPT_BYTES = 1 << 20;

/**
 * The live text of CodeGen scripts: one object per pipeline and kind in the environment's scripts
 * bucket (replaced by each new version), or a file in the code repository (a commit per version) when
 * the environment has a `code-repository` secret. A store that fails is a 502: nothing was written.
 */
@Injectable()
export class ScriptStore {
  constructor(
    private readonly objects: ObjectStore,
    private readonly repositories: CodeRepositoryService,
  ) {}

  /** The repository when the environment has one (new scripts go there), else null. */
  repository(environment: string): Promise<OpenRepository | null> {
    return this.repositories.open(environment);
  }

  repoPath(repo: OpenRepository, pipeline: string, kind: CodegenKind): string {
    return `${repo.settings.pathPrefix}pipelines/${pipeline}/${SCRIPT_FILES[kind]}`;
  }

  /**
   * Writes a new live text. Repository: a commit on the branch head; unless `overwrite`, refused with a
   * ScriptConflictError when the file was edited since `record`'s commit.
   */
  async write(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    text: string,
    message: string,
    record: ScriptRecord | null,
    overwrite: boolean,
  ): Promise<StoredAt> {
    const repo = await this.open(environment);
    if (repo === null) {
      const key = `codegen-scripts/${pipeline}/${SCRIPT_FILES[kind]}`;
      try {
        await this.objects.put(
          await this.objects.bucket(environment, 'taps'),
          key,
          Buffer.from(text, 'utf8'),
          'text/x-python; charset=utf-8',
        );
      } catch (err) {
        throw new UpstreamError(
          `the script could not be stored in the object store: ${errorMessage(err)}`,
        ).coded(CodegenErrorCode.NotStored);
      }
      return { storage: 'minio', objectKey: key, repoPath: null, commitSha: null };
    }
    const path = this.repoPath(repo, pipeline, kind);
    const base =
      !overwrite && record?.storage === 'github' && record.repoPath === path ? record.commitSha : null;
    try {
      const sha = await repo.git.commit(path, text, message, base);
      return { storage: 'github', objectKey: null, repoPath: path, commitSha: sha };
    } catch (err) {
      if (err instanceof RepositoryConflictError) {
        throw new ScriptConflictError(
          `${path} was edited in the code repository since commit ${base?.slice(0, 12) ?? ''}; nothing was ` +
            `committed (pull the edit, or regenerate with overwrite=true)`,
        );
      }
      throw this.unavailable(err);
    }
  }

  /** The live text the record points at: the object, or the file at the recorded commit (never the head). */
  async read(environment: string, record: ScriptRecord): Promise<string | null> {
    if (record.storage === 'minio') {
      if (record.objectKey === null) return null;
      try {
        return await this.objects.readText(
          await this.objects.bucket(environment, 'taps'),
          record.objectKey,
          MAX_SCRIPT_BYTES,
        );
      } catch (err) {
        if (err instanceof ObjectNotFoundError) return null;
        throw err;
      }
    }
    if (record.repoPath === null || record.commitSha === null) return null;
    const repo = await this.requireRepository(environment);
    try {
      return await repo.git.read(record.repoPath, record.commitSha);
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  /** Repository scripts: whether the branch head's file differs from the recorded commit's. */
  async drift(
    environment: string,
    record: ScriptRecord,
  ): Promise<{ drift: boolean; headSha: string | null }> {
    if (record.storage !== 'github' || record.repoPath === null || record.commitSha === null) {
      return { drift: false, headSha: null };
    }
    const repo = await this.requireRepository(environment);
    try {
      const c = await repo.git.changed(record.repoPath, record.commitSha);
      return { drift: c.changed, headSha: c.changed ? c.headSha : null };
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  /** The file at the branch head, for a pull. */
  async head(
    environment: string,
    record: ScriptRecord,
  ): Promise<{ sha: string; text: string | null } | null> {
    if (record.repoPath === null) return null;
    const repo = await this.requireRepository(environment);
    try {
      const sha = await repo.git.head();
      return sha === null ? null : { sha, text: await repo.git.read(record.repoPath, sha) };
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  private async open(environment: string): Promise<OpenRepository | null> {
    try {
      return await this.repositories.open(environment);
    } catch (err) {
      if (err instanceof TapyardError) throw err;
      throw this.unavailable(err);
    }
  }

  private async requireRepository(environment: string): Promise<OpenRepository> {
    const repo = await this.open(environment);
    if (repo === null) {
      throw new UpstreamError(
        "the script lives in a code repository, but the environment has no 'code-repository' secret any more",
      );
    }
    return repo;
  }

  private unavailable(err: unknown): Error {
    if (err instanceof TapyardError && err.status !== 500) return err;
    return new UpstreamError(`the code repository could not be reached: ${errorMessage(err)}`);
  }
}
