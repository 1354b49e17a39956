import type { Collection, FilterValue, WeaviateClient } from 'weaviate-client';
import { EgressPolicy } from '@tapyard/egress';
import type {
  ChunkMetadata,
  ChunkRecord,
  MetadataFilter,
  MetadataValue,
  SearchHit,
  VectorStore,
} from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from '../vector-store.errors';
import { StoreConnection } from '../store-connection';
import { isUnreachable, vettedUrl } from '../vetted-url';

const NAME = /^[A-Z][_0-9A-Za-z]{0,230}$/;
const BATCH = 500;
const PAGE = 10_000;
/** Metadata keys become properties `m_<key>`: never the chunk's own `text`, never a reserved name. */
const PREFIX = 'm_';
const DIMENSION = /tapyard dimension=(\d+)/;

/** The client (with its gRPC stack), loaded by the first use of Weaviate: a process that never uses it never pays for it. */
function weaviateSdk(): Promise<typeof import('weaviate-client')> {
  return import('weaviate-client');
}

type Kind = 'text' | 'number' | 'boolean';

/**
 * Weaviate through its official client (HTTP plus gRPC on the secret's `grpcPort`, default 50051):
 * a container is a class (collection) of self-provided vectors with an HNSW cosine index; its
 * dimension is kept in the class description. Each metadata key is a property declared on first use
 * (text with `field` tokenization, so equality is exact; number; boolean), and filters run in Weaviate.
 * Cosine distance d is similarity 1 - d.
 */
