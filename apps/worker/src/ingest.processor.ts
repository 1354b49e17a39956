import { Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { Job } from 'bullmq';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { IngestionRunner } from '@tapyard/ingestion';
import { ConfiguredWorkerHost, IngestJob, IngestPayload, QUEUES } from '@tapyard/queue';

@Processor(QUEUES.ingest, { autorun: false })
export class IngestProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    private readonly runner: IngestionRunner,
  ) {
    super();
  }

  async process(job: Job<IngestPayload>): Promise<void> {
    if (job.name !== IngestJob.load) throw new Error(`unknown ingest job '${job.name}'`);
    await this.runner.run(job.data);
  }
}
