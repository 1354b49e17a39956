import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, NotFoundError, TapyardConfig } from '@tapyard/core';
import { LOADS_COLLECTION, MongoClients, PgPools } from '@tapyard/destinations';
import {
  Confinement,
  confinementOf,
  isPlatformSchema,
  isReservedMongoDatabase,
  tenantSchema,
} from '@tapyard/pipelines';
import { SecretsService, TENANT_MAPPINGS_SECRET } from '@tapyard/secrets';
import { VectorStoresService } from '@tapyard/vector-stores';
import { MetadataErrorCode } from './metadata-errors';

export interface Column {
  name: string;
  type: string;
}

/**
 * Who looks: the environment a request acts in, and whether its caller holds full access (`*:*`).
 * A bare environment name is a caller without full access.
 */
export type Viewer = string | { environment: string; fullAccess: boolean };

/** The tenants' places a viewer may not see: none, or their schemas and MongoDB databases. */
interface Hidden {
  schemas: ReadonlySet<string>;
  mongoDatabases: ReadonlySet<string>;
}

/**
 * What exists in the data stores Tapyard loads into, for pickers in the UI and for AI prompts:
 * PostgreSQL databases, schemas, tables and columns; MongoDB databases and collections. The
 * platform's own schemas and databases are never shown. A tenant (multi-tenant mode) sees only its
 * confinement: the platform database with its schema `t_<tenant>`, and its MongoDB database; anything
 * else answers as missing (404), like other tenants' resources. The operator environment's callers see
 * the tenants' places (those of the tenants `api-key-mappings` names) only with full access: what a key
 * holds applies in its own environment, so reaching into a tenant takes `*:*`.
 */
