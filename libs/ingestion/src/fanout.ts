/**
 * One stream of batches read once, fed to several loaders at their own pace: each loader gets its
 * own iterable of its own payloads. The reader waits while any live loader is more than `depth`
 * batches behind (memory stays bounded by that depth); a loader that fails is detached and no
 * longer waited for, so the others finish. A read failure ends every loader's stream with it.
 */
export class Fanout<T> {
  private readonly queues: T[][];
  private readonly live: boolean[];
  private readonly wake: (() => void)[] = [];
  private done = false;
  private failure: unknown = null;
  private readerWake: (() => void) | null = null;

  constructor(
    legs: number,
    private readonly depth = 2,
  ) {
    this.queues = Array.from({ length: legs }, () => []);
    this.live = Array.from({ length: legs }, () => true);
  }

  /** The stream of leg `i`. */
  async *stream(i: number): AsyncGenerator<T> {
    for (;;) {
      const q = this.queues[i];
      if (q.length > 0) {
        const item = q.shift() as T;
        this.readerWake?.();
        yield item;
        continue;
      }
      if (this.failure !== null) throw this.failure;
      if (this.done || !this.live[i]) return;
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }

  /** Leg `i` stopped (failed or finished): the reader no longer waits for it. */
  detach(i: number): void {
    this.live[i] = false;
    this.queues[i] = [];
    this.readerWake?.();
  }

  /**
   * Reads every batch (`next` returns null at the end) and hands items[i] to leg i. Resolves when
   * all is read; a read failure is passed to every leg, then rethrown.
   */
  async pump(next: () => Promise<T[][] | null>): Promise<void> {
    try {
      for (;;) {
        while (this.queues.some((q, i) => this.live[i] && q.length >= this.depth)) {
          await new Promise<void>((resolve) => (this.readerWake = resolve));
          this.readerWake = null;
        }
        if (!this.live.some(Boolean)) return;
        const items = await next();
        if (items === null) return;
        items.forEach((list, i) => {
          if (this.live[i]) this.queues[i].push(...list);
        });
        this.notify();
      }
    } catch (err) {
      this.failure = err;
      throw err;
    } finally {
      this.done = true;
      this.notify();
    }
  }

  private notify(): void {
    for (const w of this.wake.splice(0)) w();
  }
}
