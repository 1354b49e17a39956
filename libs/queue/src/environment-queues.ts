import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import { CONFIG, TapyardConfig, queuePrefix } from '@tapyard/core';
import { IngestQueueData, QUEUES } from './queues';

/**
 * The ingest queue of any environment. The instance's own environment uses the queue registered in
 * QueueModule; a tenant's (multi-tenant mode) gets its own BullMQ key prefix, so tenants' jobs never
 * share Redis keys.
 */
@Injectable()
export class EnvironmentQueues implements OnApplicationShutdown {
  private readonly tenants = new Map<string, Queue<IngestQueueData>>();

  constructor(
    @InjectQueue(QUEUES.ingest) private readonly own: Queue<IngestQueueData>,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  ingest(environment: string): Queue<IngestQueueData> {
    if (environment === this.config.environment) return this.own;
    let q = this.tenants.get(environment);
    if (!q) {
      q = new Queue<IngestQueueData>(QUEUES.ingest, {
        connection: { url: this.config.redis.url, maxRetriesPerRequest: null },
        prefix: queuePrefix(environment),
      });
      this.tenants.set(environment, q);
    }
    return q;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.tenants.values()].map((q) => q.close().catch(() => undefined)));
  }
}
