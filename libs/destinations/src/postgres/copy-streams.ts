import { PoolClient } from 'pg';
import { Payload } from '../destination';
import { LOAD_ID_SETTING } from './pg-tables';
import { copyPayloads } from './pg-copy';

/**
 * One append load copied over several connections at once, so that PostgreSQL parses and inserts
 * on more than one core; it stays one atomic load through two-phase commit:
 *
 * - the load's own transaction (the primary) holds the ledger row; each further stream is a
 *   transaction of its own, opened once the load has passed `minBytes`;
 * - at the end every further stream is PREPAREd (gid `tapyard:<pipelineToken>:<n>`), then the
 *   primary COMMITs: that commit, with the ledger row, is the load's decision point; then each
 *   prepared stream is COMMIT PREPARED;
 * - a prepared stream whose worker died is settled by `settlePrepared` (the next delivery, or the
 *   sweep at worker start) as the ledger says: committed if the ledger row is there, else rolled back.
 */

/** The gids of a load's further streams all start with this. */
export function gidPrefix(pipelineToken: string): string {
  return `tapyard:${pipelineToken}:`;
}

const UNDEFINED_OBJECT = '42704';

/** A further stream of a load: its connection, the rows it copied, and whether it was prepared. */
export interface ExtraStream {
  client: PoolClient;
  release: (err?: Error) => void;
  gid: string;
  rows: number;
  prepared: boolean;
}

export interface StreamPlan {
  /** The most streams, the primary included. */
  streams: number;
  /** Bytes the load copies before it opens a further stream. */
  minBytes: number;
  pipelineToken: string;
  loadId: boolean;
  /** The quoted, qualified target table. */
  table: string;
  columns: string[];
}

/**
 * A further connection of the pool, or null when the pool has none to spare now (the load then
 * goes on with the streams it has rather than wait for one).
 */
export type OpenStream = () => Promise<{ client: PoolClient; release: (err?: Error) => void } | null>;

/**
 * Copies `payloads` on the primary's open transaction and, once `minBytes` went through, on up to
 * `streams - 1` further ones where the server allows prepared transactions and the table has no
 * unique index (two streams inserting the same key would wait on each other's uncommitted row,
 * and the primary would wait for them forever). Every stream pulls the next payload when it is
 * free, so they share the load as fast as each can go. A failure of any stream ends them all;
 * the further streams are then rolled back before this throws.
 */
export async function copyStreams(
  primary: PoolClient,
  open: OpenStream,
  plan: StreamPlan,
  payloads: AsyncIterable<Payload>,
  progress: (rowsSoFar: number) => void,
): Promise<{ loaded: number; extras: ExtraStream[] }> {
  const source = payloads[Symbol.asyncIterator]();
  const counts: number[] = [0];
  const report = (i: number, rows: number) => {
    counts[i] = rows;
    progress(counts.reduce((a, b) => a + b, 0));
  };
  let failure: unknown = null;
  let seen = 0;
  const extras: ExtraStream[] = [];
  const runs: Promise<number>[] = [];
  let opening: Promise<void> | null = null;
  // Set once no further stream will open: all are open, or the pool or the server cannot give one.
  let closed = plan.streams <= 1;
  let tail: Promise<unknown> = Promise.resolve();
  // Pulls are chained: the runner's iterable need not take overlapping next() calls.
  const pull = (): Promise<IteratorResult<Payload>> => {
    const next = tail.then(async () => {
      if (failure !== null) throw failure;
      const r = await source.next().catch((err: unknown) => {
        // The input failed: the other streams stop at their next pull instead of ending cleanly.
        failure ??= err;
        throw err;
      });
      if (!r.done) {
        seen += payloadBytes(r.value);
        if (!closed && opening === null && seen >= plan.minBytes) {
          opening = openNext().finally(() => (opening = null));
        }
      }
      return r;
    });
    tail = next.catch(() => undefined);
    return next;
  };
  const shared: AsyncIterable<Payload> = {
    [Symbol.asyncIterator]: () => ({ next: pull }),
  };
  const track = (run: Promise<number>): Promise<number> => {
    run.catch((err: unknown) => {
      failure ??= err;
    });
    return run;
  };
  const openNext = async (): Promise<void> => {
    const extra = failure === null ? await startExtra(open, plan, 1 + extras.length) : null;
    if (!extra) {
      closed = true;
      return;
    }
    extras.push(extra);
    const i = extras.length;
    counts[i] = 0;
    runs.push(track(copyPayloads(extra.client, plan.table, plan.columns, shared, (n) => report(i, n))));
    if (1 + extras.length >= plan.streams) closed = true;
  };

  runs.push(track(copyPayloads(primary, plan.table, plan.columns, shared, (n) => report(0, n))));
  // A stream may still be opening when the others ended: wait until none is and every run ended.
  const settled: PromiseSettledResult<number>[] = [];
  for (;;) {
    if (opening !== null) await opening;
    else if (settled.length < runs.length)
      settled.push(...(await Promise.allSettled(runs.slice(settled.length))));
    else break;
  }
  closed = true;
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await abandonStreams(extras);
    throw failed.reason;
  }
  settled.forEach((s, i) => {
    if (i > 0) extras[i - 1].rows = (s as PromiseFulfilledResult<number>).value;
  });
  return { loaded: settled.reduce((a, s) => a + (s as PromiseFulfilledResult<number>).value, 0), extras };
}

