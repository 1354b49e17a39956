/**
 * The CodeGen answer reader (answer-worker.ts) in a worker thread with a time bound per answer and a
 * heap limit: an answer that is not read within `timeoutMs`, or that exhausts the thread's heap, fails
 * the property (and the thread is replaced).
 */
import { join } from 'node:path';
import type { SchemaField, TypedBatch } from '@tapyard/model';
import type { CodegenKind } from '../../../libs/scripts/src/script-contract';
import type { ScriptRejects } from '../../../libs/scripts/src/script-answer';
import { BoundedThread } from './bounded-thread';

export interface AnswerJob {
  kind: CodegenKind;
  outputColumns: SchemaField[];
  batch: TypedBatch;
  /** What the script wrote to its record channel. */
  channel: Uint8Array;
  chunk: number;
  maxRecordBytes: number;
}

export type AnswerResult =
  | { outcome: 'ok'; batch: TypedBatch; rejects: ScriptRejects }
  /** ScriptFailure: the job fails naming the script. */
  | { outcome: 'failure'; message: string }
  /** RecordStreamError: the run is stopped, its channel corrupted or a record too large. */
  | { outcome: 'channel'; message: string }
  /** No complete record: the call waits for one until its timeout. */
  | { outcome: 'none'; message: string }
  /** Anything else thrown: a bug of the reader. */
  | { outcome: 'bug'; message: string };

/** The heap the reading thread gets: far above what one bounded answer needs. */
const HEAP_MB = 256;

export class AnswerPool extends BoundedThread<AnswerJob, AnswerResult> {
  constructor(timeoutMs = 10_000) {
    super({
      script: join(__dirname, 'answer-worker.ts'),
      describe: () => 'the answer reader',
      timeoutMs,
      heapMb: HEAP_MB,
    });
  }
}
