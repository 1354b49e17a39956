import { Injectable } from '@nestjs/common';
import { CODE_REPOSITORY_SECRET, CodeRepositoryService, OpenRepository } from '@tapyard/code-repository';
import { TapyardError, UpstreamError, ValidationError, errorMessage } from '@tapyard/core';
import { TapConfig } from './tap.types';
import { TapErrorCode } from './tap-errors';

/**
 * Tap scripts kept in the environment's code repository (`storage: github`): a file per tap,
 * `<pathPrefix>taps/<tap>.py`, and the commit the tap runs recorded on the tap (never the branch head).
 */
@Injectable()
export class TapScriptRepository {
  constructor(private readonly repositories: CodeRepositoryService) {}

  /** The text at the tap's recorded commit; null when the file is not there. */
  async read(environment: string, tap: TapConfig): Promise<string | null> {
    if (!tap.repoPath || !tap.commitSha) return null;
    const repo = await this.require(environment);
    try {
      return await repo.git.read(tap.repoPath, tap.commitSha);
    } catch (err) {
      throw unavailable(err);
    }
  }

  /** Commits a new text of the tap's script; returns where it now lives. */
  async commit(
    environment: string,
    tapName: string,
    text: string,
    message: string,
  ): Promise<{ repoPath: string; commitSha: string }> {
    const repo = await this.require(environment);
    const repoPath = `${repo.settings.pathPrefix}taps/${tapName}.py`;
    try {
      return { repoPath, commitSha: await repo.git.commit(repoPath, text, message, null) };
    } catch (err) {
      throw unavailable(err);
    }
  }

  private async require(environment: string): Promise<OpenRepository> {
    const repo = await this.repositories.open(environment);
    if (repo === null) {
      throw new ValidationError(
        `the environment has no code repository: create the secret '${CODE_REPOSITORY_SECRET}' (url, branch, token)`,
        [{ field: 'target', problem: `needs the secret '${CODE_REPOSITORY_SECRET}'` }],
      ).coded(TapErrorCode.NoCodeRepository);
    }
    return repo;
  }
}

function unavailable(err: unknown): Error {
  if (err instanceof TapyardError && err.status !== 500) return err;
  return new UpstreamError(`the code repository could not be reached: ${errorMessage(err)}`);
}
