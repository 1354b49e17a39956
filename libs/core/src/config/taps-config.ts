import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EnvReader } from './env-reader';

/** How tap scripts run (see README "Taps"). */
export interface TapsConfig {
  /** Base interpreter; per-tap virtual environments are made from it. */
  readonly python: string;
  /** Per-package-set virtual environments, created once and reused. */
  readonly venvDir: string;
  /** `require`: bubblewrap, or runs are refused saying why; `off` (explicit): limits only, host network. */
  readonly sandbox: 'require' | 'off';

  readonly timeoutMs: number;
  readonly cpuSeconds: number;
  readonly memoryBytes: number;
  readonly maxProcesses: number;
  readonly maxLogBytes: number;
  readonly maxOutputBytes: number;
  /** Host uids a root platform hands out, one per run (TAP_SANDBOX_UIDS=first-last). */
  readonly sandboxUids: { readonly first: number; readonly last: number };
  /** How often a worker looks for due schedules; 0 turns scheduling off in that worker. */
  readonly schedulerTickMs: number;
  /**
   * A second manual `run` of a tap within this window is skipped (spec Limits: 5 s). Settable so that
   * suites which only need successive runs need not wait it out; 0 turns the debounce off.
   */
  readonly debounceMs: number;
  /** Scheduled runs one worker executes at once. */
  readonly concurrency: number;
  /** Records after which a run's job starts loading while the script still runs (0: never). */
  readonly streamAfter: number;
}

export function readTaps(r: EnvReader, dataDir: string): TapsConfig {
  return {
    // Debian's interpreter when present: built with optimisations (pyenv builds often are not, at
    // half the speed) and readable by the sandbox user.
    python: r.string('TAP_PYTHON', existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'),
    venvDir: r.string('TAP_VENV_DIR', join(dataDir, 'venvs')),
    sandbox: r.oneOf('TAP_SANDBOX', ['require', 'off'] as const, 'require'),

    timeoutMs: r.int('TAP_TIMEOUT_MS', 15 * 60000, 1000, 24 * 3600000),
    cpuSeconds: r.int('TAP_CPU_SECONDS', 600, 1, 86400),
    memoryBytes: r.size('TAP_MEMORY_LIMIT', '1gb'),
    maxProcesses: r.int('TAP_MAX_PROCESSES', 64, 4, 4096),
    maxLogBytes: r.size('TAP_LOG_LIMIT', '256kb'),
    maxOutputBytes: r.size('TAP_OUTPUT_LIMIT', '4gb'),
    sandboxUids: r.range('TAP_SANDBOX_UIDS', { first: 1_000_000_000, last: 1_000_065_535 }, 1, 2 ** 31 - 1),
    schedulerTickMs: r.int('TAP_SCHEDULER_MS', 1000, 0, 3600000),
    debounceMs: r.int('TAP_DEBOUNCE_MS', 5000, 0, 3600000),
    concurrency: r.int('TAP_CONCURRENCY', 2, 1, 64),
    streamAfter: r.int('TAP_STREAM_AFTER', 10000, 0, 100_000_000),
  };
}
