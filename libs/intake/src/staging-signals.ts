import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type Redis from 'ioredis';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage, sideConnection } from '@tapyard/core';

/** One channel for every staged input of every environment: a message names its bucket and id. */
const CHANNEL = 'tapyard:staging:changed';

interface Watched {
  /** Bumped by every message naming the input (and by a reconnect, when messages may have been lost). */
  version: number;
  watchers: number;
  wake: Set<() => void>;
}

/** A reader's view of the signals of one staged input. */
export interface StagingWatch {
  /** Changes whenever the writer signalled something new; read it before looking at the store. */
  readonly version: number;
  /** Whether signals arrive now (the subscription is up): otherwise the reader polls as it would without. */
  readonly live: boolean;
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

  /** Tells the readers of `bucket`/`id` to look again; never fails (a reader falls back to polling). */
  notify(bucket: string, id: string): void {
    this.prepare();
    if (this.publisher?.status !== 'ready') return;
    this.publisher.publish(CHANNEL, `${bucket}/${id}`).catch(() => undefined);
  }

  watch(bucket: string, id: string): StagingWatch {
    this.listen();
    const key = `${bucket}/${id}`;
    let w = this.watched.get(key);
    if (!w) {
      w = { version: 0, watchers: 0, wake: new Set() };
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
    sub.on('message', (_channel: string, key: string) => this.bump(this.watched.get(key)));
    sub.on('close', () => (this.subscribed = false));
    // ioredis subscribes again after a reconnect; what was published meanwhile is lost: everyone looks again.
    sub.on('ready', () => {
      if (!once || this.subscriber !== sub) return;
      this.subscribed = true;
      for (const w of this.watched.values()) this.bump(w);
    });
    sub
      .connect()
      .then(() => sub.subscribe(CHANNEL))
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
