import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/**
 * `lastUsedAt` of API keys. Requests only mark the key in memory; the marks are written in one
 * statement every KEY_USAGE_FLUSH_MS (and before a listing, and at shutdown), so authenticated
 * traffic never costs a database write per request.
 */
@Injectable()
export class KeyUsage implements OnModuleInit, OnApplicationShutdown {
  private pending = new Map<string, { environment: string; label: string; at: Date }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(
      () => void this.flush().catch(() => undefined),
      this.config.auth.keyUsageFlushMs,
    );
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }

  touch(environment: string, label: string): void {
    this.pending.set(`${environment}\u0000${label}`, { environment, label, at: new Date() });
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    await this.db.query(
      `INSERT INTO tapyard.api_key_usage (environment, label, last_used_at)
       SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::timestamptz[])
       ON CONFLICT (environment, label) DO UPDATE
         SET last_used_at = GREATEST(tapyard.api_key_usage.last_used_at, EXCLUDED.last_used_at)`,
      [batch.map((b) => b.environment), batch.map((b) => b.label), batch.map((b) => b.at.toISOString())],
    );
  }

  async lastUsed(environment: string): Promise<Map<string, Date>> {
    await this.flush();
    const rows: { label: string; last_used_at: Date }[] = await this.db.query(
      'SELECT label, last_used_at FROM tapyard.api_key_usage WHERE environment = $1',
      [environment],
    );
    return new Map(rows.map((r) => [r.label, r.last_used_at]));
  }
}
