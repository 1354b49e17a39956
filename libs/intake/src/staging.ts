import { Inject, Injectable, Optional } from '@nestjs/common';
import { FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { BodyMemory, ObjectStore } from '@tapyard/objectstore';
import { FatalReadError, StreamEndedError } from '@tapyard/readers';
import { StagingSignals, StagingWatch } from './staging-signals';

/** Where staged inputs live in an environment's `staged` bucket: `spool/<id>/part-NNNNNN`, `…/end`. */
export const STAGING_PREFIX = 'spool/';
/** A part is written once this much is buffered... */
const PART_BYTES = 4 << 20;
/** ...or once its first byte has waited this long, so a slow writer's data still reaches the job. */
const FLUSH_AFTER_MS = 250;
/** Parts uploading at once per writer: the writer's memory is bounded by (this + 1) parts. */
const PARTS_IN_FLIGHT = 2;
/** End and stop markers are cut at this size when written, and refused past it when read. */
const MARKER_BYTES = 4096;
/** A part larger than this is refused unread (ours are at most PART_BYTES; older writers' a little more). */
const MAX_PART_BYTES = 64 << 20;
/** How often a reader waiting for a part looks for its stop marker. */
const STOP_CHECK_MS = 250;
/**
 * With signals (StagingSignals), how long a waiting reader trusts them before it looks anyway: a lost
 * message (a Redis reconnect) costs at most this much.
 */
const SIGNALLED_POLL_MS = 1000;
/** A writer silent this long without an end marker is gone (a host that died mid-upload). */
const DEFAULT_STALE_MS = 300_000;
/** A staging id is a token the platform made (a job's pipeline token), never a client's name. */
const STAGING_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

function checkedId(id: string): string {
  if (!STAGING_ID.test(id)) throw new Error(`not a staging id: ${JSON.stringify(id.slice(0, 80))}`);
  return id;
}
const partKey = (id: string, n: number) => `${STAGING_PREFIX}${id}/part-${String(n).padStart(6, '0')}`;
const endKey = (id: string) => `${STAGING_PREFIX}${id}/end`;
const stopKey = (id: string, reader: string) => `${STAGING_PREFIX}${id}/stop-${checkedId(reader)}`;

/** A marker that ends a reader: `abort <reason>` or `superseded <reason>`. */
function ended(marker: string): StreamEndedError {
  const space = marker.indexOf(' ');
  const kind = space < 0 ? marker : marker.slice(0, space);
  return new StreamEndedError(
    kind === 'superseded',
    space < 0 ? 'the writer ended its stream' : marker.slice(space + 1),
  );
}

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
    if (this.size < PART_BYTES) {
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
      while (size + chunk.length > PART_BYTES) {
        const room = PART_BYTES - size;
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

export interface ReadOptions {
  /** The job reading: a writer may tell one reader to stop (`superseded`) while another goes on. */
  reader?: string;
  /** Ends the read quietly (the job ended). */
  signal?: AbortSignal;
  /** How long without a new part or an end marker means the writer is gone (default 5 min). */
  staleMs?: number;
  /** Supplies each part's buffer (a job's recycled part buffers: see PartBuffers in ingestion). */
  memory?: BodyMemory;
}

/**
 * Inputs on their way to a job, in the object store: the only thing API and worker hosts share
 * besides PostgreSQL and Redis. The writer (an upload on the API, a tap run, an archive's
 * extraction) writes parts and then an end marker (`done <parts>` or `abort <reason>`), or a stop
 * marker for one reader. A job reads the parts as they appear (`read`), straight into its stage
 * thread; intake jobs that need a file (archives, documents) `download` it. Objects are removed when
 * the job ends, and swept after STAGING_TTL_HOURS when a host died.
 */
@Injectable()
export class Staging {
  private readonly store: ObjectStore;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    platformStore: ObjectStore,
    @Optional() private readonly signals?: StagingSignals,
  ) {
    const endpoint = config.staging.endpoint;
    this.store =
      endpoint === null || endpoint === config.objectStore.endpoint
        ? platformStore
        : new ObjectStore({ ...config, objectStore: { ...config.objectStore, endpoint } }, logger);
  }

  async writer(environment: string, id: string): Promise<StagedWriter> {
    const bucket = await this.bucket(environment);
    const signals = this.signals;
    signals?.prepare();
    return new StagedWriter(this.store, bucket, checkedId(id), (parts) => signals?.notify(bucket, id, parts));
  }

  /** The whole of `body` as a finished staged input; returns its size in bytes. */
  async write(environment: string, id: string, body: NodeJS.ReadableStream): Promise<number> {
    const w = await this.writer(environment, id);
    try {
      await pipeline(body, w);
    } catch (err) {
      await w.discard();
      await this.remove(environment, id).catch(() => undefined);
      throw err;
    }
    await this.done(environment, w);
    return w.bytes;
  }

  /** Every part is written: the readers read to the end and stop. */
  async done(environment: string, w: StagedWriter): Promise<void> {
    await this.marker(environment, w.id, endKey(w.id), `done ${w.parts}`);
  }

  /** The input is refused after all: its readers fail without committing, saying why. */
  async abort(environment: string, id: string, reason: string): Promise<void> {
    await this.marker(environment, id, endKey(checkedId(id)), `abort ${reason}`);
  }

  /** One reader stops (its load moved to another job reading the same input), committing nothing. */
  async supersede(environment: string, id: string, reader: string, reason: string): Promise<void> {
    await this.marker(environment, id, stopKey(checkedId(id), reader), `superseded ${reason}`);
  }

  /**
   * The input's parts, each in a buffer of its own (or one `memory` gave), as they are written;
   * ends at `done`. Throws StreamEndedError when the writer aborted the input or stopped this
   * reader, FatalReadError when the writer went silent for `staleMs` or the object store failed for
   * longer than STAGING_READ_RETRY_SECONDS. An aborted `signal` ends it quietly.
   */
  async *read(environment: string, id: string, options: ReadOptions = {}): AsyncGenerator<Buffer> {
    checkedId(id);
    const { reader, signal } = options;
    const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
    const retryMs = this.config.staging.readRetryMs;
    let part = 0;
    let pause = 5;
    // Since when nothing new arrived: a writer that just paused is polled often (its next part or end
    // marker comes soon, and the job's end waits on it); a slow one, a few times a second.
    let idleSince = Date.now();
    let failingSince: number | null = null;
    let stopCheckedAt = 0;
    // Signalled: the reader asks the store when the writer says it wrote something. A writer that does
    // not signal (found new data on a fallback look) is polled for the rest of the read.
    let watch: StagingWatch | null;
    let trusted = true;
    let signalled = false;
    let timedOut = false;
    try {
      watch = this.signals?.watch(await this.bucket(environment), id) ?? null;
    } catch {
      watch = null; // no store yet: the loop below reports it
    }
    try {
      while (!signal?.aborted) {
        const seen = watch?.version ?? 0;
        // The writer counts what it announces and has not announced this part: no request to the store
        // (each miss was two, a part and the end marker, and most parts were waited for so).
        if (watch?.live && trusted && !timedOut && failingSince === null && watch.unannounced(part)) {
          signalled = await watch.changed(seen, SIGNALLED_POLL_MS, signal);
          timedOut = !signalled;
          continue;
        }
        let body: Buffer | null = null;
        let end: string | null = null;
        try {
          const bucket = await this.bucket(environment);
          body = await this.store.getBuffer(bucket, partKey(id, part), MAX_PART_BYTES, options.memory);
          if (body === null) {
            end = await this.text(bucket, endKey(id));
            // A stop marker is rare (a tap run moving its load): looked for a few times a second while
            // waiting, after a signal that brought nothing else, and always before an end is taken, so
            // a stopped reader never ends as if done.
            if (reader && (end !== null || signalled || Date.now() - stopCheckedAt >= STOP_CHECK_MS)) {
              stopCheckedAt = Date.now();
              const stop = await this.text(bucket, stopKey(id, reader));
              if (stop !== null) throw ended(stop);
            }
            if (end !== null && !end.startsWith('done ')) throw ended(end);
            // `done`, and every part read: the end. (A part not listed yet is read on the next pass.)
            if (end !== null && part >= Number(end.slice(5))) return;
            if (Date.now() - idleSince > staleMs) {
              throw new FatalReadError(
                `the data stopped arriving (nothing for ${Math.round(staleMs / 1000)} s); nothing was loaded`,
              );
            }
          }
          failingSince = null;
        } catch (err) {
          if (err instanceof FatalReadError) throw err;
          if (signal?.aborted) return;
          failingSince ??= Date.now();
          if (Date.now() - failingSince > retryMs) {
            throw new FatalReadError(
              `the object store failed while the job read its input (${errorMessage(err)}); nothing was loaded`,
            );
          }
          pause = Math.max(pause, 200);
        }
        if (timedOut && (body !== null || end !== null)) trusted = false;
        timedOut = false;
        if (body !== null) {
          part++;
          pause = 5;
          idleSince = Date.now();
          yield body;
          continue;
        }
        // An end with parts still to come (not yet listed) gets no further signal: polled.
        if (watch?.live && trusted && end === null && failingSince === null) {
          signalled = await watch.changed(seen, SIGNALLED_POLL_MS, signal);
          timedOut = !signalled;
          continue;
        }
        signalled = false;
        await sleep(pause, undefined, { signal }).catch(() => undefined);
        pause = Math.min(pause * 2, Date.now() - idleSince < 2000 ? 20 : 250);
      }
    } finally {
      watch?.close();
    }
  }

  /**
   * The whole input into `local` (archives and documents need a file); fails as `read` does. An input
   * already finished (an archive's entry, a document staged whole) is read by its end marker's part
   * count: `read` would ask for the part after the last (a miss) before it looks at the marker, and
   * every request to the store is signed and costs the worker's CPU. Anything else, or any surprise
   * on the way (a part not there yet, a failing store), is left to `read`.
   */
  async download(environment: string, id: string, local: string): Promise<void> {
    const fh = await open(local, 'w', 0o600);
    try {
      if (await this.readFinished(environment, id, fh)) return;
      await fh.truncate(0);
      let at = 0;
      for await (const part of this.read(environment, id)) {
        await fh.write(part, 0, part.length, at);
        at += part.length;
      }
    } finally {
      await fh.close();
    }
  }

  /** A finished input's parts written to `fh`; false (having written any part or not) when it is not finished. */
  private async readFinished(environment: string, id: string, fh: FileHandle): Promise<boolean> {
    try {
      const bucket = await this.bucket(environment);
      const end = await this.text(bucket, endKey(checkedId(id)));
      const parts = end?.startsWith('done ') ? Number(end.slice(5)) : NaN;
      if (!Number.isSafeInteger(parts) || parts < 0) return false;
      let at = 0;
      for (let n = 0; n < parts; n++) {
        const body = await this.store.getBuffer(bucket, partKey(id, n), MAX_PART_BYTES);
        if (body === null) return false;
        await fh.write(body, 0, body.length, at);
        at += body.length;
      }
      return true;
    } catch {
      return false;
    }
  }

  async remove(environment: string, id: string): Promise<void> {
    const bucket = await this.bucket(environment);
    const keys = (await this.store.list(bucket, `${STAGING_PREFIX}${checkedId(id)}/`)).map((o) => o.key);
    if (keys.length > 0) await this.store.removeMany(bucket, keys);
  }

  /** Removes staged inputs nothing touched for `ttlMs` (their host died); returns how many. */
  async sweep(environment: string, ttlMs: number): Promise<number> {
    const bucket = await this.bucket(environment);
    const newest = new Map<string, { at: number; keys: string[] }>();
    for (const o of await this.store.list(bucket, STAGING_PREFIX)) {
      const id = o.key.slice(STAGING_PREFIX.length).split('/')[0];
      const entry = newest.get(id) ?? { at: 0, keys: [] };
      entry.at = Math.max(entry.at, o.lastModified.getTime());
      entry.keys.push(o.key);
      newest.set(id, entry);
    }
    let swept = 0;
    for (const [id, entry] of newest) {
      if (Date.now() - entry.at < ttlMs) continue;
      await this.store.removeMany(bucket, entry.keys);
      this.logger.info(
        { environment, staged: id, objects: entry.keys.length },
        'swept an abandoned staged input',
      );
      swept++;
    }
    return swept;
  }

  /** A marker, or null when there is none yet. */
  private async text(bucket: string, key: string): Promise<string | null> {
    return (await this.store.getBuffer(bucket, key, MARKER_BYTES))?.toString('utf8') ?? null;
  }

  private async marker(environment: string, id: string, key: string, text: string): Promise<void> {
    // Cut in bytes, as the reader bounds it (a reason may quote a long error).
    const body = Buffer.from(text).subarray(0, MARKER_BYTES);
    const bucket = await this.bucket(environment);
    await this.store.put(bucket, key, body, 'text/plain; charset=utf-8');
    this.signals?.notify(bucket, id, 'marker');
  }

  /** Without an object store this fails as a 503 naming OBJECT_STORE_ENDPOINT: there is no local fallback. */
  private bucket(environment: string): Promise<string> {
    return this.store.bucket(environment, 'staged');
  }
}
