import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { CodeRepositoryModule } from '@tapyard/code-repository';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { PipelinesModule } from '@tapyard/pipelines';
import { CodegenRepository } from './codegen.repository';
import { CodegenService } from './codegen.service';
import { ScriptAuthor } from './script-author';
import { ScriptStore } from './script-store';
import { ScriptLifecycle } from './script-lifecycle';
import { EntryView } from './entry-view';
import { ScriptUpkeep } from './script-upkeep';

@Module({
  imports: [AiModule, CodeRepositoryModule, ObjectStoreModule, PipelinesModule],
  providers: [
    CodegenService,
    CodegenRepository,
    ScriptAuthor,
    ScriptStore,
    ScriptLifecycle,
    EntryView,
    ScriptUpkeep,
  ],
  exports: [CodegenService],
})
export class CodegenModule {}
