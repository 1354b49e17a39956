import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { IncidentsModule } from '@tapyard/incidents';
import { IngestionModule } from '@tapyard/ingestion';
import { TapsModule } from '@tapyard/taps';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { PipelineDeletionService } from './pipeline-deletion.service';

@Module({
  imports: [CodegenModule, IncidentsModule, IngestionModule, TapsModule, VectorStoresModule],
  providers: [PipelineDeletionService],
  exports: [PipelineDeletionService],
})
export class PipelineDeletionModule {}
