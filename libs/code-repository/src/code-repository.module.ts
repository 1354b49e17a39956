import { Module } from '@nestjs/common';
import { SecretsModule } from '@tapyard/secrets';
import { CodeRepositoryService } from './code-repository.service';

@Module({
  imports: [SecretsModule],
  providers: [CodeRepositoryService],
  exports: [CodeRepositoryService],
})
export class CodeRepositoryModule {}
