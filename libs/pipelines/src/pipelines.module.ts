import { Module } from '@nestjs/common';
import { PipelinesRepository } from './pipelines.repository';
import { PipelinePolicy } from './pipeline-policy';
import { PipelinesService } from './pipelines.service';

@Module({
  providers: [PipelinesRepository, PipelinesService, PipelinePolicy],
  exports: [PipelinesService, PipelinePolicy],
})
export class PipelinesModule {}
