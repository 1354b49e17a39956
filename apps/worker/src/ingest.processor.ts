import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { Job } from 'bullmq';
import { CONFIG, TapyardConfig, errorMessage } from '@tapyard/core';
import { IngestionRunner } from '@tapyard/ingestion';
import { ConfiguredWorkerHost, IngestJob, IngestPayload, QUEUES } from '@tapyard/queue';
import { StatusService } from '@tapyard/status';

@Processor(QUEUES.ingest, { autorun: false })
export class IngestProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    private readonly runner: IngestionRunner,
    private readonly status: StatusService,
  ) {
    super();
  }

  async process(job: Job<IngestPayload>): Promise<void> {
    if (job.name !== IngestJob.load) throw new Error(`unknown ingest job '${job.name}'`);
    await this.runner.run(job.data);
  }

  /**
   * The runner reports its own failures; BullMQ fails a job only when workers kept dying on it
   * (stalled too often). Say so in the job's status rather than leaving it `processing` until the
   * 8-hour timeout.
   */
  @OnWorkerEvent('failed')
  async onFailed(job: Job<IngestPayload> | undefined, err: Error): Promise<void> {
    if (!job) return;
    const { spoolPath: _spool, ...ref } = job.data;
    await this.status
      .record(
        ref,
        'JobRunner',
        'error',
        `the job was abandoned after repeated worker failures: ${errorMessage(err)}`,
        'error',
      )
      .catch(() => undefined);
  }
}
