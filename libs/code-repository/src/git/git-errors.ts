import { ConflictError, DomainCode, NotFoundError, UnprocessableError, UpstreamError } from '@tapyard/core';

/** The domain codes of code repository errors: the error body's `code`. */
export const RepositoryErrorCode = {
  Unavailable: 'repository.unavailable',
  /** The file was edited since the commit the caller last saw. */
  Conflict: 'repository.conflict',
  FileTooLarge: 'repository.file_too_large',
  CommitNotFound: 'repository.commit_not_found',
} as const satisfies Record<string, DomainCode>;

/**
 * The code repository could not be reached or refused us (network, authentication, timeout, egress
 * policy). The message names the host and the cause; it never carries a credential or git's stderr.
 */
export class RepositoryUnavailableError extends UpstreamError {
  override domainCode: DomainCode = RepositoryErrorCode.Unavailable;
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`code repository ${host} is unavailable: ${reason}`);
  }
}

/** The file was edited in the repository since the commit the caller last saw. */
export class RepositoryConflictError extends ConflictError {
  override domainCode: DomainCode = RepositoryErrorCode.Conflict;
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path} in the code repository ${detail}; reload it and apply the change again`);
  }
}

export class RepositoryFileTooLargeError extends UnprocessableError {
  override domainCode: DomainCode = RepositoryErrorCode.FileTooLarge;
  constructor(
    readonly path: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(`${path} in the code repository is ${size} bytes, more than the limit of ${limit}`);
  }
}

/** A commit the caller recorded is not on the branch (history rewritten, or another repository). */
export class RepositoryCommitNotFoundError extends NotFoundError {
  override domainCode: DomainCode = RepositoryErrorCode.CommitNotFound;
  constructor(readonly sha: string) {
    super(`commit ${sha} is not in the code repository`);
  }
}
