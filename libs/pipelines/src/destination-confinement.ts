import { DomainCode, PG_MAX_IDENTIFIER_BYTES, TapyardConfig, ValidationError } from '@tapyard/core';
import { BUCKET_PURPOSES, bucketName } from '@tapyard/objectstore';
import { PipelineErrorCode, VectorStoreName } from '@tapyard/model';

/**
 * PostgreSQL schemas a pipeline never loads into, in any database: the platform's metadata (`tapyard`)
 * and load ledgers (`tapyard_meta`), and the server's own catalogs. Every `pg_` schema is the server's.
 */
export const PLATFORM_SCHEMAS: readonly string[] = ['tapyard', 'tapyard_meta'];
export const SYSTEM_SCHEMAS: readonly string[] = ['information_schema', 'pg_catalog', 'pg_toast'];
/** MongoDB databases that are never user data: the server's own and the platform's internal one. */
export const RESERVED_MONGO_DATABASES: readonly string[] = ['admin', 'config', 'local', 'tapyard_internal'];
/** Suffix of the rejects table or collection beside each data table or collection. */
export const REJECTS_SUFFIX = '_rejects';

/**
 * Where an environment's pipelines may load. The operator environment (TAPYARD_ENV; the only one of a
 * single-tenant install) is confined only away from the platform's own places. A tenant environment
 * (multi-tenant mode) is confined to places derived from its name: schema `t_<tenant>` of the
 * platform's relational database, the MongoDB database named like the tenant, its own output bucket.
 */
export interface Confinement {
  tenant: boolean;
  /** A tenant's only PostgreSQL database and schema; null for the operator (any but the platform's). */
  postgres: { database: string; schema: string } | null;
  /** A tenant's only MongoDB database; null for the operator. */
  mongoDatabase: string | null;
  /** The environment's output bucket, the object-store default. */
  outputBucket: string;
}

/** The schema holding a tenant's relational data: `t_` and the tenant environment name as it is. */
export function tenantSchema(tenant: string): string {
  return `t_${tenant}`;
}

export function confinementOf(config: TapyardConfig, environment: string): Confinement {
  const tenant = environment !== config.environment;
  return {
    tenant,
    postgres: tenant ? { database: config.database.name, schema: tenantSchema(environment) } : null,
    mongoDatabase: tenant ? environment : null,
    outputBucket: bucketName(environment, 'output'),
  };
}

/** A destination outside the caller's confinement, or a platform-owned place: 400 naming it. */
export class DestinationNotAllowedError extends ValidationError {
  override domainCode: DomainCode = PipelineErrorCode.DestinationRefused;
  constructor(
    readonly destination: string,
    reason: string,
  ) {
    super(`destination ${destination} is not allowed: ${reason}`, [
      { field: 'destination', problem: `${destination} ${reason}` },
    ]);
  }
}

export function isPlatformSchema(schema: string): boolean {
  const s = schema.toLowerCase();
  // `pg_` covers pg_catalog, pg_toast and the per-session pg_temp_N / pg_toast_temp_N schemas.
  return PLATFORM_SCHEMAS.includes(s) || SYSTEM_SCHEMAS.includes(s) || s.startsWith('pg_');
}

export function isReservedMongoDatabase(database: string): boolean {
  return RESERVED_MONGO_DATABASES.includes(database.toLowerCase());
}

/** A table, collection or folder of files a pipeline loads into (and may have created). */
export type DataLocation =
  | { store: 'postgres'; database: string; schema: string; name: string }
  | { store: 'mongodb'; database: string; name: string }
  | { store: 'objectstore'; bucket: string; prefix: string }
  | { store: 'vectorstore'; vectorStore: VectorStoreName; container: string };

/**
 * A place as saves describe it, and as `tapyard.pipelines.locations` records it: a change to these
 * texts (or to a section's `locations`) needs a migration marking every row's places stale
 * (`locations_version = NULL`), or saves would miss pipelines recorded in the old form.
 */
export function describeLocation(l: DataLocation): string {
  switch (l.store) {
    case 'postgres':
      return `PostgreSQL table ${l.database}.${l.schema}.${l.name}`;
    case 'mongodb':
      return `MongoDB collection ${l.database}.${l.name}`;
    case 'objectstore':
      return `files under s3://${l.bucket}/${l.prefix}`;
    case 'vectorstore':
      return `${l.vectorStore} container ${l.container}`;
  }
}

