import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { FileNotifier } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { TenantWorkers } from './tenant-workers';

/**
 * Polls the raw bucket of every environment this worker serves for objects dropped under
 * `<pipeline>/` (polling rather than bucket notifications: it works with any S3 store and needs no
 * listener endpoint). Several workers may poll at once; FileNotifier's claim makes each object one job.
 */
@Injectable()
export class RawBucketPoller implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly store: ObjectStore,
    private readonly notifier: FileNotifier,
    private readonly tenants: TenantWorkers,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.store.configured || this.config.rawPollMs === 0) return;
    this.timer = setInterval(() => {
      this.running ??= this.pollAll().finally(() => (this.running = null));
    }, this.config.rawPollMs);
    this.timer.unref();
  }

  /** Stops polling; resolves when the poll in progress has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  private async pollAll(): Promise<void> {
    for (const environment of [this.config.environment, ...this.tenants.tenants]) {
      try {
        const queued = await this.notifier.poll(environment);
        if (queued > 0) this.logger.info({ environment, queued }, 'raw bucket: new objects queued');
      } catch (err) {
        this.logger.warn({ environment, err: errorMessage(err) }, 'raw bucket poll failed; retrying');
      }
    }
  }
}
