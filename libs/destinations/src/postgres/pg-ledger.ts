import { PoolClient } from 'pg';
import { TapyardConfig } from '@tapyard/core';
import { LoadResult, LoadTarget, databaseOf } from '../destination';
import { rejectsTable } from './created-tables';
import { gidPrefix } from './copy-streams';

/**
 * How many times its CSV bytes an input's COPY may take, with room to spare: a binary COPY field is a
 * 4-byte length and at most 8 bytes of value where the CSV field took at least 2 (a digit, a comma).
 */
const CARRIED_COPY_GROWTH = 16;

/** What PostgreSQL answers for the ledger of a database no job loaded yet: no such table, or no such schema. */
const NO_LEDGER = new Set(['42P01', '3F000']);

/** What the functions outside the destination class (here and in pg-maintenance.ts) use of it. */
export interface PgAccess {
  /** Runs `work` on a connection to `database` (see withPgClient). */
  withClient<T>(database: string, work: (c: PoolClient) => Promise<T>): Promise<T>;
  /** Refuses a database whose tapyard_meta objects another role made, until they are vouched for. */
  vouchForMeta(client: PoolClient, database: string): Promise<void>;
  /** Settles the streams of a load of `pipelineToken` still prepared in `database`. */
  settle(client: PoolClient, database: string, pipelineToken: string): Promise<number>;
}

/** The destination's `committed`: the ledger's answer for a job a redelivery finds committed, or null. */
export async function ledgerCommitted(
  access: PgAccess,
  config: TapyardConfig['database'],
  target: LoadTarget,
): Promise<LoadResult | null> {
  if (claimDecides(config, target)) return null;
  const { dbName, schema, table } = databaseOf(target.destination);
  return access.withClient(dbName, async (client) => {
    await access.vouchForMeta(client, dbName);
    // One round trip per job: the ledger row and whether an earlier delivery left streams prepared. A
    // database without the ledger yet (no load ever, so nothing prepared either) answers "no such table".
    // Named: planned once per connection (~0.27 ms a job otherwise).
    const read = () =>
      client.query<{ rows_loaded: string | null; rows_rejected: string | null; pending: boolean }>({
        name: 'tapyard-committed',
        text: `SELECT l.rows_loaded, l.rows_rejected,
                EXISTS (SELECT 1 FROM pg_prepared_xacts
                         WHERE database = current_database() AND starts_with(gid, $2)) AS pending
           FROM (SELECT 1) one
           LEFT JOIN tapyard_meta.loads l ON l.pipeline_token = $1 AND l.rows_loaded IS NOT NULL`,
        values: [target.pipelineToken, gidPrefix(target.pipelineToken)],
      });
    let ledger = await read().catch((err: unknown) => {
      if (NO_LEDGER.has((err as { code?: string }).code ?? '')) return null;
      throw err;
    });
    if (ledger?.rows[0].pending) {
      // An earlier delivery died with streams prepared: they commit or roll back with its ledger row.
      await access.settle(client, dbName, target.pipelineToken);
      ledger = await read();
    }
    const row = ledger?.rows[0];
    if (!row || row.rows_loaded === null) return null;
    return {
      loaded: Number(row.rows_loaded),
      rejected: Number(row.rows_rejected),
      alreadyLoaded: true,
      location: `${dbName}.${schema}.${table}`,
      rejectsLocation: `${dbName}.${schema}.${rejectsTable(table)}`,
    };
  });
}

/**
 * Whether the load's own claim is check enough for a redelivery: it answers an earlier committed
 * delivery as `already` (settling that delivery's prepared streams, if any). What the claim cannot
 * see is streams an earlier delivery prepared and died before committing its ledger row: those
 * only a load past PG_COPY_STREAM_MIN_BYTES opens, and the COPY of a small input carried in its job
 * stays far below it (CARRIED_COPY_GROWTH). So such a job skips the check, which cost every small
 * job a round trip and a transaction of its own.
 */
function claimDecides(config: TapyardConfig['database'], target: LoadTarget): boolean {
  const { copyStreams, copyStreamMinBytes } = config;
  return (
    target.carriedBytes !== undefined &&
    (copyStreams <= 1 || target.carriedBytes * CARRIED_COPY_GROWTH < copyStreamMinBytes)
  );
}
