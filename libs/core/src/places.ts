/**
 * A bound on work running at once in this process, first come first served: past `limit` a caller
 * waits for a place, and a place left is handed straight to the caller that waited longest. Bounds the
 * worker's large jobs and its busy stage threads (LARGE_JOB_CONCURRENCY).
 */
export class Places {
  private taken = 0;
  private readonly waiting: ((given: boolean) => void)[] = [];
  private closed = false;

  constructor(readonly limit: number) {}

  /** Callers waiting for a place now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Places held now. */
  get running(): number {
    return this.taken;
  }

  /**
   * Resolves with the place's release (idempotent) once the caller may run, or with null once the
   * places are closed (a shutdown): the caller then does not start.
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

  /** A shutdown: the callers waiting for a place, and any that asks later, get none. */
  close(): void {
    this.closed = true;
    for (const refuse of this.waiting.splice(0)) refuse(false);
  }
}
