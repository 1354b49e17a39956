/** Per-run resource limits. Every limit is enforced by the kernel or by the parent, never by trust. */
export interface RunLimits {
  /** Wall clock, including time the child spends blocked on a slow record consumer. */
  timeoutMs: number;
  /** CPU time of the harness process (RLIMIT_CPU): SIGXCPU, then SIGKILL a second later. */
  cpuSeconds: number;
  /** Address space of each sandboxed process (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads (RLIMIT_NPROC) of the sandbox user. */
  maxProcesses: number;
  /** Logs kept in the outcome; beyond this they are truncated, beyond 4x the run is stopped. */
  maxLogBytes: number;
  /** Total bytes of record JSON the run may produce. */
  maxOutputBytes: number;
  /** Largest single record, in bytes of JSON: bounds what the parent buffers for one line. */
  maxRecordBytes: number;
  /** Largest file the script may write (RLIMIT_FSIZE) and the size of its private /tmp. */
  maxFileBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({
  timeoutMs: 5 * 60_000,
  cpuSeconds: 5 * 60,
  memoryBytes: 1024 * MiB,
  maxProcesses: 64,
  maxLogBytes: 1 * MiB,
  maxOutputBytes: 1024 * MiB,
  maxRecordBytes: 16 * MiB,
  maxFileBytes: 256 * MiB,
});

/** Logs beyond this multiple of maxLogBytes stop the run: printing must not run unbounded. */
export const LOG_HARD_CAP_FACTOR = 4;

/** Below this the interpreter itself cannot start, so smaller values are configuration errors. */
const MINIMUMS: Readonly<RunLimits> = {
  timeoutMs: 1,
  cpuSeconds: 1,
  memoryBytes: 64 * MiB,
  maxProcesses: 1,
  maxLogBytes: 1,
  maxOutputBytes: 1,
  maxRecordBytes: 1024,
  maxFileBytes: 1,
};

export function resolveLimits(base: Readonly<RunLimits>, overrides: Partial<RunLimits> = {}): RunLimits {
  const limits: RunLimits = { ...base };
  for (const key of Object.keys(MINIMUMS) as (keyof RunLimits)[]) {
    const value = overrides[key] ?? base[key];
    if (!Number.isSafeInteger(value) || value < MINIMUMS[key]) {
      throw new RangeError(`sandbox limit ${key} must be an integer >= ${MINIMUMS[key]} (got ${value})`);
    }
    limits[key] = value;
  }
  return limits;
}

export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // Two decimals, trailing zeros dropped: 2000 bytes is 1.95 KiB, not a rounded-up 2 KiB.
  const text = String(Number(value.toFixed(2)));
  return `${text} ${units[unit]}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}
