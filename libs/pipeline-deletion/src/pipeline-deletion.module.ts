import { Module } from '@nestjs/common';
import { IngestionModule } from '@tapyard/ingestion';
import { TapsModule } from '@tapyard/taps';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { PipelineDeletionService } from './pipeline-deletion.service';

@Module({
  imports: [IngestionModule, TapsModule, VectorStoresModule],
  providers: [PipelineDeletionService],
  exports: [PipelineDeletionService],
})
export class PipelineDeletionModule {}
