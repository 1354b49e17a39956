import { Client } from 'pg';
import { PostgresDestination } from '@tapyard/destinations';
import { TestApi, startApi } from './support/apps';
import { TEST_DATABASE_URL, testEnv, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { spawnApp } from './support/processes';
import { expectSecondDeliveryWritesNothing } from './support/destinations';

/** At-least-once delivery, exactly-once effect. */
describe('exactly-once loads', () => {
  const env = uniqueEnvironment('once');
  const table = `once_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let pg: Client;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('once', table, [
          ['id', 'int'],
          ['label', 'string'],
          ['amount', 'double'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await pg.end();
    await api.close();
  });

  it('a worker killed in the middle of a load leaves each row exactly once after another takes over', async () => {
    const rows = 600_000;
    let csv = 'id,label,amount\n';
    for (let i = 1; i <= rows; i++) csv += `${i},row ${i},${i / 4}\n`;
    const workerEnv = testEnv({ TAPYARD_ENV: env, WORKER_LOCK_MS: '2000' });

    const first = spawnApp('worker', workerEnv);
    await first.waitFor(/Tapyard worker ready/);
    const token = await upload(api.http, 'once', csv, 'big.csv');
    // Wait until the loader is writing, then kill the worker without warning.
    for (;;) {
      const events = (
        await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200)
      ).body;
      if (events.some((e: { processName: string }) => e.processName === 'PostgresLoader')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 150));
    first.child.kill('SIGKILL');
    await first.exited;
    const mid = (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body;
    expect(mid.rollup.allDone).toBe(false);
    expect(Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count)).toBe(0);

    const second = spawnApp('worker', workerEnv);
    try {
      const { rollup } = await waitForJob(api.http, token, 90000);
      expect(rollup.status).toBe('success');
      const counts = (
        await pg.query(
          `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ingest_test."${table}"`,
        )
      ).rows[0];
      expect(counts).toEqual({ n: String(rows), d: String(rows), lo: 1, hi: rows });
      const ledger = await pg.query(`SELECT rows_loaded FROM tapyard_meta.loads WHERE pipeline_token = $1`, [
        token,
      ]);
      expect(ledger.rows).toEqual([{ rows_loaded: String(rows) }]);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 120000);

  it('a second delivery of a committed job writes nothing', async () => {
    const dest = api.app.get(PostgresDestination);
    const target = {
      environment: env,
      pipeline: 'once',
      destination: { database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true } },
      columns: [
        { name: 'id', type: 'int' as const },
        { name: 'label', type: 'string' as const },
        { name: 'amount', type: 'double' as const },
      ],
      pipelineToken: `redelivered-${env}`,
    };
    await dest.prepare(target);
    const before = Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count);
    await expectSecondDeliveryWritesNothing(dest, target, [
      [1000001, 'again', 1.5],
      [1000002, 'again', 2.5],
    ]);
    expect(Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count)).toBe(
      before + 2,
    );
  });
});
