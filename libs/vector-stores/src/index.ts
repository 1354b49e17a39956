export type {
  ChunkMetadata,
  ChunkRecord,
  MetadataFilter,
  MetadataValue,
  SearchHit,
  VectorStore,
  VectorStoreFactory,
} from './vector-store';
export { METADATA_KEY } from './vector-store';
export {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from './vector-store.errors';
export { VECTOR_STORE_FACTORIES } from './registry';
