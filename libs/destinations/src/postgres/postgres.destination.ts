import { Inject, Injectable } from '@nestjs/common';
import { once } from 'node:events';
import { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import {
  CONFIG,
  ServiceUnavailableError,
  TapyardConfig,
  ValidationError,
  errorMessage,
  isConnectionFailure,
  quoteIdent,
} from '@tapyard/core';
import { createHash } from 'node:crypto';
import { FieldType, LOAD_ID_COLUMN, PipelineDefinition, SchemaField } from '@tapyard/model';
import { escapeCopyText } from './copy-text';
import {
  CsvChunkPayload,
  Destination,
  DropOutcome,
  LoadResult,
  LoadTarget,
  Payload,
  RejectedRow,
  databaseOf,
  primaryKeyOf,
  writeModeOf,
} from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import {
  CreatedTable,
  TableLocation,
  creationComment,
  dropTables,
  qualified,
  rejectsTable,
  tableExists,
} from './created-tables';
import { PgPools } from './pg-pools';
import { DestinationErrorCode } from '../destination-errors';

/** The PostgreSQL column type of each schema type. */
export const PG_TYPES: Record<FieldType, string> = {
  boolean: 'boolean',
  int: 'integer',
  bigint: 'bigint',
  float: 'real',
  double: 'double precision',
  string: 'text',
  date: 'date',
  timestamp: 'timestamptz',
  decimal: 'numeric',
};

/** A column's PostgreSQL type: a decimal's declared precision and scale become numeric(p,s). */
export function pgType(c: SchemaField): string {
  if (c.type === 'decimal' && c.precision !== undefined) return `numeric(${c.precision},${c.scale ?? 0})`;
  return PG_TYPES[c.type];
}

// Any constant works as long as every Tapyard process uses the same one.
const DDL_LOCK_ID = 7_421_002;

/** PostgreSQL's limit on columns per table. */
export const PG_MAX_COLUMNS = 1600;

/**
 * The session setting a load sets to its pipeline token, read by the load-id column's default: COPY
 * fills a column it is not given from its default, so the id costs the fast path nothing.
 */
const LOAD_ID_SETTING = 'tapyard.load_id';
// A setting once set in a session reads '' after its transaction, never NULL again: rows written
// later on that pooled connection by a load without an id must not get ''.
const LOAD_ID_DEFAULT = `nullif(current_setting('${LOAD_ID_SETTING}', true), '')`;
const LOAD_ID_DDL = `${quoteIdent(LOAD_ID_COLUMN)} text DEFAULT ${LOAD_ID_DEFAULT}`;
const UNIQUE_VIOLATION = '23505';

/** The unique index a merge upserts through: one per table and key, named within 63 bytes. */
function keyIndex(schema: string, table: string, key: string[]): string {
  return `tapyard_key_${createHash('sha256')
    .update(JSON.stringify([schema, table, key]))
    .digest('hex')
    .slice(0, 24)}`;
}

/**
 * Loads with COPY FROM STDIN inside one transaction per job, together with a ledger row keyed by
 * the pipeline token (schema `tapyard_meta` of the target database). A worker that dies mid-load
 * leaves nothing (the transaction rolls back); a redelivered job that already committed finds its
 * ledger row and writes nothing. Rejected rows go to `<table>_rejects` in the same transaction.
 * Every write mode stays inside that one transaction, so exactly-once holds for each: `replace`
 * deletes the table's rows and copies the job's (readers keep seeing the old rows until COMMIT, and
 * are never blocked); `merge` copies into a temporary table, then upserts from it through the unique
 * index on the key.
 */
@Injectable()
export class PostgresDestination implements Destination {
  readonly name = 'postgres';
  readonly processName = 'PostgresLoader' as const;
  readonly capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    maxBatchRows: null,
    csvPassThrough: true,
    retractable: true,
  };
  readonly encoder = 'copy-text';

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pools: PgPools,
    private readonly ownership: CreatedObjects,
  ) {}

  selects(destination: PipelineDefinition['destination']): boolean {
    return destination.database !== undefined && destination.database.usePostgres !== false;
  }

  describe(destination: PipelineDefinition['destination']): string {
    const { dbName, schema, table } = databaseOf(destination);
    return `${dbName}.${schema}.${table}`;
  }

  /** The platform database answers (each target database is checked when its load connects). */
  async probe(): Promise<void> {
    await this.withClient(this.config.database.name, (client) => client.query('SELECT 1'));
  }

  async committed(target: LoadTarget): Promise<LoadResult | null> {
    const { dbName, schema, table } = databaseOf(target.destination);
    return this.withClient(dbName, async (client) => {
      const ledger = await client.query(`SELECT to_regclass('tapyard_meta.loads') IS NOT NULL AS present`);
      if (!(ledger.rows[0] as { present: boolean }).present) return null;
      const prev = await client.query(
        `SELECT rows_loaded, rows_rejected FROM tapyard_meta.loads WHERE pipeline_token = $1 AND rows_loaded IS NOT NULL`,
        [target.pipelineToken],
      );
      const row = prev.rows[0] as { rows_loaded: string; rows_rejected: string } | undefined;
      if (!row) return null;
      return {
        loaded: Number(row.rows_loaded),
        rejected: Number(row.rows_rejected),
        alreadyLoaded: true,
        location: `${dbName}.${schema}.${table}`,
        rejectsLocation: `${dbName}.${schema}.${rejectsTable(table)}`,
      };
    });
  }

  locations(destination: PipelineDefinition['destination']): TableLocation[] {
    const { dbName, schema, table } = databaseOf(destination);
    const at = { store: 'postgres' as const, database: dbName, schema };
    return [
      { ...at, name: table },
      { ...at, name: rejectsTable(table) },
    ];
  }

  async prepare(target: LoadTarget): Promise<void> {
    if (target.columns.length > PG_MAX_COLUMNS) {
      throw new ValidationError(
        `PostgreSQL tables hold at most ${PG_MAX_COLUMNS} columns; this load has ${target.columns.length}`,
      ).coded(DestinationErrorCode.LoadRefused);
    }
    const [data, rejects] = this.locations(target.destination);
    const s = quoteIdent(data.schema);
    const t = qualified(data);
    const cols = [
      ...target.columns.map((c) => `${quoteIdent(c.name)} ${pgType(c)}`),
      ...(target.loadId ? [LOAD_ID_DDL] : []),
    ].join(', ');
    await this.withClient(data.database, async (client) => {
      // The common case, a table loaded before: one query finds nothing to create, so a job does not
      // queue behind every other job's DDL lock (with many small jobs that lock was their pace).
      if (await ready(client, target, data, rejects)) return;
      // Outside the load transaction, but serialised: concurrent `CREATE … IF NOT EXISTS` can still
      // collide in the catalogs, and ALTER TABLE would wait on running loads, so only missing columns
      // are added. The lock also makes "missing, so this pipeline creates it" true until COMMIT.
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK_ID]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        await client.query(`CREATE SCHEMA IF NOT EXISTS tapyard_meta`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
           rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
        );
        const missing: TableLocation[] = [];
        for (const l of [data, rejects]) if (!(await tableExists(client, l))) missing.push(l);
        const build = async (created: Map<TableLocation, string>) => {
          await client.query(`CREATE TABLE IF NOT EXISTS ${t} (${cols})`);
          const existing = await client.query(
            `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
            [data.schema, data.name],
          );
          const have = new Set(existing.rows.map((r: { column_name: string }) => r.column_name));
          const missingCols = target.columns.filter((c) => !have.has(c.name));
          const adds = missingCols.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${pgType(c)}`);
          if (target.loadId && !have.has(LOAD_ID_COLUMN))
            adds.push(`ADD COLUMN IF NOT EXISTS ${LOAD_ID_DDL}`);
          if (adds.length > 0) await client.query(`ALTER TABLE ${t} ${adds.join(', ')}`);
          if (writeModeOf(target) === 'merge') await createKeyIndex(client, data, primaryKeyOf(target));
          await client.query(
            `CREATE TABLE IF NOT EXISTS ${qualified(rejects)} (pipeline_token text NOT NULL,
             line bigint, stage text, reason text, raw text, rejected_at timestamptz NOT NULL DEFAULT now())`,
          );
          for (const [l, creationId] of created) {
            const comment = creationComment({ ...target, creationId });
            await client.query(`COMMENT ON TABLE ${qualified(l)} IS ${client.escapeLiteral(comment)}`);
          }
          await client.query('COMMIT');
        };
        if (missing.length === 0) await build(new Map());
        else {
          // Recorded before the tables exist, committed only after they do: a crash in between
          // leaves a table without a record (never dropped), never a record of someone else's table.
          await this.ownership.claim(target.environment, target.pipeline, async (record) => {
            const created = new Map<TableLocation, string>();
            for (const l of missing) created.set(l, await record(l));
            await build(created);
          });
        }
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const { dbName, schema, table } = databaseOf(target.destination);
    const location = `${dbName}.${schema}.${table}`;
    const rejectsLocation = `${dbName}.${schema}.${rejectsTable(table)}`;
    return this.withClient(dbName, async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL TimeZone = 'UTC'`);
        if (target.loadId) {
          await client.query(`SELECT set_config('${LOAD_ID_SETTING}', $1, true)`, [target.pipelineToken]);
        }
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
        const loaded = await this.write(client, target, payloads, progress);
        const rejected = await copyChunks(
          client,
          `COPY ${quoteIdent(schema)}.${quoteIdent(rejectsTable(table))} (pipeline_token, line, stage, reason, raw) FROM STDIN (FORMAT text)`,
          counted(rejectLines(target.pipelineToken, rejects())),
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

  /** Writes the job's rows as its write mode says, inside the load's transaction; returns the rows copied. */
  private async write(
    client: PoolClient,
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    progress: (rowsSoFar: number) => void,
  ): Promise<number> {
    const { schema, table } = databaseOf(target.destination);
    const t = `${quoteIdent(schema)}.${quoteIdent(table)}`;
    const columns = target.columns.map((c) => c.name);
    const mode = writeModeOf(target);
    if (mode === 'append') return copyPayloads(client, t, columns, payloads, progress);
    if (mode === 'replace') {
      // Serialises writers of the table (two replaces, or a replace and an append, never interleave)
      // while readers go on reading the old rows: ACCESS SHARE does not conflict with this mode.
      await client.query(`LOCK TABLE ${t} IN SHARE ROW EXCLUSIVE MODE`);
      await client.query('SAVEPOINT tapyard_replace');
      await client.query(`DELETE FROM ${t}`);
      const copied = await copyPayloads(client, t, columns, payloads, progress);
      // A job that loads no row (every row rejected, or none at all) fails: it replaces nothing.
      if (copied === 0) await client.query('ROLLBACK TO SAVEPOINT tapyard_replace');
      return copied;
    }
    const key = primaryKeyOf(target);
    // Dropped at COMMIT or ROLLBACK, so a pooled connection never keeps one. The sequence column
    // keeps the file's order: of rows sharing a key, the last one wins.
    await client.query(`CREATE TEMP TABLE tapyard_merge (LIKE ${t} INCLUDING DEFAULTS) ON COMMIT DROP`);
    await client.query(
      `ALTER TABLE tapyard_merge ADD COLUMN tapyard_seq bigint GENERATED ALWAYS AS IDENTITY`,
    );
    const copied = await copyPayloads(client, 'tapyard_merge', columns, payloads, progress);
    const written = [...columns, ...(target.loadId ? [LOAD_ID_COLUMN] : [])].map(quoteIdent);
    const keys = key.map(quoteIdent).join(', ');
    const updated = written.filter((c) => !key.map(quoteIdent).includes(c));
    await client.query(
      `INSERT INTO ${t} (${written.join(', ')})
       SELECT ${written.join(', ')} FROM (
         SELECT DISTINCT ON (${keys}) * FROM tapyard_merge ORDER BY ${keys}, tapyard_seq DESC) latest
       ON CONFLICT (${keys}) DO ${
         updated.length > 0
           ? `UPDATE SET ${updated.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`
           : 'NOTHING'
       }`,
    );
    return copied;
  }

  /**
   * Deletes the rows the job loaded (by their load id) and the rows it rejected, in one transaction.
   * A table without the load-id column holds no rows of a job that carries one.
   */
  async removeRows(target: LoadTarget): Promise<number> {
    const [data, rejects] = this.locations(target.destination);
    return this.withClient(data.database, async (client) => {
      await client.query('BEGIN');
      try {
        let removed = 0;
        const { rows } = await client.query<{ present: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM information_schema.columns
             WHERE table_schema = $1 AND table_name = $2 AND column_name = $3) AS present`,
          [data.schema, data.name, LOAD_ID_COLUMN],
        );
        if (rows[0].present) {
          const res = await client.query(
            `DELETE FROM ${qualified(data)} WHERE ${quoteIdent(LOAD_ID_COLUMN)} = $1`,
            [target.pipelineToken],
          );
          removed = res.rowCount ?? 0;
        }
        if (await tableExists(client, rejects)) {
          await client.query(`DELETE FROM ${qualified(rejects)} WHERE pipeline_token = $1`, [
            target.pipelineToken,
          ]);
        }
        await client.query('COMMIT');
        return removed;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  /**
   * One transaction per database, so a pipeline's data and rejects tables go together or not at all
   * (see dropTables).
   */
  async drop(objects: CreatedObject[]): Promise<DropOutcome[]> {
    const tables = objects.filter((o): o is CreatedTable => o.store === 'postgres');
    const outcomes: DropOutcome[] = [];
    for (const database of new Set(tables.map((o) => o.database))) {
      const group = tables.filter((o) => o.database === database);
      outcomes.push(...(await this.withClient(database, (client) => dropTables(client, group))));
    }
    return outcomes;
  }

  private async withClient<T>(database: string, work: (c: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pools.get(database).connect();
    } catch (err) {
      throw new ServiceUnavailableError(
        'postgres',
        `cannot connect to PostgreSQL database '${database}': ${errorMessage(err)}`,
      ).coded(DestinationErrorCode.Unavailable);
    }
    // The pool listens for errors of idle clients only: without a listener of our own, a connection
    // lost while checked out is an unhandled 'error' event, which ends the worker process.
    let lost = false;
    const onError = () => {
      lost = true;
    };
    client.on('error', onError);
    try {
      return await work(client);
    } catch (err) {
      // Lost mid-load: the transaction rolled back with the connection, or committed together with
      // its ledger row, so running the load again is safe (the runner retries ServiceUnavailableError).
      if (lost || isConnectionFailure(err)) {
        throw new ServiceUnavailableError(
          'postgres',
          `PostgreSQL database '${database}' became unreachable: ${errorMessage(err)}`,
        ).coded(DestinationErrorCode.Unavailable);
      }
      throw err;
    } finally {
      client.release();
      // After release: the pool has put its own listener back by then.
      client.removeListener('error', onError);
    }
  }
}

/**
 * The unique index `merge` upserts through (NULLS NOT DISTINCT: a null key matches a null key, as
 * the merge's own DISTINCT ON treats it). Rows that already repeat the key make it impossible: the
 * job fails naming the key instead of merging into duplicates.
 */
async function createKeyIndex(client: PoolClient, table: TableLocation, key: string[]): Promise<void> {
  const name = keyIndex(table.schema, table.name, key);
  // Looked up first: CREATE INDEX locks the table even when the index exists, and would wait for
  // running loads while holding the DDL lock.
  if (await tableExists(client, { ...table, name })) return;
  try {
    await client.query(
      `CREATE UNIQUE INDEX ${quoteIdent(name)} ON ${qualified(table)} (${key.map(quoteIdent).join(', ')}) NULLS NOT DISTINCT`,
    );
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) {
      throw new ValidationError(
        `cannot merge into ${table.database}.${table.schema}.${table.name} on (${key.join(', ')}): ` +
          `rows already there repeat that key (${errorMessage(err)})`,
      ).coded(DestinationErrorCode.LoadRefused);
    }
    throw err;
  }
}

