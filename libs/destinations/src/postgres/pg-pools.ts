import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/** One small pool per target database on the destination server (POSTGRES_DESTINATION_URL, default the platform's). */
@Injectable()
export class PgPools implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();

  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {}

  get(database: string): Pool {
    let pool = this.pools.get(database);
    if (!pool) {
      const url = new URL(this.config.database.destinationUrl);
      url.pathname = `/${encodeURIComponent(database)}`;
      pool = new Pool({
        connectionString: url.toString(),
        max: 4,
        connectionTimeoutMillis: 10000,
        application_name: 'tapyard-loader',
      });
      pool.on('error', () => undefined);
      this.pools.set(database, pool);
    }
    return pool;
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.end()));
    this.pools.clear();
  }
}
