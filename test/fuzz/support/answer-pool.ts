/**
 * The CodeGen answer reader (answer-worker.ts) in a worker thread with a time bound per answer and a
 * heap limit: an answer that is not read within `timeoutMs`, or that exhausts the thread's heap, fails
 * the property (and the thread is replaced).
 */
import type { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { spawnWorker } from '@tapyard/core';
import type { SchemaField, TypedBatch } from '@tapyard/model';
import type { CodegenKind } from '../../../libs/scripts/src/script-contract';
import type { ScriptRejects } from '../../../libs/scripts/src/script-answer';

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

export class AnswerPool {
  private worker: Worker | null = null;
  private next = 0;
  private waiting = new Map<number, { resolve(r: AnswerResult): void; reject(e: Error): void }>();

  constructor(private readonly timeoutMs = 10_000) {}

  async run(job: AnswerJob): Promise<AnswerResult> {
    const w = this.thread();
    const id = ++this.next;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<AnswerResult>((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        timer = setTimeout(() => {
          this.drop(w);
          reject(new Error(`the answer was not read within ${this.timeoutMs} ms`));
        }, this.timeoutMs);
        w.postMessage({ ...job, id });
      });
    } finally {
      clearTimeout(timer);
      this.waiting.delete(id);
    }
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }

  private drop(w: Worker): void {
    void w.terminate();
    if (this.worker === w) this.worker = null;
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const w = spawnWorker(join(__dirname, 'answer-worker.ts'), {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MB },
    });
    w.on('message', (m: { id: number; result: AnswerResult }) => this.waiting.get(m.id)?.resolve(m.result));
    // Out of heap (ERR_WORKER_OUT_OF_MEMORY) or any other death of the thread fails the answer it read.
    w.on('error', (err) => {
      this.drop(w);
      for (const p of this.waiting.values()) p.reject(new Error(`the reading thread died: ${err.message}`));
    });
    this.worker = w;
    return w;
  }
}
