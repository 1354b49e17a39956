import { Inject, Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, IntArg, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { MetadataErrorCode } from '@tapyard/metadata';
import { NlQueryService } from './nl-query.service';

export class SqlQueryArgs {
  @TextArg('the question')
  question!: string;

  @TextArg('database (optional)', { optional: true })
  database?: string;

  @TextArg('schema (optional)', { optional: true })
  schema?: string;

  @IntArg('row cap (default 100)', { min: 0, max: 10_000, optional: true })
  maxRows?: number;
}

@Injectable()
@AssistantToolSet()
export class NlQueryTools implements ToolSet {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly nl: NlQueryService,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'sql_query',
        effect: 'read',
        description:
          'Answer a question with one read-only SQL query over a PostgreSQL schema the user may read; returns rows.',
        args: SqlQueryArgs,
        run: async (ctx, { question, database, schema, maxRows }) => {
          const target = database ?? this.config.database.name;
          ctx.gate.check('sql_query', 'search:query', [
            {
              fields: { database: target },
              hiddenMessage: `PostgreSQL database '${target}' does not exist`,
              hiddenCode: MetadataErrorCode.DatabaseNotFound,
            },
          ]);
          // 0, like absent, is the default cap.
          return this.nl.ask(ctx.env, { question, database, schema, maxRows: maxRows || 100 }, ctx.signal);
        },
      }),
    ];
  }
}
