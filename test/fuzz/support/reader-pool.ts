/**
 * A reader in a worker thread with a time bound per input: a reader that does not return within
 * `timeoutMs` is a failure of the property (and the thread is replaced).
 */
import { join } from 'node:path';
import type { RowError } from '../../../libs/readers/src/record-batch';
import { BoundedThread } from './bounded-thread';

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

export class ReaderPool extends BoundedThread<ReaderJob, ReaderResult> {
  constructor(timeoutMs = 10_000) {
    super({
      script: join(__dirname, 'reader-worker.ts'),
      describe: (job) => `the ${job.reader} reader`,
      timeoutMs,
    });
  }
}
