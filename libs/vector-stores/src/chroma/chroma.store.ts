import { ChromaClient, Collection } from 'chromadb';
import { EgressPolicy } from '@tapyard/egress';
import type { ChunkMetadata, ChunkRecord, MetadataFilter, SearchHit, VectorStore } from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from '../vector-store.errors';
import { isUnreachable, vettedUrl } from '../vetted-url';
import { StoreConnection } from '../store-connection';
import { chromaWhere } from './chroma-filter';

// Chroma's own rule: 3-512 characters of [a-zA-Z0-9._-], starting and ending with a letter or digit.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$/;
const BATCH = 1000;
const DIMENSION_KEY = 'tapyard_dimension';

/**
 * Chroma through its official client, server at the secret's `url`: a container is a collection with
 * the cosine space; its dimension is kept in the collection's metadata (Chroma learns it only from the
 * first vector). Vectors are always ours: no embedding function is ever attached (the default one
 * would download a model). Cosine distance d is similarity 1 - d.
 */
export class ChromaStore implements VectorStore {
  readonly name = 'chroma' as const;
  readonly containerField = 'collection' as const;
  private readonly conn: StoreConnection<ChromaClient>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    const open = async (): Promise<ChromaClient> => {
      const url = await vettedUrl(policy, fields.url ?? '', 'chroma');
      const ssl = url.protocol === 'https:';
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

  async dimension(container: string): Promise<number | null> {
    const col = await this.find(container);
    if (!col) return null;
    const d = Number(col.metadata?.[DIMENSION_KEY]);
    return Number.isFinite(d) && d > 0 ? d : null;
  }

  async ensure(container: string, dimension: number): Promise<{ created: boolean }> {
    const existing = await this.find(container);
    if (existing) {
      const d = Number(existing.metadata?.[DIMENSION_KEY]);
      if (Number.isFinite(d) && d !== dimension)
        throw new VectorDimensionMismatch('chroma', container, d, dimension);
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
      await this.conn.call(() =>
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
    const res = await this.conn.call(() =>
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
      similarity: 1 - (res.distances[0][i] ?? 1),
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
