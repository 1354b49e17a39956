import { PoolClient } from 'pg';
import { createHash } from 'node:crypto';
import { ValidationError, errorMessage, quoteIdent } from '@tapyard/core';
import { FieldType, LOAD_ID_COLUMN, SchemaField } from '@tapyard/model';
import { LoadTarget, TargetShape, primaryKeyOf, writeModeOf } from '../destination';
import { CreatedObjects } from '../ownership/created-objects';
import {
  TableLocation,
  assertTablesClaimed,
  creationComment,
  qualified,
  tableExists,
} from './created-tables';
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
/** The first key of a table's own DDL lock (two keys: never the one-key locks above and elsewhere). */
const TABLE_LOCK_SPACE = 7_421_003;

/** PostgreSQL's limit on columns per table. */
export const PG_MAX_COLUMNS = 1600;

/**
 * The session setting a load sets to its pipeline token, read by the load-id column's default: COPY
 * fills a column it is not given from its default, so the id costs the wire nothing.
 */
export const LOAD_ID_SETTING = 'tapyard.load_id';
/**
 * The load-id column's default in tables created since Nov 2026: a uuid (16 bytes a row, not the token's
 * 37 as text) from a function without arguments declared IMMUTABLE, which PostgreSQL evaluates once when
 * it plans a statement, not once a row. A 1M-row narrow COPY took 1.5-1.8 s with it against 1.9-2.1 s
 * with the text default read per row (a table without the column: 1.6-1.9 s). The declaration is a
 * deliberate lie, safe because every statement that relies on the default is planned when it runs:
 * COPY always is, and a load's INSERTs are unnamed statements. A setting once set in a session reads ''
 * after its transaction, never NULL again, so '' is no id. BEGIN ATOMIC binds the body's operators and
 * functions when it is created: no search_path at run time can swap them.
 */
const LOAD_ID_FUNCTION = 'tapyard_meta.load_id';
const LOAD_ID_FUNCTION_DDL = `CREATE FUNCTION ${LOAD_ID_FUNCTION}() RETURNS uuid LANGUAGE sql IMMUTABLE PARALLEL SAFE
  BEGIN ATOMIC SELECT nullif(current_setting('${LOAD_ID_SETTING}', true), '')::uuid; END`;
const LOAD_ID_DDL = `${quoteIdent(LOAD_ID_COLUMN)} uuid DEFAULT ${LOAD_ID_FUNCTION}()`;
const UNIQUE_VIOLATION = '23505';

/**
 * The owners of what every load runs in a target database: the schema tapyard_meta, its ledger table
 * (whose triggers would fire on each load's claim) and the load-id function (each new table's default).
 * Each must be the loading role, a role it belongs to, or a superuser: a role with CREATE on the
 * database could otherwise make them first and run its own code as the loading role on every load.
 */
const META_OWNERS = `SELECT r.rolname, r.rolsuper OR pg_has_role(current_user, r.oid, 'USAGE') AS trusted
  FROM (SELECT nspowner AS owner FROM pg_namespace WHERE nspname = 'tapyard_meta'
        UNION ALL SELECT relowner FROM pg_class WHERE oid = to_regclass('tapyard_meta.loads')
        UNION ALL SELECT proowner FROM pg_proc WHERE oid = to_regprocedure('${LOAD_ID_FUNCTION}()')) o
  JOIN pg_roles r ON r.oid = o.owner`;

/**
 * Refuses a database whose tapyard_meta objects belong to another role (see META_OWNERS); answers how
 * many of them exist (the schema, the ledger, the function).
 */
export async function checkMetaOwners(client: PoolClient, database: string): Promise<number> {
  const { rows } = await client.query<{ rolname: string; trusted: boolean }>({
    name: 'tapyard-meta-owners',
    text: META_OWNERS,
  });
  const strangers = [...new Set(rows.filter((r) => !r.trusted).map((r) => r.rolname))];
  if (strangers.length > 0) {
    throw new ValidationError(
      `PostgreSQL database '${database}': the schema tapyard_meta, its ledger or its load-id function belongs to ` +
        `${strangers.map((r) => `role '${r}'`).join(', ')}, not to the role Tapyard loads as; Tapyard will not run ` +
        `another role's objects on every load (drop them, or ALTER … OWNER TO the loading role)`,
    ).coded(DestinationErrorCode.LoadRefused);
  }
  return rows.length;
}

