import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { MetadataErrorCode, MetadataService } from '@tapyard/metadata';
import { Requires, ScopeResolver } from '../auth/access-rule';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { ApiErrors } from '../http/api-errors.decorator';
import { Access } from '@tapyard/auth';
import {
  ColumnDto,
  ColumnsQueryDto,
  DatabaseQueryDto,
  MongoCollectionsQueryDto,
  TablesQueryDto,
} from './metadata.dto';

const NAMES = { schema: { type: 'array', items: { type: 'string' } } };

/** `metadata:read:database=<db>` scopes discovery to databases; without `database` it is the platform's. */
const postgresDatabase: ScopeResolver = async (req, refs) => {
  const db =
    typeof req.query.database === 'string'
      ? req.query.database
      : refs.get<TapyardConfig>(CONFIG, { strict: false }).database.name;
  return [
    {
      fields: { database: db },
      hiddenMessage: `PostgreSQL database '${db}' does not exist`,
      hiddenCode: MetadataErrorCode.DatabaseNotFound,
    },
  ];
};

/**
 * Discovery of the data stores. A tenant (multi-tenant mode) sees only its own confinement, the
 * places its pipelines may load into; everything else answers 404 as if missing.
 */
@ApiTags('metadata')
@Controller('metadata')
export class MetadataController {
  constructor(private readonly metadata: MetadataService) {}

  @Get('postgres/databases')
  @Requires('metadata:read', 'filtered')
  @ApiOperation({
    summary: 'PostgreSQL databases (templates and databases refusing connections left out)',
    description: 'A tenant sees only the platform database, where its schema t_<tenant> lives.',
  })
  @ApiOkResponse(NAMES)
  async pgDatabases(@RequestAccess() access: Access): Promise<string[]> {
    return access.filter(
      await this.metadata.postgresDatabases(access.viewer),
      'read',
      'metadata',
      (database) => ({
        database,
      }),
    );
  }

  @Get('postgres/schemas')
  @Requires('metadata:read', postgresDatabase)
  @ApiOperation({
    summary:
      'Schemas of a database, without information_schema, pg_* and Tapyard’s own (tapyard, tapyard_meta)',
    description:
      'A tenant sees only its own schema t_<tenant> (once a load created it); in multi-tenant mode an operator key ' +
      'sees the tenants’ schemas only with full access (`*:*`).',
  })
  @ApiOkResponse(NAMES)
  @ApiErrors({ 404: 'No such database' })
  pgSchemas(@RequestAccess() access: Access, @Query() q: DatabaseQueryDto): Promise<string[]> {
    return this.metadata.postgresSchemas(access.viewer, q.database);
  }

  @Get('postgres/tables')
  @Requires('metadata:read', postgresDatabase)
  @ApiOperation({
    summary: 'Tables of a schema; vectorOnly=true: only those with an `embedding` column',
    description:
      'A schema the caller may not see (Tapyard’s own, another tenant’s, a tenant’s for an operator key without `*:*`) is 404.',
  })
  @ApiOkResponse(NAMES)
  @ApiErrors({ 404: 'No such database or schema' })
  pgTables(@RequestAccess() access: Access, @Query() q: TablesQueryDto): Promise<string[]> {
    return this.metadata.postgresTables(access.viewer, q.database, q.schema, q.vectorOnly ?? false);
  }

  @Get('postgres/columns')
  @Requires('metadata:read', postgresDatabase)
  @ApiOperation({ summary: 'Columns of a table with their PostgreSQL types' })
  @ApiOkResponse({ type: [ColumnDto] })
  @ApiErrors({ 404: 'No such database or table' })
  pgColumns(@RequestAccess() access: Access, @Query() q: ColumnsQueryDto): Promise<ColumnDto[]> {
    return this.metadata.postgresColumns(access.viewer, q.database, q.schema, q.table);
  }

  @Get('mongodb/databases')
  @Requires('metadata:read', 'filtered')
  @ApiOperation({
    summary:
      'MongoDB databases, without admin, config, local and Tapyard’s internal one (503 when not configured)',
    description: 'A tenant sees only its own database, named like the tenant.',
  })
  @ApiOkResponse(NAMES)
  async mongoDatabases(@RequestAccess() access: Access): Promise<string[]> {
    return access.filter(
      await this.metadata.mongoDatabases(access.viewer),
      'read',
      'metadata',
      (database) => ({
        database,
      }),
    );
  }

  @Get('mongodb/collections')
  @Requires('metadata:read', 'filtered')
  @ApiOperation({ summary: 'Collections of a database, or of all as `<database>.<collection>`' })
  @ApiOkResponse(NAMES)
  async mongoCollections(
    @RequestAccess() access: Access,
    @Query() q: MongoCollectionsQueryDto,
  ): Promise<string[]> {
    if (q.database !== undefined) {
      access.assertVisible(
        'read',
        'metadata',
        { database: q.database },
        `MongoDB database '${q.database}' does not exist`,
        MetadataErrorCode.DatabaseNotFound,
      );
      return this.metadata.mongoCollections(access.viewer, q.database);
    }
    return access.filter(await this.metadata.mongoCollections(access.viewer), 'read', 'metadata', (name) => ({
      database: name.slice(0, name.indexOf('.')),
    }));
  }

  @Get('qdrant/collections')
  @Requires('metadata:read')
  @ApiOperation({ summary: 'Qdrant collections; [] when Qdrant is not configured' })
  @ApiOkResponse(NAMES)
  qdrant(@RequestEnvironment() env: string): Promise<string[]> {
    return this.metadata.vectorContainers(env, 'qdrant');
  }

  @Get('weaviate/classes')
  @Requires('metadata:read')
  @ApiOperation({ summary: 'Weaviate classes; [] when Weaviate is not configured' })
  @ApiOkResponse(NAMES)
  weaviate(@RequestEnvironment() env: string): Promise<string[]> {
    return this.metadata.vectorContainers(env, 'weaviate');
  }

  @Get('milvus/collections')
  @Requires('metadata:read')
  @ApiOperation({ summary: 'Milvus collections; [] when Milvus is not configured' })
  @ApiOkResponse(NAMES)
  milvus(@RequestEnvironment() env: string): Promise<string[]> {
    return this.metadata.vectorContainers(env, 'milvus');
  }

  @Get('chroma/collections')
  @Requires('metadata:read')
  @ApiOperation({ summary: 'Chroma collections; [] when Chroma is not configured' })
  @ApiOkResponse(NAMES)
  chroma(@RequestEnvironment() env: string): Promise<string[]> {
    return this.metadata.vectorContainers(env, 'chroma');
  }
}
