import { ApiProperty } from '@nestjs/swagger';
import { IsIn, Matches } from 'class-validator';
import {
  DestinationSection,
  VECTOR_STORES,
  VectorStoreDestination,
  VectorStoreName,
} from '@tapyard/pipelines';

export class VectorStoreDestinationDto {
  @ApiProperty({ enum: VECTOR_STORES, example: 'qdrant' })
  @IsIn(VECTOR_STORES as unknown as string[])
  store!: VectorStoreName;

  @ApiProperty({ example: 'handbook', description: 'Collection (class, table) that receives the chunks' })
  @Matches(/^[A-Za-z][A-Za-z0-9_-]{0,127}$/, {
    message: 'collection must be 1-128 letters, digits, _ and -, starting with a letter',
  })
  collection!: string;
}

/** Documents of document taps, chunked and embedded into a vector store (no loader yet: issue 13). */
export const vectorStoreSection: DestinationSection<VectorStoreDestinationDto, VectorStoreDestination> = {
  key: 'vectorStore',
  dto: VectorStoreDestinationDto,
  description: 'Documents (document taps) into a vector store',
  complete: (vs) => ({ store: vs.store, collection: vs.collection }),
  confine: () => undefined,
  loadedBy: (vs) => vs.store,
};