/** The place rules alone (no naming rules): also applied to what a pipeline recorded as created. */
export function assertLocationAllowed(config: TapyardConfig, environment: string, l: DataLocation): void {
  const c = confinementOf(config, environment);
  const where = describeLocation(l);
  switch (l.store) {
    case 'postgres':
      if (isPlatformSchema(l.schema)) {
        throw new DestinationNotAllowedError(where, `schema '${l.schema}' belongs to the platform`);
      }
      if (c.postgres && (l.database !== c.postgres.database || l.schema !== c.postgres.schema)) {
        throw new DestinationNotAllowedError(
          where,
          `this tenant's tables live in schema '${c.postgres.schema}' of database '${c.postgres.database}'`,
        );
      }
      return;
    case 'mongodb':
      if (isReservedMongoDatabase(l.database)) {
        throw new DestinationNotAllowedError(where, `database '${l.database}' is reserved`);
      }
      if (l.name.startsWith('system.') || l.name.startsWith('_tapyard')) {
        throw new DestinationNotAllowedError(where, `collection '${l.name}' is reserved`);
      }
      if (c.mongoDatabase !== null && l.database !== c.mongoDatabase) {
        throw new DestinationNotAllowedError(
          where,
          `this tenant's collections live in MongoDB database '${c.mongoDatabase}'`,
        );
      }
      return;
    case 'vectorstore': {
      if (l.vectorStore !== 'pgvector') return;
      const refused = pgvectorSchemaRefusal(config, environment, l.container.split('.')[0]);
      if (refused !== null) throw new DestinationNotAllowedError(where, refused);
      return;
    }
    case 'objectstore':
      if (l.bucket === c.outputBucket) return;
      if (c.tenant) {
        throw new DestinationNotAllowedError(
          `bucket '${l.bucket}'`,
          `this tenant writes files only to its bucket '${c.outputBucket}'`,
        );
      }
      if (isEnvironmentBucket(l.bucket)) {
        throw new DestinationNotAllowedError(
          `bucket '${l.bucket}'`,
          `names ending in -raw, -config, -taps, -staged or -output are environments' own buckets ` +
            `(this environment's output bucket is '${c.outputBucket}')`,
        );
      }
  }
}

/**
 * Why pgvector tables of `environment` may not live in `schema`, or null when they may: never a
 * platform schema; a tenant's only in its own `t_<tenant>`. Loading and search both ask, so a search
 * reaches exactly the tables loading could have filled.
 */
export function pgvectorSchemaRefusal(
  config: TapyardConfig,
  environment: string,
  schema: string,
): string | null {
  if (isPlatformSchema(schema)) return `schema '${schema}' belongs to the platform`;
  const c = confinementOf(config, environment);
  if (c.postgres && schema !== c.postgres.schema)
    return `this tenant's pgvector tables live in schema '${c.postgres.schema}'`;
  return null;
}

/**
 * Named like a bucket the platform keeps for some environment (`<env>-raw`, `-config`, `-taps`,
 * `-staged`, `-output`): writing there could overwrite or, on delete, remove platform objects
 * (tap scripts, validation schemas, drops the raw poller would ingest) or another environment's files.
 */
function isEnvironmentBucket(bucket: string): boolean {
  return BUCKET_PURPOSES.some((p) => bucket.endsWith(`-${p}`));
}

/**
 * A data table or collection name must leave room for its rejects companion: names ending in
 * `_rejects` are the companions' own, so no pipeline's data can land in another's rejects.
 */
export function checkTableName(where: string, table: string): void {
  if (table.endsWith(REJECTS_SUFFIX)) {
    throw new DestinationNotAllowedError(
      where,
      `names ending in '${REJECTS_SUFFIX}' are kept for rejected rows`,
    );
  }
  if (Buffer.byteLength(table) > PG_MAX_IDENTIFIER_BYTES) {
    throw new DestinationNotAllowedError(where, `the name is longer than ${PG_MAX_IDENTIFIER_BYTES} bytes`);
  }
}

/** Defaults a destination gets when the configuration leaves them out, per environment. */
export interface DestinationDefaults {
  postgresDatabase: string;
  schema: string;
  mongoDatabase: string;
}

export function destinationDefaults(config: TapyardConfig, environment: string): DestinationDefaults {
  const c = confinementOf(config, environment);
  return c.postgres
    ? {
        postgresDatabase: c.postgres.database,
        schema: c.postgres.schema,
        mongoDatabase: c.mongoDatabase ?? environment,
      }
    : // The operator keeps what it always had: the platform database for both kinds, schema public.
      { postgresDatabase: config.database.name, schema: 'public', mongoDatabase: config.database.name };
}
