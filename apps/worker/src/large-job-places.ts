/**
 * Places for this process's large jobs (LARGE_JOB_CONCURRENCY): a job that reads a staged input, an
 * archive or a document waits here, first come first served, while as many as the bound run; a small
 * upload carried in its job needs none, so it never queues behind them for a worker slot's worth of
 * memory. A place is handed straight to the next waiter when one is left.
 */
export class LargeJobPlaces {
  private taken = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Jobs waiting for a place now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with the place's release (idempotent) once the job may run. */
  async enter(): Promise<() => void> {
    if (this.taken < this.limit) this.taken++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.taken--;
    };
  }
}
