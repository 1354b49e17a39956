import { Inject, Injectable } from '@nestjs/common';
import { AiService, head } from '@tapyard/ai';
import { CONFIG, TapyardConfig, quoteIdent } from '@tapyard/core';
import { MetadataService } from '@tapyard/metadata';
import { confinementOf } from '@tapyard/pipelines';
import { looksSensitive } from '@tapyard/profiling';
import { QueryRunner } from './query-runner';
import { UnsafeSqlError, checkReadOnlySql, qualifyRelations } from './sql-safety';

export interface NlQueryInput {
  question: string;
  database?: string;
  schema?: string;
  /** A statement to run instead of asking the model: it passes the same checks as a written one. */
  sql?: string;
  execute?: boolean;
  maxRows?: number;
}

export interface NlQueryResult {
  sql: string;
  columns: string[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  explanation: string;
}

const SQL_SCHEMA = {
  type: 'object',
  required: ['sql', 'explanation'],
  properties: { sql: { type: 'string', minLength: 1 }, explanation: { type: 'string' } },
};

/** Columns whose values never go to the model as samples (names only). */
const MAX_TABLES = 40;
const MAX_SAMPLED_TABLES = 20;
const SAMPLES = 3;

/**
 * Natural-language SQL: the model writes one query from the schema of what the caller may read;
 * the platform decides whether it runs (PostgreSQL's parser, an allow-list, the caller's tables only),
 * names every table in the caller's schema and runs it as a role that can only read those tables.
 */
@Injectable()
export class NlQueryService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly ai: AiService,
    private readonly metadata: MetadataService,
    private readonly runner: QueryRunner,
  ) {}

  async ask(env: string, input: NlQueryInput, signal?: AbortSignal): Promise<NlQueryResult> {
    const database = input.database ?? this.config.database.name;
    const schema = input.schema ?? confinementOf(this.config, env).postgres?.schema ?? 'public';
    // Both answer 404 for what the caller may not see (platform schemas, other tenants).
    const tables = (await this.metadata.postgresTables(env, input.database, schema)).slice(0, MAX_TABLES);
    const answer =
      input.sql === undefined
        ? await this.write(env, input, database, schema, tables, signal)
        : { sql: input.sql, explanation: 'The statement given, run as it was reviewed.' };
    const written = answer.sql.trim().replace(/;\s*$/, '');
    const relations = await checkReadOnlySql(written);
    const known = new Set(tables);
    for (const r of relations) {
      if ((r.schema !== null && r.schema !== schema) || !known.has(r.name)) {
        throw new UnsafeSqlError(
          `it reads ${r.schema ? `${r.schema}.` : ''}${r.name}, which is not a table of schema '${schema}' you may query`,
        );
      }
    }
    // What runs names every table in the schema: the server never resolves a name the check accepted
    // to anything else (a table of the caller's called pg_stats is not the catalog's).
    const sql = await qualifyRelations(written, schema);
    const base = { sql, explanation: answer.explanation.trim() };
    if (input.execute === false) return { ...base, columns: [], rows: [], rowCount: 0, truncated: false };
    const rows = await this.runner.run(env, database, schema, sql, relations, input.maxRows ?? 100);
    return { ...base, ...rows };
  }

  /** The model's statement for the question, from the schema of what the caller may read. */
  private async write(
    env: string,
    input: NlQueryInput,
    database: string,
    schema: string,
    tables: string[],
    signal?: AbortSignal,
  ): Promise<{ sql: string; explanation: string }> {
    const model = await this.ai.model(env, 'sql');
    const context = await this.describe(env, input.database, database, schema, tables);
    return model.json<{ sql: string; explanation: string }>({
      name: 'sql_query',
      schema: SQL_SCHEMA,
      system:
        'You write exactly one read-only PostgreSQL query (SELECT, WITH … SELECT or VALUES) that answers the ' +
        `question from these tables of schema "${schema}" (the search path; write table names unqualified). Use only ` +
        'built-in functions (aggregates, math, string, date, JSON). No writes, no DDL, no locking clauses, no ' +
        'semicolons. Answer with one JSON object: {"sql": string, "explanation": string (one or two sentences)}.\n\n' +
        head(context, model.inputChars(4000)),
      messages: [{ role: 'user', content: head(input.question, 4000) }],
      signal,
    });
  }

  /** Tables, columns and types, with a few sample values from columns that do not look sensitive. */
  private async describe(
    env: string,
    requested: string | undefined,
    database: string,
    schema: string,
    tables: string[],
  ): Promise<string> {
    const lines: string[] = [];
    for (const [i, table] of tables.entries()) {
      const columns = await this.metadata.postgresColumns(env, requested, schema, table);
      const samples = i < MAX_SAMPLED_TABLES ? await this.samples(database, schema, table, columns) : {};
      lines.push(`TABLE ${table} (`);
      for (const c of columns) {
        const s = samples[c.name];
        lines.push(
          `  ${c.name} ${c.type}${s && s.length ? `  -- e.g. ${s.map((v) => JSON.stringify(v)).join(', ')}` : ''}`,
        );
      }
      lines.push(')');
    }
    return lines.length ? lines.join('\n') : `(schema "${schema}" has no tables)`;
  }

  private async samples(
    database: string,
    schema: string,
    table: string,
    columns: { name: string; type: string }[],
  ): Promise<Record<string, string[]>> {
    const picked = columns
      .filter((c) => !looksSensitive(c.name) && !/bytea|json|vector|\[\]/.test(c.type))
      .slice(0, 12);
    if (picked.length === 0) return {};
    const client = await this.runner.connect(database);
    try {
      await client.query('BEGIN READ ONLY');
      await client.query('SET LOCAL statement_timeout = 2000');
      const res = await client.query<Record<string, string | null>>(
        `SELECT ${picked.map((c, i) => `left(${quoteIdent(c.name)}::text, 40) AS c${i}`).join(', ')} FROM ${quoteIdent(schema)}.${quoteIdent(table)} LIMIT ${SAMPLES * 3}`,
      );
      const out: Record<string, string[]> = {};
      picked.forEach((c, i) => {
        out[c.name] = [
          ...new Set(res.rows.map((r) => r[`c${i}`]).filter((v): v is string => v !== null)),
        ].slice(0, SAMPLES);
      });
      return out;
    } catch {
      return {}; // samples are a help, not a requirement
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }
}
