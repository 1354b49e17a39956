import { ServiceUnavailableError, errorMessage, isConnectionFailure } from '@tapyard/core';
import { PipelineNotFoundError } from '@tapyard/pipelines';
import { ProcessName } from '@tapyard/status';

/** A failure attributed to the stage where it happened, for the job's `lastError`. */
export class StageError extends Error {
  constructor(
    readonly processName: ProcessName,
    message: string,
    /** A service was unreachable: worth running again later. */
    readonly retryable = false,
    /** The tap run moved its records to another job before this one committed: not a failure. */
    readonly superseded = false,
  ) {
    super(message);
  }
}

export function destinationError(processName: ProcessName, err: unknown): StageError {
  return new StageError(processName, errorMessage(err), err instanceof ServiceUnavailableError);
}

/**
 * Why the job's pipeline cannot be read: gone, being deleted or outside its confinement (final), or the
 * metadata database is down, which is an outage to retry, never "no longer exists".
 */
export function pipelineError(name: string, err: unknown): StageError {
  if (err instanceof PipelineNotFoundError)
    return new StageError('JobRunner', `pipeline '${name}' no longer exists`);
  if (isConnectionFailure(err)) {
    return new StageError(
      'JobRunner',
      `postgres (the metadata database) is unavailable: ${errorMessage(err)}`,
      true,
    );
  }
  return new StageError('JobRunner', errorMessage(err));
}
