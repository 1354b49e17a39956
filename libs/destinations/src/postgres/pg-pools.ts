import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool, PoolClient } from 'pg';
import { CONFIG, TapyardConfig } from '@tapyard/core';

const POOL_SIZE = 4;

/**
 * One small pool per target database on the destination server (POSTGRES_DESTINATION_URL, default the
 * platform's), and beside it one for the loads' further COPY streams (PG_COPY_STREAMS) and for settling
 * what they left prepared: a job's first connection never waits behind another job's second stream.
 */
@Injectable()
export class PgPools implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();
  private readonly streamPools = new Map<string, Pool>();

  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {}

  get(database: string): Pool {
    return databasePool(this.pools, this.config.database.destinationUrl, database, {
      max: POOL_SIZE,
      connectionTimeoutMillis: 10000,
      application_name: 'tapyard-loader',
    });
  }

  /** The pool of further streams: as many again per stream beyond the first. */
  streams(database: string): Pool {
    return databasePool(this.streamPools, this.config.database.destinationUrl, database, {
      max: POOL_SIZE * Math.max(1, this.config.database.copyStreams - 1),
      connectionTimeoutMillis: 10000,
      application_name: 'tapyard-loader',
    });
  }

  /**
   * A connection for a load's further COPY stream that the pool can give now without making anyone
   * wait, or null. Errors of the connection while it is out are ignored here: the COPY on it fails.
   */
  async spare(database: string): Promise<{ client: PoolClient; release: (err?: Error) => void } | null> {
    const pool = this.streams(database);
    if (pool.waitingCount > 0 || (pool.idleCount === 0 && pool.totalCount >= pool.options.max)) return null;
    const client = await pool.connect();
    const onError = () => undefined;
    client.on('error', onError);
    return {
      client,
      release: (err) => {
        client.release(err);
        client.removeListener('error', onError);
      },
    };
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.pools.values(), ...this.streamPools.values()].map((p) => p.end()));
    this.pools.clear();
    this.streamPools.clear();
  }
}

/** The pool of `pools` for one database of the server at `serverUrl`, made on first use. */
export function databasePool(
  pools: Map<string, Pool>,
  serverUrl: string,
  database: string,
  options: { max: number; connectionTimeoutMillis: number; application_name: string },
): Pool {
  let pool = pools.get(database);
  if (!pool) {
    const url = new URL(serverUrl);
    url.pathname = `/${encodeURIComponent(database)}`;
    pool = new Pool({ connectionString: url.toString(), ...options });
    // An idle connection the server drops must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    pools.set(database, pool);
  }
  return pool;
}
