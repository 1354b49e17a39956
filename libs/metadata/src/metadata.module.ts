import { Module } from '@nestjs/common';
import { DestinationsModule } from '@tapyard/destinations';
import { SecretsModule } from '@tapyard/secrets';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { MetadataService } from './metadata.service';

@Module({
  imports: [DestinationsModule, SecretsModule, VectorStoresModule],
  providers: [MetadataService],
  exports: [MetadataService],
})
export class MetadataModule {}
