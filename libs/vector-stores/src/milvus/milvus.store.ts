import { isIP } from 'node:net';
import type { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { EgressPolicy } from '@tapyard/egress';
import { vectorContainerName } from '@tapyard/model';
import {
  creationMarkOf,
  creationMarkText,
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
import { vettedEndpoint } from '../vetted-url';
import { milvusFilter, milvusLiteral } from './milvus-filter';

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,254}$/;
const BATCH = 1000;
const PAGE = 16_384;
const MAX_TEXT = 65_535;

/** The SDK (gRPC, protobuf, thrift), loaded by the first use of Milvus: a process that never uses it never pays for it. */
function milvusSdk(): Promise<typeof import('@zilliz/milvus2-sdk-node')> {
  return import('@zilliz/milvus2-sdk-node');
}

interface Status {
  error_code?: string | number;
  code?: number;
  reason?: string;
}

/**
 * Milvus through its official Node SDK (gRPC at the secret's `url` host and port): a container is a
 * collection (id varchar primary key, text, metadata JSON, vector FloatVector) with a COSINE index,
 * loaded for search; reads use Strong consistency so a write is visible to the next search. Milvus's
 * COSINE score is the cosine similarity.
 */
export class MilvusStore implements VectorStore {
  readonly name = 'milvus' as const;
  readonly containerField = 'collection' as const;
  private readonly conn: StoreConnection<MilvusClient>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    const open = async (): Promise<MilvusClient> => {
      // The port checked is the one connected to (Milvus's 19530 when an http URL names none).
      const { url, address, port } = await vettedEndpoint(policy, fields.url ?? '', 'milvus', 19530);
      const ssl = url.protocol === 'https:';
      const name = url.hostname.replace(/^\[|\]$/g, '');
      const { MilvusClient } = await milvusSdk();
      const client = new MilvusClient({
        // The address the policy vetted, never the name: gRPC would look a name up again on every
        // (re)connection, and a rebinding name would move the channel to a private host:port.
        address: `${address}:${port}`,
        ssl,
        // Never Zilliz's global-cluster mode, which fetches a topology and connects where it says.
        isGlobal: false,
        // Over https the certificate is checked against the name, which is also the TLS server name
        // and the :authority, as when the channel was opened by name.
        ...(ssl && isIP(name) === 0
          ? {
              channelOptions: {
                'grpc.ssl_target_name_override': name,
                'grpc.default_authority': `${name}:${port}`,
              },
            }
          : {}),
        timeout: 15_000,
        logLevel: 'error',
        ...(fields.token ? { token: fields.token } : {}),
      });
      // The client connects on its own as it is made; a failure is seen by the first call, so this
      // promise must not reject unobserved.
      client.connectPromise.catch(() => undefined);
      return client;
    };
    const down = (err: unknown): boolean =>
      /UNAVAILABLE|ECONNREFUSED|DEADLINE_EXCEEDED|No connection established|Failed to connect/i.test(
        err instanceof Error ? err.message : String(err),
      );
    this.conn = new StoreConnection('milvus', fields.url, open, down, (c) =>
      c.closeConnection().then(() => undefined),
    );
  }

  containerName(collection: string): string {
    return vectorContainerName('milvus', collection);
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Milvus collection name: a letter or _, then letters, digits or _ (at most 255)`,
      );
    }
  }

  async probe(): Promise<void> {
    await this.conn.call(async (c) => ok(await c.listCollections(), 'list collections'));
  }

  async dimension(container: string): Promise<number | null> {
    this.checkContainer(container);
    if (!(await this.exists(container))) return null;
    return this.conn.call(async (c) => {
      const d = await c.describeCollection({ collection_name: container });
      const vector = d.schema.fields.find((f) => f.name === 'vector');
      const dim = vector?.type_params?.find((p) => p.key === 'dim')?.value;
      return dim === undefined ? null : Number(dim);
    });
  }

  async ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }> {
    const existing = await this.dimension(container);
    if (existing !== null) {
      if (existing !== dimension) throw new VectorDimensionMismatch('milvus', container, existing, dimension);
      return { created: false };
    }
    const { DataType } = await milvusSdk();
    try {
      await this.conn.call(async (c) => {
        // Without index_params the SDK only creates: an index or load failing below is not taken for
        // a create refused because the collection exists.
        const status = await c
          .createCollection({
            collection_name: container,
            ...(mark === undefined ? {} : { description: creationMarkText(mark) }),
            fields: [
              { name: 'id', data_type: DataType.VarChar, is_primary_key: true, max_length: 64 },
              { name: 'text', data_type: DataType.VarChar, max_length: MAX_TEXT },
              { name: 'metadata', data_type: DataType.JSON },
              { name: 'vector', data_type: DataType.FloatVector, dim: dimension },
            ],
          })
          // The SDK throws an unsuccessful status as it is, not as an Error.
          .catch((err: unknown): Status => {
            if (err instanceof Error) throw err;
            if (typeof err === 'object' && err !== null) return err as Status;
            throw new Error(String(err));
          });
        ok(status, `create collection ${container}`);
      });
    } catch (err) {
      // Made meanwhile by another job or tool: Milvus refuses a second create whose parameters differ,
      // and a description with another mark differs. Taken as it is, as when it existed before.
      const now = await this.dimension(container).catch(() => null);
      if (now === null) throw err;
      if (now !== dimension) throw new VectorDimensionMismatch('milvus', container, now, dimension);
      return { created: false };
    }
    await this.conn.call(async (c) => {
      ok(
        await c.createIndex({
          collection_name: container,
          field_name: 'vector',
          index_type: 'FLAT',
          metric_type: 'COSINE',
        }),
        `index collection ${container}`,
      );
      // Waits until loaded (the SDK polls), so the first search after ensure finds it ready.
      ok(await c.loadCollection({ collection_name: container }), `load collection ${container}`);
    });
    return { created: true };
  }

  async creationMark(container: string): Promise<string | null> {
    this.checkContainer(container);
    // Listed first: the SDK throws a TypeError, not a status, describing a collection that is missing.
    if (!(await this.exists(container))) return null;
    return this.conn.call(async (c) => {
      const d = await c.describeCollection({ collection_name: container });
      ok(d.status, `describe collection ${container}`);
      return creationMarkOf(d.schema.description);
    });
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    await this.require(container);
    const ids: string[] = [];
    await this.conn.call(async (c) => {
      for (let offset = 0; ; offset += PAGE) {
        const res = await c.query({
          collection_name: container,
          filter: `metadata["uri"] == ${milvusLiteral(uri)}`,
          output_fields: ['id'],
          limit: PAGE,
          offset,
          consistency_level: 'Strong' as never,
        });
        ok(res.status, 'query');
        ids.push(...res.data.map((r) => String(r.id)));
        if (res.data.length < PAGE) return;
      }
    });
    return ids;
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    await this.require(container);
    for (let i = 0; i < chunks.length; i += BATCH) {
      const data = chunks.slice(i, i + BATCH).map((c) => ({
        id: c.id,
        text: c.text.length > MAX_TEXT / 4 ? c.text.slice(0, MAX_TEXT / 4) : c.text,
        metadata: c.metadata,
        vector: Array.from(c.vector),
      }));
      await this.conn.call(async (c) =>
        ok((await c.upsert({ collection_name: container, data })).status, 'upsert'),
      );
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.require(container);
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      await this.conn.call(async (c) =>
        ok(await c.delete({ collection_name: container, ids: batch }), 'delete'),
      );
    }
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    await this.require(container);
    let expr: string;
    try {
      expr = milvusFilter(filter);
    } catch (err) {
      throw new VectorStoreInputError((err as Error).message);
    }
    return this.conn.call(async (c) => {
      const res = await c.search({
        collection_name: container,
        data: [Array.from(vector)],
        limit: topK,
        output_fields: ['id', 'text', 'metadata'],
        ...(expr ? { filter: expr } : {}),
        consistency_level: 'Strong' as never,
      });
      ok(res.status, 'search');
      return (res.results as { id: string; score: number; text: string; metadata: ChunkMetadata }[]).map(
        (r) => ({
          id: String(r.id),
          text: r.text,
          metadata: r.metadata,
          similarity: r.score,
        }),
      );
    });
  }

  async list(): Promise<string[]> {
    return this.conn.call(async (c) => {
      const res = await c.listCollections();
      ok(res.status, 'list collections');
      return res.data.map((x) => x.name);
    });
  }

  async drop(container: string): Promise<boolean> {
    this.checkContainer(container);
    if (!(await this.exists(container))) return false;
    await this.conn.call(async (c) =>
      ok(await c.dropCollection({ collection_name: container }), 'drop collection'),
    );
    return true;
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  async exists(container: string): Promise<boolean> {
    this.checkContainer(container);
    // listCollections, not hasCollection: Milvus Lite answers hasCollection true for a dropped one.
    return (await this.list()).includes(container);
  }

  private async require(container: string): Promise<void> {
    this.checkContainer(container);
    if (!(await this.exists(container))) throw new VectorContainerMissing('milvus', container);
  }
}

/**
 * Milvus answers errors as statuses, not exceptions: an unsuccessful one becomes an error here. Milvus
 * 2.3 and later say it in `code` and may leave `error_code` 'Success' (a second create of a collection
 * with other parameters does), so either one failing is a failure.
 */
function ok(s: Status | { status: Status }, what: string): void {
  const status = 'status' in s ? s.status : s;
  const fine =
    !status.code &&
    (status.error_code === 'Success' || status.error_code === 0 || status.error_code === undefined);
  if (!fine)
    throw new Error(`milvus could not ${what}: ${status.reason || String(status.code || status.error_code)}`);
}

export const milvusStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new MilvusStore(fields, policy);
