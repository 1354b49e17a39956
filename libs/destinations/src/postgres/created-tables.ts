import { createHash } from 'node:crypto';
import { PoolClient } from 'pg';
import { ConflictError, PG_MAX_IDENTIFIER_BYTES, errorMessage, quoteIdent } from '@tapyard/core';
import { REJECTS_SUFFIX, describeLocation, locationUnclaimedError } from '@tapyard/pipelines';
import { DropOutcome, LoadTarget } from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import { DestinationErrorCode } from '../destination-errors';

/** How long a delete waits for a table another session uses (a running load, a reader's lock). */
const DROP_LOCK_TIMEOUT_MS = 5000;
const LOCK_NOT_AVAILABLE = '55P03';
const DEPENDENT_OBJECTS_STILL_EXIST = '2BP01';
const HASH_CHARS = 12;

/** A table a pipeline created, as recorded. */
export type CreatedTable = Extract<CreatedObject, { store: 'postgres' }>;
/** A table's place, whoever made it. */
export type TableLocation = Omit<CreatedTable, 'creationId' | 'environment' | 'pipeline' | 'marked'>;

export const qualified = (l: TableLocation): string => `${quoteIdent(l.schema)}.${quoteIdent(l.name)}`;

/**
 * The rejects table beside `table`: `<table>_rejects` while that fits in 62 bytes, otherwise the
 * table's first 42 characters, `_`, 12 hex digits of its SHA-256 and `_rejects` (63 bytes). PostgreSQL
 * would truncate a longer name, possibly into the table's own name; the two forms differ in length,
 * so a hashed name never equals a plain one, and data tables may not end in `_rejects` at all.
 * Table names are ASCII (validated at save), so characters are bytes here.
 */
export function rejectsTable(table: string): string {
  const plain = `${table}${REJECTS_SUFFIX}`;
  if (Buffer.byteLength(plain) < PG_MAX_IDENTIFIER_BYTES) return plain;
  const hash = createHash('sha256').update(table).digest('hex').slice(0, HASH_CHARS);
  const keep = PG_MAX_IDENTIFIER_BYTES - REJECTS_SUFFIX.length - HASH_CHARS - 1;
  return `${table.slice(0, keep)}_${hash}${REJECTS_SUFFIX}`;
}

/**
 * The comment a table this platform created carries; a delete drops only a table whose comment is
 * still the one its record predicts (a table dropped and made again by someone else is left alone).
 */
export function creationComment(o: Pick<CreatedObject, 'creationId' | 'environment' | 'pipeline'>): string {
  return `Created by Tapyard pipeline ${o.environment}/${o.pipeline} (creation ${o.creationId})`;
}

export async function tableExists(client: PoolClient, l: TableLocation): Promise<boolean> {
  const { rows } = await client.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [
    qualified(l),
  ]);
  return rows[0].present;
}

/**
 * For a pipeline that may not adopt (LoadTarget.mayAdopt false): each of `tables` that exists must be
 * one a pipeline of its environment created, as recorded and as its creation comment still says (a
 * table dropped and made again by someone else is not), or the load is refused naming it before
 * anything is written. Missing tables pass: the load creates them as its own.
 */
export async function assertTablesClaimed(
  client: PoolClient,
  ownership: CreatedObjects,
  target: Pick<LoadTarget, 'environment' | 'pipeline' | 'mayAdopt'>,
  tables: TableLocation[],
): Promise<void> {
  if (target.mayAdopt !== false) return;
  const { rows } = await client.query<{ present: boolean; comment: string | null }>(
    `SELECT to_regclass(t) IS NOT NULL AS present, obj_description(to_regclass(t), 'pg_class') AS comment
       FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`,
    [tables.map(qualified)],
  );
  for (const [i, l] of tables.entries()) {
    if (!rows[i].present) continue;
    const creations = await ownership.creationsAt(target.environment, l, target.pipeline);
    const comment = rows[i].comment;
    const claimed = creations.some(
      (c) => comment === creationComment({ ...c, environment: target.environment }),
    );
    if (!claimed) throw locationUnclaimedError(target.pipeline, describeLocation(l));
  }
}

/**
 * Drops recorded tables of one database in one transaction: all of them or none. A table another
 * session holds (a running load, a reader) fails the whole transaction after DROP_LOCK_TIMEOUT_MS
 * instead of queueing behind it, so the delete answers and can be repeated.
 */
export async function dropTables(client: PoolClient, tables: CreatedTable[]): Promise<DropOutcome[]> {
  const done: DropOutcome[] = [];
  let current: CreatedTable | null = null;
  await client.query('BEGIN');
  try {
    await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${DROP_LOCK_TIMEOUT_MS}ms`]);
    for (const o of tables) {
      const { rows } = await client.query<{ comment: string | null; present: boolean }>(
        `SELECT to_regclass($1) IS NOT NULL AS present, obj_description(to_regclass($1), 'pg_class') AS comment`,
        [qualified(o)],
      );
      if (!rows[0].present) done.push({ object: o, dropped: false, reason: 'no longer exists' });
      else if (rows[0].comment !== creationComment(o)) {
        done.push({
          object: o,
          dropped: false,
          reason: 'is no longer the table this pipeline created (its creation comment differs)',
        });
      } else {
        current = o;
        await client.query(`DROP TABLE ${qualified(o)}`);
        done.push({ object: o, dropped: true });
      }
    }
    await client.query('COMMIT');
    return done;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw dropFailure(current, err);
  }
}

/** Why a drop failed, naming the table: nothing of its transaction was dropped. */
function dropFailure(table: CreatedTable | null, err: unknown): Error {
  const code = (err as { code?: string }).code;
  const what = table ? describeLocation(table) : 'a table';
  if (code === LOCK_NOT_AVAILABLE) {
    return new ConflictError(
      `${what} is in use by another session (waited ${DROP_LOCK_TIMEOUT_MS / 1000} s); nothing was dropped in its database`,
    ).coded(DestinationErrorCode.DropRefused);
  }
  if (code === DEPENDENT_OBJECTS_STILL_EXIST) {
    return new ConflictError(
      `${what} has objects depending on it (${errorMessage(err)}); nothing was dropped in its database`,
    ).coded(DestinationErrorCode.DropRefused);
  }
  return err instanceof Error ? err : new Error(errorMessage(err));
}