/** A further stream in its transaction, or null when none can open (then the load goes on without). */
async function startExtra(open: OpenStream, plan: StreamPlan, n: number): Promise<ExtraStream | null> {
  const got = await open().catch(() => null);
  if (!got) return null;
  const { client, release } = got;
  try {
    const { rows } = await client.query<{ allowed: boolean; keyed: boolean }>(
      `SELECT current_setting('max_prepared_transactions')::int > 0 AS allowed,
              EXISTS (SELECT 1 FROM pg_index WHERE indrelid = $1::regclass
                        AND (indisunique OR indisexclusion)) AS keyed`,
      [plan.table],
    );
    if (!rows[0].allowed || rows[0].keyed) {
      release();
      return null;
    }
    await client.query('BEGIN');
    await client.query(`SET LOCAL TimeZone = 'UTC'`);
    if (plan.loadId) {
      await client.query(`SELECT set_config('${LOAD_ID_SETTING}', $1, true)`, [plan.pipelineToken]);
    }
    return { client, release, gid: `${gidPrefix(plan.pipelineToken)}${n}`, rows: 0, prepared: false };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    release(err instanceof Error ? err : new Error(String(err)));
    return null;
  }
}

/**
 * PREPAREs the further streams that copied rows (the others roll back): call it last before the
 * primary's COMMIT.
 */
export async function prepareStreams(extras: ExtraStream[]): Promise<void> {
  for (const e of extras) {
    if (e.rows === 0) {
      await e.client.query('ROLLBACK');
      continue;
    }
    await e.client.query(`PREPARE TRANSACTION ${e.client.escapeLiteral(e.gid)}`);
    e.prepared = true;
  }
}

/**
 * After the primary committed: commits the prepared streams (on their own connection, else on the
 * primary's) and gives their connections back. Throws when one could not be committed now: it stays
 * prepared, and the ledger row says it must commit, which the next delivery of the job (or the sweep
 * at worker start) does.
 */
export async function commitStreams(extras: ExtraStream[], primary: PoolClient): Promise<void> {
  let failure: unknown = null;
  for (const e of extras.splice(0)) {
    let lost: Error | undefined;
    if (e.prepared) {
      try {
        await commitPrepared(e.client, e.gid, 'COMMIT');
      } catch (err) {
        lost = err instanceof Error ? err : new Error(String(err));
        await commitPrepared(primary, e.gid, 'COMMIT').catch((again: unknown) => (failure ??= again));
      }
    }
    e.release(lost);
  }
  if (failure !== null) throw failure;
}

