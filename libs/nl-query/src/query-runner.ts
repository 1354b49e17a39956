import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool, PoolClient } from 'pg';
import {
  CONFIG,
  RateLimitedError,
  ServiceUnavailableError,
  TapyardConfig,
  ValidationError,
  errorMessage,
  quoteIdent,
} from '@tapyard/core';
import { PgPools, databasePool } from '@tapyard/destinations';
import { confinementOf, isPlatformSchema } from '@tapyard/pipelines';
import { QueryErrorCode } from './query-errors';
import { RelationRef } from './sql-safety';

export interface QueryRows {
  columns: string[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
}

/** Rows fetched per round trip at most; the byte cap holds whatever their size. */
const BATCH = 100;
/** In the error the byte guard raises, so that it is told from the query's own errors. */
const OVER_CAP = 'tapyard-result-bytes';

/**
 * Runs a checked, schema-qualified read-only query as a query role: QUERY_ROLE for the operator
 * environment, a role of its own for each tenant environment (`tapyard.query_role`, see
 * scripts/services), each holding SELECT on exactly the tables its queries have read, never on the
 * platform's schemas. Catalog views such as pg_stats show only what the role may read, so one
 * tenant's role sees nothing of another's. The query runs on a pool of its own (QUERY_POOL_SIZE: user
 * queries never take the platform's connections), in a READ ONLY transaction with a statement timeout
 * and work_mem, the row cap applied by a server-side cursor and the byte cap by the server itself.
 */
@Injectable()
export class QueryRunner implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly platform: PgPools,
  ) {}

  /** The pool of user queries (and of anything a question makes read from user tables) for a database. */
  pool(database: string): Pool {
    return databasePool(this.pools, this.config.database.destinationUrl, database, {
      max: this.config.query.poolSize,
      // A query waits for a connection at most as long as one may run.
      connectionTimeoutMillis: this.config.query.timeoutMs,
      application_name: 'tapyard-query',
    });
  }

  /** A connection of the user-query pool; 429 when every one stayed busy for a whole query timeout. */
  async connect(database: string): Promise<PoolClient> {
    try {
      return await this.pool(database).connect();
    } catch (err) {
      if (/timeout exceeded when trying to connect/i.test(errorMessage(err))) {
        throw new RateLimitedError(
          `every connection for queries (QUERY_POOL_SIZE=${this.config.query.poolSize}) is busy; try again`,
          Math.ceil(this.config.query.timeoutMs / 1000),
        ).coded(QueryErrorCode.PoolBusy);
      }
      throw err;
    }
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.end()));
    this.pools.clear();
  }

  async run(
    env: string,
    database: string,
    schema: string,
    sql: string,
    tables: RelationRef[],
    maxRows: number,
  ): Promise<QueryRows> {
    const role = await this.grant(env, database, schema, tables);
    const cap = this.config.query.maxResultBytes;
    const client = await this.connect(database);
    const rows: unknown[][] = [];
    let columns: string[] = [];
    let truncated = false;
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.floor(this.config.query.timeoutMs)}`);
      await client.query(`SET LOCAL work_mem = ${Math.floor(this.config.query.workMemKb)}`);
      // Every table name is qualified already; only built-ins are looked up, so nothing of the
      // caller's schema shadows one and no name reaches a catalog relation by the path.
      await client.query('SET LOCAL search_path = pg_catalog');
      await client.query(`SET LOCAL ROLE ${quoteIdent(role)}`);
      // The server measures each row (as text) before it reaches the running total, and fails the row
      // that is over the cap alone or would take the result over it: no such row is ever sent, however
      // large its values. OFFSET 0 keeps the measure from being computed twice.
      const over = (bytes: string): string => `('${OVER_CAP} ' || ${bytes}::text)::int IS NULL`;
      await client.query(
        `DECLARE tapyard_nl NO SCROLL CURSOR FOR SELECT w.* FROM (` +
          `SELECT s.*, sum(s.tapyard_size) OVER (ROWS UNBOUNDED PRECEDING) AS tapyard_bytes FROM (` +
          // On lines of its own: a trailing line comment of the query ends there.
          `SELECT q.*, octet_length(q::text) AS tapyard_size FROM (\n${sql}\n) q OFFSET 0) s ` +
          `WHERE CASE WHEN s.tapyard_size <= ${cap} THEN true ELSE ${over('s.tapyard_size')} END) w ` +
          `WHERE CASE WHEN w.tapyard_bytes <= ${cap} THEN true ELSE ${over('w.tapyard_bytes')} END`,
      );
      let used = 0;
      while (rows.length <= maxRows) {
        // Batches shrink as the result nears the cap: the batch that crosses it fails whole.
        const average = rows.length > 0 ? used / rows.length : cap;
        const size = Math.max(
          1,
          Math.min(BATCH, maxRows + 1 - rows.length, Math.floor((cap - used) / Math.max(1, average) / 2)),
        );
        let res;
        try {
          res = await client.query({ text: `FETCH FORWARD ${size} FROM tapyard_nl`, rowMode: 'array' });
        } catch (err) {
          if (!isOverCap(err)) throw err;
          if (rows.length === 0) {
            throw new ValidationError(
              `the first row of the result is larger than ${cap} bytes (QUERY_MAX_RESULT_BYTES); select less`,
            ).coded(QueryErrorCode.ResultTooLarge);
          }
          truncated = true;
          break;
        }
        columns = res.fields.slice(0, -2).map((f) => f.name);
        for (const r of res.rows as unknown[][]) {
          used = Number(r[r.length - 1]);
          rows.push(r.slice(0, -2));
        }
        if (res.rows.length < size || rows.length > maxRows) break;
      }
      if (rows.length > maxRows) {
        truncated = true;
        rows.length = maxRows;
      }
      return { columns, rows, rowCount: rows.length, truncated };
    } catch (err) {
      throw queryError(err, this.config.query.timeoutMs);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  /**
   * SELECT on the tables the query reads, granted once and kept, to the environment's query role (the
   * role never gets anything else). Returns the role.
   */
  private async grant(env: string, database: string, schema: string, tables: RelationRef[]): Promise<string> {
    // Whatever a caller of this class passes, the role never gets anything of the platform's own.
    for (const s of [schema, ...tables.map((t) => t.schema ?? schema)]) {
      if (isPlatformSchema(s) || s !== schema) {
        throw new ValidationError(
          `the query may read tables of schema '${schema}' only, and never a platform schema`,
        ).coded(QueryErrorCode.SchemaRefused);
      }
    }
    const tenant = confinementOf(this.config, env).tenant;
    const client: PoolClient = await this.platform.get(database).connect();
    try {
      // Concurrent GRANTs on one object fail ("tuple concurrently updated"), and so do concurrent
      // CREATE ROLEs of one name: one at a time.
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('tapyard.query-grants'))`);
      const role = tenant ? await this.tenantRole(client, env) : await this.operatorRole(client);
      const missing: string[] = [];
      for (const t of tables) {
        const name = `${quoteIdent(t.schema ?? schema)}.${quoteIdent(t.name)}`;
        const has = await client.query<{ ok: boolean }>(
          `SELECT has_schema_privilege($1, $2, 'USAGE') AND has_table_privilege($1, $3, 'SELECT') AS ok`,
          [role, t.schema ?? schema, name],
        );
        if (!has.rows[0]?.ok) missing.push(name);
      }
      if (missing.length > 0) {
        await client.query(`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(role)}`);
        for (const name of missing) await client.query(`GRANT SELECT ON ${name} TO ${quoteIdent(role)}`);
      }
      await client.query('COMMIT');
      return role;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (err instanceof ServiceUnavailableError) throw err;
      const code = (err as { code?: string }).code;
      if (code === '42501') {
        throw new ValidationError(
          `the platform cannot give read access to a table of schema '${schema}' (it does not own it)`,
        ).coded(QueryErrorCode.SchemaRefused);
      }
      throw err;
    } finally {
      client.release();
    }
  }

  private async operatorRole(client: PoolClient): Promise<string> {
    const role = this.config.query.role;
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    if (exists.rowCount === 0) {
      throw new ServiceUnavailableError(
        'postgres',
        `the query role '${role}' does not exist; scripts/services creates it (see docs/query.md)`,
      ).coded(QueryErrorCode.NotInstalled);
    }
    return role;
  }

  /**
   * The tenant environment's own query role. The platform's role may not create roles (CREATEROLE
   * would let it grant itself far more), so a function the database's superuser installed creates it:
   * NOLOGIN, named from the environment, granted to the platform's role and nothing else.
   */
  private async tenantRole(client: PoolClient, env: string): Promise<string> {
    const installed = await client.query(
      `SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'tapyard' AND p.proname = 'query_role'`,
    );
    if (installed.rowCount === 0) {
      throw new ServiceUnavailableError(
        'postgres',
        'the function tapyard.query_role that gives each tenant its own query role is not installed; scripts/services installs it (see docs/query.md)',
      ).coded(QueryErrorCode.NotInstalled);
    }
    const res = await client.query<{ role: string }>('SELECT tapyard.query_role($1) AS role', [env]);
    return res.rows[0].role;
  }
}

function isOverCap(err: unknown): boolean {
  return (err as { code?: string }).code === '22P02' && errorMessage(err).includes(OVER_CAP);
}

function queryError(err: unknown, timeoutMs: number): Error {
  if (err instanceof ValidationError) return err;
  const code = (err as { code?: string }).code;
  if (code === '57014')
    return new ValidationError(
      `the query ran longer than ${timeoutMs} ms (QUERY_TIMEOUT_MS) and was cancelled`,
    ).coded(QueryErrorCode.Timeout);
  if (code === '42501')
    return new ValidationError(
      `the query reads something it may not: ${errorMessage(err).slice(0, 200)}`,
    ).coded(QueryErrorCode.NotPermitted);
  if (code && /^(42|22|2B|0A|21|23|25)/.test(code)) {
    return new ValidationError(`the query failed: ${errorMessage(err).slice(0, 300)}`).coded(
      QueryErrorCode.Failed,
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}
