import { JobBatch } from './status.repository';

/** At most this many jobs' writes go in one statement (its size grows with their descriptions). */
const MAX_JOBS_PER_WRITE = 32;

/** Writes in flight at once: one collecting while another waits for PostgreSQL. */
const WRITERS = 2;

interface Queued {
  batch: JobBatch;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Status writes of several jobs that arrive while others are in flight go together in the next write:
 * one statement and one commit for many concurrent jobs instead of one each (group commit), and so do
 * writes made in the same turn of the event loop (jobs whose answers arrived together): a write goes
 * once that turn's callbacks have run. Each caller is answered when its own events are committed. When PostgreSQL
 * refuses a shared write (it rolled back whole), each job's events are written again on their own,
 * so one job's bad write fails only that job; a write that failed otherwise (connection lost, so its
 * commit is unknown) fails every caller in it, as a lone write would.
 */
export class StatusBatcher {
  private readonly queued: Queued[] = [];
  private writing = 0;
  private scheduled = false;

  constructor(private readonly write: (batches: readonly JobBatch[]) => Promise<void>) {}

  record(batch: JobBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ batch, resolve, reject });
      if (this.writing >= WRITERS || this.scheduled) return;
      // After the I/O callbacks of this turn of the event loop: the jobs whose answers arrived together
      // write together.
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.writing < WRITERS && this.queued.length > 0) void this.drain();
      });
    });
  }

  private async drain(): Promise<void> {
    this.writing++;
    try {
      while (this.queued.length > 0) {
        const taken = this.queued.splice(0, MAX_JOBS_PER_WRITE);
        try {
          await this.write(taken.map((q) => q.batch));
          for (const q of taken) q.resolve();
        } catch (err) {
          if (taken.length === 1 || !refusedByServer(err)) {
            for (const q of taken) q.reject(err);
            continue;
          }
          for (const q of taken) await this.write([q.batch]).then(q.resolve, q.reject);
        }
      }
    } finally {
      this.writing--;
    }
  }
}

/** An error PostgreSQL answered (a SQLSTATE): the statement's transaction rolled back, nothing of it is written. */
function refusedByServer(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}
