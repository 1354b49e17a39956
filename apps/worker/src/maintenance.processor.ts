import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { Job } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig } from '@tapyard/core';
import {
  ConfiguredWorkerHost,
  JobHandlers,
  MalformedJobError,
  PingPayload,
  PingResult,
  QUEUES,
  dispatch,
  readJob,
} from '@tapyard/queue';
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

  /** One handler per maintenance job (JobMap): a job without its handler does not compile. */
  private readonly handlers = {
    ping: (data, job) => this.ping(data, job),
  } satisfies JobHandlers<typeof QUEUES.maintenance>;

  process(job: Job, token?: string): Promise<unknown> {
    return this.inFlight.run(job, token, () => {
      const read = readJob(QUEUES.maintenance, job);
      return dispatch(this.handlers, read, job, token);
    });
  }

  private async ping(data: PingPayload, job: Job): Promise<PingResult> {
    if (data.holdMs) await new Promise((r) => setTimeout(r, data.holdMs));
    this.logger.debug({ jobId: job.id }, 'ping handled');
    return {
      environment: this.config.environment,
      workerPid: process.pid,
      requestedAt: data.requestedAt,
      handledAt: Date.now(),
    };
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, err: Error): void {
    if (job && err instanceof MalformedJobError) {
      this.logger.error(
        { jobId: job.id, queue: QUEUES.maintenance, name: job.name, reason: err.message },
        'malformed job failed',
      );
    }
  }
}
