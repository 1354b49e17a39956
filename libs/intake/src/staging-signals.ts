import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type Redis from 'ioredis';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage, sideConnection } from '@tapyard/core';

/** One channel for every staged input of every environment: a message names its bucket and id. */
const CHANNEL = 'tapyard:staging:changed';
/**
 * The same news with what it is: `<bucket>/<id> <parts>` (that many parts are written, all of those
 * before them too) or `<bucket>/<id> marker` (an end or stop marker). A reader that has it asks the
 * store only for parts that exist. CHANNEL still carries every message, for readers of older hosts.
 */
const COUNTED_CHANNEL = 'tapyard:staging:counted';

interface Watched {
  /** Bumped by every message naming the input (and by a reconnect, when messages may have been lost). */
  version: number;
  /** Whether the writer's messages say what they announce (since the last reconnect). */
  counted: boolean;
  /** Parts the writer announced written. */
  parts: number;
  /** A marker was announced: the reader looks at everything again. */
  marked: boolean;
  watchers: number;
  wake: Set<() => void>;
}

/** A reader's view of the signals of one staged input. */
export interface StagingWatch {
  /** Changes whenever the writer signalled something new; read it before looking at the store. */
  readonly version: number;
  /** Whether signals arrive now (the subscription is up): otherwise the reader polls as it would without. */
  readonly live: boolean;
  /**
   * Whether part number `part` is not written yet as far as the writer said (it counts its parts, and
   * announced neither that part nor a marker): the reader waits instead of asking the store.
   */
  unannounced(part: number): boolean;
  /** Resolves with true once `version` differs from `seen`, false after `ms` or when `signal` aborts. */
  changed(seen: number, ms: number, signal?: AbortSignal): Promise<boolean>;
  close(): void;
}

/**
 * "Something new in staged input X" through Redis pub/sub, so a reader waiting on a growing input asks
 * the object store when the writer wrote a part or a marker, not every few milliseconds (each miss was
 * two requests that cost the reader, the store and the writer's host CPU). Only a hint: the store stays
 * the truth, a lost message costs a reader one fallback poll, and without Redis readers poll as before.
 */
@Injectable()
export class StagingSignals implements OnModuleDestroy {
  private publisher: Redis | null = null;
  private subscriber: Redis | null = null;
  private subscribed = false;
  private readonly watched = new Map<string, Watched>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Whether this process receives signals now (readers that wait trust them only then). */
  get live(): boolean {
    return this.subscribed;
  }

  /** Connects the publisher ahead of a writer's first part (a message sent before it is ready is dropped). */
  prepare(): void {
    this.publisher ??= this.connect('publisher', { enableOfflineQueue: false, lazyConnect: false });
  }

  /**
   * Tells the readers of `bucket`/`id` to look again: `parts` are written, or a `marker`; never fails (a
   * reader falls back to polling). The counted message goes first, so a reader that has it can leave
   * the plain one aside.
   */
  notify(bucket: string, id: string, what: number | 'marker'): void {
    this.prepare();
    if (this.publisher?.status !== 'ready') return;
    const key = `${bucket}/${id}`;
    this.publisher
      .pipeline()
      .publish(COUNTED_CHANNEL, `${key} ${what}`)
      .publish(CHANNEL, key)
      .exec()
      .catch(() => undefined);
  }

  watch(bucket: string, id: string): StagingWatch {
    this.listen();
    const key = `${bucket}/${id}`;
    let w = this.watched.get(key);
    if (!w) {
      w = { version: 0, watchers: 0, wake: new Set(), counted: false, parts: 0, marked: false };
      this.watched.set(key, w);
    }
    w.watchers++;
    const entry = w;
    let closed = false;
    const live = () => this.live;
    return {
      get version() {
        return entry.version;
      },
      get live() {
        return live();
      },
      unannounced: (part) => entry.counted && !entry.marked && entry.parts <= part,
      changed: (seen, ms, signal) =>
        new Promise<boolean>((resolve) => {
          if (entry.version !== seen || signal?.aborted) return resolve(entry.version !== seen);
          const done = (changed: boolean) => {
            clearTimeout(timer);
            entry.wake.delete(wake);
            signal?.removeEventListener('abort', onAbort);
            resolve(changed);
          };
          const wake = () => done(true);
          const onAbort = () => done(false);
          const timer = setTimeout(() => done(false), ms);
          entry.wake.add(wake);
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      close: () => {
        if (closed) return;
        closed = true;
        if (--entry.watchers === 0) this.watched.delete(key);
      },
    };
  }

  onModuleDestroy(): void {
    // Nothing is left to flush: a message not sent is a poll a reader makes.
    this.publisher?.disconnect();
    this.subscriber?.disconnect();
    this.publisher = this.subscriber = null;
    this.subscribed = false;
  }

  private listen(): void {
    if (this.subscriber) return;
    const sub = this.connect('subscriber', { lazyConnect: true });
    this.subscriber = sub;
    let once = false;
    sub.on('message', (channel: string, message: string) => this.received(channel, message));
    sub.on('close', () => (this.subscribed = false));
    // ioredis subscribes again after a reconnect; what was published meanwhile is lost: everyone looks again.
    sub.on('ready', () => {
      if (!once || this.subscriber !== sub) return;
      this.subscribed = true;
      for (const w of this.watched.values()) {
        w.counted = false; // counts published meanwhile are lost
        this.bump(w);
      }
    });
    sub
      .connect()
      .then(() => sub.subscribe(COUNTED_CHANNEL, CHANNEL))
      .then(() => {
        once = true;
        if (this.subscriber === sub) this.subscribed = true;
      })
      .catch((err: unknown) => {
        // The next reader tries again; until then readers poll.
        sub.disconnect();
        if (this.subscriber === sub) this.subscriber = null;
        this.logger.warn(
          { err: errorMessage(err) },
          'staging signals unavailable: readers poll the object store',
        );
      });
  }

  private received(channel: string, message: string): void {
    if (channel !== COUNTED_CHANNEL) {
      const w = this.watched.get(message);
      // A counting writer's plain message repeats the counted one before it.
      if (!w?.counted) this.bump(w);
      return;
    }
    const space = message.lastIndexOf(' ');
    const w = this.watched.get(message.slice(0, space));
    if (!w) return;
    const what = message.slice(space + 1);
    const parts = Number(what);
    if (what === 'marker') w.marked = true;
    else if (Number.isSafeInteger(parts)) w.parts = Math.max(w.parts, parts);
    else return;
    w.counted = true;
    this.bump(w);
  }

  private bump(w: Watched | undefined): void {
    if (!w) return;
    w.version++;
    for (const wake of [...w.wake]) wake();
  }

  private connect(role: string, options: { enableOfflineQueue?: boolean; lazyConnect: boolean }): Redis {
    // A hint only: readers poll while Redis is away.
    return sideConnection(this.config.redis.url, `staging-${role}`, options);
  }
}
