import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { DocumentLoader } from '@tapyard/documents';
import { FileNotifier, IngestionRunner } from '@tapyard/ingestion';
import {
  ConfiguredWorkerHost,
  DeferLaterError,
  DocumentPayload,
  IngestJob,
  IngestPayload,
  IngestQueueData,
  IntakePayload,
  QUEUES,
} from '@tapyard/queue';
import { StatusService, jobRef } from '@tapyard/status';
import { InFlightJobs } from './in-flight';

@Processor(QUEUES.ingest, { autorun: false })
export class IngestProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    private readonly runner: IngestionRunner,
    private readonly notifier: FileNotifier,
    private readonly status: StatusService,
    private readonly documents: DocumentLoader,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly inFlight: InFlightJobs,
  ) {
    super();
  }

  process(job: Job<IngestQueueData>, token?: string): Promise<void> {
    return this.inFlight.run(job, token, () => this.handle(job, token));
  }

  private async handle(job: Job<IngestQueueData>, token?: string): Promise<void> {
    // A redelivery of a job that already ended (a re-added payload, a second worker after a stall):
    // its outcome stands, so it loads nothing and reports nothing.
    if (await this.status.ended(job.data.environment, job.data.pipelineToken)) {
      this.logger.info(
        { jobId: job.id, name: job.name, pipelineToken: job.data.pipelineToken },
        'job already ended: this delivery is skipped',
      );
      return;
    }
    if (job.name === IngestJob.load) {
      const data = job.data as IngestPayload;
      try {
        return await this.runner.run(data, { made: job.attemptsMade, max: job.opts.attempts ?? 1 });
      } catch (err) {
        if (!(err instanceof DeferLaterError) || token === undefined) throw err;
        // Back to the queue without spending a delivery: waiting for capacity is not a failure.
        await job.updateData({ ...data, deferrals: (data.deferrals ?? 0) + 1 });
        await job.moveToDelayed(Date.now() + err.delayMs, token);
        throw new DelayedError();
      }
    }
    if (job.name === IngestJob.intake) return this.notifier.intake(job.data as IntakePayload);
    if (job.name === IngestJob.document) {
      return this.documents.run(job.data as DocumentPayload, {
        made: job.attemptsMade,
        max: job.opts.attempts ?? 1,
      });
    }
    throw new Error(`unknown ingest job '${job.name}'`);
  }

  /**
   * The runner reports its own failures; BullMQ fails a job only when workers kept dying on it
   * (stalled too often). Say so in the job's status rather than leaving it `processing` until the
   * 8-hour timeout.
   */
  @OnWorkerEvent('failed')
  async onFailed(job: Job<IngestQueueData> | undefined, err: Error): Promise<void> {
    // A retry the runner asked for has its own status note; BullMQ runs the job again.
    if (!job || err.name === 'RetryLaterError') return;
    await this.status
      .record(
        jobRef(job.data),
        'JobRunner',
        'error',
        `the job was abandoned after repeated worker failures: ${errorMessage(err)}`,
        'error',
      )
      .catch(() => undefined);
  }
}
