import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { PipelineAdviceService } from './pipeline-advice.service';

@Module({ imports: [AiModule], providers: [PipelineAdviceService], exports: [PipelineAdviceService] })
export class PipelineAdviceModule {}
