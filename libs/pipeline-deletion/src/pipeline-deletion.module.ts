import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { IncidentsModule } from '@tapyard/incidents';
import { IntakeModule } from '@tapyard/intake';
import { TapsModule } from '@tapyard/taps';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { PipelineDeletionService } from './pipeline-deletion.service';

@Module({
  imports: [CodegenModule, IncidentsModule, IntakeModule, TapsModule, VectorStoresModule],
  providers: [PipelineDeletionService],
  exports: [PipelineDeletionService],
})
export class PipelineDeletionModule {}
