import { Module } from '@nestjs/common';
import { SecretsModule } from '@tapyard/secrets';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { MetadataService } from './metadata.service';

@Module({
  imports: [SecretsModule, VectorStoresModule],
  providers: [MetadataService],
  exports: [MetadataService],
})
export class MetadataModule {}
