import { Module } from '@nestjs/common';
import { SecretsModule } from '@tapyard/secrets';
import { AiService } from './ai.service';

@Module({
  imports: [SecretsModule],
  providers: [AiService],
  exports: [AiService],
})
export class AiModule {}
