import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, NotFoundError, NotImplementedError, TapyardConfig } from '@tapyard/core';
import { LOADS_COLLECTION, MongoClients, PgPools } from '@tapyard/destinations';
import { SecretsService } from '@tapyard/secrets';

/** Postgres schemas of the platform itself (metadata and load ledgers), not user data. */
const INTERNAL_SCHEMAS = ['tapyard', 'tapyard_meta'];
const SYSTEM_SCHEMAS = ['information_schema', 'pg_catalog', 'pg_toast'];
/** MongoDB databases that are never user data; the platform keeps no internal document database yet. */
export const INTERNAL_MONGO_DATABASES = ['admin', 'config', 'local', 'tapyard_internal'];

export interface Column {
  name: string;
  type: string;
}

/**
 * What exists in the data stores Tapyard loads into, for pickers in the UI and for AI prompts:
 * PostgreSQL databases, schemas, tables and columns; MongoDB databases and collections.
 */
@Injectable()
export class MetadataService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pools: PgPools,
    private readonly mongo: MongoClients,
    private readonly secrets: SecretsService,
  ) {}

  async postgresDatabases(): Promise<string[]> {
    const { rows } = await this.pools
      .get(this.config.database.name)
      .query<{ datname: string }>(
        'SELECT datname FROM pg_database WHERE NOT datistemplate AND datallowconn ORDER BY datname',
      );
    return rows.map((r) => r.datname);
  }

  async postgresSchemas(database?: string): Promise<string[]> {
    const { rows } = await (
      await this.pool(database)
    ).query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace
        WHERE NOT (nspname = ANY($1)) AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
        ORDER BY nspname`,
      [[...SYSTEM_SCHEMAS, ...INTERNAL_SCHEMAS]],
    );
    return rows.map((r) => r.nspname);
  }

  /** Tables (and views) of a schema; `vectorOnly` selects those with an `embedding` column, else excludes them. */
  async postgresTables(
    database: string | undefined,
    schema = 'public',
    vectorOnly = false,
  ): Promise<string[]> {
    this.refuseInternal(schema);
    const { rows } = await (
      await this.pool(database)
    ).query<{ relname: string }>(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND EXISTS (SELECT 1 FROM pg_attribute a
                       WHERE a.attrelid = c.oid AND a.attname = 'embedding' AND a.attnum > 0 AND NOT a.attisdropped) = $2
        ORDER BY c.relname`,
      [schema, vectorOnly],
    );
    return rows.map((r) => r.relname);
  }

  async postgresColumns(database: string | undefined, schema = 'public', table: string): Promise<Column[]> {
    this.refuseInternal(schema);
    const { rows } = await (
      await this.pool(database)
    ).query<Column>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`,
      [schema, table],
    );
    if (rows.length === 0) throw new NotFoundError(`table '${schema}.${table}' does not exist`);
    return rows;
  }

  async mongoDatabases(): Promise<string[]> {
    const client = await this.mongo.get();
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    return databases
      .map((d) => d.name)
      .filter((n) => !INTERNAL_MONGO_DATABASES.includes(n))
      .sort();
  }

  /** Collections of one database, or of all of them as `<database>.<collection>`. */
  async mongoCollections(database?: string): Promise<string[]> {
    if (database !== undefined) {
      if (!(await this.mongoDatabases()).includes(database)) {
        throw new NotFoundError(`MongoDB database '${database}' does not exist`);
      }
      return this.collectionsOf(database);
    }
    const out: string[] = [];
    for (const db of await this.mongoDatabases()) {
      for (const c of await this.collectionsOf(db)) out.push(`${db}.${c}`);
    }
    return out;
  }

  /** Vector-store containers: `[]` while the store has no secret in this environment. */
  async vectorContainers(
    environment: string,
    store: 'qdrant' | 'weaviate' | 'milvus' | 'chroma',
  ): Promise<string[]> {
    if (!(await this.secrets.list(environment)).includes(store)) return [];
    throw new NotImplementedError(
      `${store} is configured, but listing its containers arrives with the vector-store integration`,
    );
  }

  private async collectionsOf(database: string): Promise<string[]> {
    const client = await this.mongo.get();
    const list = await client.db(database).listCollections({}, { nameOnly: true }).toArray();
    return list
      .map((c) => c.name)
      .filter((n) => !n.startsWith('system.') && n !== LOADS_COLLECTION)
      .sort();
  }

  /** Only databases that exist get a connection pool: a name from a request is checked first. */
  private async pool(database?: string) {
    const name = database ?? this.config.database.name;
    if (database !== undefined && !(await this.postgresDatabases()).includes(name)) {
      throw new NotFoundError(`PostgreSQL database '${name}' does not exist`);
    }
    return this.pools.get(name);
  }

  private refuseInternal(schema: string): void {
    if (INTERNAL_SCHEMAS.includes(schema) || SYSTEM_SCHEMAS.includes(schema)) {
      throw new NotFoundError(`schema '${schema}' does not exist`);
    }
  }
}
