import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { IncidentsModule } from '@tapyard/incidents';
import { IntakeModule } from '@tapyard/intake';
import { PipelinesModule } from '@tapyard/pipelines';
import { StatusModule } from '@tapyard/status';
import { TapsModule } from '@tapyard/taps';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { JobRowsService } from './job-rows.service';
import { PipelineDeletionService } from './pipeline-deletion.service';

@Module({
  imports: [
    CodegenModule,
    IncidentsModule,
    IntakeModule,
    PipelinesModule,
    StatusModule,
    TapsModule,
    VectorStoresModule,
  ],
  providers: [PipelineDeletionService, JobRowsService],
  exports: [PipelineDeletionService, JobRowsService],
})
export class PipelineDeletionModule {}
