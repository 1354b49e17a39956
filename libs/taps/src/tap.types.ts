/** Tap configuration as stored (spec "Tap configuration"), every default filled in. */
export const TAP_TYPES = ['structured', 'document'] as const;
export type TapType = (typeof TAP_TYPES)[number];

export interface TapConfig {
  name: string;
  description: string;
  /** `tap-scripts/<name>_<suffix>.py` in the environment's taps bucket; null: never generated. */
  scriptPath: string | null;
  /** Empty: the tap feeds nothing (runs report `no_target_pipeline`). */
  targetPipeline: string;
  packages: string[];
  secretName: string | null;
  cronExpression: string | null;
  /** IANA zone the schedule's times are read in; configurations stored before it existed read as UTC. */
  timezone: string;
  enabled: boolean;
  tapType: TapType;
  catalog: string | null;
  /**
   * Where the live script is: `minio` (scriptPath in the taps bucket) or `github` (repoPath at commitSha
   * in the code repository; scriptPath then names the last built-in version, kept). Absent: minio.
   */
  storage?: 'minio' | 'github';
  repoPath?: string | null;
  commitSha?: string | null;
}

/** POST /tap/migrate-storage (addendum). */
export interface MigrateStorageResult {
  tapName: string;
  storage: 'minio' | 'github';
  scriptPath: string | null;
  repoPath: string | null;
  commitSha: string | null;
  migrated: boolean;
}

/** GET /tap: the configuration plus the script body (spec rules for `script` / `scriptMissing`). */
export type TapWithScript = TapConfig & {
  script: string | null;
  scriptMissing?: true;
  /** The next five fire times (ISO 8601 with the zone's offset); empty without an enabled schedule. */
  nextFireTimes: string[];
};

export type RunMode = 'run' | 'test';
export type RunTrigger = 'manual' | 'schedule';
export type PersistedReason = 'test_mode' | 'run_error' | 'no_records' | 'no_target_pipeline' | 'debounced';

/** A document record as scripts return it, with what Tapyard adds in test output. */
export interface DocumentRecord {
  uri: string;
  filename: string;
  content: string;
  content_hash: string;
  metadata: Record<string, unknown>;
}

/** Spec "Test result". */
export interface TestResult {
  records: unknown[];
  recordCount: number;
  recordsTruncated: boolean;
  dataType: string;
  columns: string[] | null;
  logs: string;
  error: string | null;
  aiExplanation: string | null;
  durationMs: number;
  isolation: Isolation;
}

/**
 * The isolation a script ran under: `bwrap` (namespaces, read-only system, private network whose only
 * way out is the platform's egress proxy), `none` (TAP_SANDBOX=off: limits only, host network), or null
 * when the script never started.
 */
export type Isolation = 'bwrap' | 'none' | null;

/** Spec "Run result". A run that failed is `success` with its `error` (spec Errors); only debounced runs differ. */
export interface RunResult {
  tap: string;
  description: string;
  status: 'success' | 'skipped';
  mode: RunMode;
  targetPipeline: string;
  persisted: boolean;
  persistedReason?: PersistedReason;
  publisherToken?: string;
  pipelineTokens: string[];
  /** Records submitted to the target pipeline (mode `test`: records the script yielded). */
  recordCount: number;
  dataType: string;
  columns: string[] | null;
  logs: string;
  isolation: Isolation;
  error: string | null;
  /** A diagnosis when the run failed or found nothing and a model provider is configured. */
  aiExplanation?: string | null;
  records?: unknown[];
  recordsTruncated?: boolean;
  runId?: string;
  durationMs?: number;
}

/** Addendum: run history entry. */
export interface RunLogEntry {
  runId: string;
  tap: string;
  mode: RunMode;
  trigger: RunTrigger;
  status: 'running' | 'success' | 'error' | 'skipped';
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  recordCount: number;
  persisted: boolean;
  persistedReason: PersistedReason | null;
  publisherToken: string | null;
  error: string | null;
}

/** Addendum: document ledger entry. */
export interface LedgerEntry {
  uri: string;
  filename: string;
  contentHash: string;
  stagedPath: string;
  pipelineToken: string;
  processedAt: string;
}

/** Runs kept per tap (spec Limits). */
export const RUN_HISTORY_LIMIT = 50;
/** Rows returned by a test-mode run (spec Limits). */
export const SAMPLE_ROWS = 20;
