import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import { CONFIG, TapyardConfig, queuePrefix } from '@tapyard/core';
import { JobQueue } from './jobs';
import { QUEUES } from './queues';

/**
 * The ingest queue of any environment. The instance's own environment uses the queue registered in
 * QueueModule; a tenant's (multi-tenant mode) gets its own BullMQ key prefix, so tenants' jobs never
 * share Redis keys.
 */
@Injectable()
export class EnvironmentQueues implements OnApplicationShutdown {
  private readonly own: JobQueue<typeof QUEUES.ingest>;
  private readonly tenants = new Map<string, JobQueue<typeof QUEUES.ingest>>();

  constructor(
    @InjectQueue(QUEUES.ingest) own: Queue,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {
    this.own = new JobQueue(own);
  }

  ingest(environment: string): JobQueue<typeof QUEUES.ingest> {
    if (environment === this.config.environment) return this.own;
    let q = this.tenants.get(environment);
    if (!q) {
      q = new JobQueue(
        new Queue(QUEUES.ingest, {
          connection: { url: this.config.redis.url, maxRetriesPerRequest: null },
          prefix: queuePrefix(environment),
        }),
      );
      this.tenants.set(environment, q);
    }
    return q;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.tenants.values()].map((q) => q.bull.close().catch(() => undefined)));
  }
}
