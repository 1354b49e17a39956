import { Module } from '@nestjs/common';
import { SecretsModule } from '@tapyard/secrets';
import { EmbeddingsService } from './embeddings.service';

@Module({
  imports: [SecretsModule],
  providers: [EmbeddingsService],
  exports: [EmbeddingsService],
})
export class EmbeddingsModule {}
