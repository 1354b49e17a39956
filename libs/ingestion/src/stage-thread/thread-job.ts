/**
 * A stage thread's job as its message handlers (thread-main.ts) and its scripted batches
 * (scripted-batches.ts) share it. Types and pure helpers only: nothing here runs at import.
 */
import type { WriteStream } from 'node:fs';
import type { RecordBatch } from '@tapyard/readers';
import type { BatchBuilder, RowPlan } from '../row-plan';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import type { TypedBatch } from '@tapyard/model';
import type { RunningScript, ScriptRunSpec } from '@tapyard/scripts';
import type { Counts, StartMessage } from './protocol';
import type { RecordValidator } from './convert';
import type { FastCsvInput } from './fast-csv';

export interface Job {
  id: number;
  start: StartMessage;
  /** null on the fast path, which reads through `fast`. */
  batches: AsyncGenerator<RecordBatch> | null;
  first: RecordBatch | null;
  plan: RowPlan | null;
  builder: BatchBuilder | null;
  encoders: ((batch: TypedBatch) => Payload[])[];
  /** On the fast path, for an encoder that writes clean CSV chunks itself (CsvEncoderFactory): its CSV form. */
  csvEncoder: ((chunk: CsvChunkPayload) => Iterable<Payload[]>) | null;
  /** The rest of the part being written by csvEncoder, one batch a request. */
  pieces: Iterator<Payload[]> | null;
  /** The encoder module of csvEncoder, which takes back its pieces' memory (null: none). */
  csvModule: string | null;
  /** The memory of the clean chunks `pieces` is writing. */
  piecesOf: ArrayBuffer[];
  /** Staged parts the encoder is done with, to give back to the main thread once nothing here holds them. */
  spent: ArrayBuffer[];
  validator: RecordValidator | null;
  rejects: WriteStream | null;
  counts: Counts;
  spin: ((row: (string | null)[]) => void) | null;
  fast: FastCsvInput | null;
  /** The pipeline's CodeGen scripts, started at plan, in stage order. */
  scripts: RunningScript[];
  /** Scripts started ahead of plan (WarmMessage), by their spec's JSON; plan takes those it runs. */
  warm: Map<string, Promise<RunningScript | null>>;
  /** The specs of the scripts the job started: warm sandboxes for them are ready after it. */
  specs: ScriptRunSpec[];
  /** The next batch, read and converted while the scripts work on this one (see `next`). */
  ahead: Ahead | null;
  /** The first rows as typed, before any script (see FromThread 'end'), and their size as JSON. */
  sample: Record<string, unknown>[];
  sampleBytes: number;
  sampleFull: boolean;
  /** The most heap seen at a batch boundary (see FromThread 'end'). */
  heapBytes: number;
}

/**
 * A batch converted ahead, with what converting it counted and rejected kept apart: they join the
 * job's when the batch's turn comes, so counts and the rejects file read as if converted then.
 */
export interface Ahead {
  typed: Promise<TypedBatch | null>;
  /** The batch through the job's scripts, sent to them as soon as it was converted. */
  scripted: Promise<TypedBatch | null>;
  counts: Counts;
  rejects: string[];
}

// Enough rows for evidence to mean something (one row is 0.5 %), few enough to keep as metadata.
export const SAMPLE_ROWS = 200;
export const SAMPLE_BYTES = 1 << 20;

/** A CodeGen script failed: the job's stage ends with the script's own error. */
export class ScriptStageError extends Error {
  constructor(
    readonly stage: 'DataQuality' | 'Transformation',
    message: string,
  ) {
    super(message);
  }
}

export function readerOf(j: Job): AsyncGenerator<RecordBatch> {
  if (j.batches === null) throw new Error('a fast-path job has no batch reader');
  return j.batches;
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
