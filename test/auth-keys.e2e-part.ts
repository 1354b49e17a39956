import { Client } from 'pg';
import { SecretsService } from '@tapyard/secrets';
import { TestApi, startApi } from './support/apps';
import { AuditLine, auditLines, authFailures, issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';

describe('API keys (USE_API_KEYS=true): issuance, rotation, revocation, capabilities, scopes', () => {
  const env = uniqueEnvironment('keys');
  const boot = newBootstrapKey();
  const issued: string[] = [];
  let a: TestApi;
  let b: TestApi;
  let pg: Client;
  const flags = {
    TAPYARD_ENV: env,
    USE_API_KEYS: 'true',
    TAPYARD_BOOTSTRAP_API_KEY: boot,
    KEY_USAGE_FLUSH_MS: '3600000',
  };

  beforeAll(async () => {
    // Two API instances of one environment: what one changes, the other must honour at once.
    a = await startApi(flags);
    b = await startApi(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    for (const [name, catalog] of [
      ['sales_orders', 'sales'],
      ['hr_people', 'hr'],
    ]) {
      await a.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(csvPipeline(name, `${name}_${env.replace(/-/g, '_')}`, [['id', 'int']], { catalog }))
        .expect(200);
    }
  });

  afterAll(async () => {
    await pg.end();
    await a.close();
    await b.close();
  });

  const key = async (label: string, grant: { template: string } | { capabilities: string[] }) => {
    const v = await issueKey(a.http, boot, label, grant);
    issued.push(v);
    return v;
  };

  const uploadAs = async (apiKey: string, pipeline: string): Promise<string> => {
    const res = await a.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', apiKey)
      .field('pipeline', pipeline)
      .attach('file', Buffer.from('id\n1\n'), 'a.csv')
      .expect(200);
    return res.text;
  };

  it('answers 401 without a key and with an unknown key, and logs which', async () => {
    const none = await a.http.get('/api/v1/pipelines').expect(401);
    expect(none.body).toEqual({
      statusCode: 401,
      error: 'Unauthorized',
      code: 'auth.authentication_required',
      message: expect.stringMatching(/x-api-key/),
    });
    await a.http.get('/api/v1/pipelines').set('x-api-key', 'tpy_not-a-key').expect(401);
    expect(authFailures(a.logs).map((f) => f.reason)).toEqual(
      expect.arrayContaining(['missing credentials', 'unknown key']),
    );
    // Spec rule 3: /version needs a key like every other route; the console reads the flags from /auth/mode.
    await a.http.get('/api/v1/version').expect(401);
    const v = await a.http.get('/api/v1/version').set('x-api-key', boot).expect(200);
    expect(v.body).toMatchObject({ useApiKeys: 'true', useUserAuth: 'false' });
  });

  it('issues a tpy_ key shown once; listings and the key map hold no value', async () => {
    const res = await a.http
      .post('/api/v1/keys')
      .set('x-api-key', boot)
      .send({ label: 'reporter', template: 'read-only' })
      .expect(201);
    const value = res.body.key as string;
    issued.push(value);
    expect(res.body).toEqual({
      label: 'reporter',
      key: expect.stringMatching(/^tpy_[A-Za-z0-9_-]{43}$/),
      capabilities: expect.any(Array),
    });
    expect(res.body.capabilities).toContain('pipeline:read');

    const list = await a.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    expect(JSON.stringify(list.body)).not.toContain(value);
    expect(list.body).toEqual(
      expect.arrayContaining([
        {
          label: 'bootstrap',
          capabilities: ['*:*'],
          template: 'full-access',
          createdAt: expect.any(String),
          lastUsedAt: expect.any(String),
          revoked: false,
        },
        {
          label: 'reporter',
          capabilities: res.body.capabilities,
          template: 'read-only',
          createdAt: expect.any(String),
          lastUsedAt: null,
          revoked: false,
        },
      ]),
    );
    // The key map is the secret <environment>/api-keys and keeps digests only...
    const map = await a.app.get(SecretsService).readSystem(env, `${env}/api-keys`);
    expect(Object.keys(map ?? {})).toEqual(expect.arrayContaining(['bootstrap', 'reporter']));
    expect(JSON.stringify(map)).not.toContain(value);
    expect(JSON.stringify(map)).not.toContain(boot);
    // ...which the Secrets API neither shows nor writes: only the keys API changes it.
    await a.http
      .get(`/api/v1/secrets/${encodeURIComponent(`${env}/api-keys`)}`)
      .set('x-api-key', boot)
      .expect(404);
    const put = await a.http
      .put(`/api/v1/secrets/${encodeURIComponent(`${env}/api-keys`)}`)
      .set('x-api-key', boot)
      .send({ reporter: '{}' })
      .expect(400);
    expect(put.body.message).toMatch(/managed by the keys API/);
  });

  it('validates labels, templates and capability lists', async () => {
    const post = (body: object) => a.http.post('/api/v1/keys').set('x-api-key', boot).send(body);
    expect((await post({ label: 'ui', template: 'read-only' }).expect(400)).body.message).toMatch(/reserved/);
    expect((await post({ label: 'Bad Label', template: 'read-only' }).expect(400)).body.message).toMatch(
      /invalid/,
    );
    expect((await post({ label: 'x1', template: 'god-mode' }).expect(400)).body.message).toMatch(
      /template 'god-mode'/,
    );
    expect((await post({ label: 'x2' }).expect(400)).body.message).toMatch(
      /exactly one of template or capabilities/,
    );
    const bad = await post({ label: 'x3', capabilities: ['pipeline:read', 'pipeline:fly'] }).expect(400);
    expect(bad.body.details).toEqual([
      { field: 'capabilities[1]', problem: expect.stringMatching(/unknown action 'fly'/) },
    ]);
    await key('dup', { template: 'read-only' });
    expect((await post({ label: 'dup', template: 'read-only' }).expect(409)).body.message).toMatch(
      /already exists/,
    );
  });

  it('a read-only key reads but gets 403 on a write route, with one audit line per request', async () => {
    const ro = await key('ro', { template: 'read-only' });
    await a.http.get('/api/v1/pipelines').set('x-api-key', ro).expect(200);
    const denied = await a.http.put('/api/v1/secrets/x').set('x-api-key', ro).send({ a: 'b' }).expect(403);
    expect(denied.body.message).toMatch(/'ro' lacks the capability secret:update/);
    await a.http
      .post('/api/v1/keys')
      .set('x-api-key', ro)
      .send({ label: 'mine', template: 'full-access' })
      .expect(403);
    const lines = auditLines(a.logs).filter((l) => l.key === 'ro');
    expect(
      lines.map(({ route, required, key, legacy, outcome }) => ({ route, required, key, legacy, outcome })),
    ).toEqual([
      {
        route: 'GET /api/v1/pipelines',
        required: 'pipeline:read',
        key: 'ro',
        legacy: false,
        outcome: 'grant',
      },
      {
        route: 'PUT /api/v1/secrets/:name',
        required: 'secret:update',
        key: 'ro',
        legacy: false,
        outcome: 'deny',
      },
      { route: 'POST /api/v1/keys', required: 'key:create', key: 'ro', legacy: false, outcome: 'deny' },
    ] satisfies AuditLine[]);
    expect(auditLines(a.logs).find((l) => l.key === 'bootstrap')).toMatchObject({
      legacy: true,
      outcome: 'grant',
    });
  });

  it('a catalog-scoped key sees only its catalog; the other catalog answers 404, not 403', async () => {
    const sales = await key('sales-reader', {
      capabilities: [
        'pipeline:read:catalog=sales',
        'pipeline:upload:catalog=sales',
        'job:read:catalog=sales',
        'pipeline:delete:catalog=sales',
      ],
    });
    const list = await a.http.get('/api/v1/pipelines').set('x-api-key', sales).expect(200);
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['sales_orders']);
    await a.http
      .get('/api/v1/pipeline')
      .query({ pipeline: 'sales_orders' })
      .set('x-api-key', sales)
      .expect(200);
    const hidden = await a.http
      .get('/api/v1/pipeline')
      .query({ pipeline: 'hr_people' })
      .set('x-api-key', sales)
      .expect(404);
    expect(hidden.body.message).toBe("pipeline 'hr_people' does not exist");
    // Same answer as for a pipeline that really does not exist.
    const absent = await a.http
      .get('/api/v1/pipeline')
      .query({ pipeline: 'nope' })
      .set('x-api-key', sales)
      .expect(404);
    expect(absent.body.message).toBe("pipeline 'nope' does not exist");
    // The domain code too: a hidden pipeline's 404 must not tell itself apart by its code.
    expect(absent.body.code).toBe('pipeline.not_found');
    expect(hidden.body.code).toBe(absent.body.code);
    await a.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'hr_people' })
      .set('x-api-key', sales)
      .expect(404);
    await a.http.get('/api/v1/pipeline').query({ pipeline: 'hr_people' }).set('x-api-key', boot).expect(200);

    // Uploads: the pipeline is a multipart field, checked by the handler with the same rule.
    const hrUpload = await a.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', sales)
      .field('pipeline', 'hr_people')
      .attach('file', Buffer.from('id\n1\n'), 'a.csv')
      .expect(404);
    expect(hrUpload.body.message).toBe("pipeline 'hr_people' does not exist");
    expect(hrUpload.body.code).toBe('pipeline.not_found');
    const hrToken = await uploadAs(boot, 'hr_people');
    const salesToken = await uploadAs(sales, 'sales_orders');
    // Status follows the job's pipeline catalog.
    await a.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: salesToken })
      .set('x-api-key', sales)
      .expect(200);
    const hrStatus = await a.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: hrToken })
      .set('x-api-key', sales)
      .expect(404);
    expect(hrStatus.body.message).toBe(`no job has pipeline token '${hrToken}'`);
    await a.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinename: 'hr_people' })
      .set('x-api-key', sales)
      .expect(404);
    // Environment-wide acts need an unscoped capability.
    await a.http.delete('/api/v1/pipeline/status').set('x-api-key', sales).expect(403);
    expect(auditLines(a.logs).filter((l) => l.key === 'sales-reader' && l.outcome === 'deny')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          route: 'GET /api/v1/pipeline',
          required: 'pipeline:read',
          scope: expect.objectContaining({ catalog: 'hr' }),
        }),
      ]),
    );
  });

  it('rotation: the old value fails on every instance the moment rotate returns; the new one works', async () => {
    const old = await key('rotating', { template: 'read-only' });
    await b.http.get('/api/v1/pipelines').set('x-api-key', old).expect(200); // instance b caches the map
    const res = await a.http.post('/api/v1/keys/rotating/rotate').set('x-api-key', boot).expect(200);
    expect(res.body).toEqual({ label: 'rotating', key: expect.stringMatching(/^tpy_/) });
    issued.push(res.body.key);
    await b.http.get('/api/v1/pipelines').set('x-api-key', old).expect(401);
    await a.http.get('/api/v1/pipelines').set('x-api-key', old).expect(401);
    await b.http.get('/api/v1/pipelines').set('x-api-key', res.body.key).expect(200);
    expect(authFailures(b.logs)).toContainEqual(
      expect.objectContaining({ reason: 'rotated key', label: 'rotating' }),
    );
    await a.http.post('/api/v1/keys/nobody/rotate').set('x-api-key', boot).expect(404);
  });

  it('revocation is permanent and later attempts log as revoked key, not unknown key', async () => {
    const doomed = await key('doomed', { template: 'ops' });
    await a.http.get('/api/v1/health/services').set('x-api-key', doomed).expect(200);
    const res = await a.http.delete('/api/v1/keys/doomed').set('x-api-key', boot).expect(200);
    expect(res.body).toEqual({ status: 'revoked', label: 'doomed' });
    await b.http.get('/api/v1/health/services').set('x-api-key', doomed).expect(401);
    expect(authFailures(b.logs)).toContainEqual(
      expect.objectContaining({ reason: 'revoked key', label: 'doomed' }),
    );
    await a.http.post('/api/v1/keys/doomed/rotate').set('x-api-key', boot).expect(409);
    await a.http.delete('/api/v1/keys/doomed').set('x-api-key', boot).expect(200);
    const list = await a.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    expect(list.body.find((k: { label: string }) => k.label === 'doomed')).toMatchObject({ revoked: true });
    await a.http
      .post('/api/v1/keys')
      .set('x-api-key', boot)
      .send({ label: 'doomed', template: 'ops' })
      .expect(409);
  });

  it('lastUsedAt is written in batches, not once per request', async () => {
    const user = await key('busy', { template: 'read-only' });
    for (let i = 0; i < 20; i++) await a.http.get('/api/v1/pipelines').set('x-api-key', user).expect(200);
    const before = await pg.query(
      'SELECT * FROM tapyard.api_key_usage WHERE environment = $1 AND label = $2',
      [env, 'busy'],
    );
    expect(before.rowCount).toBe(0); // KEY_USAGE_FLUSH_MS is an hour in this suite
    const list = await a.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    const busy = list.body.find((k: { label: string }) => k.label === 'busy');
    expect(Date.now() - Date.parse(busy.lastUsedAt)).toBeLessThan(60000);
  });

  it('never writes a key value into a log line or an error body', async () => {
    await a.http.get('/api/v1/pipelines').set('x-api-key', `${boot}x`).expect(401);
    const logs = a.logs.text + b.logs.text;
    for (const v of [boot, ...issued]) expect(logs).not.toContain(v);
  });
});
