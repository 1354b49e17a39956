import type { ChromaClient, Collection } from 'chromadb';
import { EgressPolicy } from '@tapyard/egress';
import type { ChunkMetadata, ChunkRecord, MetadataFilter, SearchHit, VectorStore } from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from '../vector-store.errors';
import { isUnreachable, vettedUrl } from '../vetted-url';
import { StoreConnection } from '../store-connection';
import { chromaDimensionError, chromaSimilarity } from './chroma-answers';
import { chromaWhere } from './chroma-filter';

// Chroma's own rule: 3-512 characters of [a-zA-Z0-9._-], starting and ending with a letter or digit.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$/;
const BATCH = 1000;
const DIMENSION_KEY = 'tapyard_dimension';

/**
 * Chroma through its official client, server at the secret's `url`: a container is a collection with
 * the cosine space; its dimension is kept in the collection's metadata (Chroma learns it only from the
 * first vector). Vectors are always ours: no embedding function is ever attached (the default one
 * would download a model). Cosine distance d is similarity 1 - d. A collection made elsewhere is
 * read as it is: its dimension from a stored vector, its distances from its own space.
 */
export class ChromaStore implements VectorStore {
  readonly name = 'chroma' as const;
  readonly containerField = 'collection' as const;
  private readonly conn: StoreConnection<ChromaClient>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    const open = async (): Promise<ChromaClient> => {
      const url = await vettedUrl(policy, fields.url ?? '', 'chroma');
      const ssl = url.protocol === 'https:';
      // Loaded by the first use of Chroma: a process that never uses it never pays for it.
      const { ChromaClient } = await import('chromadb');
      return new ChromaClient({
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port ? Number(url.port) : ssl ? 443 : 80,
        ssl,
        // A redirect could lead the request past the egress policy: it is never followed.
        fetchOptions: { redirect: 'error' },
        ...(fields.token ? { headers: { 'x-chroma-token': fields.token } } : {}),
      });
    };
    const down = (err: unknown): boolean => nameOf(err) === 'ChromaConnectionError' || isUnreachable(err);
    this.conn = new StoreConnection('chroma', fields.url, open, down);
  }

  containerName(collection: string): string {
    return collection;
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Chroma collection name: 3-512 letters, digits, '.', '_' or '-', starting and ending with a letter or digit`,
      );
    }
  }

  async probe(): Promise<void> {
    await this.conn.call(async (c) => void (await c.heartbeat()));
  }

  /**
   * Null also for a collection made elsewhere that holds no vector yet: it takes any dimension
   * until ensure() records one.
   */
  async dimension(container: string): Promise<number | null> {
    const col = await this.find(container);
    return col ? this.dimensionOf(col) : null;
  }

  async ensure(container: string, dimension: number): Promise<{ created: boolean }> {
    const existing = await this.find(container);
    if (existing) {
      const d = await this.dimensionOf(existing);
      if (d !== null && d !== dimension) throw new VectorDimensionMismatch('chroma', container, d, dimension);
      if (d === null) {
        // Made elsewhere and empty: record the dimension beside its own metadata (modify replaces it).
        const metadata = { ...(existing.metadata ?? {}), [DIMENSION_KEY]: dimension };
        await this.conn.call(() => existing.modify({ metadata }));
      }
      return { created: false };
    }
    return this.conn.call(async (c) => {
      try {
        await c.createCollection({
          name: container,
          configuration: { hnsw: { space: 'cosine' } },
          metadata: { [DIMENSION_KEY]: dimension },
          embeddingFunction: null,
        });
        return { created: true };
      } catch (err) {
        // Made meanwhile by another job.
        if (nameOf(err) === 'ChromaUniqueError') return this.ensure(container, dimension);
        throw err;
      }
    });
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    const col = await this.collection(container);
    return this.conn.call(async () => (await col.get({ where: { uri: { $eq: uri } }, include: [] })).ids);
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    const col = await this.collection(container);
    for (let i = 0; i < chunks.length; i += BATCH) {
      const batch = chunks.slice(i, i + BATCH);
      await this.onCollection(container, () =>
        col.upsert({
          ids: batch.map((c) => c.id),
          embeddings: batch.map((c) => Array.from(c.vector)),
          documents: batch.map((c) => c.text),
          metadatas: batch.map((c) => c.metadata),
        }),
      );
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const col = await this.collection(container);
    await this.conn.call(() => col.delete({ ids }));
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    const col = await this.collection(container);
    const space = col.configuration.hnsw?.space ?? col.configuration.spann?.space;
    const res = await this.onCollection(container, () =>
      col.query({
        queryEmbeddings: [Array.from(vector)],
        nResults: topK,
        where: chromaWhere(filter),
        include: ['documents', 'metadatas', 'distances'],
      }),
    );
    return res.ids[0].map((id, i) => ({
      id,
      text: res.documents[0][i] ?? '',
      metadata: (res.metadatas[0][i] ?? {}) as ChunkMetadata,
      similarity: chromaSimilarity(space, res.distances[0][i] ?? 1),
    }));
  }

  async list(): Promise<string[]> {
    return this.conn.call(async (c) => {
      const names: string[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await c.listCollections({ limit: 100, offset });
        names.push(...page.map((x) => x.name));
        if (page.length < 100) return names;
      }
    });
  }

  async drop(container: string): Promise<boolean> {
    if (!(await this.find(container))) return false;
    await this.conn.call((c) => c.deleteCollection({ name: container }));
    return true;
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  /** The recorded dimension, else that of a stored vector, else null (none stored). */
  private async dimensionOf(col: Collection): Promise<number | null> {
    const d = Number(col.metadata?.[DIMENSION_KEY]);
    if (Number.isFinite(d) && d > 0) return d;
    const one = await this.conn.call(() => col.get({ limit: 1, include: ['embeddings'] }));
    const v = one.embeddings[0];
    return v ? v.length : null;
  }

  /** Work on a collection, reading Chroma's dimension complaint as VectorDimensionMismatch. */
  private async onCollection<T>(container: string, work: () => Promise<T>): Promise<T> {
    try {
      return await this.conn.call(work);
    } catch (err) {
      const dims =
        nameOf(err) === 'ChromaClientError' ? chromaDimensionError(String((err as Error).message)) : null;
      if (dims) throw new VectorDimensionMismatch('chroma', container, dims.expected, dims.actual);
      throw err;
    }
  }

  private async collection(container: string): Promise<Collection> {
    const col = await this.find(container);
    if (!col) throw new VectorContainerMissing('chroma', container);
    return col;
  }

  private async find(container: string): Promise<Collection | null> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      try {
        return await c.getCollection({ name: container });
      } catch (err) {
        if (nameOf(err) === 'ChromaNotFoundError') return null;
        throw err;
      }
    });
  }
}

/** Error class names: the client's classes may come from another realm (tests), so no instanceof. */
function nameOf(err: unknown): string | undefined {
  return (err as { name?: string } | null)?.name;
}

export const chromaStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new ChromaStore(fields, policy);
