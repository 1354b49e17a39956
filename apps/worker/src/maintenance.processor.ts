import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, OnApplicationBootstrap } from '@nestjs/common';
import { Job } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig } from '@tapyard/core';
import { JobTypes, MaintenanceJob, PingPayload, PingResult, QUEUES } from '@tapyard/queue';

@Processor(QUEUES.maintenance)
export class MaintenanceProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.worker.concurrency;
  }

  async process(job: Job<PingPayload, PingResult>): Promise<JobTypes[typeof MaintenanceJob.ping]['result']> {
    switch (job.name) {
      case MaintenanceJob.ping: {
        if (job.data.holdMs) await new Promise((r) => setTimeout(r, job.data.holdMs));
        this.logger.debug({ jobId: job.id }, 'ping handled');
        return {
          environment: this.config.environment,
          workerPid: process.pid,
          requestedAt: job.data.requestedAt,
          handledAt: Date.now(),
        };
      }
      default:
        throw new Error(`unknown maintenance job '${job.name}'`);
    }
  }
}
