/**
 * Every queue and job of Tapyard, with its payload type, in one place. Queue names are the same in
 * every environment; the environment is carried by the BullMQ key prefix (`tapyard:<env>`), so the
 * Redis keys of a queue are `tapyard:<env>:<queue>:*` and environments sharing one Redis never see
 * each other's jobs.
 */

export const QUEUES = {
  maintenance: 'maintenance',
  ingest: 'ingest',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Jobs of the maintenance queue. */
export const MaintenanceJob = {
  /** Round trip through a worker: proves a worker of this environment is consuming. */
  ping: 'ping',
} as const;

export interface PingPayload {
  requestedAt: number;
}

export interface PingResult {
  environment: string;
  workerPid: number;
  requestedAt: number;
  handledAt: number;
}

/** Jobs of the ingest queue: one per uploaded file (the stages run inside it, streaming). */
export const IngestJob = {
  load: 'load',
  /** FileNotifier: extract a staged archive (or fetch a dropped object) and queue a load per file. */
  intake: 'intake',
  /** A document from a document tap, staged in the staged bucket, for the pipeline's vector store. */
  document: 'document',
} as const;

/**
 * An upload whose request (multipart framing included) is at most this large is received whole in
 * memory and its file carried in its job (base64 in Redis, shared by every host) instead of staged in
 * the object store: its job makes no object-store request at all. Larger ones, and those without a
 * content-length, stream as before. An archive's entry (and a document upload) of at most this size
 * travels the same way. Bounds what Redis holds per queued or kept job (~43 KB).
 */
export const INLINE_UPLOAD_BYTES = 32 * 1024;

/** What every ingest job carries: its pipeline, tokens and source name (a status JobRef). */
export interface JobFields {
  environment: string;
  pipeline: string;
  pipelineToken: string;
  publisherToken: string | null;
  filename: string;
}

/**
 * The intake's status entries of an upload, carried by its job (a small upload's StreamNotifier begin
 * and end, a streamed upload's begin; each with the time it happened): the API writes them while the
 * job is already queued, and the job's first status write includes them, written once (see
 * StatusService.of()).
 */
export interface IntakeEntry {
  state: 'begin' | 'end';
  description: string;
  epoch: number;
}

/** One document of a document-tap run (spec: one job per new or changed document). */
export interface DocumentPayload extends JobFields {
  /** Where the document is staged (tap runs, archive entries)... */
  bucket?: string;
  key?: string;
  /** ...or the staged input of an upload (a Staging id in the object store), removed once the job ends... */
  staged?: string;
  /**
   * ...or, for a small document (an upload or an archive entry of at most INLINE_UPLOAD_BYTES), the
   * document itself, base64: nothing of it is staged, and Redis is shared by every host.
   */
  inline?: string;
  /** How many bytes `inline` held, once the job finished and they were dropped (see InlineDrops). */
  inlineDropped?: number;
  /** With `inline` from an upload: the intake's entries, for the job's first status write. */
  intakeEntries?: IntakeEntry[];
  /** The document's identity in its source: the tap's `uri`, or `upload://<filename>` for uploads. */
  uri: string;
  /** The tap that yielded it, and the record's own `metadata`. */
  tap?: string;
  metadata?: Record<string, unknown>;
}

export interface IngestPayload extends JobFields {
  /**
   * The job's input, staged in the object store (a Staging id: any host reads it). Removed once the
   * job reached a terminal state, unless the job was superseded (its successor reads the same input).
   */
  staged: string;
  /** How often the job went back to the queue waiting for capacity (DeferLaterError); absent: never. */
  deferrals?: number;
  /**
   * Set by tap runs: the spool holds JSON lines, one object per record. CSV pipelines read record key
   * `keys[i]` as column `columns[i]` (its normalised name); other pipelines load the objects as they are.
   */
  records?: {
    keys: string[];
    columns: string[];
    /**
     * The run is still writing its records: the job reads them as they arrive, until the run ends
     * the staged input (see Staging). `staleMs`: how long without growth means the run is gone.
     */
    stream?: { staleMs: number };
  };
  /**
   * Set by uploads whose job starts while the file still arrives: the job reads the input as it
   * arrives, until the upload ends it (see Staging). `staleMs` as for tap streams.
   */
  stream?: { staleMs: number };
  /**
   * A small upload received whole (at most INLINE_UPLOAD_BYTES), base64: the job reads its input
   * from here and nothing of it is staged. Redis is shared by every host, so any worker can run it.
   */
  inline?: string;
  /** How many bytes `inline` held, once the job finished and they were dropped (see InlineDrops). */
  inlineDropped?: number;
  /** From an upload (with `inline`, or streamed): the intake's entries, for the job's first status write. */
  intakeEntries?: IntakeEntry[];
  /**
   * How many bytes the input holds, when known, for progress notes: the staged file's size, or for
   * an upload still arriving its request's content-length (multipart framing included: an upper bound).
   */
  size?: number;
}

/**
 * A file waiting for FileNotifier: an archive uploaded (the Staging input named by `pipelineToken`),
 * or an object dropped straight into the raw bucket under `<pipeline>/` (`bucket`, `key`).
 */
export interface IntakePayload extends JobFields {
  bucket: string;
  key: string;
  /** An upload's archive, staged: removed once extracted (or refused). Dropped objects stay. */
  staged: boolean;
}

/**
 * Options of a load job: its id is its pipeline token (a second add is ignored), and a load whose
 * destination is unreachable is retried with exponential back-off (the loaders are exactly-once).
 */
export function loadJobOptions(
  environment: string,
  pipelineToken: string,
  retry: { attempts: number; delayMs: number },
) {
  return {
    jobId: `${environment}.${pipelineToken}`,
    attempts: retry.attempts,
    backoff: { type: 'exponential', delay: retry.delayMs },
    removeOnComplete: 1000,
    removeOnFail: 5000,
  };
}

/** Thrown by a load that should run again later (its destination is unreachable); BullMQ retries it. */
export class RetryLaterError extends Error {
  override readonly name = 'RetryLaterError';
}

/**
 * Thrown by a load that must wait for capacity (every sink place taken): not a failure. The job goes
 * back to the queue for `delayMs` without spending one of its deliveries.
 */
export class DeferLaterError extends Error {
  override readonly name = 'DeferLaterError';

  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/** What the ingest queue carries, told apart by job name (IngestJob). */
export type IngestQueueData = IngestPayload | IntakePayload | DocumentPayload;
