import { ConflictError, NotFoundError, UnprocessableError, UpstreamError } from '@tapyard/core';

/**
 * The code repository could not be reached or refused us (network, authentication, timeout, egress
 * policy). The message names the host and the cause; it never carries a credential or git's stderr.
 */
export class RepositoryUnavailableError extends UpstreamError {
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`code repository ${host} is unavailable: ${reason}`);
  }
}

/** The file was edited in the repository since the commit the caller last saw. */
export class RepositoryConflictError extends ConflictError {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path} in the code repository ${detail}; reload it and apply the change again`);
  }
}

export class RepositoryFileTooLargeError extends UnprocessableError {
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
  constructor(readonly sha: string) {
    super(`commit ${sha} is not in the code repository`);
  }
}
