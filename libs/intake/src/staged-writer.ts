import { Writable } from 'node:stream';
import { errorMessage } from '@tapyard/core';
import type { ObjectStore } from '@tapyard/objectstore';
import { partKey } from './staging-keys';

/** A part is written once this much is buffered... */
const PART_BYTES = 4 << 20;
/**
 * ...the first part once this much is: a job reading the input while it arrives (a streamed upload, a
 * tap's records) starts on it sooner. 1 MiB is the stage thread's check window and past the size a
 * binary COPY is decided on (BINARY_MIN_BYTES). bench:ingest, four interleaved pairs: narrow file 1.08,
 * 0.99, 1.05, 0.99 of `psql \copy` against 0.99, 1.02, 0.99, 0.92 with a 4 MiB first part; mixed file
 * 0.90, 0.91, 0.85, 0.80 against 0.83, 0.84, 0.75, 0.82.
 */
const FIRST_PART_BYTES = 1 << 20;
/** ...or once its first byte has waited this long, so a slow writer's data still reaches the job. */
const FLUSH_AFTER_MS = 250;
/** Parts uploading at once per writer: the writer's memory is bounded by (this + 1) parts. */
const PARTS_IN_FLIGHT = 2;

/**
 * Writes one staged input as numbered part objects, so a job on any host can read it while it is
 * still written. Backpressure: a write waits while PARTS_IN_FLIGHT parts are uploading. A failed
 * part fails the next write (or the end), never silently.
 */
export class StagedWriter extends Writable {
  /** Bytes accepted so far. */
  bytes = 0;
  /** Parts started so far (their number is the part count once the writer finished). */
  parts = 0;
  /** Parts written so far, every one before them too (parts finish out of order). */
  private announced = 0;
  private readonly finished = new Set<number>();
  private buffered: Buffer[] = [];
  private size = 0;
  private readonly inflight = new Set<Promise<void>>();
  private failure: Error | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: ObjectStore,
    private readonly bucket: string,
    readonly id: string,
    /** Tells the readers how many parts are written (StagingSignals), so they need not poll for them. */
    private readonly written: (parts: number) => void = () => undefined,
  ) {
    super({ highWaterMark: 1 << 20 });
    // A failed part is reported to whoever writes or ends the stream (pipeline, `finished`); an
    // 'error' event nobody listens to must not reach the process.
    this.on('error', () => undefined);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.failure) return done(this.failure);
    this.buffered.push(chunk);
    this.size += chunk.length;
    this.bytes += chunk.length;
    if (this.size < this.partBytes()) {
      this.timer ??= setTimeout(() => this.flush(), FLUSH_AFTER_MS);
      return done();
    }
    this.flush();
    this.room().then(() => done(this.failure), done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.flush();
    Promise.all(this.inflight).then(() => done(this.failure), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.clearTimer();
    done(err);
  }

  /** Stops writing and waits for parts already uploading, so a removal after it finds them all. */
  async discard(): Promise<void> {
    this.destroy();
    await Promise.allSettled([...this.inflight]);
  }

  private flush(): void {
    this.clearTimer();
    // Parts of at most PART_BYTES, so a reader's buffer per part is bounded whatever one write held.
    let part: Buffer[] = [];
    let size = 0;
    for (let chunk of this.buffered) {
      while (size + chunk.length > this.partBytes()) {
        const room = this.partBytes() - size;
        part.push(chunk.subarray(0, room));
        this.put(part);
        chunk = chunk.subarray(room);
        part = [];
        size = 0;
      }
      if (chunk.length > 0) part.push(chunk);
      size += chunk.length;
    }
    if (size > 0) this.put(part);
    this.buffered = [];
    this.size = 0;
  }

  /** The size of the part being filled (the first is smaller). */
  private partBytes(): number {
    return this.parts === 0 ? FIRST_PART_BYTES : PART_BYTES;
  }

  private put(chunks: Buffer[]): void {
    const n = this.parts++;
    const put: Promise<void> = this.store
      .putChunks(this.bucket, partKey(this.id, n), chunks, 'application/octet-stream')
      .then(() => this.finishedPart(n))
      .catch((err: unknown) => {
        this.failure ??= err instanceof Error ? err : new Error(errorMessage(err));
      })
      .finally(() => this.inflight.delete(put));
    this.inflight.add(put);
  }

  /** Announced only when the parts written without a gap grew: a reader needs them in order. */
  private finishedPart(n: number): void {
    this.finished.add(n);
    const before = this.announced;
    while (this.finished.delete(this.announced)) this.announced++;
    if (this.announced > before) this.written(this.announced);
  }

  private async room(): Promise<void> {
    while (this.inflight.size >= PARTS_IN_FLIGHT) await Promise.race(this.inflight);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
