import { createHash } from 'node:crypto';
import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AuthRedis, randomToken } from '@tapyard/auth';
import {
  CONFIG,
  LOGGER,
  NotFoundError,
  ServiceUnavailableError,
  TapyardConfig,
  errorMessage,
} from '@tapyard/core';

/** Every API instance listens here; a message is the registry key of the turn to stop. */
const CANCEL_CHANNEL = 'tapyard:assistant-cancel';
/** How long a running turn stays cancellable: far past any turn (model rounds are bounded by maxIterations). */
const TURN_TTL_SECONDS = 6 * 60 * 60;
/** A turn's key holds this once cancelled (until then, `1`). */
const CANCELLED = 'cancelled';

/** A chat turn running in this process. */
export interface RunningTurn {
  turnId: string;
  /** Aborts when the caller cancels the turn, through any API instance. */
  signal: AbortSignal;
  /** Forgets the turn: it has ended and can no longer be cancelled. */
  end(): Promise<void>;
}

/**
 * Assistant chat turns, cancellable through any API instance. While a turn runs, Redis holds its key,
 * a digest of the environment, the caller and the turn id, so a cancel names a turn of the caller's
 * own or finds nothing (404); the cancel marks the key and publishes it on one channel every
 * instance subscribes to, and the instance running the turn aborts it. Pub/sub drops what is
 * published while a subscriber reconnects, so on every reconnect the instance reads the marks of
 * its running turns: a cancel is never lost.
 */
@Injectable()
export class AssistantTurns implements OnModuleDestroy {
  private readonly running = new Map<string, AbortController>();
  private subscriber: Promise<Redis> | null = null;

  constructor(
    private readonly redis: AuthRedis,
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Registers a turn of `owner`; a cancel can reach it once this returns. */
  async start(environment: string, owner: string): Promise<RunningTurn> {
    await this.listen();
    const turnId = randomToken();
    const k = turnKey(environment, owner, turnId);
    const abort = new AbortController();
    this.running.set(k, abort);
    try {
      await this.redis.run((r) => r.set(k, '1', 'EX', TURN_TTL_SECONDS));
    } catch (err) {
      this.running.delete(k);
      throw err;
    }
    return {
      turnId,
      signal: abort.signal,
      end: async () => {
        this.running.delete(k);
        await this.redis.run((r) => r.del(k)).catch(() => undefined);
      },
    };
  }

  /** Stops a running turn of `owner`, wherever it runs; a turn of another caller, or one that ended, is 404. */
  async cancel(environment: string, owner: string, turnId: string): Promise<void> {
    const k = turnKey(environment, owner, turnId);
    const published = await this.redis.run(async (r) => {
      // XX: only a turn still registered; KEEPTTL: the mark ends with it.
      if ((await r.set(k, CANCELLED, 'KEEPTTL', 'XX')) === null) return false;
      await r.publish(CANCEL_CHANNEL, k);
      return true;
    });
    if (!published) {
      throw new NotFoundError(
        'there is no running assistant turn with that id for this caller (unknown, or it has ended)',
      );
    }
  }

  /** One subscriber connection per process, opened by the first turn. */
  private listen(): Promise<Redis> {
    this.subscriber ??= this.subscribe().catch((err: unknown) => {
      this.subscriber = null;
      throw new ServiceUnavailableError(
        'redis',
        `redis is unavailable for assistant turns: ${errorMessage(err)}`,
      );
    });
    return this.subscriber;
  }

  private async subscribe(): Promise<Redis> {
    const sub = new Redis(this.config.redis.url, {
      connectTimeout: 2000,
      lazyConnect: true,
      connectionName: `tapyard-assistant-cancel-${process.pid}`,
    });
    sub.on('error', (err: Error) => this.logger.warn({ err: err.message }, 'assistant cancel channel'));
    sub.on('message', (_channel: string, k: string) => this.running.get(k)?.abort());
    let connected = false;
    sub.on('ready', () => {
      if (connected) void this.abortMarked();
      connected = true;
    });
    try {
      await sub.connect();
      // ioredis subscribes again by itself after a reconnect.
      await sub.subscribe(CANCEL_CHANNEL);
    } catch (err) {
      sub.disconnect();
      throw err;
    }
    return sub;
  }

  /** After a reconnect: the turns of this process that were cancelled while nobody listened. */
  private async abortMarked(): Promise<void> {
    const keys = [...this.running.keys()];
    if (keys.length === 0) return;
    try {
      const marks = await this.redis.run((r) => r.mget(...keys));
      keys.forEach((k, i) => {
        if (marks[i] === CANCELLED) this.running.get(k)?.abort();
      });
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'assistant cancel marks not read after a reconnect');
    }
  }

  async onModuleDestroy(): Promise<void> {
    const sub = await this.subscriber?.catch(() => null);
    sub?.disconnect();
  }
}

function turnKey(environment: string, owner: string, turnId: string): string {
  const digest = createHash('sha256').update(`${owner}\0${turnId}`, 'utf8').digest('hex');
  return `tapyard:${environment}:assistant-turn:${digest}`;
}
