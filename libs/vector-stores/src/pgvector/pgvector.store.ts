import { Pool, PoolClient } from 'pg';
import { ServiceUnavailableError, quoteIdent } from '@tapyard/core';
import { EgressPolicy, EgressRefused } from '@tapyard/egress';
import { vectorContainerName } from '@tapyard/model';
import {
  creationMarkOf,
  creationMarkText,
  type ChunkRecord,
  type MetadataFilter,
  type SearchHit,
  type VectorStore,
} from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
  storeUnavailable,
} from '../vector-store.errors';
import { pgTarget } from './pg-target';
import { pgvectorSearch, vectorsBinary } from './pgvector-filter';

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;
const UPSERT_BATCH = 1000;
/** Connection errors: the server is down or unreachable, not a bad request. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  '57P03',
]);

function split(container: string): { schema: string; table: string; sql: string } {
  const [schema, table] = container.includes('.') ? container.split('.', 2) : ['public', container];
  return { schema, table, sql: `${quoteIdent(schema)}.${quoteIdent(table)}` };
}

/**
 * pgvector: a container is a table `schema.table` (id uuid, content text, metadata jsonb, embedding
 * vector(d)) with an HNSW cosine index. `<=>` is cosine distance, so similarity is 1 - distance.
 */
export class PgvectorStore implements VectorStore {
  readonly name = 'pgvector' as const;
  readonly containerField = 'table' as const;
  private pool: Promise<Pool> | null = null;
  private readonly target;

  constructor(
    fields: Record<string, string>,
    private readonly policy: EgressPolicy,
  ) {
    this.target = pgTarget(fields);
  }

  containerName(collection: string, schema?: string): string {
    return vectorContainerName('pgvector', collection, schema);
  }

  checkContainer(container: string): void {
    const parts = container.split('.');
    if (parts.length > 2 || !parts.every((p) => NAME.test(p))) {
      throw new VectorStoreInputError(
        `'${container}' is not a pgvector table: use [schema.]table, each 1-63 letters, digits, _ or -, starting with a letter or _`,
      );
    }
  }

  async probe(): Promise<void> {
    const rows = await this.query<{ ok: number }>(
      "SELECT 1 AS ok FROM pg_extension WHERE extname = 'vector'",
    );
    if (rows.length === 0) {
      throw storeUnavailable('pgvector', 'the vector extension is not installed in the pgvector database');
    }
  }

