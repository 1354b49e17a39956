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
import { StoreConnection } from '../store-connection';
import { vettedUrl } from '../vetted-url';
import { qdrantDimensionError, qdrantVectorSize } from './qdrant-answers';
import { qdrantFilter } from './qdrant-filter';
import { QdrantAnswerError, QdrantRest } from './qdrant-rest';

const NAME = /^[A-Za-z0-9_-]{1,255}$/;
const BATCH = 500;

interface Payload {
  text: string;
  metadata: ChunkMetadata;
}

/**
 * Qdrant through its REST API (QdrantRest: egress-checked, no redirects): a container is a collection of cosine vectors; a point's
 * payload is `{text, metadata}`, with a keyword index on `metadata.uri`. Qdrant's cosine score is the
 * cosine similarity itself.
 */
export class QdrantStore implements VectorStore {
  readonly name = 'qdrant' as const;
  readonly containerField = 'collection' as const;
  private readonly conn: StoreConnection<QdrantRest>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    this.conn = new StoreConnection('qdrant', fields.url, async () => {
      // Refused here, naming why, before any call; each call is checked again as it connects.
      await vettedUrl(policy, fields.url ?? '', 'qdrant');
      return new QdrantRest(policy, new URL(fields.url ?? ''), fields.apiKey || undefined);
    });
  }

  containerName(collection: string): string {
    return vectorContainerName('qdrant', collection);
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Qdrant collection name: 1-255 letters, digits, _ or -`,
      );
    }
  }

  async probe(): Promise<void> {
    await this.conn.call(async (c) => void (await c.collections()));
  }

  async exists(container: string): Promise<boolean> {
    this.checkContainer(container);
    return this.conn.call((c) => c.exists(container));
  }

  async dimension(container: string): Promise<number | null> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.exists(container))) return null;
      const size = qdrantVectorSize(await c.vectors(container));
      if (size === undefined) {
        throw new VectorStoreInputError(
          `qdrant collection '${container}' has named vectors: Tapyard reads and writes collections of one unnamed vector`,
        );
      }
      return size;
    });
  }

  async ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }> {
    const existing = await this.dimension(container);
    if (existing !== null) {
      if (existing !== dimension) throw new VectorDimensionMismatch('qdrant', container, existing, dimension);
      return { created: false };
    }
    return this.conn.call(async (c) => {
      try {
        await c.create(container, dimension, mark === undefined ? undefined : { [CREATION_MARK_KEY]: mark });
      } catch (err) {
        // Created meanwhile by another job: take it as it is.
        if (statusOf(err) === 409) return this.ensure(container, dimension, mark);
        throw err;
      }
      await c.keywordIndex(container, 'metadata.uri');
      return { created: true };
    });
  }

  async creationMark(container: string): Promise<string | null> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      // One request: a missing collection answers 404.
      const metadata = await c.metadata(container).catch((err: unknown) => {
        if (statusOf(err) === 404) return null;
        throw err;
      });
      const mark = metadata?.[CREATION_MARK_KEY];
      return typeof mark === 'string' ? mark : null;
    });
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    this.checkContainer(container);
    const ids: string[] = [];
    await this.onCollection(container, async (c) => {
      let offset: string | number | undefined | null = undefined;
      do {
        const page = await c.scroll(container, {
          filter: qdrantFilter({ uri }),
          limit: 1000,
          with_payload: false,
          with_vector: false,
          ...(offset !== undefined && offset !== null ? { offset } : {}),
        });
        for (const p of page.points) ids.push(String(p.id));
        offset = page.next_page_offset;
      } while (offset !== undefined && offset !== null);
    });
    return ids;
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    this.checkContainer(container);
    for (let i = 0; i < chunks.length; i += BATCH) {
      const points = chunks.slice(i, i + BATCH).map((c) => ({
        id: c.id,
        vector: Array.from(c.vector),
        payload: { text: c.text, metadata: c.metadata } satisfies Payload,
      }));
      await this.onCollection(container, (c) => c.upsert(container, points));
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    this.checkContainer(container);
    if (ids.length === 0) return;
    await this.onCollection(container, (c) => c.deletePoints(container, ids));
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    this.checkContainer(container);
    const res = await this.onCollection(container, (c) =>
      c.query(container, {
        query: Array.from(vector),
        limit: topK,
        filter: qdrantFilter(filter),
        with_payload: true,
      }),
    );
    return res.points.map((p) => {
      const payload = p.payload as unknown as Payload;
      return { id: String(p.id), text: payload.text, metadata: payload.metadata, similarity: p.score };
    });
  }

  async list(): Promise<string[]> {
    return this.conn.call((c) => c.collections());
  }

  async drop(container: string): Promise<boolean> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.exists(container))) return false;
      await c.drop(container);
      return true;
    });
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  private async onCollection<T>(container: string, work: (c: QdrantRest) => Promise<T>): Promise<T> {
    return this.conn.call(async (c) => {
      try {
        return await work(c);
      } catch (err) {
        if (statusOf(err) === 404) throw new VectorContainerMissing('qdrant', container);
        // A collection made elsewhere for another model, or vectors of another embedder.
        const dims = statusOf(err) === 400 ? qdrantDimensionError(errorText(err)) : null;
        if (dims) throw new VectorDimensionMismatch('qdrant', container, dims.expected, dims.actual);
        throw err;
      }
    });
  }
}

function statusOf(err: unknown): number | undefined {
  return err instanceof QdrantAnswerError ? err.status : undefined;
}

/** The error text of a Qdrant answer (`{status: {error}}`), else the error's message. */
function errorText(err: unknown): string {
  const data = err instanceof QdrantAnswerError ? (err.data as { status?: { error?: unknown } }) : undefined;
  const text = data?.status?.error;
  return typeof text === 'string' ? text : String((err as Error).message);
}

export const qdrantStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new QdrantStore(fields, policy);
