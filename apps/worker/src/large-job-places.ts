/**
 * Places for this process's large jobs (LARGE_JOB_CONCURRENCY): a job that reads a staged input, an
 * archive or a document waits here, first come first served, while as many as the bound run; a small
 * upload carried in its job needs none, so it never queues behind them for a worker slot's worth of
 * memory. A place is handed straight to the next waiter when one is left.
 */
export class LargeJobPlaces {
  private taken = 0;
  private readonly waiting: ((given: boolean) => void)[] = [];
  private closed = false;

  constructor(readonly limit: number) {}

  /** Jobs waiting for a place now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Jobs holding a place now. */
  get running(): number {
    return this.taken;
  }

  /**
   * Resolves with the place's release (idempotent) once the job may run, or with null once the places
   * are closed (a shutdown): the job then goes back to its queue instead of starting here.
   */
  async enter(): Promise<(() => void) | null> {
    if (this.closed) return null;
    if (this.taken < this.limit) this.taken++;
    else if (!(await new Promise<boolean>((resolve) => this.waiting.push(resolve)))) return null;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiting.shift();
      if (next !== undefined) next(true);
      else this.taken--;
    };
  }

  /** A shutdown: the jobs waiting for a place, and any that asks later, get none. */
  close(): void {
    this.closed = true;
    for (const refuse of this.waiting.splice(0)) refuse(false);
  }
}
