import { Injectable } from '@nestjs/common';
import { once } from 'node:events';
import { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ServiceUnavailableError, ValidationError, errorMessage } from '@tapyard/core';
import { DatabaseDestination, FieldType, PipelineDefinition } from '@tapyard/pipelines';
import { escapeCopyText } from '../copy-text';
import { Destination, LoadResult, LoadTarget, RejectedRow, databaseOf } from '../destination';
import { quoteIdent, rejectsTable } from './created-tables';
import { PgPools } from './pg-pools';

const PG_TYPES: Record<FieldType, string> = {
  boolean: 'boolean',
  int: 'integer',
  bigint: 'bigint',
  float: 'real',
  double: 'double precision',
  string: 'text',
  date: 'date',
  timestamp: 'timestamptz',
};

// Any constant works as long as every Tapyard process uses the same one.
const DDL_LOCK_ID = 7_421_002;

/** PostgreSQL's limit on columns per table. */
export const PG_MAX_COLUMNS = 1600;

/**
 * Loads with COPY FROM STDIN inside one transaction per job, together with a ledger row keyed by
 * the pipeline token (schema `tapyard_meta` of the target database). A worker that dies mid-load
 * leaves nothing (the transaction rolls back); a redelivered job that already committed finds its
 * ledger row and writes nothing. Rejected rows go to `<table>_rejects` in the same transaction.
 */
@Injectable()
export class PostgresDestination implements Destination {
  readonly name = 'postgres';
  readonly processName = 'PostgresLoader' as const;
  readonly capabilities = { exactlyOnce: true, schemaEvolution: true };

  constructor(private readonly pools: PgPools) {}

  async prepare(target: LoadTarget): Promise<void> {
    if (target.columns.length > PG_MAX_COLUMNS) {
      throw new ValidationError(
        `PostgreSQL tables hold at most ${PG_MAX_COLUMNS} columns; this load has ${target.columns.length}`,
      );
    }
    const { schema, table } = databaseOf(target.destination);
    const s = quoteIdent(schema);
    const t = `${s}.${quoteIdent(table)}`;
    const cols = target.columns.map((c) => `${quoteIdent(c.name)} ${PG_TYPES[c.type]}`).join(', ');
    await this.withClient(databaseOf(target.destination), async (client) => {
      // Outside the load transaction, but serialised: concurrent `CREATE … IF NOT EXISTS` can still
      // collide in the catalogs, and ALTER TABLE would wait on running loads, so only missing columns
      // are added.
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK_ID]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        await client.query(`CREATE SCHEMA IF NOT EXISTS tapyard_meta`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
           rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
        );
        await client.query(`CREATE TABLE IF NOT EXISTS ${t} (${cols})`);
        const existing = await client.query(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
          [schema, table],
        );
        const have = new Set(existing.rows.map((r: { column_name: string }) => r.column_name));
        const missing = target.columns.filter((c) => !have.has(c.name));
        if (missing.length > 0) {
          await client.query(
            `ALTER TABLE ${t} ${missing.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${PG_TYPES[c.type]}`).join(', ')}`,
          );
        }
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${s}.${quoteIdent(rejectsTable(table))} (pipeline_token text NOT NULL,
           line bigint, stage text, reason text, raw text, rejected_at timestamptz NOT NULL DEFAULT now())`,
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  async load(
    target: LoadTarget,
    chunks: AsyncIterable<string>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const { dbName, schema, table } = databaseOf(target.destination);
    const location = `${dbName}.${schema}.${table}`;
    const rejectsLocation = `${dbName}.${schema}.${rejectsTable(table)}`;
    return this.withClient(databaseOf(target.destination), async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL TimeZone = 'UTC'`);
        const claimed = await client.query(
          `INSERT INTO tapyard_meta.loads (pipeline_token, target) VALUES ($1, $2)
           ON CONFLICT (pipeline_token) DO NOTHING RETURNING pipeline_token`,
          [target.pipelineToken, location],
        );
        if (claimed.rowCount === 0) {
          await client.query('ROLLBACK');
          const prev = await client.query(
            `SELECT rows_loaded, rows_rejected FROM tapyard_meta.loads WHERE pipeline_token = $1`,
            [target.pipelineToken],
          );
          const row = prev.rows[0] as { rows_loaded: string; rows_rejected: string } | undefined;
          return {
            loaded: Number(row?.rows_loaded ?? 0),
            rejected: Number(row?.rows_rejected ?? 0),
            alreadyLoaded: true,
            location,
            rejectsLocation,
          };
        }
        const columns = target.columns.map((c) => quoteIdent(c.name)).join(', ');
        const loaded = await copyChunks(
          client,
          `COPY ${quoteIdent(schema)}.${quoteIdent(table)} (${columns}) FROM STDIN (FORMAT text)`,
          chunks,
          progress,
        );
        const rejected = await copyChunks(
          client,
          `COPY ${quoteIdent(schema)}.${quoteIdent(rejectsTable(table))} (pipeline_token, line, stage, reason, raw) FROM STDIN (FORMAT text)`,
          rejectLines(target.pipelineToken, rejects()),
          () => undefined,
        );
        await client.query(
          `UPDATE tapyard_meta.loads SET rows_loaded = $2, rows_rejected = $3 WHERE pipeline_token = $1`,
          [target.pipelineToken, loaded, rejected],
        );
        await client.query('COMMIT');
        return { loaded, rejected, alreadyLoaded: false, location, rejectsLocation };
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  async drop(destination: PipelineDefinition['destination']): Promise<void> {
    const database = databaseOf(destination);
    await this.withClient(database, async (client) => {
      const s = quoteIdent(database.schema);
      await client.query(`DROP TABLE IF EXISTS ${s}.${quoteIdent(database.table)}`);
      await client.query(`DROP TABLE IF EXISTS ${s}.${quoteIdent(rejectsTable(database.table))}`);
    });
  }

  private async withClient<T>(db: DatabaseDestination, work: (c: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pools.get(db.dbName).connect();
    } catch (err) {
      throw new ServiceUnavailableError(
        'postgres',
        `cannot connect to PostgreSQL database '${db.dbName}': ${errorMessage(err)}`,
      );
    }
    try {
      return await work(client);
    } finally {
      client.release();
    }
  }
}

/** Streams COPY-text chunks with backpressure; returns the number of rows COPY reports. */
async function copyChunks(
  client: PoolClient,
  sql: string,
  chunks: AsyncIterable<string>,
  progress: (rows: number) => void,
): Promise<number> {
  const stream = client.query(copyFrom(sql));
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => undefined);
  let lines = 0;
  try {
    for await (const chunk of chunks) {
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), failed]);
      lines += countLines(chunk);
      progress(lines);
    }
  } catch (err) {
    // Abort the COPY (CopyFail) so the connection can roll back; otherwise it waits forever.
    stream.destroy(err instanceof Error ? err : new Error(String(err)));
    await Promise.race([once(stream, 'close'), failed]).catch(() => undefined);
    throw err;
  }
  stream.end();
  await Promise.race([once(stream, 'finish'), failed]);
  return Number(stream.rowCount ?? lines);
}

function countLines(chunk: string): number {
  let n = 0;
  for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', i + 1)) n++;
  return n;
}

async function* rejectLines(token: string, rejects: AsyncIterable<RejectedRow>): AsyncIterable<string> {
  let buf = '';
  for await (const r of rejects) {
    buf += `${escapeCopyText(token)}\t${r.line}\t${escapeCopyText(r.stage)}\t${escapeCopyText(r.reason)}\t${escapeCopyText(r.raw)}\n`;
    if (buf.length > 1 << 16) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}
