/**
 * Messages between a job's main-thread runner and its stage thread, which reads the file and runs
 * DataQuality and Transformation on it (see stage-thread.ts). Everything here is structured-clone
 * data: plain objects, strings, numbers, and the input's port or bytes (transferred).
 */
import type { MessagePort } from 'node:worker_threads';
import type { PipelineDefinition } from '@tapyard/model';
import type { Payload, TargetShape } from '@tapyard/destinations';
import type { ScriptRunSpec, WarmSpec } from '@tapyard/scripts';

export interface StartMessage {
  kind: 'start';
  /**
   * The job's input, transferred: a port the runner sends it through as it reads it (see
   * input-channel.ts), or the whole input when the job carried it (a small upload), which saves the
   * thread round trips of a channel for a few KiB.
   */
  input: MessagePort | ArrayBuffer;
  /** Tap output: JSON lines of records, mapped onto these columns for CSV pipelines. */
  records: { keys: string[]; columns: string[] } | null;
  definition: PipelineDefinition;
  filename: string;
  /** Where the thread writes rejected rows, one JSON object per line. */
  rejectsPath: string;
  /**
   * A CSV upload whose only destination takes clean CSV as it is: read on the fast path
   * (fast-csv.ts), clean chunks unparsed. The runner decides (see takesFastPath in fast-path-choice.ts).
   */
  fast: boolean;
  /** Tests only: a value holding this text makes DataQuality spin (STAGE_SPIN_ON, set by the test worker). */
  spinOn: string | null;
  /** [0] heartbeat, bumped by the thread while its event loop runs; [1] stage of the row in progress. */
  shared: SharedArrayBuffer;
  /**
   * After a job whose heap passed this the thread collects its heap once it has been idle `heapIdleMs`
   * (see heap-collect.ts), and is let go when it is still past it (OVERSIZED), or at once when it
   * cannot collect: a thread let go starts no warm sandboxes, and the pool hands their kinds to the
   * thread that takes its place.
   */
  maxHeapBytes: number;
  heapIdleMs: number;
}

export interface PlanMessage {
  kind: 'plan';
  definition: PipelineDefinition;
  fileColumns: string[];
  /** The pipeline's validation schema, read by the main thread: a JSON Schema or an XSD. */
  schema: { file: string; text: string } | null;
  /**
   * The encoder module of each destination loading this job (see Destination.encoder), the most
   * rows one payload may hold (null: any), and what its preparation read of the target (null: nothing).
   */
  encoders: { module: string; maxBatchRows: number | null; shape: TargetShape | null }[];
  /**
   * The pipeline's CodeGen scripts, in stage order (data quality, then transformation): each runs in a
   * sandboxed process of its own over every batch, after the built-in checks and mappings.
   */
  scripts: ScriptRunSpec[];
}

export interface NextMessage {
  kind: 'next';
  /**
   * Memory of binary COPY pieces the loaders have sent (transferred): the encoder writes the next
   * pieces into it instead of new memory (see PartBuffers).
   */
  spare?: ArrayBuffer[];
}

/**
 * The scripts the job will most likely run, sent while its first batch is read and its load planned:
 * their sandboxed processes start now, and `plan` takes those it names again. Never answered (the
 * replies are matched to requests in order).
 */
export interface WarmMessage {
  kind: 'warm';
  scripts: ScriptRunSpec[];
}

/**
 * The pool lets go of the thread: it stops its warm sandboxes and gives back their uids and cgroups,
 * which a terminated thread never would, then answers RETIRED (outside the job replies).
 */
export interface RetireMessage {
  kind: 'retire';
}

export const RETIRED = 'tapyard-stage-thread-retired';

/**
 * Sent (outside the job replies) by an idle thread whose heap is still past the pool's bound after the
 * collection its job's end announced (`collects`): the pool lets it go.
 */
export const OVERSIZED = 'tapyard-stage-thread-oversized';

/**
 * Warm sandboxes for the thread's next jobs, for the kinds of script the worker ran lately: sent to the
 * thread the next job takes when the pool let go of the one that held them. Never answered.
 */
export interface SparesMessage {
  kind: 'spares';
  specs: WarmSpec[];
}

export type ToThread = StartMessage | PlanMessage | NextMessage | WarmMessage | RetireMessage | SparesMessage;

/** Counts of a job's rows, as the status entries report them. */
export interface Counts {
  rows: number;
  rejected: number;
  dq: number;
  tf: number;
  /** `line N: reason` of the first rejected row, for the job's error when nothing loads. */
  firstReject: string | null;
  /** Rows checked byte-wise and passed to the destination as they are (the CSV fast path). */
  unparsed: number;
  /** Of those, rows the encoder wrote as PostgreSQL binary COPY from their fields (copy-binary.ts). */
  binary: number;
}

export type FromThread =
  | { kind: 'first'; header: string[] | null; width: number | null }
  | { kind: 'planned' }
  /**
   * One batch, encoded for each destination (payloads[i] for encoders[i]; a destination with a
   * batch limit may get several); `counts` so far.
   */
  | {
      kind: 'batch';
      payloads: Payload[][];
      counts: Counts;
      /** Staged parts' buffers the encoder is done with (transferred back): they hold the next parts. */
      spent?: ArrayBuffer[];
    }
  /**
   * Every row is read and the rejects file is closed; `sample`: the first rows as typed (before any
   * script), for the dry run of the pipeline's next script.
   */
  | {
      kind: 'end';
      counts: Counts;
      sample: Record<string, unknown>[];
      /** The most heap the thread's V8 held during the job (sampled per batch); see StageThreadPool. */
      heapBytes: number;
      /** The heap passed the bound and the thread will collect it once idle: it may be kept. */
      collects: boolean;
    }
  | {
      kind: 'error';
      message: string;
      /** What failed: the input (a FatalReadError), the tap stream, a CodeGen script, or something else. */
      cause: 'read' | 'superseded' | 'aborted' | 'schema' | 'script' | 'other';
      /** cause 'script': the stage of the script that failed. */
      stage?: 'DataQuality' | 'Transformation';
    };

export const HEARTBEAT = 0;
export const STAGE = 1;
export const STAGE_NAMES = ['DataQuality', 'Transformation'] as const;
