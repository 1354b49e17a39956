import { Inject, Injectable } from '@nestjs/common';
import { PoolClient } from 'pg';
import { CONFIG, ServiceUnavailableError, TapyardConfig, ValidationError, errorMessage } from '@tapyard/core';
import { PgPools } from '@tapyard/destinations';
import { isPlatformSchema } from '@tapyard/pipelines';
import { RelationRef } from './sql-safety';

export interface QueryRows {
  columns: string[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
}

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/**
 * Runs a checked read-only query as the query role (QUERY_ROLE, NOLOGIN, a member role of the
 * platform's): SELECT on exactly the tables queries have read, never on the platform's schemas, in a
 * READ ONLY transaction with a statement timeout, the row cap applied by a server-side cursor.
 */
@Injectable()
export class QueryRunner {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pools: PgPools,
  ) {}

  async run(
    database: string,
    schema: string,
    sql: string,
    tables: RelationRef[],
    maxRows: number,
  ): Promise<QueryRows> {
    const pool = this.pools.get(database);
    await this.grant(database, schema, tables);
    const client = await pool.connect();
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.floor(this.config.query.timeoutMs)}`);
      // Built-ins first: a function or operator of the caller's schema never shadows one of pg_catalog.
      await client.query(`SET LOCAL search_path = pg_catalog, ${ident(schema)}`);
      await client.query(`SET LOCAL ROLE ${ident(this.config.query.role)}`);
      await client.query(`DECLARE tapyard_nl NO SCROLL CURSOR FOR ${sql}`);
      const res = await client.query({
        text: `FETCH FORWARD ${maxRows + 1} FROM tapyard_nl`,
        rowMode: 'array',
      });
      const rows = res.rows as unknown[][];
      const truncated = rows.length > maxRows;
      return {
        columns: res.fields.map((f) => f.name),
        rows: truncated ? rows.slice(0, maxRows) : rows,
        rowCount: Math.min(rows.length, maxRows),
        truncated,
      };
    } catch (err) {
      throw queryError(err, this.config.query.timeoutMs);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  /** SELECT on the tables the query reads, granted once and kept (the role never gets anything else). */
  private async grant(database: string, schema: string, tables: RelationRef[]): Promise<void> {
    const role = this.config.query.role;
    // Whatever a caller of this class passes, the role never gets anything of the platform's own.
    for (const s of [schema, ...tables.map((t) => t.schema ?? schema)]) {
      if (isPlatformSchema(s) || s !== schema) {
        throw new ValidationError(
          `the query may read tables of schema '${schema}' only, and never a platform schema`,
        );
      }
    }
    const client: PoolClient = await this.pools.get(database).connect();
    try {
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      if (exists.rowCount === 0) {
        throw new ServiceUnavailableError(
          'postgres',
          `the query role '${role}' does not exist; scripts/services creates it (see README, "Natural-language SQL")`,
        );
      }
      const missing: string[] = [];
      for (const t of tables) {
        const name = `${ident(t.schema ?? schema)}.${ident(t.name)}`;
        const has = await client.query<{ ok: boolean }>(
          `SELECT has_schema_privilege($1, $2, 'USAGE') AND has_table_privilege($1, $3, 'SELECT') AS ok`,
          [role, t.schema ?? schema, name],
        );
        if (!has.rows[0]?.ok) missing.push(name);
      }
      if (missing.length === 0) return;
      await client.query('BEGIN');
      // Concurrent GRANTs on one object fail ("tuple concurrently updated"): one at a time.
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('tapyard.query-grants'))`);
      await client.query(`GRANT USAGE ON SCHEMA ${ident(schema)} TO ${ident(role)}`);
      for (const name of missing) await client.query(`GRANT SELECT ON ${name} TO ${ident(role)}`);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (err instanceof ServiceUnavailableError) throw err;
      const code = (err as { code?: string }).code;
      if (code === '42501') {
        throw new ValidationError(
          `the platform cannot give read access to a table of schema '${schema}' (it does not own it)`,
        );
      }
      throw err;
    } finally {
      client.release();
    }
  }
}

function queryError(err: unknown, timeoutMs: number): Error {
  const code = (err as { code?: string }).code;
  if (code === '57014')
    return new ValidationError(
      `the query ran longer than ${timeoutMs} ms (QUERY_TIMEOUT_MS) and was cancelled`,
    );
  if (code === '42501')
    return new ValidationError(`the query reads something it may not: ${errorMessage(err).slice(0, 200)}`);
  if (code && /^(42|22|2B|0A|21|23|25)/.test(code)) {
    return new ValidationError(`the query failed: ${errorMessage(err).slice(0, 300)}`);
  }
  return err instanceof Error ? err : new Error(String(err));
}
