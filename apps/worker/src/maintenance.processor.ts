import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { Inject, Optional } from '@nestjs/common';
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

/**
 * Injection token of what a ping waits for before it answers, given its job. No module of the app
 * provides it: the test worker (test/support/test-worker.ts) holds pings in flight with it.
 */
export const PING_DELAY = 'PING_DELAY';
export type PingDelay = (job: Job) => Promise<void>;

@Processor(QUEUES.maintenance, { autorun: false })
export class MaintenanceProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly inFlight: InFlightJobs,
    @Optional() @Inject(PING_DELAY) private readonly delay: PingDelay | null = null,
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
    await this.delay?.(job);
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
