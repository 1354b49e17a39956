import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { TapyardConfig, loadConfig } from '@tapyard/core';
import { LOAD_ID_COLUMN, PipelineDefinition } from '@tapyard/model';
import { CsvChunkPayload, LoadTarget, Payload, PgPools, PostgresDestination } from '@tapyard/destinations';
import type { CreatedObjects } from '@tapyard/destinations';
import { testEnv } from './support/env';
import { PrivatePostgres, startPrivatePostgres } from './support/private-postgres';
import { until } from './support/wait';

const ROWS_PER_CHUNK = 5_000;
const CHUNKS = 60;

/** `CHUNKS` clean CSV chunks of `id,label` rows, numbered from 1, as the fast path hands them over. */
function chunk(n: number): CsvChunkPayload {
  let text = '';
  for (let i = 1; i <= ROWS_PER_CHUNK; i++) {
    const id = n * ROWS_PER_CHUNK + i;
    text += `${id},row ${id}\n`;
  }
  return {
    kind: 'csv',
    bytes: Buffer.from(text),
    rows: ROWS_PER_CHUNK,
    line: n * ROWS_PER_CHUNK + 2,
    eol: 'lf',
    copyOptions: 'FORMAT csv',
    columns: ['id', 'label'],
  };
}

/**
 * The chunks, the second half held back until `ready` holds (the load opened, or decided against,
 * its second stream), so that a second stream always has rows left to take. `failAt`: a read
 * failure of the upload at that chunk.
 */
async function* chunks(ready: () => Promise<boolean>, failAt?: number): AsyncGenerator<Payload> {
  for (let n = 0; n < CHUNKS; n++) {
    if (n === CHUNKS / 2) await until('the load to open its second stream or decide not to', ready);
    if (n === failAt) throw new Error('the upload broke off');
    yield chunk(n);
  }
}

async function* none<T>(): AsyncGenerator<T> {}

/**
 * Two-stream loads (PG_COPY_STREAMS): a large append on two connections, still one atomic,
 * exactly-once load through two-phase commit. Against a server of the test's own, since the shared
 * one of scripts/services may not allow prepared transactions.
 */
