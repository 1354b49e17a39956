import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { waitForJob } from './support/ingest';
import { cuttableProxy } from './support/net';
import { until } from './support/wait';

/**
 * Security issue, section 5 (jobs and status stay with their catalog) and the outage items of
 * section 6. API keys on, real Postgres and Redis; jobs are recorded at intake, no worker needed.
 */
describe('security: job scopes, publisher tokens and outages', () => {
  const env = uniqueEnvironment('sec-jobs');
  const schema = `sec_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  let api: TestApi;
  let pg: Pool;
  let keyA: string;
  let keyB: string;

  const pipeline = (name: string, catalog: string) => ({
    name,
    catalog,
    source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields: [{ name: 'n', type: 'int' }] } },
    destination: { database: { schema, table: name } },
  });
  const upload = (key: string, name: string, publisherToken?: string) => {
    let req = api.http.post('/api/v1/pipeline/upload').set('x-api-key', key).field('pipeline', name);
    if (publisherToken) req = req.field('publishertoken', publisherToken);
    return req.attach('file', Buffer.from('n\n1\n'), 'n.csv');
  };
  const status = (key: string, query: Record<string, string>) =>
    api.http.get('/api/v1/pipeline/status').set('x-api-key', key).query(query);

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: admin });
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    for (const [name, catalog] of [
      ['a_sales', 'a'],
      ['b_sales', 'b'],
      ['reused', 'b'],
    ]) {
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', admin)
        .send(pipeline(name, catalog))
        .expect(200);
    }
    keyA = await issueKey(api.http, admin, 'team-a', {
      capabilities: ['pipeline:*:catalog=a', 'job:read:catalog=a'],
    });
    keyB = await issueKey(api.http, admin, 'team-b', {
      capabilities: ['pipeline:*:catalog=b', 'job:read:catalog=b'],
    });
  }, 60_000);

  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await api.close();
  });

  it("refuses a publisher token another catalog already uses, and hides that catalog's jobs", async () => {
    await upload(keyB, 'b_sales', 'nightly').expect(200);
    const refused = await upload(keyA, 'a_sales', 'nightly').expect(409);
    expect(refused.body.message).toBe(
      "publisher token 'nightly' is in use by another catalog: choose another token",
    );
    await status(keyA, { publishertoken: 'nightly', withrollup: 'true' }).expect(404);
    const own = await status(keyB, { publishertoken: 'nightly', withrollup: 'true' }).expect(200);
    expect(own.body.rollup.jobs).toHaveLength(1);
    // The token stays usable by its own catalog.
    await upload(keyB, 'b_sales', 'nightly').expect(200);
  });

  it("keeps a deleted pipeline's history from a later pipeline of the same name in another catalog", async () => {
    const oldToken = (await upload(keyB, 'reused').expect(200)).text;
    await api.http
      .delete('/api/v1/pipeline')
      .set('x-api-key', admin)
      .query({ pipeline: 'reused' })
      .expect(200);
    await api.http.post('/api/v1/pipeline').set('x-api-key', admin).send(pipeline('reused', 'a')).expect(200);
    const newToken = (await upload(keyA, 'reused').expect(200)).text;

    const summaries = await status(keyA, { pipelinename: 'reused' }).expect(200);
    expect(summaries.body.map((s: { pipelineToken: string }) => s.pipelineToken)).toEqual([newToken]);
    const hidden = await status(keyA, { pipelinetoken: oldToken }).expect(404);
    expect(hidden.body.message).toBe(`no job has pipeline token '${oldToken}'`);
    // Its own catalog still sees it.
    await status(keyB, { pipelinetoken: oldToken, withrollup: 'true' }).expect(200);
  });
});

describe('security: an outage of the metadata database is not "not found"', () => {
  const admin = newBootstrapKey();
  let api: TestApi;
  let proxy: Awaited<ReturnType<typeof cuttableProxy>>;
  let scoped: string;

  beforeAll(async () => {
    const url = new URL(TEST_DATABASE_URL);
    proxy = await cuttableProxy(Number(url.port || 5432));
    url.host = `127.0.0.1:${proxy.port}`;
    api = await startApi({
      DATABASE_URL: url.toString(),
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
    });
    scoped = await issueKey(api.http, admin, 'scoped', {
      capabilities: ['pipeline:read:catalog=a', 'tap:read'],
    });
    // Warm the key map cache, then take the database away.
    await api.http.get('/api/v1/pipelines').set('x-api-key', scoped).expect(200);
  }, 60_000);

  afterAll(async () => {
    proxy.restore();
    await api.close();
    await proxy.close();
  });

  it('answers 503 naming postgres while it is down, for scope checks and lookups alike', async () => {
    proxy.cut();
    const scopeCheck = await api.http
      .get('/api/v1/pipeline')
      .set('x-api-key', scoped)
      .query({ pipeline: 'sales' });
    expect(scopeCheck.status).toBe(503);
    expect(scopeCheck.body.message).toBe(
      'postgres (the metadata database) is unavailable; try again shortly',
    );
    const tap = await api.http.get('/api/v1/tap').set('x-api-key', admin).query({ name: 'x' });
    expect(tap.status).toBe(503);
    proxy.restore();
    // Recovers by itself: the pool drops the connections the outage broke (how soon depends on the
    // machine), then a lookup answers what it is, 404, and nothing else than 503 came meanwhile.
    const lookup = () =>
      api.http.get('/api/v1/pipeline').set('x-api-key', admin).query({ pipeline: 'sales' });
    let last = 503;
    await until(
      'the API to recover from the outage',
      async () => {
        last = (await lookup()).status;
        expect([503, 404]).toContain(last);
        return last === 404;
      },
      30_000,
    );
    expect(last).toBe(404);
  });
});

describe('security: a job whose worker loses the metadata database retries, it does not fail as "no longer exists"', () => {
  const env = uniqueEnvironment('sec-outage');
  const schema = `sec_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let api: TestApi;
  let worker: TestWorker;
  let proxy: Awaited<ReturnType<typeof cuttableProxy>>;
  let pg: Pool;

  beforeAll(async () => {
    const url = new URL(TEST_DATABASE_URL);
    proxy = await cuttableProxy(Number(url.port || 5432));
    url.host = `127.0.0.1:${proxy.port}`;
    const flags = { TAPYARD_ENV: env, LOAD_RETRY_ATTEMPTS: '6', LOAD_RETRY_DELAY_MS: '300' };
    api = await startApi(flags);
    worker = await startWorker({ ...flags, DATABASE_URL: url.toString() });
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'sales',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
        },
        destination: { database: { schema, table: 'sales' } },
      })
      .expect(200);
  }, 60_000);

  afterAll(async () => {
    proxy.restore();
    await worker.close();
    await api.close();
    await proxy.close();
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
  });

  it('loads the file once the database is back', async () => {
    proxy.cut();
    const token = (
      await api.http
        .post('/api/v1/pipeline/upload')
        .field('pipeline', 'sales')
        .attach('file', Buffer.from('n\n1\n2\n'), 'n.csv')
        .expect(200)
    ).text;
    await new Promise((r) => setTimeout(r, 1500));
    proxy.restore();
    const done = await waitForJob(api.http, token, 60_000);
    expect(done.rollup.status).toBe('success');
    expect(done.events.map((e) => e.description).join('\n')).not.toContain('no longer exists');
    expect((await pg.query(`SELECT count(*)::int AS n FROM "${schema}".sales`)).rows[0].n).toBe(2);
  }, 90_000);
});
