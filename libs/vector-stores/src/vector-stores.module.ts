import { Module } from '@nestjs/common';
import { EmbeddingsModule } from '@tapyard/embeddings';
import { SecretsModule } from '@tapyard/secrets';
import { SearchService } from './search.service';
import { VectorContainers } from './vector-containers';
import { VectorStoresService } from './vector-stores.service';

@Module({
  imports: [SecretsModule, EmbeddingsModule],
  providers: [VectorStoresService, VectorContainers, SearchService],
  exports: [VectorStoresService, VectorContainers, SearchService, EmbeddingsModule],
})
export class VectorStoresModule {}