describe('PostgreSQL loads on two COPY streams', () => {
  let server: PrivatePostgres;
  let config: TapyardConfig;
  let pools: PgPools;
  let destination: PostgresDestination;
  let db: Client;

  const target = (table: string, token = randomUUID()): LoadTarget => ({
    environment: 'streams',
    pipeline: 'streams',
    destination: {
      database: { dbName: 'loads', schema: 'public', table, usePostgres: true },
    } as PipelineDefinition['destination'],
    columns: [
      { name: 'id', type: 'int' },
      { name: 'label', type: 'string' },
    ] as LoadTarget['columns'],
    pipelineToken: token,
    loadId: true,
  });

  /** The tables `prepare` would create, made here so that no pipeline record is needed. */
  async function tables(client: Client, table: string): Promise<void> {
    await client.query(`CREATE SCHEMA IF NOT EXISTS tapyard_meta`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
       rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
    );
    await client.query(
      `CREATE TABLE ${table} (id integer, label text,
       ${LOAD_ID_COLUMN} text DEFAULT nullif(current_setting('tapyard.load_id', true), ''))`,
    );
    await client.query(
      `CREATE TABLE ${table}_rejects (pipeline_token text NOT NULL, line bigint, stage text, reason text,
       raw text, rejected_at timestamptz NOT NULL DEFAULT now())`,
    );
  }

  /** Two loader connections of this database in a transaction: the second stream is open. */
  const twoStreams = (client: Client) => async () => {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'tapyard-loader' AND xact_start IS NOT NULL`,
    );
    return rows[0].n >= 2;
  };

  async function prepared(client: Client): Promise<string[]> {
    const { rows } = await client.query<{ gid: string }>(`SELECT gid FROM pg_prepared_xacts`);
    return rows.map((r) => r.gid);
  }

  /** Rows of the table, distinct ids, and how many transactions wrote them. */
  async function summary(client: Client, table: string) {
    const { rows } = await client.query<{ rows: number; ids: number; xacts: number }>(
      `SELECT count(*)::int AS rows, count(DISTINCT id)::int AS ids, count(DISTINCT xmin::text)::int AS xacts
         FROM ${table}`,
    );
    return rows[0];
  }

  beforeAll(async () => {
    server = await startPrivatePostgres({ max_prepared_transactions: '8' });
    const admin = new Client({ connectionString: server.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE loads');
    await admin.end();
    db = new Client({ connectionString: server.url('loads') });
    await db.connect();
    config = loadConfig(
      testEnv({ POSTGRES_DESTINATION_URL: server.url('loads'), PG_COPY_STREAM_MIN_BYTES: '0' }),
    );
    pools = new PgPools(config);
    // Only `prepare` records created tables, and these tests make their tables themselves.
    destination = new PostgresDestination(config, pools, null as unknown as CreatedObjects);
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await pools?.onModuleDestroy();
    await server?.stop();
  });

  it('loads a large append on two streams, every row exactly once, and nothing stays prepared', async () => {
    await tables(db, 'two');
    const t = target('two');
    const progress: number[] = [];
    const result = await destination.load(t, chunks(twoStreams(db)), none, (n) => progress.push(n));
    const total = ROWS_PER_CHUNK * CHUNKS;
    expect(result).toMatchObject({ loaded: total, rejected: 0, alreadyLoaded: false });
    // Every row once. Which stream took the second half's chunks is scheduling: under load the first stream
    // took them all before the second pulled one (CI, twice), so the second may have prepared nothing.
    const twoRows = await summary(db, 'two');
    expect(twoRows).toMatchObject({ rows: total, ids: total });
    expect([1, 2]).toContain(twoRows.xacts);
    expect(Math.max(...progress)).toBe(total);
    expect(await prepared(db)).toEqual([]);
    const ledger = await db.query(
      `SELECT rows_loaded::int AS n FROM tapyard_meta.loads WHERE pipeline_token = $1`,
      [t.pipelineToken],
    );
    expect(ledger.rows).toEqual([{ n: total }]);
    // A second delivery writes nothing.
    expect(await destination.committed(t)).toMatchObject({ loaded: total, alreadyLoaded: true });
    const again = await destination.load(
      t,
      chunks(async () => true),
      none,
      () => undefined,
    );
    expect(again).toMatchObject({ loaded: total, alreadyLoaded: true });
    expect((await summary(db, 'two')).rows).toBe(total);
  });

  it('a load that fails after its second stream was prepared leaves nothing, and nothing prepared', async () => {
    await tables(db, 'fails');
    const t = target('fails');
    // The ledger row's COMMIT fails (a deferred check), after the second stream's PREPARE.
    await db.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused at commit'; END $$`);
    await db.query(
      `CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON tapyard_meta.loads DEFERRABLE INITIALLY DEFERRED
       FOR EACH ROW WHEN (NEW.pipeline_token = ${db.escapeLiteral(t.pipelineToken)}) EXECUTE FUNCTION refuse()`,
    );
    try {
      await expect(destination.load(t, chunks(twoStreams(db)), none, () => undefined)).rejects.toThrow(
        /refused at commit/,
      );
    } finally {
      await db.query('DROP TRIGGER refuse_at_commit ON tapyard_meta.loads');
    }
    expect((await summary(db, 'fails')).rows).toBe(0);
    expect(await prepared(db)).toEqual([]);
    expect(await destination.committed(t)).toBeNull();
  });

  it('a load whose upload breaks off with two streams open leaves nothing', async () => {
    await tables(db, 'broken');
    const t = target('broken');
    await expect(
      destination.load(t, chunks(twoStreams(db), CHUNKS / 2 + 5), none, () => undefined),
    ).rejects.toThrow(/broke off/);
    expect((await summary(db, 'broken')).rows).toBe(0);
    expect(await prepared(db)).toEqual([]);
    // Both connections went back to the pool, out of any transaction.
    await until('the loader connections to leave their transactions', async () => !(await twoStreams(db)()));
  });

  /** A second stream of `t` left prepared by a worker that died before COMMIT PREPARED (or before the decision). */
  async function orphan(t: LoadTarget, table: string, ids: [number, number]): Promise<void> {
    const c = new Client({ connectionString: server.url('loads') });
    await c.connect();
    try {
      await c.query('BEGIN');
      await c.query(`SELECT set_config('tapyard.load_id', $1, true)`, [t.pipelineToken]);
      await c.query(
        `INSERT INTO ${table} (id, label) SELECT i, 'row ' || i FROM generate_series($1::int, $2::int) i`,
        ids,
      );
      await c.query(`PREPARE TRANSACTION ${c.escapeLiteral(`tapyard:${t.pipelineToken}:1`)}`);
    } finally {
      await c.end();
    }
  }

  it('a stream left prepared before the decision rolls back when the job comes again, which then loads it once', async () => {
    await tables(db, 'undecided');
    const t = target('undecided');
    await orphan(t, 'undecided', [1, 1000]);
    expect(await prepared(db)).toEqual([`tapyard:${t.pipelineToken}:1`]);
    // The next delivery asks first whether an earlier one committed: it did not.
    expect(await destination.committed(t)).toBeNull();
    expect(await prepared(db)).toEqual([]);
    expect((await summary(db, 'undecided')).rows).toBe(0);
    const result = await destination.load(t, chunks(twoStreams(db)), none, () => undefined);
    const total = ROWS_PER_CHUNK * CHUNKS;
    expect(result.loaded).toBe(total);
    // Every row once. Which stream took the second half's chunks is scheduling: under load the first stream
    // took them all before the second pulled one (CI, twice), so the second may have prepared nothing.
    const undecidedRows = await summary(db, 'undecided');
    expect(undecidedRows).toMatchObject({ rows: total, ids: total });
    expect([1, 2]).toContain(undecidedRows.xacts);
  });

  it('a stream left prepared after the decision commits when the job comes again, or at the sweep', async () => {
    for (const [table, settle] of [
      ['decided', (t: LoadTarget) => destination.committed(t)],
      ['swept', () => destination.sweepPrepared()],
    ] as const) {
      await tables(db, table);
      const t = target(table);
      // The primary stream's rows and the ledger row committed; the second stream is still prepared.
      await db.query('BEGIN');
      await db.query(`SELECT set_config('tapyard.load_id', $1, true)`, [t.pipelineToken]);
      await db.query(
        `INSERT INTO ${table} (id, label) SELECT i, 'row ' || i FROM generate_series(1, 1000) i`,
      );
      await db.query(
        `INSERT INTO tapyard_meta.loads (pipeline_token, target, rows_loaded, rows_rejected) VALUES ($1, $2, 2000, 0)`,
        [t.pipelineToken, `loads.public.${table}`],
      );
      await db.query('COMMIT');
      await orphan(t, table, [1001, 2000]);
      expect((await summary(db, table)).rows).toBe(1000);
      await settle(t);
      expect(await prepared(db)).toEqual([]);
      expect(await summary(db, table)).toEqual({ rows: 2000, ids: 2000, xacts: 2 });
      expect(await destination.committed(t)).toMatchObject({ loaded: 2000, alreadyLoaded: true });
    }
  });

  it('further streams never take the connections jobs start on, and none is waited for', async () => {
    // Four loads' second streams, as when four large jobs run at once.
    const spares = [];
    for (let i = 0; i < 4; i++) spares.push(await pools.spare('loads'));
    try {
      expect(spares.every((s) => s !== null)).toBe(true);
      // A fifth stream is not opened (its load goes on with one), rather than waited for.
      expect(await pools.spare('loads')).toBeNull();
      // Every job still gets its first connection.
      const firsts = await Promise.all([1, 2, 3, 4].map(() => pools.get('loads').connect()));
      for (const c of firsts) c.release();
    } finally {
      for (const s of spares) s?.release();
    }
  });

  it('a server that allows no prepared transactions loads on one stream', async () => {
    const plain = await startPrivatePostgres({ max_prepared_transactions: '0' });
    const admin = new Client({ connectionString: plain.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE loads');
    await admin.end();
    const other = new Client({ connectionString: plain.url('loads') });
    await other.connect();
    const cfg = loadConfig(
      testEnv({ POSTGRES_DESTINATION_URL: plain.url('loads'), PG_COPY_STREAM_MIN_BYTES: '0' }),
    );
    const otherPools = new PgPools(cfg);
    try {
      await tables(other, 'one');
      const dest = new PostgresDestination(cfg, otherPools, null as unknown as CreatedObjects);
      // A second loader connection was taken and has asked (then was given back, or, wrongly, opened a stream).
      const decided = async () => {
        const { rows } = await other.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'tapyard-loader' AND query <> ''`,
        );
        return rows[0].n >= 2;
      };
      const result = await dest.load(target('one'), chunks(decided), none, () => undefined);
      const total = ROWS_PER_CHUNK * CHUNKS;
      expect(result.loaded).toBe(total);
      expect(await summary(other, 'one')).toEqual({ rows: total, ids: total, xacts: 1 });
    } finally {
      await other.end();
      await otherPools.onModuleDestroy();
      await plain.stop();
    }
  }, 120_000);
});
