import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { MetadataErrorCode } from '@tapyard/metadata';
import { AnswerResult, AnswerService, NlQueryResult, NlQueryService } from '@tapyard/nl-query';
import { Requires, ScopeResolver } from '../auth/access-rule';
import { RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { ApiErrors } from '../http/api-errors.decorator';
import { AnswerDto, AnswerResultDto, NlQueryDto, NlQueryResultDto } from './query.dto';

/** `search:query:database=<db>` scopes natural-language SQL to databases. */
const queryDatabase: ScopeResolver = async (req, refs) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const db =
    typeof body.database === 'string'
      ? body.database
      : refs.get<TapyardConfig>(CONFIG, { strict: false }).database.name;
  return [
    {
      fields: { database: db },
      hiddenMessage: `PostgreSQL database '${db}' does not exist`,
      hiddenCode: MetadataErrorCode.DatabaseNotFound,
    },
  ];
};

@ApiTags('search')
@Controller()
export class QueryController {
  constructor(
    private readonly nl: NlQueryService,
    private readonly answers: AnswerService,
  ) {}

  @Post('query/postgres')
  @HttpCode(200)
  @Requires('search:query', queryDatabase)
  @ApiOperation({
    summary: 'Natural-language SQL: the model writes one read-only query, the platform checks and runs it',
    description:
      'The model sees the tables and columns of one schema the caller may read, with a few sample values from columns ' +
      "whose names do not look sensitive (never the platform schemas). Its SQL is parsed with PostgreSQL's own parser " +
      'and refused (400, saying why) unless it is exactly one SELECT / WITH … SELECT / VALUES without data-modifying ' +
      'CTEs, SELECT … INTO, locking clauses or functions outside an allow-list of pure ones, reading only tables of ' +
      'that schema; every table name is then written qualified with that schema, so no name resolves to a catalog ' +
      'relation. It runs in a READ ONLY transaction as a query role holding SELECT on the tables queries read and ' +
      "nothing else (the operator environment's QUERY_ROLE; each tenant environment a role of its own), on a " +
      'connection pool of its own (QUERY_POOL_SIZE; 429 when it stays busy), with statement_timeout = QUERY_TIMEOUT_MS, ' +
      'work_mem = QUERY_WORK_MEM, the row cap applied by a server-side cursor and the result capped at ' +
      'QUERY_MAX_RESULT_BYTES by the server (`truncated` says it cut; 400 when even the first row is larger). `sql` ' +
      'is the statement that ran. Taps call it with their run key (SERVICE_PLATFORM_HOST/PORT).',
  })
  @ApiOkResponse({ type: NlQueryResultDto })
  @ApiErrors(502, {
    400: 'Unsafe SQL (the reason), a query error or timeout, a first row over QUERY_MAX_RESULT_BYTES',
    429: 'Every connection for queries (QUERY_POOL_SIZE) stayed busy',
    404: 'A database or schema the caller may not see',
    503: "No model provider (secret 'ai'), or no query role (see scripts/services)",
  })
  query(
    @RequestEnvironment() env: string,
    @Body() body: NlQueryDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<NlQueryResult> {
    return this.nl.ask(env, body, signal);
  }

  @Post('ai/answer')
  @HttpCode(200)
  @Requires('search:query', 'none')
  @ApiOperation({
    summary: 'Answer a question from given passages only, with citations',
    description:
      'The model is told to answer only from the passages and to say it does not know otherwise; `citations` keeps ' +
      'only `source` values that were given. Typically called with the results of POST /search/{store}.',
  })
  @ApiOkResponse({ type: AnswerResultDto })
  @ApiErrors({ 503: "No model provider (secret 'ai')" })
  answer(
    @RequestEnvironment() env: string,
    @Body() body: AnswerDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<AnswerResult> {
    return this.answers.answer(env, body, signal);
  }
}
