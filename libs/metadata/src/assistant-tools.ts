import { Inject, Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, EnumArg, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import { MetadataService } from './metadata.service';
import { MetadataErrorCode } from './metadata-errors';

const KINDS = [
  'databases',
  'schemas',
  'tables',
  'columns',
  'mongodb_databases',
  'mongodb_collections',
] as const;

export class DiscoverMetadataArgs {
  @EnumArg(KINDS)
  kind!: (typeof KINDS)[number];

  @TextArg('database', { optional: true })
  database?: string;

  @TextArg('schema', { optional: true })
  schema?: string;

  @TextArg('table', { optional: true })
  table?: string;
}

@Injectable()
@AssistantToolSet()
export class MetadataTools implements ToolSet {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly metadata: MetadataService,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'discover_metadata',
        effect: 'read',
        description:
          'What exists in the data stores: kind = databases | schemas | tables | columns (PostgreSQL, with database/schema/table), mongodb_databases, mongodb_collections.',
        args: DiscoverMetadataArgs,
        run: async (ctx, { kind, database: db, schema, table }) => {
          if (kind === 'databases' || kind === 'mongodb_databases' || kind === 'mongodb_collections') {
            const access = ctx.gate.check('discover_metadata', 'metadata:read', 'filtered');
            if (kind === 'databases') {
              return access.filter(
                await this.metadata.postgresDatabases(access.viewer),
                'read',
                'metadata',
                (d) => ({ database: d }),
              );
            }
            if (kind === 'mongodb_databases') {
              return access.filter(
                await this.metadata.mongoDatabases(access.viewer),
                'read',
                'metadata',
                (d) => ({ database: d }),
              );
            }
            if (db) {
              access.assertVisible(
                'read',
                'metadata',
                { database: db },
                `MongoDB database '${db}' does not exist`,
                MetadataErrorCode.DatabaseNotFound,
              );
              return this.metadata.mongoCollections(access.viewer, db);
            }
            // All databases' collections: only those of databases the caller may read (as the route does).
            return access.filter(
              await this.metadata.mongoCollections(access.viewer),
              'read',
              'metadata',
              (name) => ({ database: name.slice(0, name.indexOf('.')) }),
            );
          }
          const database = db ?? this.config.database.name;
          const { viewer } = ctx.gate.check('discover_metadata', 'metadata:read', [
            {
              fields: { database },
              hiddenMessage: `PostgreSQL database '${database}' does not exist`,
              hiddenCode: MetadataErrorCode.DatabaseNotFound,
            },
          ]);
          if (kind === 'schemas') return this.metadata.postgresSchemas(viewer, db);
          if (kind === 'tables') return this.metadata.postgresTables(viewer, db, schema);
          if (table === undefined)
            throw new ValidationError("argument 'table' must be a non-empty string").coded(
              MetadataErrorCode.InvalidRequest,
            );
          return this.metadata.postgresColumns(viewer, db, schema, table);
        },
      }),
    ];
  }
}
