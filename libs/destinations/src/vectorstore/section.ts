import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, Matches } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { DestinationSection, assertLocationAllowed } from '@tapyard/pipelines';
import { VECTOR_STORES, VectorStoreDestination, VectorStoreName, vectorContainerName } from '@tapyard/model';

export class VectorStoreDestinationDto {
  @ApiProperty({ enum: VECTOR_STORES, example: 'pgvector' })
  @IsIn(VECTOR_STORES as unknown as string[])
  store!: VectorStoreName;

  @ApiProperty({
    example: 'handbook',
    description:
      'Names the container of every store: the Qdrant, Milvus or Chroma collection, the pgvector table, the Weaviate class (first letter capitalised, - as _). Created on first load.',
  })
  @Matches(/^[A-Za-z][A-Za-z0-9_-]{0,62}$/, {
    message: 'collection must be 1-63 letters, digits, _ and -, starting with a letter',
  })
  collection!: string;

  @ApiPropertyOptional({
    example: 'public',
    description: 'pgvector only: the schema of the table (default public).',
  })
  @OptionalNotNull()
  @Matches(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { message: 'schema must be 1-63 letters, digits and _' })
  schema?: string;
}

/** Documents (uploads, document taps), chunked and embedded into a vector store (libs/documents). */
export const vectorStoreSection: DestinationSection<VectorStoreDestinationDto, VectorStoreDestination> = {
  key: 'vectorStore',
  dto: VectorStoreDestinationDto,
  description: 'Documents, chunked and embedded, into a vector store',
  complete: (vs, defaults) => ({
    store: vs.store,
    collection: vs.collection,
    ...(vs.store === 'pgvector' ? { schema: vs.schema ?? defaults.schema } : {}),
  }),
  confine: (config, environment, vs) => {
    if (vs.store !== 'pgvector') return;
    assertLocationAllowed(config, environment, {
      store: 'vectorstore',
      vectorStore: 'pgvector',
      container: `${vs.schema ?? 'public'}.${vs.collection}`,
    });
  },
  // The container as its store names it: two pipelines naming one container share it (and its
  // chunks: a document loaded again replaces its own), so saves check who else loads there.
  locations: (vs) => [
    {
      store: 'vectorstore',
      vectorStore: vs.store,
      container: vectorContainerName(vs.store, vs.collection, vs.schema),
    },
  ],
  loadedBy: (vs) => vs.store,
};
