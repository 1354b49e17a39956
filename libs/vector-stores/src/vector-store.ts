import type { EgressPolicy } from '@tapyard/egress';
import type { VectorStoreName } from '@tapyard/model';

/** A metadata value as every store keeps it: flat scalars only (nested tap metadata arrives as JSON text). */
export type MetadataValue = string | number | boolean;

/**
 * A chunk's metadata. Always present: `uri`, `filename`, `chunkIndex`, `pipeline`, `contentHash` (the
 * document's), `ingestedAt` (ISO 8601); `tap` when the document came from a tap; then the tap's own
 * metadata. Keys match METADATA_KEY.
 */
export type ChunkMetadata = Record<string, MetadataValue>;

/** Metadata keys every store can filter on: a store that needs a prefix or a schema maps them itself. */
export const METADATA_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** One chunk to store: its id is a UUID derived from (uri, chunk index, chunk content hash). */
export interface ChunkRecord {
  id: string;
  text: string;
  /** Unit length (the embedder normalises), so cosine similarity is the dot product. */
  vector: Float32Array;
  metadata: ChunkMetadata;
}

/**
 * Conditions on metadata, all of which must hold: a scalar is equality, an array is "any of".
 * Keys are checked against METADATA_KEY before a store sees them.
 */
export type MetadataFilter = Record<string, MetadataValue | MetadataValue[]>;

export interface SearchHit {
  id: string;
  text: string;
  metadata: ChunkMetadata;
  /** Cosine similarity in [-1, 1], whatever the store reports natively (distance, 1 - distance, …). */
  similarity: number;
}

/**
 * One vector store, reached with the fields of the secret named after it. Containers (Qdrant and
 * Milvus and Chroma collections, Weaviate classes, pgvector `schema.table`s) always use the cosine
 * metric. Every network connection goes only where the EgressPolicy given to the factory allows.
 * Failures are typed: VectorContainerMissing, VectorDimensionMismatch, ServiceUnavailableError for
 * an unreachable store; anything else is a bug or an unexpected answer of the store.
 */
export interface VectorStore {
  readonly name: VectorStoreName;
  /** The request field naming a container in `POST /search/{store}` (spec). */
  readonly containerField: 'collection' | 'className' | 'table';
  /** The store's name for a pipeline's `destination.vectorStore.collection` (and `schema` for pgvector). */
  containerName(collection: string, schema?: string): string;
  /** Throws VectorStoreInputError when `container` is not a valid name for this store. */
  checkContainer(container: string): void;
  /** Throws ServiceUnavailableError naming the store when it cannot be reached now. */
  probe(signal?: AbortSignal): Promise<void>;
  /**
   * Creates the container for vectors of `dimension` (cosine) when it is missing. An existing one of
   * another dimension throws VectorDimensionMismatch; `created` says whether this call created it.
   * `mark`: kept with a container this call creates (in the store's own metadata, description or
   * comment of the container), read back by creationMark: a container dropped and made again under the
   * same name by another tool does not carry it. An existing container gets no mark (Chroma records the
   * dimension of an empty collection made elsewhere: it keeps none of its own until its first vectors).
   */
  ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }>;
  /** The mark `ensure` kept with the container when it created it; null when it has none or is missing. */
  creationMark(container: string): Promise<string | null>;
  /**
   * Whether the container exists, whatever it holds or however it was made (a container another tool
   * made with a layout Tapyard cannot use exists too): never changes it.
   */
  exists(container: string): Promise<boolean>;
  /** The container's vector dimension, or null when it does not exist. */
  dimension(container: string): Promise<number | null>;
  /** Ids of the chunks stored for the document `uri` (metadata `uri`), in any order. */
  chunkIds(container: string, uri: string): Promise<string[]>;
  /** Inserts or replaces chunks by id (never duplicates one), durably before it resolves. */
  upsert(container: string, chunks: ChunkRecord[]): Promise<void>;
  /** Removes chunks by id; ids not present are ignored. */
  delete(container: string, ids: string[]): Promise<void>;
  /** The `topK` chunks most similar to `vector` passing `filter`, most similar first. */
  search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]>;
  /** Every container's name (for metadata discovery). */
  list(): Promise<string[]>;
  /** Drops the container; false when it did not exist. */
  drop(container: string): Promise<boolean>;
  /** Releases connections. */
  close(): Promise<void>;
}

/** Builds a store from its secret's fields; never connects until a method is called. */
/** The metadata key of a container's creation mark, where a store keeps metadata (Qdrant, Chroma). */
export const CREATION_MARK_KEY = 'tapyard_creation';

/** A creation mark as a container's description or comment (Weaviate, Milvus, pgvector). */
export function creationMarkText(mark: string): string {
  return `tapyard creation ${mark}`;
}

/** The mark in a description or comment creationMarkText wrote; null for any other text. */
export function creationMarkOf(text: string | null | undefined): string | null {
  return /^tapyard creation ([A-Za-z0-9-]{1,64})$/.exec(text ?? '')?.[1] ?? null;
}

export type VectorStoreFactory = (fields: Record<string, string>, policy: EgressPolicy) => VectorStore;
