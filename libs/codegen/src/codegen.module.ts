import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { CodeRepositoryModule } from '@tapyard/code-repository';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { PipelinesModule } from '@tapyard/pipelines';
import { CodegenRepository } from './codegen.repository';
import { CodegenService } from './codegen.service';
import { ScriptAuthor } from './script-author';
import { ScriptStore } from './script-store';

@Module({
  imports: [AiModule, CodeRepositoryModule, ObjectStoreModule, PipelinesModule],
  providers: [CodegenService, CodegenRepository, ScriptAuthor, ScriptStore],
  exports: [CodegenService],
})
export class CodegenModule {}
