import { Module } from '@nestjs/common';
import { IngestionModule } from '@tapyard/ingestion';
import { TapsModule } from '@tapyard/taps';
import { PipelineDeletionService } from './pipeline-deletion.service';

@Module({
  imports: [IngestionModule, TapsModule],
  providers: [PipelineDeletionService],
  exports: [PipelineDeletionService],
})
export class PipelineDeletionModule {}