/** The unique index a merge upserts through: one per table and key, named within 63 bytes. */
function keyIndex(schema: string, table: string, key: string[]): string {
  return `tapyard_key_${createHash('sha256')
    .update(JSON.stringify([schema, table, key]))
    .digest('hex')
    .slice(0, 24)}`;
}

/**
 * Creates what a load writes into that is missing: the schema, the ledger, the data table and its
 * columns (and the merge key's index), the rejects table. Tables this pipeline creates are recorded
 * as its own.
 */
export async function ensureTables(
  client: PoolClient,
  ownership: CreatedObjects,
  target: LoadTarget,
  data: TableLocation,
  rejects: TableLocation,
): Promise<TargetShape> {
  const s = quoteIdent(data.schema);
  const t = qualified(data);
  const cols = [
    ...target.columns.map((c) => `${quoteIdent(c.name)} ${pgType(c)}`),
    ...(target.loadId ? [LOAD_ID_DDL] : []),
  ].join(', ');
  // A pipeline saved by a scoped caller uses an existing table only when a pipeline created it: before
  // any write (a replace's TRUNCATE), on every load, and again under the lock below.
  await assertTablesClaimed(client, ownership, target, [data, rejects]);
  // The common case, a table loaded before: one query finds nothing to create, so a job does not
  // queue behind every other job's DDL lock (with many small jobs that lock was their pace).
  const found = await ready(client, target, data, rejects);
  if (found !== null) return found;
  // Outside the load transaction, but serialised: concurrent `CREATE … IF NOT EXISTS` of one name can
  // still collide in the catalogs, and ALTER TABLE would wait on running loads, so only missing
  // columns are added. What loads of every table share (the schema, the ledger, the load-id function)
  // is made under one lock, taken only while some of it is missing; a table and its rejects table
  // under locks of their own, so jobs creating different tables do not queue behind each other's DDL
  // (many new pipelines' first jobs at once). The locks also make "missing, so this pipeline creates
  // it" true until COMMIT. Always in this order: the shared lock, then the tables' in name order.
  await client.query('BEGIN');
  try {
    if (await sharedMissing(client, data, target.loadId === true)) {
      await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK_ID]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS tapyard_meta`);
      if (target.loadId) {
        // Created once and never replaced: another role's function would refuse CREATE OR REPLACE.
        const { rows: fn } = await client.query<{ found: boolean }>(
          `SELECT to_regprocedure('${LOAD_ID_FUNCTION}()') IS NOT NULL AS found`,
        );
        if (!fn[0].found) await client.query(LOAD_ID_FUNCTION_DDL);
      }
      await client.query(
        `CREATE TABLE IF NOT EXISTS tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
         rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
      );
    }
    await client.query(
      'SELECT pg_advisory_xact_lock($1, hashtext(k)) FROM unnest($2::text[]) AS k ORDER BY k',
      [TABLE_LOCK_SPACE, [...new Set([qualified(data), qualified(rejects)])].sort()],
    );
    // Made by another job while this one waited for the lock: nothing left to create.
    const made = await ready(client, target, data, rejects);
    if (made !== null) {
      await checkMetaOwners(client, data.database);
      await assertTablesClaimed(client, ownership, target, [data, rejects]);
      await client.query('COMMIT');
      return made;
    }
    // `IF NOT EXISTS` and the lookup above take what is there, whoever made it.
    await checkMetaOwners(client, data.database);
    const missing = await missingOf(client, [data, rejects]);
    // Made by someone else since the check above: the same rule for what is there now.
    await assertTablesClaimed(
      client,
      ownership,
      target,
      [data, rejects].filter((l) => !missing.includes(l)),
    );
    const build = async (created: Map<TableLocation, string>) => {
      // A table made here (missing under its lock) has every column of the load; one found is
      // given those it lacks.
      if (missing.includes(data)) await client.query(`CREATE TABLE ${t} (${cols})`);
      else {
        const { rows: existing } = await client.query<{ name: string }>(
          `SELECT attname::text AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
          [t],
        );
        const have = new Set(existing.map((r) => r.name));
        const missingCols = target.columns.filter((c) => !have.has(c.name));
        const adds = missingCols.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${pgType(c)}`);
        if (target.loadId && !have.has(LOAD_ID_COLUMN)) adds.push(`ADD COLUMN IF NOT EXISTS ${LOAD_ID_DDL}`);
        if (adds.length > 0) await client.query(`ALTER TABLE ${t} ${adds.join(', ')}`);
      }
      if (writeModeOf(target) === 'merge') await createKeyIndex(client, data, primaryKeyOf(target));
      // The rest in one message (no parameters: the simple protocol runs them in order, stopping at
      // the first error, which the catch below rolls back): some round trips fewer per first load.
      const statements = [
        ...(missing.includes(rejects)
          ? [
              `CREATE TABLE ${qualified(rejects)} (pipeline_token text NOT NULL, line bigint, stage text, ` +
                'reason text, raw text, rejected_at timestamptz NOT NULL DEFAULT now())',
            ]
          : []),
        ...[...created].map(
          ([l, creationId]) =>
            `COMMENT ON TABLE ${qualified(l)} IS ${client.escapeLiteral(creationComment({ ...target, creationId }))}`,
        ),
        'COMMIT',
      ];
      await client.query(statements.join(';\n'));
    };
    if (missing.length === 0) await build(new Map());
    else {
      // Recorded before the tables exist, committed only after they do: a crash in between
      // leaves a table without a record (never dropped), never a record of someone else's table.
      await ownership.claim(target.environment, target.pipeline, async (record) => {
        const created = new Map<TableLocation, string>();
        for (const l of missing) created.set(l, await record(l));
        await build(created);
      });
    }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  const { rows } = await client.query<{ name: string; type: string }>(
    `SELECT attname::text AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
    [t],
  );
  return { columnTypes: Object.fromEntries(rows.map((r) => [r.name, r.type])) };
}

/** Those of `locations` that do not exist, in one query. */
async function missingOf(client: PoolClient, locations: TableLocation[]): Promise<TableLocation[]> {
  const { rows } = await client.query<{ missing: boolean }>(
    `SELECT to_regclass(l) IS NULL AS missing FROM unnest($1::text[]) WITH ORDINALITY AS u (l, i) ORDER BY i`,
    [locations.map(qualified)],
  );
  return locations.filter((_, i) => rows[i].missing);
}

/**
 * Whether something loads of every table share is missing: the data table's schema, tapyard_meta and
 * its ledger, the load-id function (when the pipeline has the column).
 */
async function sharedMissing(client: PoolClient, data: TableLocation, loadId: boolean): Promise<boolean> {
  const { rows } = await client.query<{ missing: boolean }>(
    `SELECT to_regnamespace($1) IS NULL OR to_regclass('tapyard_meta.loads') IS NULL
       OR ($2 AND to_regprocedure('${LOAD_ID_FUNCTION}()') IS NULL) AS missing`,
    [quoteIdent(data.schema), loadId],
  );
  return rows[0].missing;
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
 * The data table's columns and their declared types when a load needs no DDL: the ledger table, the
 * data table with every column of the load (and the load-id column when the pipeline has one) and
 * the rejects table all exist; null otherwise. A merge also needs its key's unique index: it takes
 * the locked path, which creates it once.
 */
async function ready(
  client: PoolClient,
  target: LoadTarget,
  data: TableLocation,
  rejects: TableLocation,
): Promise<TargetShape | null> {
  if (writeModeOf(target) === 'merge') return null;
  const { rows } = await client.query<{
    meta: boolean;
    data: boolean;
    rejects: boolean;
    columns: string[];
    types: string[];
  }>({
    // Every job asks this: a named statement is planned once per connection, not per job (~0.12 ms
    // each), and it reads the catalog itself (planning information_schema.columns costs ~2 ms).
    name: 'tapyard-table-check',
    text: `SELECT to_regclass('tapyard_meta.loads') IS NOT NULL AS meta, to_regclass($1) IS NOT NULL AS data,
            to_regclass($2) IS NOT NULL AS rejects,
            ARRAY(SELECT attname::text FROM pg_attribute
                   WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum) AS columns,
            ARRAY(SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                   WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum) AS types`,
    values: [qualified(data), qualified(rejects)],
  });
  const found = rows[0];
  if (!found.meta || !found.data || !found.rejects) return null;
  const have = new Set(found.columns);
  const complete =
    target.columns.every((c) => have.has(c.name)) && (!target.loadId || have.has(LOAD_ID_COLUMN));
  return complete
    ? { columnTypes: Object.fromEntries(found.columns.map((c, k) => [c, found.types[k]])) }
    : null;
}
