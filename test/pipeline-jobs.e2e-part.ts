import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline } from './support/ingest';

/**
 * The routes that read jobs back (the console's Overview, rejects and preview): GET /pipeline/jobs,
 * /pipeline/jobs/{token}/rejects and /rows, against a real API, worker and PostgreSQL.
 */
describe('GET /pipeline/jobs and a job’s rejects and rows', () => {
  const env = uniqueEnvironment('jobsread');
  const boot = newBootstrapKey();
  const table = `jobs_${env.slice(-8).replace(/-/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let sales: string;
  let hr: string;

  const as = (key: string) => ({
    get: (path: string) => api.http.get(`/api/v1${path}`).set('x-api-key', key),
  });

  async function load(pipeline: string, csv: string): Promise<string> {
    const token = await api.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', boot)
      .field('pipeline', pipeline)
      .attach('file', Buffer.from(csv), `${pipeline}.csv`)
      .expect(200)
      .then((r) => r.text);
    for (let i = 0; i < 1200; i++) {
      const { body } = await as(boot)
        .get('/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200);
      if ((body as RollupAnswer).rollup.allDone) return token;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`job ${token} did not end`);
  }

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: boot };
    api = await startApi(flags);
    worker = await startWorker(flags);
    const fields: [string, string][] = [
      ['id', 'int'],
      ['item', 'string'],
    ];
    for (const [name, catalog] of [
      ['sales', 'sales'],
      ['hr', 'hr'],
    ]) {
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(csvPipeline(`${table}_${name}`, `${table}_${name}`, fields, { catalog }))
        .expect(200);
    }
    sales = await load(`${table}_sales`, 'id,item\n1,apple\nabc,pear\n3,plum\n');
    hr = await load(`${table}_hr`, 'id,item\n7,desk\n');
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  it('reads back the reasons and lines of a partly loaded job’s rejected rows, by page', async () => {
    const { body } = await as(boot).get(`/pipeline/jobs/${sales}/rejects`).expect(200);
    expect(body).toMatchObject({
      pipelineToken: sales,
      location: `tapyard_test.ingest_test.${table}_sales_rejects`,
      page: 1,
      pageSize: 50,
    });
    expect(body.rejects).toHaveLength(1);
    expect(body.rejects[0]).toMatchObject({ line: 3, stage: expect.any(String) });
    expect(body.rejects[0].reason).toContain('abc');
    expect(Object.keys(body.rejects[0]).sort()).toEqual(['line', 'reason', 'stage']);
    const next = await as(boot).get(`/pipeline/jobs/${sales}/rejects`).query({ page: 2 }).expect(200);
    expect(next.body.rejects).toEqual([]);
    await as(boot).get(`/pipeline/jobs/${sales}/rejects`).query({ page: 0 }).expect(400);
    await as(boot).get('/pipeline/jobs/no-such-token/rejects').expect(404);
  });

  it('previews the rows the job loaded, in the schema’s column order, and only with search:query', async () => {
    const { body } = await as(boot).get(`/pipeline/jobs/${sales}/rows`).expect(200);
    expect(body.columns).toEqual(['id', 'item']);
    expect(body.location).toBe(`tapyard_test.ingest_test.${table}_sales`);
    expect(body.rows).toEqual([
      { id: 1, item: 'apple' },
      { id: 3, item: 'plum' },
    ]);
    const statusOnly = await issueKey(api.http, boot, 'status-only', { capabilities: ['job:read'] });
    await as(statusOnly).get(`/pipeline/jobs/${sales}/rejects`).expect(200);
    const refused = await as(statusOnly).get(`/pipeline/jobs/${sales}/rows`).expect(403);
    expect(refused.body.message).toContain('search:query');
  });

  it('lists the newest jobs of every pipeline with their rollup, and a scoped caller only its own', async () => {
    const all = await as(boot).get('/pipeline/jobs').expect(200);
    expect(all.body.map((j: { pipelineToken: string }) => j.pipelineToken)).toEqual([hr, sales]);
    expect(all.body[1]).toMatchObject({
      pipeline: `${table}_sales`,
      status: 'warning',
      rowsLoaded: 2,
      rowsRejected: 1,
    });
    await as(boot).get('/pipeline/jobs').query({ page: 2 }).expect(200, []);

    const hrOnly = await issueKey(api.http, boot, 'hr-only', { capabilities: ['job:read:catalog=hr'] });
    const scoped = await as(hrOnly).get('/pipeline/jobs').expect(200);
    expect(scoped.body.map((j: { pipelineToken: string }) => j.pipelineToken)).toEqual([hr]);
    await as(hrOnly).get(`/pipeline/jobs/${sales}/rejects`).expect(404);
    await as(hrOnly).get(`/pipeline/jobs/${hr}/rejects`).expect(200);
    const none = await issueKey(api.http, boot, 'no-jobs', { capabilities: ['pipeline:read'] });
    await as(none).get('/pipeline/jobs').expect(403);
  });

  it("removes a job's rows only for pipeline:delete in the job's scope, not the scope a later pipeline of its name has", async () => {
    const name = `${table}_moved`;
    const fields: [string, string][] = [
      ['id', 'int'],
      ['item', 'string'],
    ];
    const save = (catalog: string) =>
      api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(csvPipeline(name, name, fields, { catalog }))
        .expect(200);
    await save('hr');
    const token = await load(name, 'id,item\n5,chair\n');
    // The pipeline goes (its table stays) and catalog sales takes the name, over the same table.
    await api.http.delete('/api/v1/pipeline').set('x-api-key', boot).query({ pipeline: name }).expect(200);
    await save('sales');

    const salesDeleter = await issueKey(api.http, boot, 'sales-deleter', {
      capabilities: ['pipeline:delete:catalog=sales'],
    });
    const refused = await api.http
      .delete(`/api/v1/pipeline/jobs/${token}/rows`)
      .set('x-api-key', salesDeleter)
      .expect(404);
    expect(refused.body.message).toBe(`no job has pipeline token '${token}'`);
    const kept = await as(boot).get(`/pipeline/jobs/${token}/rows`).expect(200);
    expect(kept.body.rows).toEqual([{ id: 5, item: 'chair' }]);

    const hrDeleter = await issueKey(api.http, boot, 'hr-deleter', {
      capabilities: ['pipeline:delete:catalog=hr'],
    });
    await api.http.delete(`/api/v1/pipeline/jobs/${token}/rows`).set('x-api-key', hrDeleter).expect(200);
    expect((await as(boot).get(`/pipeline/jobs/${token}/rows`).expect(200)).body.rows).toEqual([]);
  });
});
