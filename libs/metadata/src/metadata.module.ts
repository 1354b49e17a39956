import { Module } from '@nestjs/common';
import { DestinationsModule } from '@tapyard/destinations';
import { SecretsModule } from '@tapyard/secrets';
import { MetadataService } from './metadata.service';

@Module({
  imports: [DestinationsModule, SecretsModule],
  providers: [MetadataService],
  exports: [MetadataService],
})
export class MetadataModule {}
