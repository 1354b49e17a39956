import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { Staging } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { TenantWorkers } from './tenant-workers';

/** At most this often, whatever the TTL: a sweep lists the whole staging prefix. */
const MAX_EVERY_MS = 15 * 60_000;

/**
 * Removes staged inputs whose job can no longer remove them (the host writing or reading them died):
 * anything under the staging prefix untouched for STAGING_TTL_HOURS. Every worker sweeps; removing
 * an object twice is harmless.
 */
@Injectable()
export class StagingSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly store: ObjectStore,
    private readonly staging: Staging,
    private readonly tenants: TenantWorkers,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.store.configured) return;
    const every = Math.min(MAX_EVERY_MS, Math.max(1000, this.config.staging.ttlMs / 4));
    this.timer = setInterval(() => {
      this.running ??= this.sweepAll().finally(() => (this.running = null));
    }, every);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  async sweepAll(): Promise<number> {
    let swept = 0;
    for (const environment of [this.config.environment, ...this.tenants.tenants]) {
      swept += await this.staging.sweep(environment, this.config.staging.ttlMs).catch((err: unknown) => {
        this.logger.warn({ environment, err: errorMessage(err) }, 'staging sweep failed; retrying later');
        return 0;
      });
    }
    return swept;
  }
}