  async exists(container: string): Promise<boolean> {
    this.checkContainer(container);
    const rows = await this.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
      split(container).sql,
    ]);
    return rows[0].present;
  }

  async dimension(container: string): Promise<number | null> {
    this.checkContainer(container);
    const { sql } = split(container);
    const rows = await this.query<{ dim: number | null; kind: string | null }>(
      `SELECT a.atttypmod AS dim, t.typname AS kind
         FROM (SELECT to_regclass($1) AS rel) r
         LEFT JOIN pg_attribute a ON a.attrelid = r.rel AND a.attname = 'embedding' AND NOT a.attisdropped
         LEFT JOIN pg_type t ON t.oid = a.atttypid
        WHERE r.rel IS NOT NULL`,
      [sql],
    );
    if (rows.length === 0) return null;
    if (rows[0].kind !== 'vector') {
      throw new VectorStoreInputError(
        `pgvector table '${container}' exists but has no vector column 'embedding'`,
      );
    }
    return rows[0].dim;
  }

  async ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }> {
    const { schema, sql } = split(container);
    return this.transaction(async (c) => {
      // Two jobs creating the same table at once: the second waits, then finds it.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [sql]);
      const existing = await this.dimension(container);
      if (existing !== null) {
        if (existing !== dimension)
          throw new VectorDimensionMismatch('pgvector', container, existing, dimension);
        await this.ensureMetadataIndex(c, sql);
        return { created: false };
      }
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await c.query(
        `CREATE TABLE ${sql} (id uuid PRIMARY KEY, content text NOT NULL, metadata jsonb NOT NULL, embedding vector(${Number(dimension)}) NOT NULL)`,
      );
      // Unnamed: PostgreSQL picks index names unique in the schema (a name made here from a long table
      // name would be cut to 63 bytes, where two tables or two indexes of one table can collide).
      await c.query(`CREATE INDEX ON ${sql} USING hnsw (embedding vector_cosine_ops)`);
      await c.query(`CREATE INDEX ON ${sql} ((metadata ->> 'uri'))`);
      // Filtered searches are exact scans of the rows a filter keeps: this index finds those rows.
      await c.query(`CREATE INDEX ON ${sql} USING gin (metadata jsonb_path_ops)`);
      // COMMENT takes no parameters: the text is quoted as a literal.
      if (mark !== undefined)
        await c.query(`COMMENT ON TABLE ${sql} IS ${c.escapeLiteral(creationMarkText(mark))}`);
      return { created: true };
    });
  }

  async creationMark(container: string): Promise<string | null> {
    this.checkContainer(container);
    const rows = await this.query<{ comment: string | null }>(
      `SELECT obj_description(to_regclass($1), 'pg_class') AS comment`,
      [split(container).sql],
    );
    return creationMarkOf(rows[0].comment);
  }

  /**
   * A table made before filtered searches had their GIN index gets it when the platform next prepares
   * the table. Built here, inside the preparing transaction under its advisory lock, not CONCURRENTLY
   * (which cannot run in a transaction, can leave an invalid index behind when it fails, and two
   * preparers could each build one): writes to the table wait while it is built, once; searches do
   * not. An operator with a large table can build it beforehand with CREATE INDEX CONCURRENTLY, which
   * this check then finds.
   */
  private async ensureMetadataIndex(c: PoolClient, sql: string): Promise<void> {
    const found = await c.query(
      `SELECT 1 FROM pg_index i
        WHERE i.indrelid = to_regclass($1) AND i.indisvalid
          AND pg_get_indexdef(i.indexrelid) LIKE '%USING gin (metadata jsonb_path_ops)%'`,
      [sql],
    );
    if (found.rowCount === 0) await c.query(`CREATE INDEX ON ${sql} USING gin (metadata jsonb_path_ops)`);
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    const rows = await this.onTable<{ id: string }>(
      container,
      (t) => `SELECT id FROM ${t} WHERE metadata ->> 'uri' = $1`,
      [uri],
    );
    return rows.map((r) => r.id);
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    for (let i = 0; i < chunks.length; i += UPSERT_BATCH) {
      const batch = chunks.slice(i, i + UPSERT_BATCH);
      const dimension = batch[0].vector.length;
      if (batch.some((c) => c.vector.length !== dimension)) {
        throw new VectorStoreInputError(
          'pgvector: the chunks of one upsert must have vectors of one dimension',
        );
      }
      // The vectors travel as one binary real[] (see vectorsBinary): row o's is its o-th slice.
      await this.onTable(
        container,
        (t) =>
          `INSERT INTO ${t} (id, content, metadata, embedding)
           SELECT u.id, u.content, u.metadata, ($4::real[])[(u.o - 1) * $5 + 1 : u.o * $5]::vector
             FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) WITH ORDINALITY AS u (id, content, metadata, o)
           ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding`,
        [
          batch.map((c) => c.id),
          batch.map((c) => c.text),
          batch.map((c) => JSON.stringify(c.metadata)),
          vectorsBinary(
            batch.map((c) => c.vector),
            dimension,
          ),
          dimension,
        ],
      );
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.onTable(container, (t) => `DELETE FROM ${t} WHERE id = ANY ($1::uuid[])`, [ids]);
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    const q = pgvectorSearch(vector, topK, filter);
    const rows = await this.transaction(async (c) => {
      await c.query(q.setting);
      return this.onTable<{
        id: string;
        content: string;
        metadata: Record<string, string | number | boolean>;
        similarity: number;
      }>(container, q.sql, q.params, c);
    });
    return rows.map((r) => ({
      id: r.id,
      text: r.content,
      metadata: r.metadata,
      similarity: Number(r.similarity),
    }));
  }

  async list(): Promise<string[]> {
    const rows = await this.query<{ name: string }>(
      `SELECT n.nspname || '.' || c.relname AS name
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_type t ON t.oid = a.atttypid
        WHERE a.attname = 'embedding' AND t.typname = 'vector' AND c.relkind IN ('r', 'p') AND NOT a.attisdropped
          AND n.nspname NOT IN ('pg_catalog', 'information_schema')
        ORDER BY 1`,
    );
    return rows.map((r) => r.name);
  }

  async drop(container: string): Promise<boolean> {
    const existed = (await this.dimension(container)) !== null;
    if (existed) await this.query(`DROP TABLE IF EXISTS ${split(container).sql}`);
    return existed;
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool) await (await pool.catch(() => null))?.end();
  }

  /** A statement on a container, mapping "no such table" to VectorContainerMissing. */
  private async onTable<T>(
    container: string,
    text: (table: string) => string,
    params: unknown[],
    client?: PoolClient,
  ): Promise<T[]> {
    this.checkContainer(container);
    try {
      return await this.query<T>(text(split(container).sql), params, client);
    } catch (err) {
      if ((err as { code?: string }).code === '42P01')
        throw new VectorContainerMissing('pgvector', container);
      throw err;
    }
  }

  private async query<T>(text: string, params: unknown[] = [], client?: PoolClient): Promise<T[]> {
    try {
      const c = client ?? (await this.connect());
      return (await c.query(text, params)).rows as T[];
    } catch (err) {
      throw this.unreachable(err);
    }
  }

  private async transaction<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await (await this.connect()).connect();
    } catch (err) {
      throw this.unreachable(err);
    }
    try {
      await client.query('BEGIN');
      const out = await work(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.unreachable(err);
    } finally {
      client.release();
    }
  }

  private connect(): Promise<Pool> {
    this.pool ??= (async () => {
      const t = this.target;
      // Connect to the address the policy vetted, never to a second lookup of the name.
      const permit = await this.policy.check(t.host, t.port);
      const pool = new Pool({
        host: permit.address,
        port: t.port,
        user: t.user,
        password: t.password,
        database: t.database,
        max: 4,
        connectionTimeoutMillis: 5000,
        idleTimeoutMillis: 10_000,
      });
      pool.on('error', () => undefined);
      return pool;
    })().catch((err: unknown) => {
      this.pool = null;
      throw err;
    });
    return this.pool;
  }

  private unreachable(err: unknown): unknown {
    if (err instanceof ServiceUnavailableError) return err;
    // A refused address is a configuration the operator has not allowed: unavailable, saying why.
    if (err instanceof EgressRefused) return storeUnavailable('pgvector', err.message);
    const code = (err as { code?: string }).code;
    const message = err instanceof Error ? err.message : String(err);
    if ((code && UNREACHABLE.has(code)) || (/timeout|terminated|connect/i.test(message) && !code)) {
      return storeUnavailable(
        'pgvector',
        `pgvector is unreachable at ${this.target.host}:${this.target.port}: ${code ?? message}`,
      );
    }
    return err;
  }
}

export const pgvectorStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new PgvectorStore(fields, policy);
