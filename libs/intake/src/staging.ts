import { Inject, Injectable, Optional } from '@nestjs/common';
import { FileHandle, open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { BodyMemory, ObjectStore } from '@tapyard/objectstore';
import { FatalReadError, StreamEndedError } from '@tapyard/readers';
import { StagedWriter } from './staged-writer';
import { STAGING_PREFIX, checkedId, endKey, partKey, stopKey } from './staging-keys';
import { StagingSignals, StagingWatch } from './staging-signals';

/** End and stop markers are cut at this size when written, and refused past it when read. */
const MARKER_BYTES = 4096;
/**
 * A part larger than this is refused unread (ours are at most PART_BYTES, staged-writer.ts; older
 * writers' a little more).
 */
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

/** A marker that ends a reader: `abort <reason>` or `superseded <reason>`. */
function ended(marker: string): StreamEndedError {
  const space = marker.indexOf(' ');
  const kind = space < 0 ? marker : marker.slice(0, space);
  return new StreamEndedError(
    kind === 'superseded',
    space < 0 ? 'the writer ended its stream' : marker.slice(space + 1),
  );
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
