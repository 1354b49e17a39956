import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { SecretsModule } from '@tapyard/secrets';
import { TapsModule } from '@tapyard/taps';
import { PromptFragmentsRepository } from './prompt-fragments/prompt-fragments.repository';
import { PromptFragmentsService } from './prompt-fragments/prompt-fragments.service';
import { TapAuthoringService } from './tap-authoring.service';

@Module({
  imports: [AiModule, SecretsModule, TapsModule],
  providers: [TapAuthoringService, PromptFragmentsService, PromptFragmentsRepository],
  exports: [TapAuthoringService, PromptFragmentsService],
})
export class TapAuthoringModule {}
