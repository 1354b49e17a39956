/**
 * A script run in a worker thread with a time bound per job and, optionally, a heap limit: a job not
 * answered within `timeoutMs`, or one that kills the thread (out of heap included), fails the property
 * that sent it, and the thread is replaced for the next job.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '@tapyard/core';

export interface BoundedThreadOptions<J> {
  /** The worker script: it answers each `{ ...job, id }` message with `{ id, result }`. */
  script: string;
  /** What the timeout's error says did not return in time. */
  describe(job: J): string;
  timeoutMs?: number;
  heapMb?: number;
}

export class BoundedThread<J extends object, R> {
  private worker: Worker | null = null;
  private next = 0;
  private waiting = new Map<number, { resolve(r: R): void; reject(e: Error): void }>();
  private readonly timeoutMs: number;

  constructor(private readonly options: BoundedThreadOptions<J>) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  async run(job: J): Promise<R> {
    const w = this.thread();
    const id = ++this.next;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<R>((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        timer = setTimeout(() => {
          this.drop(w);
          reject(new Error(`${this.options.describe(job)} did not return within ${this.timeoutMs} ms`));
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
    const { script, heapMb } = this.options;
    const w = spawnWorker(
      script,
      heapMb ? { resourceLimits: { maxOldGenerationSizeMb: heapMb } } : undefined,
    );
    w.on('message', (m: { id: number; result: R }) => this.waiting.get(m.id)?.resolve(m.result));
    w.on('error', (err) => {
      this.drop(w);
      for (const p of this.waiting.values()) p.reject(new Error(`the thread died: ${err.message}`));
    });
    this.worker = w;
    return w;
  }
}