/**
 * Loads the payloads in order, one COPY per run of payloads of one kind: COPY text from the encoder,
 * or clean CSV chunks of the file as they are (one COPY per line ending and column list, which
 * PostgreSQL fixes per COPY). Returns the rows loaded.
 */
async function copyPayloads(
  client: PoolClient,
  table: string,
  columns: string[],
  payloads: AsyncIterable<Payload>,
  progress: (rows: number) => void,
): Promise<number> {
  const textColumns = columns.map(quoteIdent).join(', ');
  const it = payloads[Symbol.asyncIterator]();
  let next = await it.next();
  let total = 0;
  while (!next.done) {
    const first = next.value;
    const key = copyKey(first);
    const sql =
      typeof first === 'string'
        ? `COPY ${table} (${textColumns}) FROM STDIN (FORMAT text)`
        : `COPY ${table} (${csvChunk(first).columns.map(quoteIdent).join(', ')}) FROM STDIN (${csvChunk(first).copyOptions})`;
    const run = async function* (): AsyncGenerator<CopyData> {
      while (!next.done && copyKey(next.value) === key) {
        const p = next.value;
        yield typeof p === 'string'
          ? { data: p, rows: countLines(p) }
          : { data: csvChunk(p).bytes, rows: csvChunk(p).rows };
        next = await it.next();
      }
    };
    const before = total;
    total += await copyChunks(client, sql, run(), (rows) => progress(before + rows));
  }
  return total;
}

