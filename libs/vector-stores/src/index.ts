export type {
  ChunkMetadata,
  ChunkRecord,
  MetadataFilter,
  MetadataValue,
  SearchHit,
  VectorStore,
  VectorStoreFactory,
} from './vector-store';
export { CREATION_MARK_KEY, METADATA_KEY, creationMarkOf, creationMarkText } from './vector-store';
export {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreErrorCode,
  VectorStoreInputError,
} from './vector-store.errors';
export { VECTOR_STORE_PLUGINS, VectorStoreRegistry } from './registry';
export type { VectorStorePlugin } from './registry';
export { VectorStoreRegistryModule } from './vector-store-registry.module';
export { VectorModelMismatch } from './vector-store.errors';
export { VectorStoresService } from './vector-stores.service';
export { VectorContainers } from './vector-containers';
export type { ContainerModel } from './vector-containers';
export { VectorStoresModule } from './vector-stores.module';
export { SearchService, checkFilter } from './search.service';
export type { SearchRequest, SearchResult } from './search.service';
export { SearchRequestDto } from './search-request.dto';
export { VectorSearchArgs, VectorSearchTools } from './assistant-tools';
