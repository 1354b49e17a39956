import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type Redis from 'ioredis';
import { CONFIG, ServiceUnavailableError, TapyardConfig, errorMessage, sideConnection } from '@tapyard/core';

/**
 * The Redis connection auth state lives on (sessions, login counters, key-map versions), so every API
 * instance sees the same state. Commands fail fast with a 503 naming Redis when it is down.
 */
@Injectable()
export class AuthRedis implements OnModuleDestroy {
  private readonly client: Redis;

  constructor(@Inject(CONFIG) config: TapyardConfig) {
    // Failures surface per command below.
    this.client = sideConnection(config.redis.url, 'auth', { lazyConnect: true });
  }

  async run<T>(command: (redis: Redis) => Promise<T>): Promise<T> {
    try {
      if (this.client.status === 'wait') await this.client.connect();
      return await command(this.client);
    } catch (err) {
      throw new ServiceUnavailableError(
        'redis',
        `redis is unavailable for authentication state: ${errorMessage(err)}`,
      );
    }
  }

  onModuleDestroy(): void {
    // Nothing is ever left to flush here; quit() would wait forever for a Redis that is down.
    this.client.disconnect();
  }
}
