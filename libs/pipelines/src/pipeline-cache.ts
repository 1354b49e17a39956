import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage, sideConnection } from '@tapyard/core';
import { StoredPipeline } from '@tapyard/model';

/** Every process's cache listens here; a message names the pipeline (`environment\0name`) that changed. */
export const PIPELINE_CHANGES_CHANNEL = 'tapyard:pipelines:changed';

/**
 * How long an entry is trusted at most. The invalidation is what keeps entries current; this only
 * bounds the harm of one that never arrived (a writer that could not reach Redis while readers could).
 */
const MAX_AGE_MS = 60_000;

interface Entry {
  pipeline: StoredPipeline;
  at: number;
}

/**
 * The pipelines that uploads and jobs look up, kept per process so a small upload and its job do not
 * each cost a query (issue 30, goal 1). Every change made through PipelinesService drops the entry
 * here and is published on Redis, where every other process's cache drops it too before the writer
 * answers. While this process is not subscribed (starting, Redis lost, reconnecting) nothing is
 * cached, and whatever was is dropped, since changes may have gone unheard.
 */
@Injectable()
export class PipelineCache implements OnModuleInit, OnModuleDestroy {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every invalidation: a lookup that began before one does not store what it read. */
  private generation = 0;
  private listening = false;
  private subscriber: Redis | null = null;
  private publisher: Redis | null = null;
  private closed = false;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Subscribed from the start, so the first lookups are kept (none is while not subscribed). */
  onModuleInit(): void {
    this.listen();
  }

  /** The pipeline from the cache, or from `read` (stored when no change was heard meanwhile). */
  async get(
    environment: string,
    name: string,
    read: () => Promise<StoredPipeline | null>,
  ): Promise<StoredPipeline | null> {
    const key = keyOf(environment, name);
    const hit = this.entries.get(key);
    // A copy each time: callers may change what they were given.
    if (hit && Date.now() - hit.at < MAX_AGE_MS) return structuredClone(hit.pipeline);
    const generation = this.generation;
    const found = await read();
    if (found && this.listening && generation === this.generation) {
      this.entries.set(key, { pipeline: structuredClone(found), at: Date.now() });
    }
    return found;
  }

  /**
   * After a change of the pipeline is committed: dropped here, then on every other process. Awaited
   * by the writer, so a request sent after its answer finds no process holding the old definition.
   */
  async changed(environment: string, name: string): Promise<void> {
    const key = keyOf(environment, name);
    this.forget(key);
    try {
      this.publisher ??= this.connect('publisher');
      await this.publisher.publish(PIPELINE_CHANGES_CHANNEL, key);
    } catch (err) {
      // The change is committed: it is not undone for this. Other processes learn it when their entry ages out.
      this.logger.warn({ err: errorMessage(err), pipeline: name }, 'pipeline change not published');
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    this.stopListening();
    this.subscriber?.disconnect();
    this.publisher?.disconnect();
  }

  private forget(key: string | null): void {
    this.generation++;
    if (key === null) this.entries.clear();
    else this.entries.delete(key);
  }

  private stopListening(): void {
    this.listening = false;
    this.forget(null);
  }

  /** Opens the subscription once; it subscribes again (and starts afresh) after every reconnect. */
  private listen(): void {
    if (this.subscriber !== null || this.closed) return;
    const sub = this.connect('changes');
    this.subscriber = sub;
    sub.on('message', (_channel: string, key: string) => this.forget(key));
    sub.on('close', () => this.stopListening());
    sub.on('ready', () => {
      sub.subscribe(PIPELINE_CHANGES_CHANNEL).then(
        () => {
          // Changes made while not subscribed were not heard: start from nothing.
          this.forget(null);
          this.listening = sub.status === 'ready' && !this.closed;
        },
        (err: unknown) => this.logger.warn({ err: errorMessage(err) }, 'pipeline changes not subscribed'),
      );
    });
  }

  private connect(role: string): Redis {
    // A lost connection stops the cache; publish failures are logged. Subscribed again by `listen`
    // itself, which also knows to start afresh.
    return sideConnection(this.config.redis.url, `pipelines-${role}`, { autoResubscribe: false });
  }
}

function keyOf(environment: string, name: string): string {
  return `${environment}\0${name}`;
}
