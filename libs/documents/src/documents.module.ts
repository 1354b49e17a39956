import { Module } from '@nestjs/common';
import { IngestionModule } from '@tapyard/ingestion';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { DocumentLoader } from './load/document-loader';

@Module({
  imports: [IngestionModule, VectorStoresModule],
  providers: [DocumentLoader],
  exports: [DocumentLoader],
})
export class DocumentsModule {}
