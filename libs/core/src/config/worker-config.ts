import { EnvReader } from './env-reader';

/** Queue workers: their slots, locks and stalls, and their operations port. */
export interface WorkerConfig {
  /** Jobs a worker process runs at once per queue (BullMQ's slots). */
  readonly concurrency: number;
  /**
   * Of those, jobs that read a staged input (in a stage thread), an archive or a document: their
   * memory is what grows with their number. Jobs past it wait in the process for a place; a small
   * upload carried in its job (read on the main thread) needs none.
   */
  readonly largeJobs: number;
  readonly lockMs: number;
  /** Times a job may stall workers (its worker died) before it is failed instead of handed on. */
  readonly maxStalls: number;
  /** A stage's thread that makes no progress this long is stopped and the job ends `error`. */
  readonly stageStallMs: number;
  /** CSV_FAST_PATH: clean CSV chunks skip per-row typing: PostgreSQL gets them unparsed, JSON sinks rows written from their fields (off: every row takes the validating path). */
  readonly csvFastPath: boolean;
  /** The worker's probe and metrics port (`/livez`, `/readyz`, `/metrics`); 0: an ephemeral port. */
  readonly httpPort: number;
  readonly httpHost: string;
}

/** Inputs staged in the object store (the only file path between hosts). */
export interface StagingConfig {
  /**
   * STAGING_OBJECT_STORE_ENDPOINT: the store staged inputs go through, when not OBJECT_STORE_ENDPOINT
   * (same credentials); null: that one.
   */
  readonly endpoint: string | null;
  /** STAGING_READ_RETRY_SECONDS: how long a job keeps retrying an object store that fails before it aborts. */
  readonly readRetryMs: number;
  /** STAGING_TTL_HOURS: staged inputs untouched this long (their host died) are swept by a worker. */
  readonly ttlMs: number;
}

/** Bounds on sinks (REST, Kafka, ActiveMQ, Snowflake, Databricks), so none can hold a worker for good. */
export interface SinksConfig {
  /** Longest a sink waits for one answer: a request, a broker's receipts, a statement. */
  readonly requestTimeoutMs: number;
  /** Longest one job's delivery to one sink may take, from its set-up to its last answer. */
  readonly loadTimeoutMs: number;
  /**
   * Jobs of one environment that may be delivering to sinks at once in a worker process; below
   * WORKER_CONCURRENCY, so slow sinks always leave slots to other pipelines.
   */
  readonly concurrency: number;
}

export function readWorker(r: EnvReader, concurrency: number): WorkerConfig {
  const largeJobs = r.int('LARGE_JOB_CONCURRENCY', Math.min(4, concurrency), 1, 256);
  if (largeJobs > concurrency) {
    r.problems.push(
      `LARGE_JOB_CONCURRENCY (${largeJobs}) must not exceed WORKER_CONCURRENCY (${concurrency}): it bounds the worker slots large jobs may hold`,
    );
  }
  return {
    concurrency,
    largeJobs,
    lockMs: r.int('WORKER_LOCK_MS', 30000, 1000, 600000),
    maxStalls: r.int('WORKER_MAX_STALLS', 2, 0, 100),
    stageStallMs: r.int('STAGE_STALL_MS', 60000, 100, 24 * 3600000),
    csvFastPath: r.bool('CSV_FAST_PATH', true),
    httpPort: r.int('WORKER_HTTP_PORT', 8081, 0, 65535),
    httpHost: r.string('WORKER_HTTP_HOST', '127.0.0.1'),
  };
}

export function readStaging(r: EnvReader): StagingConfig {
  return {
    endpoint: r.url('STAGING_OBJECT_STORE_ENDPOINT', null, ['http', 'https']),
    readRetryMs: r.int('STAGING_READ_RETRY_SECONDS', 120, 1, 86400) * 1000,
    ttlMs: r.int('STAGING_TTL_HOURS', 24, 1, 8760) * 3600_000,
  };
}

export function readSinks(r: EnvReader, workers: number): SinksConfig {
  // One slot is always kept from sinks, unless the worker has only one; 3 at most by default (as
  // with the four slots workers had before small uploads were given more).
  const concurrency = r.int('SINK_CONCURRENCY', Math.max(1, Math.min(3, workers - 1)), 1, 256);
  if (concurrency > workers) {
    r.problems.push(
      `SINK_CONCURRENCY (${concurrency}) must not exceed WORKER_CONCURRENCY (${workers}): it bounds the worker slots sinks may hold`,
    );
  }
  return {
    requestTimeoutMs: r.int('SINK_REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    loadTimeoutMs: r.int('SINK_LOAD_TIMEOUT_MS', 3_600_000, 100, 24 * 3_600_000),
    concurrency,
  };
}
