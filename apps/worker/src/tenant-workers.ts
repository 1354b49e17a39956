import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Job, Worker } from 'bullmq';
import { Logger } from 'pino';
import { TENANT_MAPPINGS_SECRET, tenantEnvironments } from '@tapyard/auth';
import { CONFIG, LOGGER, TapyardConfig, errorMessage, queuePrefix } from '@tapyard/core';
import { QUEUES } from '@tapyard/queue';
import { SecretsService } from '@tapyard/secrets';
import { IngestProcessor } from './ingest.processor';

/** How often the worker looks for tenants added to `api-key-mappings`. */
export const TENANT_SCAN_MS = 5000;

/**
 * Multi-tenant mode: each tenant's ingest queue lives under its own prefix, so the worker runs one
 * BullMQ worker per tenant, with the same processor and settings as its own environment's. New
 * tenants are picked up without a restart.
 */
@Injectable()
export class TenantWorkers implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly workers = new Map<string, Worker>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly secrets: SecretsService,
    private readonly processor: IngestProcessor,
  ) {}

  /** Tenant environments this worker consumes. */
  get tenants(): string[] {
    return [...this.workers.keys()];
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.auth.multiTenant) return;
    await this.scan();
    this.timer = setInterval(() => void this.scan(), TENANT_SCAN_MS);
    this.timer.unref();
  }

  /** Tenant queues' workers: a shutdown stops them taking jobs. */
  get consumers(): Worker[] {
    return [...this.workers.values()];
  }

  /** Stops looking for new tenants (a draining worker must not start consuming more queues). */
  stopScanning(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopScanning();
    // close() waits for running jobs: a tenant's load finishes like the instance's own.
    await Promise.all([...this.workers.values()].map((w) => w.close()));
  }

  private async scan(): Promise<void> {
    try {
      const fields = await this.secrets.readSystem(this.config.environment, TENANT_MAPPINGS_SECRET);
      for (const tenant of tenantEnvironments(fields ?? {})) {
        // A scan that was under way when the shutdown began starts nothing.
        if (this.stopped) return;
        if (tenant !== this.config.environment && !this.workers.has(tenant)) this.start(tenant);
      }
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'tenant scan failed; retrying');
    }
  }

  private start(tenant: string): void {
    const { concurrency, lockMs, maxStalls } = this.config.worker;
    const worker = new Worker(
      QUEUES.ingest,
      // The token lets a load defer itself and a shutdown hand the job back, as in the own queue.
      (job: Job, token?: string) => this.processor.process(job, token),
      {
        connection: { url: this.config.redis.url, maxRetriesPerRequest: null },
        prefix: queuePrefix(tenant),
        concurrency,
        lockDuration: lockMs,
        stalledInterval: lockMs,
        maxStalledCount: maxStalls,
      },
    );
    worker.on('completed', (job) => void this.processor.onCompleted(job));
    worker.on('failed', (job, err) => void this.processor.onFailed(job, err));
    worker.on('error', (err) => this.logger.warn({ tenant, err: errorMessage(err) }, 'tenant worker error'));
    this.workers.set(tenant, worker);
    this.logger.info({ tenant }, 'consuming tenant queues');
  }
}
