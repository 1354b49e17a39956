import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, TEST_REDIS_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline } from './support/ingest';

describe('MULTI_TENANT=true: keys map to tenant environments that cannot see each other', () => {
  const operator = uniqueEnvironment('op');
  const tenantA = uniqueEnvironment('ta');
  const tenantB = uniqueEnvironment('tb');
  const boot = newBootstrapKey();
  const flags = {
    TAPYARD_ENV: operator,
    MULTI_TENANT: 'true',
    USE_API_KEYS: 'true',
    TAPYARD_BOOTSTRAP_API_KEY: boot,
    ...TEST_OBJECT_STORE,
  };
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let keyA: string;
  let keyB: string;

  const table = (tenant: string) => `orders_${tenant.replace(/[^a-z0-9]/g, '_')}`;
  // A tenant's pipelines load into its own schema by default (and may name no other).
  const tenantPipeline = (name: string, tenant: string) =>
    csvPipeline(name, table(tenant), [['id', 'int']], {
      destination: { database: { table: table(tenant) } },
    });

  beforeAll(async () => {
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    keyA = await issueKey(api.http, boot, 'a-admin', { template: 'full-access' }, { tenant: tenantA });
    keyB = await issueKey(api.http, boot, 'b-admin', { template: 'full-access' }, { tenant: tenantB });
    for (const [key, tenant] of [
      [keyA, tenantA],
      [keyB, tenantB],
    ]) {
      // The same pipeline and secret names in both tenants: no collision, no leak.
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', key)
        .send(tenantPipeline('orders', tenant))
        .expect(200);
      await api.http.put('/api/v1/secrets/creds').set('x-api-key', key).send({ owner: tenant }).expect(200);
    }
    await api.http
      .post('/api/v1/pipeline')
      .set('x-api-key', keyA)
      .send(tenantPipeline('a_only', tenantA))
      .expect(200);
  });

  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "t_${tenantA}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('/version reports the tenant environment and its document database', async () => {
    const a = await api.http.get('/api/v1/version').set('x-api-key', keyA).expect(200);
    expect(a.body).toMatchObject({ multiTenant: 'true', environment: tenantA, mongodbDatabase: tenantA });
    const op = await api.http.get('/api/v1/version').set('x-api-key', boot).expect(200);
    expect(op.body).toMatchObject({ environment: operator, mongodbDatabase: operator });
  });

  it("a tenant's key sees only its own pipelines, secrets and keys; the other tenant's answer 404", async () => {
    const listB = await api.http.get('/api/v1/pipelines').set('x-api-key', keyB).expect(200);
    expect(listB.body.map((p: { name: string }) => p.name)).toEqual(['orders']);
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'a_only' }).set('x-api-key', keyB).expect(404);
    await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'a_only' })
      .set('x-api-key', keyB)
      .expect(404);
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'a_only' }).set('x-api-key', keyA).expect(200);
    const secret = await api.http.get('/api/v1/secrets/creds').set('x-api-key', keyB).expect(200);
    expect(secret.body.fields).toEqual({ owner: tenantB });
    const keys = await api.http.get('/api/v1/keys').set('x-api-key', keyA).expect(200);
    expect(keys.body.map((k: { label: string }) => k.label)).toEqual(['a-admin']);
    // The operator environment holds neither tenant's data.
    const op = await api.http.get('/api/v1/pipelines').set('x-api-key', boot).expect(200);
    expect(op.body).toEqual([]);
  });

  it("a tenant's upload runs on the tenant's own queue and its status is invisible to the other tenant", async () => {
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', keyA)
      .field('pipeline', 'orders')
      .attach('file', Buffer.from('id\n1\n2\n3\n'), 'orders.csv')
      .expect(200);
    const token = res.text;
    const deadline = Date.now() + 120_000;
    let answer: RollupAnswer;
    for (;;) {
      const r = await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .set('x-api-key', keyA)
        .expect(200);
      answer = r.body as RollupAnswer;
      if (answer.rollup.allDone || Date.now() > deadline) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    expect(answer.rollup.status).toBe('success');
    const rows = await pg.query(`SELECT id FROM "t_${tenantA}"."${table(tenantA)}" ORDER BY id`);
    expect(rows.rows.map((r) => r.id)).toEqual([1, 2, 3]);
    await api.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: token })
      .set('x-api-key', keyB)
      .expect(404);

    const redis = new Redis(TEST_REDIS_URL);
    try {
      // BullMQ keeps the finished job under the tenant's prefix; the operator's queue never saw it.
      expect(await redis.exists(`tapyard:${tenantA}:ingest:${tenantA}.${token}`)).toBe(1);
      expect(await redis.exists(`tapyard:${operator}:ingest:${tenantA}.${token}`)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it("a tenant's files go to the tenant's own buckets", async () => {
    const res = await api.http
      .post('/api/v1/config/upload')
      .set('x-api-key', keyA)
      .field('type', 'javascript')
      .attach('file', Buffer.from('export default (r) => r;\n'), 'clean.js')
      .expect(200);
    expect(res.body.path).toBe(`s3://${tenantA}-config/javascript/clean.js`);
  });

  it('a tenant admin issues keys inside its tenant only', async () => {
    const reader = await issueKey(api.http, keyA, 'a-reader', { template: 'read-only' });
    const list = await api.http.get('/api/v1/pipelines').set('x-api-key', reader).expect(200);
    expect(list.body.map((p: { name: string }) => p.name).sort()).toEqual(['a_only', 'orders']);
    await api.http.put('/api/v1/secrets/x').set('x-api-key', reader).send({ a: 'b' }).expect(403);
    const cross = await api.http
      .post('/api/v1/keys')
      .set('x-api-key', keyA)
      .send({ label: 'sneaky', template: 'full-access', tenant: tenantB })
      .expect(400);
    expect(cross.body.message).toMatch(/operator environment/);
    // Rotation keeps the mapping: the new value acts in the tenant, the old one is refused.
    const rotated = await api.http.post('/api/v1/keys/a-reader/rotate').set('x-api-key', keyA).expect(200);
    await api.http.get('/api/v1/pipelines').set('x-api-key', reader).expect(401);
    const again = await api.http.get('/api/v1/pipelines').set('x-api-key', rotated.body.key).expect(200);
    expect(again.body).toHaveLength(2);
  });

  it('the operator maps a key made elsewhere to a tenant (full access there only)', async () => {
    const manual = `tpy_manual_${randomBytes(16).toString('hex')}`;
    await api.http.get('/api/v1/pipelines').set('x-api-key', manual).expect(401);
    await api.http
      .post('/api/v1/keys/tenant-mappings')
      .set('x-api-key', boot)
      .send({ key: manual, tenant: tenantB })
      .expect(200);
    const list = await api.http.get('/api/v1/pipelines').set('x-api-key', manual).expect(200);
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['orders']);
    const me = await api.http.get('/api/v1/auth/me').set('x-api-key', manual).expect(200);
    expect(me.body).toMatchObject({ environment: tenantB, legacy: true });
    expect(me.body.identity).toMatch(/^tenant-mapping:[0-9a-f]{16}$/);
  });

  it('/metrics covers every tenant, so only the operator’s full access reads it', async () => {
    const platformReader = await issueKey(api.http, boot, `op-platform-${randomBytes(4).toString('hex')}`, {
      capabilities: ['platform:read'],
    });
    for (const key of [keyA, platformReader]) {
      const res = await api.http.get('/metrics').set('x-api-key', key).expect(403);
      expect(res.body.message).toMatch(/every tenant/);
    }
    const full = await api.http.get('/metrics').set('x-api-key', boot).expect(200);
    expect(full.text).toContain('tapyard_http_request_duration_seconds');
  });

  it('two hand-mapped keys of one tenant are two identities: neither reads the other one’s attachments', async () => {
    const [first, second] = [1, 2].map((i) => `tpy_manual${i}_${randomBytes(16).toString('hex')}`);
    for (const key of [first, second]) {
      await api.http
        .post('/api/v1/keys/tenant-mappings')
        .set('x-api-key', boot)
        .send({ key, tenant: tenantB })
        .expect(200);
    }
    const names = await Promise.all(
      [first, second].map(
        async (key) =>
          (await api.http.get('/api/v1/auth/me').set('x-api-key', key).expect(200)).body.identity,
      ),
    );
    expect(names[0]).not.toBe(names[1]);
    for (const [i, name] of names.entries()) {
      expect(name).toMatch(/^tenant-mapping:[0-9a-f]{16}$/);
      expect([first, second][i]).not.toContain(name.split(':')[1]);
    }

    // A model address nobody may reach: the chat gets past its checks, then its model call fails.
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', first)
      .send({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'm' })
      .expect(200);
    const staged = await api.http
      .post('/api/v1/assistant/attachment')
      .set('x-api-key', first)
      .attach('file', Buffer.from('id\n1\n'), 'mine.csv')
      .expect(201);
    const chat = (key: string) =>
      api.http
        .post('/api/v1/assistant/chat')
        .set('x-api-key', key)
        .send({ messages: [{ content: 'x' }], attachments: [{ attachmentId: staged.body.attachmentId }] });
    const stolen = await chat(second).expect(404);
    expect(stolen.body.message).toMatch(/attachment/);
    const own = await chat(first).expect(200);
    expect(own.headers['content-type']).toMatch(/^text\/event-stream/);
  });
});
