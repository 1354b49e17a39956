import { EgressPolicy } from '@tapyard/egress';
import { vectorContainerName } from '@tapyard/model';
import {
  CREATION_MARK_KEY,
  type ChunkMetadata,
  type ChunkRecord,
  type MetadataFilter,
  type SearchHit,
  type VectorStore,
} from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from '../vector-store.errors';
import { vettedUrl } from '../vetted-url';
import { StoreConnection } from '../store-connection';
import { chromaDimensionError, chromaSimilarity } from './chroma-answers';
import { chromaWhere } from './chroma-filter';
import { ChromaAnswerError, ChromaCollection, ChromaRest } from './chroma-rest';

// Chroma's own rule: 3-512 characters of [a-zA-Z0-9._-], starting and ending with a letter or digit.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$/;
const BATCH = 1000;
const DIMENSION_KEY = 'tapyard_dimension';

/**
 * Chroma through its HTTP API (ChromaRest: egress-checked on every call, connected to the address
 * checked, no redirects), server at the secret's `url`: a container is a collection with the cosine
 * space; its dimension is kept in the collection's metadata (Chroma learns it only from the first
 * vector), and so is the creation mark of one ensure() made. Vectors are always ours: no embedding
 * function is ever attached. Cosine distance d is similarity 1 - d. A collection made elsewhere is
 * read as it is: its dimension from a stored vector, its distances from its own space.
 */
export class ChromaStore implements VectorStore {
  readonly name = 'chroma' as const;
  readonly containerField = 'collection' as const;
  private readonly conn: StoreConnection<ChromaRest>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    this.conn = new StoreConnection('chroma', fields.url, async () => {
      // Refused here, naming why, before any call; each call is checked again as it connects.
      await vettedUrl(policy, fields.url ?? '', 'chroma');
      return new ChromaRest(policy, new URL(fields.url ?? '').origin, fields.token || undefined);
    });
  }

  containerName(collection: string): string {
    return vectorContainerName('chroma', collection);
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Chroma collection name: 3-512 letters, digits, '.', '_' or '-', starting and ending with a letter or digit`,
      );
    }
  }

  async probe(signal?: AbortSignal): Promise<void> {
    await this.conn.call((c) => c.heartbeat(signal));
  }

  /**
   * Null also for a collection made elsewhere that holds no vector yet: it takes any dimension
   * until ensure() records one.
   */
  async exists(container: string): Promise<boolean> {
    return (await this.find(container)) !== null;
  }

  async dimension(container: string): Promise<number | null> {
    const col = await this.find(container);
    return col ? this.dimensionOf(col) : null;
  }

  async ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }> {
    const existing = await this.find(container);
    if (existing) {
      const d = await this.dimensionOf(existing);
      if (d !== null && d !== dimension) throw new VectorDimensionMismatch('chroma', container, d, dimension);
      if (d === null) {
        // Made elsewhere and empty: record the dimension beside its own metadata (this replaces it).
        const metadata = { ...(existing.metadata ?? {}), [DIMENSION_KEY]: dimension };
        await this.conn.call((c) => c.setMetadata(existing.id, metadata));
      }
      return { created: false };
    }
    return this.conn.call(async (c) => {
      try {
        await c.createCollection(container, {
          [DIMENSION_KEY]: dimension,
          ...(mark === undefined ? {} : { [CREATION_MARK_KEY]: mark }),
        });
        return { created: true };
      } catch (err) {
        // Made meanwhile by another job: its metadata, not this call's mark, is the collection's.
        if (err instanceof ChromaAnswerError && err.status === 409)
          return this.ensure(container, dimension, mark);
        throw err;
      }
    });
  }

  async creationMark(container: string): Promise<string | null> {
    const mark = (await this.find(container))?.metadata?.[CREATION_MARK_KEY];
    return typeof mark === 'string' ? mark : null;
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    const col = await this.collection(container);
    return this.conn.call(
      async (c) => (await c.get(col.id, { where: { uri: { $eq: uri } }, include: [] })).ids,
    );
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    const col = await this.collection(container);
    const size = Math.min(BATCH, await this.conn.call((c) => c.maxBatchSize()));
    for (let i = 0; i < chunks.length; i += size) {
      const batch = chunks.slice(i, i + size);
      await this.onCollection(container, (c) =>
        c.upsert(col.id, {
          ids: batch.map((r) => r.id),
          embeddings: batch.map((r) => r.vector),
          documents: batch.map((r) => r.text),
          metadatas: batch.map((r) => r.metadata),
        }),
      );
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const col = await this.collection(container);
    await this.conn.call((c) => c.delete(col.id, ids));
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    const col = await this.collection(container);
    const space = col.configuration_json?.hnsw?.space ?? col.configuration_json?.spann?.space;
    const res = await this.onCollection(container, (c) =>
      c.query(col.id, {
        query_embeddings: [Array.from(vector)],
        n_results: topK,
        where: chromaWhere(filter),
        include: ['documents', 'metadatas', 'distances'],
      }),
    );
    return (res.ids[0] ?? []).map((id, i) => ({
      id,
      text: res.documents?.[0]?.[i] ?? '',
      metadata: (res.metadatas?.[0]?.[i] ?? {}) as ChunkMetadata,
      similarity: chromaSimilarity(space, res.distances?.[0]?.[i] ?? 1),
    }));
  }

  async list(): Promise<string[]> {
    return this.conn.call(async (c) => {
      const names: string[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await c.listCollections(100, offset);
        names.push(...page.map((x) => x.name));
        if (page.length < 100) return names;
      }
    });
  }

  async drop(container: string): Promise<boolean> {
    if (!(await this.find(container))) return false;
    await this.conn.call((c) => c.deleteCollection(container));
    return true;
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  /** The recorded dimension, else that of a stored vector, else null (none stored). */
  private async dimensionOf(col: ChromaCollection): Promise<number | null> {
    const d = Number(col.metadata?.[DIMENSION_KEY]);
    if (Number.isFinite(d) && d > 0) return d;
    const one = await this.conn.call((c) => c.get(col.id, { limit: 1, include: ['embeddings'] }));
    const v = one.embeddings?.[0];
    return v ? v.length : null;
  }

  /** Work on a collection, reading Chroma's dimension complaint as VectorDimensionMismatch. */
  private async onCollection<T>(container: string, work: (c: ChromaRest) => Promise<T>): Promise<T> {
    try {
      return await this.conn.call(work);
    } catch (err) {
      const dims =
        err instanceof ChromaAnswerError && (err.status === 400 || err.status === 422)
          ? chromaDimensionError(err.said ?? '')
          : null;
      if (dims) throw new VectorDimensionMismatch('chroma', container, dims.expected, dims.actual);
      throw err;
    }
  }

  private async collection(container: string): Promise<ChromaCollection> {
    const col = await this.find(container);
    if (!col) throw new VectorContainerMissing('chroma', container);
    return col;
  }

  private async find(container: string): Promise<ChromaCollection | null> {
    this.checkContainer(container);
    return this.conn.call((c) => c.getCollection(container));
  }
}

export const chromaStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new ChromaStore(fields, policy);
