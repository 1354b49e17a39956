import type { VectorStoreName } from '@tapyard/model';
import { chromaStore } from './chroma/chroma.store';
import { milvusStore } from './milvus/milvus.store';
import { pgvectorStore } from './pgvector/pgvector.store';
import { qdrantStore } from './qdrant/qdrant.store';
import type { VectorStoreFactory } from './vector-store';
import { weaviateStore } from './weaviate/weaviate.store';

/** Adding a vector store: its folder, and one line here. */
export const VECTOR_STORE_FACTORIES: Partial<Record<VectorStoreName, VectorStoreFactory>> = {
  pgvector: pgvectorStore,
  qdrant: qdrantStore,
  chroma: chromaStore,
  milvus: milvusStore,
  weaviate: weaviateStore,
};