/**
 * The load failed before its decision: rolls the further streams back and releases them. A prepared
 * one is settled as the ledger says (on `primary`, whose transaction has ended): a COMMIT of the
 * primary that failed may still have committed.
 */
export async function abandonStreams(
  extras: ExtraStream[],
  settle?: { primary: PoolClient; pipelineToken: string },
): Promise<void> {
  for (const e of extras.splice(0)) {
    try {
      if (!e.prepared) await e.client.query('ROLLBACK');
      else if (settle) {
        await settlePrepared(settle.primary, settle.pipelineToken, async () => [e.client, () => undefined]);
      }
      e.release();
    } catch (err) {
      // Its transaction ends with the connection, or stays prepared for the next delivery to settle.
      e.release(err instanceof Error ? err : new Error(String(err)));
    }
  }
}

/**
 * Settles the prepared streams a load of `pipelineToken` left in this database as its ledger says;
 * returns how many it found. Both connections must be outside a transaction. A load still running
 * holds its uncommitted ledger row, so the placeholder insert on `client` waits for that load's
 * decision; `runner` runs COMMIT/ROLLBACK PREPARED meanwhile (they cannot run inside a transaction
 * block).
 */
export async function settlePrepared(
  client: PoolClient,
  pipelineToken: string,
  connect: () => Promise<[runner: PoolClient, done: () => void]>,
): Promise<number> {
  const gids = await pendingGids(client, pipelineToken);
  if (gids.length === 0) return 0;
  await client.query('BEGIN');
  try {
    const claimed = await client.query(
      `INSERT INTO tapyard_meta.loads (pipeline_token, target) VALUES ($1, '')
       ON CONFLICT (pipeline_token) DO NOTHING RETURNING pipeline_token`,
      [pipelineToken],
    );
    let commit = false;
    if (claimed.rowCount === 0) {
      const { rows } = await client.query<{ done: boolean }>(
        `SELECT rows_loaded IS NOT NULL AS done FROM tapyard_meta.loads WHERE pipeline_token = $1`,
        [pipelineToken],
      );
      commit = rows[0]?.done === true;
    }
    const [runner, done] = await connect();
    try {
      // Listed again: the load that held the ledger row may have settled some in the meantime.
      for (const gid of await pendingGids(runner, pipelineToken)) {
        await commitPrepared(runner, gid, commit ? 'COMMIT' : 'ROLLBACK');
      }
    } finally {
      done();
    }
    return gids.length;
  } finally {
    await client.query('ROLLBACK');
  }
}

/** Pipeline tokens with prepared streams left in the database `client` is on. */
export async function preparedTokens(client: PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ gid: string }>(
    `SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, 'tapyard:')`,
  );
  return [...new Set(rows.map((r) => r.gid.slice('tapyard:'.length, r.gid.lastIndexOf(':'))))];
}

async function pendingGids(client: PoolClient, pipelineToken: string): Promise<string[]> {
  const { rows } = await client.query<{ gid: string }>(
    `SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)`,
    [gidPrefix(pipelineToken)],
  );
  return rows.map((r) => r.gid);
}

/** COMMIT or ROLLBACK PREPARED; a gid already settled (by the load or by a sweep) is no error. */
async function commitPrepared(client: PoolClient, gid: string, how: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  try {
    await client.query(`${how} PREPARED ${client.escapeLiteral(gid)}`);
  } catch (err) {
    if ((err as { code?: string }).code !== UNDEFINED_OBJECT) throw err;
  }
}

function payloadBytes(p: Payload): number {
  if (typeof p === 'string') return p.length;
  if (p instanceof Uint8Array) return p.byteLength;
  if ('kind' in p && (p.kind === 'csv' || p.kind === 'pg-binary')) return p.bytes.byteLength;
  return 0;
}
