import { Module } from '@nestjs/common';
import { PipelineCache } from './pipeline-cache';
import { PipelinesRepository } from './pipelines.repository';
import { PipelinePolicy } from './pipeline-policy';
import { PipelinesService } from './pipelines.service';

@Module({
  providers: [PipelinesRepository, PipelinesService, PipelinePolicy, PipelineCache],
  exports: [PipelinesService, PipelinePolicy],
})
export class PipelinesModule {}