/** Payloads that share one COPY statement have the same key. */
function copyKey(p: Payload): string {
  if (typeof p === 'string') return 'text';
  const c = csvChunk(p);
  return `csv:${c.eol ?? 'any'}:${c.copyOptions}:${c.columns.join(',')}`;
}

function csvChunk(p: Payload): CsvChunkPayload {
  if (typeof p === 'string' || p instanceof Uint8Array || !('kind' in p) || p.kind !== 'csv') {
    throw new Error('the PostgreSQL loader takes COPY text or clean CSV chunks');
  }
  return p;
}

interface CopyData {
  data: string | Uint8Array;
  rows: number;
}

/** Streams COPY data with backpressure; returns the number of rows COPY reports. */
async function copyChunks(
  client: PoolClient,
  sql: string,
  chunks: AsyncIterable<CopyData>,
  progress: (rows: number) => void,
): Promise<number> {
  const stream = client.query(copyFrom(sql));
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => undefined);
  let rows = 0;
  try {
    for await (const chunk of chunks) {
      if (!stream.write(chunk.data)) await Promise.race([once(stream, 'drain'), failed]);
      rows += chunk.rows;
      progress(rows);
    }
  } catch (err) {
    // Abort the COPY (CopyFail) so the connection can roll back; otherwise it waits forever.
    stream.destroy(err instanceof Error ? err : new Error(String(err)));
    await Promise.race([once(stream, 'close'), failed]).catch(() => undefined);
    throw err;
  }
  stream.end();
  await Promise.race([once(stream, 'finish'), failed]);
  return Number(stream.rowCount ?? rows);
}

