import { Module } from '@nestjs/common';
import { IntakeModule } from '@tapyard/intake';
import { VectorStoresModule } from '@tapyard/vector-stores';
import { DocumentLoader } from './load/document-loader';

@Module({
  imports: [IntakeModule, VectorStoresModule],
  providers: [DocumentLoader],
  exports: [DocumentLoader],
})
export class DocumentsModule {}
