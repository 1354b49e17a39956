import { Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { Job } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig } from '@tapyard/core';
import { ConfiguredWorkerHost, MaintenanceJob, PingPayload, PingResult, QUEUES } from '@tapyard/queue';
import { InFlightJobs } from './in-flight';

@Processor(QUEUES.maintenance, { autorun: false })
export class MaintenanceProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly inFlight: InFlightJobs,
  ) {
    super();
  }

  process(job: Job<PingPayload, PingResult>, token?: string): Promise<PingResult> {
    return this.inFlight.run(job, token, () => this.handle(job));
  }

  private async handle(job: Job<PingPayload, PingResult>): Promise<PingResult> {
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