function countLines(chunk: string): number {
  let n = 0;
  for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', i + 1)) n++;
  return n;
}

async function* counted(texts: AsyncIterable<string>): AsyncIterable<CopyData> {
  for await (const data of texts) yield { data, rows: countLines(data) };
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

/**
 * Whether a load needs no DDL: the ledger table, the data table with every column of the load (and
 * the load-id column when the pipeline has one) and the rejects table all exist. A merge also needs
 * its key's unique index: it takes the locked path, which creates it once.
 */
async function ready(
  client: PoolClient,
  target: LoadTarget,
  data: TableLocation,
  rejects: TableLocation,
): Promise<boolean> {
  if (writeModeOf(target) === 'merge') return false;
  const { rows } = await client.query<{ meta: boolean; data: boolean; rejects: boolean; columns: string[] }>(
    `SELECT to_regclass('tapyard_meta.loads') IS NOT NULL AS meta, to_regclass($1) IS NOT NULL AS data,
            to_regclass($2) IS NOT NULL AS rejects,
            ARRAY(SELECT column_name::text FROM information_schema.columns
                   WHERE table_schema = $3 AND table_name = $4) AS columns`,
    [qualified(data), qualified(rejects), data.schema, data.name],
  );
  const found = rows[0];
  if (!found.meta || !found.data || !found.rejects) return false;
  const have = new Set(found.columns);
  return target.columns.every((c) => have.has(c.name)) && (!target.loadId || have.has(LOAD_ID_COLUMN));
}
