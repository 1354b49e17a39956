import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { MetadataModule } from '@tapyard/metadata';
import { AnswerService } from './answer.service';
import { NlQueryService } from './nl-query.service';
import { QueryRunner } from './query-runner';

@Module({
  imports: [AiModule, MetadataModule],
  providers: [NlQueryService, QueryRunner, AnswerService],
  exports: [NlQueryService, AnswerService],
})
export class NlQueryModule {}
