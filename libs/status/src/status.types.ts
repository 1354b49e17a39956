export const PROCESS_NAMES = [
  'FileNotifier',
  'StreamNotifier',
  'DataQuality',
  'Transformation',
  'JobRunner',
  'PostgresLoader',
  'MongoDBLoader',
  'SparkObjectStoreLoader',
  'KafkaLoader',
  'ActiveMQLoader',
  'RestEndpointRunner',
  // Documents: written into a vector store (parsing reports as DataQuality, chunking and embedding as Transformation).
  'VectorStoreLoader',
  // Warehouses (beyond the spec's names, documented in docs/destinations.md): staged files loaded with COPY INTO.
  'SnowflakeLoader',
  'DatabricksLoader',
] as const;
export type ProcessName = (typeof PROCESS_NAMES)[number];

export type StageState = 'begin' | 'processing' | 'end' | 'error';
export type JobOutcome = 'success' | 'warning' | 'error';
export type JobStatus = JobOutcome | 'processing';
export type RollupJobStatus = JobStatus | 'timed_out';

/** What every event of one job shares. */
export interface JobRef {
  environment: string;
  pipeline: string;
  pipelineToken: string;
  publisherToken: string | null;
  filename: string;
}

/** The JobRef of a job payload: only its five fields, whatever else the payload carries. */
export function jobRef(p: JobRef): JobRef {
  return {
    environment: p.environment,
    pipeline: p.pipeline,
    pipelineToken: p.pipelineToken,
    publisherToken: p.publisherToken,
    filename: p.filename,
  };
}

/** Pipeline status entry (spec: "Pipeline status entry"). */
export interface StatusEntry {
  id: number;
  dateTime: string;
  pipeline: string;
  processName: string;
  publisherToken: string | null;
  pipelineToken: string;
  filename: string;
  state: StageState;
  code: StageState;
  description: string;
  epoch: number;
}

/** Job summary (spec: "Job summary"). */
export interface JobSummary {
  createdAtTimestamp: string;
  createdAt: number;
  updatedAt: number;
  pipeline: string;
  pipelineToken: string;
  process: string;
  startTime: string;
  endTime: string;
  totalTime: string;
  status: string;
}

export interface RollupJob {
  pipelineToken: string;
  pipeline: string;
  filename: string;
  status: RollupJobStatus;
  startedAt: string;
  lastEventAt: string;
  elapsed: string;
  lastError: { processName: string; description: string } | null;
  /** Rows the job loaded and rejected, once it ended having read its input; null otherwise. */
  rowsLoaded: number | null;
  rowsRejected: number | null;
}

/** What a job's terminal event records of its rows. */
export interface JobRows {
  loaded: number;
  rejected: number;
}

export interface Rollup {
  allDone: boolean;
  status: JobStatus;
  jobs: RollupJob[];
}

/** A row of the jobs table. */
export interface JobRow {
  pipeline_token: string;
  pipeline: string;
  publisher_token: string | null;
  filename: string;
  status: JobStatus;
  last_process: string;
  last_state: StageState;
  started_at: string;
  last_event_at: string;
  ended_at: string | null;
  last_error_process: string | null;
  last_error_description: string | null;
  /** The pipeline's scope fields when the job began; null for jobs recorded before scopes were kept. */
  scope: JobScope | null;
  /** bigint: a number from json_agg, a string from a plain query. */
  rows_loaded: number | string | null;
  rows_rejected: number | string | null;
}

/** `catalog`, `database`, `type`: what capability scopes are checked against. */
export type JobScope = Record<string, string | null>;

/** Keeps the jobs a caller may see (Access.filter in the API); every job when nobody is checked. */
export type JobsFilter = <T extends Pick<JobRow, 'scope'>>(jobs: T[]) => T[];
export const ALL_JOBS: JobsFilter = (jobs) => jobs;

/** Injectable time source, so the 8-hour timeout can be tested. */
export interface Clock {
  now(): number;
}
export const CLOCK = Symbol('Clock');
export const systemClock: Clock = { now: () => Date.now() };

export const JOB_TIMEOUT_MS = 8 * 60 * 60 * 1000;
export const SUMMARY_PAGE_SIZE = 50;
/** Jobs per page of the recent jobs of every pipeline (`GET /pipeline/jobs`). */
export const RECENT_PAGE_SIZE = 20;
/** Jobs read per query while filling a page of recent jobs for a scoped caller. */
export const RECENT_BATCH = 200;
