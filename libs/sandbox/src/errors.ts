/**
 * Why a run failed. The first eight come from the harness (memory is reported as memory_limit);
 * the rest are decided by the parent from limits, signals and exit codes.
 */
export type SandboxErrorKind =
  | 'no_fetch'
  | 'syntax'
  | 'import'
  | 'fetch_raised'
  | 'not_iterable'
  | 'not_json'
  | 'not_row'
  | 'bad_state'
  | 'memory_limit'
  | 'timeout'
  | 'cpu_limit'
  | 'output_limit'
  | 'crashed'
  | 'killed'
  | 'spawn_failed';

export interface SandboxErrorDetails {
  /** syntax: the offending line number and its text. */
  line?: number;
  text?: string;
  /** import: the module that could not be found. */
  module?: string;
  /** import / fetch_raised: the exception's type name and the script's own frames. */
  exception?: string;
  traceback?: string;
  /** not_json: zero-based index of the offending record. */
  record?: number;
  /** crashed / cpu_limit: how the process ended. */
  signal?: string;
  exitCode?: number;
  /** The limit that was hit, in its own unit (bytes, ms, seconds). */
  limit?: number;
}

/** A failed run. `message` is one user-facing sentence with secrets already masked. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';

  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    readonly details: SandboxErrorDetails = {},
  ) {
    super(message);
  }
}

/** A package requirement was refused before pip ever saw it. */
export class PackageSpecError extends Error {
  override readonly name = 'PackageSpecError';

  constructor(
    readonly spec: string,
    message: string,
  ) {
    super(message);
  }
}

/** pip could not install the requirements; `output` is the scrubbed tail of pip's output. */
export class PackageInstallError extends Error {
  override readonly name = 'PackageInstallError';

  constructor(
    message: string,
    readonly packages: readonly string[],
    readonly output: string,
  ) {
    super(message);
  }
}