export class WeaviateStore implements VectorStore {
  readonly name = 'weaviate' as const;
  readonly containerField = 'className' as const;
  private readonly conn: StoreConnection<WeaviateClient>;
  /** Declared properties per class, as last read or added. */
  private readonly properties = new Map<string, Map<string, string>>();

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    const open = async (): Promise<WeaviateClient> => {
      const url = await vettedUrl(policy, fields.url ?? '', 'weaviate');
      const secure = url.protocol === 'https:';
      const grpcPort = Number(fields.grpcPort ?? 50051);
      // The gRPC port is a second connection to the same host: it passes the policy too.
      const grpc = await policy.check(new URL(fields.url).hostname, grpcPort);
      const { default: weaviate } = await weaviateSdk();
      return weaviate.connectToCustom({
        httpHost: url.hostname.replace(/^\[|\]$/g, ''),
        httpPort: url.port ? Number(url.port) : secure ? 443 : 80,
        httpSecure: secure,
        ...(url.pathname !== '/' ? { httpPath: url.pathname } : {}),
        grpcHost: secure ? new URL(fields.url).hostname : grpc.address,
        grpcPort,
        grpcSecure: secure,
        skipInitChecks: true,
        ...(fields.apiKey ? { authCredentials: new weaviate.ApiKey(fields.apiKey) } : {}),
      });
    };
    const down = (err: unknown): boolean =>
      isUnreachable(err) ||
      /ECONNREFUSED|UNAVAILABLE|fetch failed|Failed to connect/i.test(
        err instanceof Error ? err.message : String(err),
      );
    this.conn = new StoreConnection('weaviate', fields.url, open, down, (c) => c.close());
  }

  containerName(collection: string): string {
    return collection.charAt(0).toUpperCase() + collection.slice(1).replace(/-/g, '_');
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Weaviate class name: PascalCase, a capital letter then letters, digits or _`,
      );
    }
  }

  async probe(): Promise<void> {
    await this.conn.call(async (c) => void (await c.collections.listAll()));
  }

  async dimension(container: string): Promise<number | null> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.collections.exists(container))) return null;
      const config = await c.collections.use(container).config.get();
      const m = DIMENSION.exec(config.description ?? '');
      return m ? Number(m[1]) : 0;
    });
  }

  async ensure(container: string, dimension: number): Promise<{ created: boolean }> {
    const existing = await this.dimension(container);
    if (existing !== null) {
      if (existing > 0 && existing !== dimension) {
        throw new VectorDimensionMismatch('weaviate', container, existing, dimension);
      }
      return { created: false };
    }
    const { default: weaviate } = await weaviateSdk();
    return this.conn.call(async (c) => {
      try {
        await c.collections.create({
          name: container,
          description: `tapyard dimension=${dimension}`,
          vectorizers: weaviate.configure.vectors.selfProvided({
            vectorIndexConfig: weaviate.configure.vectorIndex.hnsw({ distanceMetric: 'cosine' }),
          }),
          properties: [
            {
              name: 'text',
              dataType: 'text',
              tokenization: 'field',
              indexFilterable: false,
              indexSearchable: false,
            },
            { name: `${PREFIX}uri`, dataType: 'text', tokenization: 'field' },
          ],
        });
      } catch (err) {
        if (/already exists/i.test((err as Error).message)) return this.ensure(container, dimension);
        throw err;
      }
      this.properties.delete(container);
      return { created: true };
    });
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    const col = await this.collection(container);
    return this.conn.call(async () => {
      const ids: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await col.query.fetchObjects({
          filters: col.filter.byProperty(`${PREFIX}uri`).equal(uri),
          limit: PAGE,
          returnProperties: [],
          ...(after ? { after } : {}),
        });
        ids.push(...page.objects.map((o) => o.uuid));
        if (page.objects.length < PAGE) return ids;
        after = page.objects[page.objects.length - 1].uuid;
      }
    });
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    const col = await this.collection(container);
    await this.declare(container, col, chunks);
    for (let i = 0; i < chunks.length; i += BATCH) {
      const batch = chunks.slice(i, i + BATCH).map((c) => ({
        id: c.id,
        vectors: Array.from(c.vector),
        properties: {
          text: c.text,
          ...Object.fromEntries(Object.entries(c.metadata).map(([k, v]) => [PREFIX + k, v])),
        },
      }));
      // insertMany replaces an object of the same id (a batch write is an upsert in Weaviate).
      const res = await this.conn.call(() => col.data.insertMany(batch));
      if (res.hasErrors) {
        const first = Object.values(res.errors)[0];
        throw new Error(
          `weaviate refused ${Object.keys(res.errors).length} chunks: ${first?.message ?? 'unknown error'}`,
        );
      }
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const col = await this.collection(container);
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      await this.conn.call(() => col.data.deleteMany(col.filter.byId().containsAny(batch)));
    }
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    const col = await this.collection(container);
    const known = await this.known(container, col);
    const entries = Object.entries(filter ?? {});
    // A condition on a key no chunk ever had matches nothing (Weaviate would refuse the filter).
    if (entries.some(([k]) => !known.has(PREFIX + k))) return [];
    const { Filters } = await weaviateSdk();
    const conditions: FilterValue[] = entries.map(([k, v]) => {
      const p = col.filter.byProperty(PREFIX + k);
      return Array.isArray(v) ? p.containsAny(v as never[]) : p.equal(v as never);
    });
    const res = await this.conn.call(() =>
      col.query.nearVector(Array.from(vector), {
        limit: topK,
        returnMetadata: ['distance'],
        ...(conditions.length
          ? { filters: conditions.length === 1 ? conditions[0] : Filters.and(...conditions) }
          : {}),
      }),
    );
    return res.objects.map((o) => {
      const props = o.properties as Record<string, MetadataValue | null>;
      const metadata: ChunkMetadata = {};
      for (const [k, v] of Object.entries(props)) {
        if (k.startsWith(PREFIX) && v !== null && v !== undefined) metadata[k.slice(PREFIX.length)] = v;
      }
      return {
        id: o.uuid,
        text: String(props.text ?? ''),
        metadata,
        similarity: 1 - (o.metadata?.distance ?? 1),
      };
    });
  }

  async list(): Promise<string[]> {
    return this.conn.call(async (c) => (await c.collections.listAll()).map((x) => x.name));
  }

  async drop(container: string): Promise<boolean> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.collections.exists(container))) return false;
      await c.collections.delete(container);
      this.properties.delete(container);
      return true;
    });
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  private async collection(container: string): Promise<Collection> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.collections.exists(container))) throw new VectorContainerMissing('weaviate', container);
      return c.collections.use(container);
    });
  }

  private async known(container: string, col: Collection): Promise<Map<string, string>> {
    let props = this.properties.get(container);
    if (!props) {
      const config = await this.conn.call(() => col.config.get());
      props = new Map(config.properties.map((p) => [p.name, p.dataType]));
      this.properties.set(container, props);
    }
    return props;
  }

  /** Declares the metadata keys the class does not have yet, typed by their first value. */
  private async declare(container: string, col: Collection, chunks: ChunkRecord[]): Promise<void> {
    const known = await this.known(container, col);
    const wanted = new Map<string, Kind>();
    for (const c of chunks) {
      for (const [k, v] of Object.entries(c.metadata)) {
        const name = PREFIX + k;
        if (!known.has(name) && !wanted.has(name)) {
          wanted.set(name, typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'text');
        }
      }
    }
    for (const [name, kind] of wanted) {
      await this.conn.call(async () => {
        try {
          await col.config.addProperty(
            kind === 'text' ? { name, dataType: 'text', tokenization: 'field' } : { name, dataType: kind },
          );
        } catch (err) {
          // Another job declared it first.
          if (!/already (exists|in use)/i.test((err as Error).message)) throw err;
        }
      });
      known.set(name, kind);
    }
  }
}

export const weaviateStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new WeaviateStore(fields, policy);
