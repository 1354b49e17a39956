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
 * own or finds nothing (404); the cancel publishes that key on one channel every instance subscribes
 * to, and the instance running the turn aborts it.
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
      if ((await r.exists(k)) === 0) return false;
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
    const sub = new Redis(this.config.redis.url, { connectTimeout: 2000, lazyConnect: true });
    sub.on('error', (err: Error) => this.logger.warn({ err: err.message }, 'assistant cancel channel'));
    sub.on('message', (_channel: string, k: string) => this.running.get(k)?.abort());
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

  async onModuleDestroy(): Promise<void> {
    const sub = await this.subscriber?.catch(() => null);
    sub?.disconnect();
  }
}

function turnKey(environment: string, owner: string, turnId: string): string {
  const digest = createHash('sha256').update(`${owner}\0${turnId}`, 'utf8').digest('hex');
  return `tapyard:${environment}:assistant-turn:${digest}`;
}