@Injectable()
export class MetadataService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pools: PgPools,
    private readonly mongo: MongoClients,
    private readonly vectorStores: VectorStoresService,
    private readonly secrets: SecretsService,
  ) {}

  async postgresDatabases(viewer: Viewer): Promise<string[]> {
    const environment = environmentOf(viewer);
    const { rows } = await this.pools
      .get(this.config.database.name)
      .query<{ datname: string }>(
        'SELECT datname FROM pg_database WHERE NOT datistemplate AND datallowconn ORDER BY datname',
      );
    const own = this.confinement(environment).postgres;
    return rows.map((r) => r.datname).filter((d) => !own || d === own.database);
  }

  async postgresSchemas(viewer: Viewer, database?: string): Promise<string[]> {
    const { rows } = await (
      await this.pool(viewer, database)
    ).query<{ nspname: string }>(`SELECT nspname FROM pg_namespace ORDER BY nspname`);
    const own = this.confinement(environmentOf(viewer)).postgres;
    const hidden = await this.hidden(viewer);
    return rows
      .map((r) => r.nspname)
      .filter((s) => !isPlatformSchema(s) && (!own || s === own.schema) && !hidden.schemas.has(s));
  }

  /** Tables (and views) of a schema; `vectorOnly` selects those with an `embedding` column, else excludes them. */
  async postgresTables(
    viewer: Viewer,
    database: string | undefined,
    schema: string | undefined,
    vectorOnly = false,
  ): Promise<string[]> {
    const s = await this.visibleSchema(viewer, schema);
    const environment = environmentOf(viewer);
    // Vector tables live in the pgvector store's database (the platform's PostgreSQL has no vector
    // extension): with vectorOnly, that database answers when a pgvector store is configured.
    const pgvector = vectorOnly ? await this.vectorStores.find(environment, 'pgvector') : null;
    if (pgvector) {
      const prefix = `${s}.`;
      return (await pgvector.list())
        .filter((t) => t.startsWith(prefix))
        .map((t) => t.slice(prefix.length))
        .sort();
    }
    const { rows } = await (
      await this.pool(viewer, database)
    ).query<{ relname: string }>(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND EXISTS (SELECT 1 FROM pg_attribute a
                       WHERE a.attrelid = c.oid AND a.attname = 'embedding' AND a.attnum > 0 AND NOT a.attisdropped) = $2
        ORDER BY c.relname`,
      [s, vectorOnly],
    );
    return rows.map((r) => r.relname);
  }

  async postgresColumns(
    viewer: Viewer,
    database: string | undefined,
    schema: string | undefined,
    table: string,
  ): Promise<Column[]> {
    const s = await this.visibleSchema(viewer, schema);
    const { rows } = await (
      await this.pool(viewer, database)
    ).query<Column>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`,
      [s, table],
    );
    if (rows.length === 0)
      throw new NotFoundError(`table '${s}.${table}' does not exist`).coded(MetadataErrorCode.TableNotFound);
    return rows;
  }

  async mongoDatabases(viewer: Viewer): Promise<string[]> {
    const client = await this.mongo.get();
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    const own = this.confinement(environmentOf(viewer)).mongoDatabase;
    const hidden = await this.hidden(viewer);
    return databases
      .map((d) => d.name)
      .filter(
        (n) => !isReservedMongoDatabase(n) && (own === null || n === own) && !hidden.mongoDatabases.has(n),
      )
      .sort();
  }

  /** Collections of one database, or of all of them as `<database>.<collection>`. */
  async mongoCollections(viewer: Viewer, database?: string): Promise<string[]> {
    const visible = await this.mongoDatabases(viewer);
    if (database !== undefined) {
      if (!visible.includes(database)) {
        throw new NotFoundError(`MongoDB database '${database}' does not exist`).coded(
          MetadataErrorCode.DatabaseNotFound,
        );
      }
      return this.collectionsOf(database);
    }
    const out: string[] = [];
    for (const db of visible) {
      for (const c of await this.collectionsOf(db)) out.push(`${db}.${c}`);
    }
    return out;
  }

  /** Vector-store containers: `[]` while nothing configures the store in this environment. */
  async vectorContainers(
    environment: string,
    store: 'qdrant' | 'weaviate' | 'milvus' | 'chroma',
  ): Promise<string[]> {
    const vs = await this.vectorStores.find(environment, store);
    return vs ? (await vs.list()).sort() : [];
  }

  private async collectionsOf(database: string): Promise<string[]> {
    const client = await this.mongo.get();
    const list = await client.db(database).listCollections({}, { nameOnly: true }).toArray();
    return list
      .map((c) => c.name)
      .filter((n) => !n.startsWith('system.') && n !== LOADS_COLLECTION)
      .sort();
  }

  /**
   * Only databases that exist (and the caller may see) get a connection pool: a name from a request
   * is checked first.
   */
  private async pool(viewer: Viewer, database?: string) {
    const name = database ?? this.config.database.name;
    if (database !== undefined && !(await this.postgresDatabases(viewer)).includes(name)) {
      throw new NotFoundError(`PostgreSQL database '${name}' does not exist`).coded(
        MetadataErrorCode.DatabaseNotFound,
      );
    }
    return this.pools.get(name);
  }

  /** The schema asked for (default: `public`, a tenant's own), or 404 when the caller may not see it. */
  private async visibleSchema(viewer: Viewer, schema: string | undefined): Promise<string> {
    const own = this.confinement(environmentOf(viewer)).postgres;
    const s = schema ?? own?.schema ?? 'public';
    if (isPlatformSchema(s) || (own && s !== own.schema) || (await this.hidden(viewer)).schemas.has(s)) {
      throw new NotFoundError(`schema '${s}' does not exist`).coded(MetadataErrorCode.SchemaNotFound);
    }
    return s;
  }

  /**
   * Multi-tenant mode: the places of every tenant `api-key-mappings` names, unless the viewer acts in a
   * tenant (its confinement already limits it) or holds full access.
   */
  private async hidden(viewer: Viewer): Promise<Hidden> {
    const operator = this.config.environment;
    if (!this.config.auth.multiTenant || environmentOf(viewer) !== operator || fullAccess(viewer)) {
      return { schemas: new Set(), mongoDatabases: new Set() };
    }
    const mappings = (await this.secrets.readSystem(operator, TENANT_MAPPINGS_SECRET)) ?? {};
    const tenants = [...new Set(Object.values(mappings))].filter((t) => t !== operator);
    return { schemas: new Set(tenants.map(tenantSchema)), mongoDatabases: new Set(tenants) };
  }

  private confinement(environment: string): Confinement {
    return confinementOf(this.config, environment);
  }
}

function environmentOf(viewer: Viewer): string {
  return typeof viewer === 'string' ? viewer : viewer.environment;
}

function fullAccess(viewer: Viewer): boolean {
  return typeof viewer !== 'string' && viewer.fullAccess;
}
