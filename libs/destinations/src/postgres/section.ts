import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, Matches } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import {
  DataLocation,
  DestinationSection,
  IDENTIFIER,
  SCHEMA_NAME,
  assertLocationAllowed,
  checkTableName,
  describeLocation,
} from '@tapyard/pipelines';
import { DatabaseDestination } from '@tapyard/model';

export class DatabaseDestinationDto {
  @ApiPropertyOptional({
    example: 'tapyard',
    description:
      'PostgreSQL or MongoDB database. Default: the platform database (PostgreSQL and MongoDB alike); for a ' +
      "tenant (multi-tenant mode) the tenant's own: the platform database for PostgreSQL, the database named " +
      'like the tenant for MongoDB, the only ones it may name. MongoDB admin, config, local and tapyard_internal ' +
      'are refused.',
  })
  @OptionalNotNull()
  @Matches(/^[A-Za-z_][A-Za-z0-9_-]{0,62}$/, { message: 'dbName must be a database name' })
  dbName?: string;

  @ApiPropertyOptional({
    example: 'public',
    description:
      "PostgreSQL schema (ignored for MongoDB). Default: public; for a tenant its own schema t_<tenant>, the only one it may name. The platform's schemas tapyard and tapyard_meta and the server's (pg_*, information_schema) are refused with 400.",
  })
  @OptionalNotNull()
  // '-' is allowed because tenant schemas carry the tenant name (t_acme-eu); names are always quoted.
  @Matches(SCHEMA_NAME, { message: 'schema must be a schema name: letters, digits, _ and -' })
  schema?: string;

  @ApiProperty({
    example: 'sales',
    description:
      'Table or collection (at most 63 bytes). Rejected rows go to a companion <table>_rejects (shortened with a ' +
      'hash when that would pass 63 bytes), so names ending in _rejects are refused.',
  })
  @Matches(IDENTIFIER, { message: 'table must be a table name: letters, digits and _' })
  table!: string;

  @ApiPropertyOptional({ example: true, default: true, description: 'false selects the document database' })
  @OptionalNotNull()
  @IsBoolean()
  usePostgres?: boolean;
}

/**
 * The spec's `database` section: PostgreSQL, or MongoDB when `usePostgres` is false (`dbName` is the
 * MongoDB database, `table` the collection). Read by the postgres and mongodb plug-ins.
 */
export const databaseSection: DestinationSection<DatabaseDestinationDto, DatabaseDestination> = {
  key: 'database',
  dto: DatabaseDestinationDto,
  description: 'A PostgreSQL table, or with usePostgres false a MongoDB collection',
  complete: (db, defaults) => ({
    dbName: db.dbName ?? (db.usePostgres === false ? defaults.mongoDatabase : defaults.postgresDatabase),
    schema: db.schema ?? defaults.schema,
    table: db.table,
    usePostgres: db.usePostgres ?? true,
  }),
  confine(config, environment, db) {
    const location = databaseLocation(db);
    assertLocationAllowed(config, environment, location);
    checkTableName(describeLocation(location), db.table);
  },
  locations: (db) => [databaseLocation(db)],
  loadedBy: (db) => (db.usePostgres === false ? 'mongodb' : 'postgres'),
};

export function databaseLocation(db: DatabaseDestination): DataLocation {
  return db.usePostgres === false
    ? { store: 'mongodb', database: db.dbName, name: db.table }
    : { store: 'postgres', database: db.dbName, schema: db.schema, name: db.table };
}
