/**
 * A reader in a worker thread with a time bound per input: a reader that does not return within
 * `timeoutMs` is a failure of the property (and the thread is replaced).
 */
import type { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { spawnWorker } from '@tapyard/core';
import type { RowError } from '../../../libs/readers/src/record-batch';

export interface ReaderJob {
  reader: 'csv' | 'json' | 'xml' | 'tap';
  data: Uint8Array;
  chunk: number;
  opts?: Record<string, unknown>;
  /** Tap records: the keys mapped onto columns. */
  keys?: string[];
}

export interface ReaderResult {
  rows: (string | null)[][];
  lines: number[];
  errors: RowError[];
  header: string[] | null;
  fatal: { name: string; message: string } | null;
}

export class ReaderTimeout extends Error {}

export class ReaderPool {
  private worker: Worker | null = null;
  private next = 0;
  private waiting = new Map<number, (r: ReaderResult) => void>();

  constructor(private readonly timeoutMs = 10_000) {}

  async run(job: ReaderJob): Promise<ReaderResult> {
    const w = this.thread();
    const id = ++this.next;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        new Promise<ReaderResult>((resolve) => {
          this.waiting.set(id, resolve);
          w.postMessage({ ...job, id });
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            void w.terminate();
            this.worker = null;
            reject(new ReaderTimeout(`the ${job.reader} reader did not return within ${this.timeoutMs} ms`));
          }, this.timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.waiting.delete(id);
    }
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const w = spawnWorker(join(__dirname, 'reader-worker.ts'));
    w.on('message', (m: { id: number; result: ReaderResult }) => this.waiting.get(m.id)?.(m.result));
    this.worker = w;
    return w;
  }
}
