import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { ConfigFilesModule } from '@tapyard/configfiles';
import { IncidentsModule } from '@tapyard/incidents';
import { IntakeModule } from '@tapyard/intake';
import { QueueModule } from '@tapyard/queue';
import { IngestionRunner } from './ingestion.runner';
import { JobOutcome } from './job-outcome';
import { StageThreadPool } from './stage-thread/stage-thread';

/** The runner that loads a staged input through the stage thread into the destinations (workers). */
@Module({
  imports: [
    CodegenModule,
    // Listens to script changes and landed jobs wherever scripts run (API and workers).
    IncidentsModule,
    QueueModule,
    ConfigFilesModule,
    IntakeModule,
  ],
  providers: [IngestionRunner, JobOutcome, StageThreadPool],
  exports: [IngestionRunner, IntakeModule],
})
export class IngestionModule {}
