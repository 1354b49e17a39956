import { Client } from 'pg';
import { quoteIdent } from '@tapyard/core';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';

/** Keys of the DDL locks (libs/destinations/src/postgres/pg-tables.ts). */
const SHARED_DDL_LOCK = 7_421_002;
const TABLE_LOCK_SPACE = 7_421_003;

/**
 * A first load creates its tables under locks of their own: jobs creating different tables do not
 * queue behind each other's DDL, only a job creating the same table waits (and then finds it made).
 * The lock over what every table shares (the schema, the ledger) is taken only while that is missing.
 */
describe('PostgreSQL DDL locks of first loads', () => {
  const env = uniqueEnvironment('ddllock');
  const tag = env.replace(/[^a-z0-9]/g, '_');
  let api: TestApi;
  let worker: TestWorker;
  let holder: Client;
  let pg: Client;

  const pipeline = async (name: string): Promise<string> => {
    const table = `${name}_${tag}`;
    await api.http
      .post('/api/v1/pipeline')
      .send(csvPipeline(name, table, [['id', 'int']]))
      .expect(200);
    return table;
  };
  const tableKey = (table: string) => `${quoteIdent('ingest_test')}.${quoteIdent(table)}`;
  const exists = async (table: string): Promise<boolean> =>
    (await pg.query(`SELECT to_regclass($1) IS NOT NULL AS e`, [tableKey(table)])).rows[0].e;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    holder = new Client({ connectionString: TEST_DATABASE_URL });
    await Promise.all([pg.connect(), holder.connect()]);
    // The schema and the ledger exist from here on.
    await pipeline('first');
    const token = await upload(api.http, 'first', 'id\n1\n', 'first.csv');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
  });
  afterAll(async () => {
    await Promise.all([pg.end(), holder.end()]);
    await worker.close();
    await api.close();
  });

  it('creates a new table while another session holds the shared DDL lock (nothing shared is missing)', async () => {
    const table = await pipeline('beside');
    await holder.query('SELECT pg_advisory_lock($1)', [SHARED_DDL_LOCK]);
    try {
      const token = await upload(api.http, 'beside', 'id\n1\n2\n', 'beside.csv');
      expect((await waitForJob(api.http, token, 20_000)).rollup.status).toBe('success');
      expect(await exists(table)).toBe(true);
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [SHARED_DDL_LOCK]);
    }
  });

  it("waits for a table's own lock, then creates it", async () => {
    const table = await pipeline('waits');
    await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [TABLE_LOCK_SPACE, tableKey(table)]);
    let token: string;
    try {
      token = await upload(api.http, 'waits', 'id\n1\n', 'waits.csv');
      await new Promise((r) => setTimeout(r, 500));
      expect(await exists(table)).toBe(false);
      const { rows } = await pg.query(
        `SELECT count(*)::int AS n FROM tapyard.status_events WHERE environment = $1 AND pipeline_token = $2 AND process_name = 'JobRunner' AND state = 'end'`,
        [env, token],
      );
      expect(rows[0].n).toBe(0);
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1, hashtext($2))', [TABLE_LOCK_SPACE, tableKey(table)]);
    }
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    expect(await exists(table)).toBe(true);
  });

  it('jobs creating the same table at once create it once and load every row', async () => {
    const table = await pipeline('same');
    const tokens = await Promise.all(
      Array.from({ length: 6 }, (_, i) => upload(api.http, 'same', `id\n${i}\n`, `same-${i}.csv`)),
    );
    for (const token of tokens) expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    const { rows } = await pg.query(`SELECT count(*)::int AS n FROM ingest_test.${quoteIdent(table)}`);
    expect(rows[0].n).toBe(6);
  });
});
