import { randomUUID } from 'node:crypto';
import { TestApi, startApi } from './support/apps';
import { newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';

/**
 * Every error body carries `code`: a domain code (`<domain>.<what>`) where the error has one, else the
 * HTTP class. Clients match these instead of the English message; a few answers of each domain here.
 */
describe('error bodies carry a code: the domain code, else the HTTP class', () => {
  const env = uniqueEnvironment('codes');
  const boot = newBootstrapKey();
  const pipeline = `codes_${env.replace(/-/g, '_')}`;
  let api: TestApi;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: boot });
    await api.http
      .post('/api/v1/pipeline')
      .set('x-api-key', boot)
      .send(csvPipeline(pipeline, pipeline, [['id', 'int']]))
      .expect(200);
  });
  afterAll(async () => {
    await api.http.delete('/api/v1/pipeline').set('x-api-key', boot).query({ pipeline });
    await api.close();
  });

  const codeOf = async (
    status: number,
    send: (http: TestApi['http']) => ReturnType<TestApi['http']['get']>,
  ): Promise<string> => {
    const res = await send(api.http).set('x-api-key', boot).expect(status);
    expect(res.body).toMatchObject({ statusCode: status, message: expect.any(String) });
    return res.body.code as string;
  };

  it('answers no domain describes carry their HTTP class', async () => {
    expect(await codeOf(404, (h) => h.get('/api/v1/no/such/route'))).toBe('not_found');
    expect(
      await codeOf(400, (h) =>
        h.put('/api/v1/secrets/x').set('content-type', 'application/json').send('{"a": nope}'),
      ),
    ).toBe('validation_failed');
  });

  it('access: no key, a key without the capability', async () => {
    const anonymous = await api.http.get('/api/v1/pipelines').expect(401);
    expect(anonymous.body.code).toBe('auth.authentication_required');
    const reader = (
      await api.http
        .post('/api/v1/keys')
        .set('x-api-key', boot)
        .send({ label: `narrow-${randomUUID().slice(0, 8)}`, capabilities: ['pipeline:read'] })
        .expect(201)
    ).body as { key: string };
    const refused = await api.http.delete('/api/v1/secrets/x').set('x-api-key', reader.key).expect(403);
    expect(refused.body).toMatchObject({ code: 'auth.capability_missing', error: 'Forbidden' });
  });

  it('pipelines', async () => {
    expect(await codeOf(404, (h) => h.get('/api/v1/pipeline').query({ pipeline: 'no_such_pipeline' }))).toBe(
      'pipeline.not_found',
    );
    const refused = csvPipeline(`${pipeline}_x`, 'users', [['id', 'int']]);
    refused.destination.database.schema = 'tapyard';
    expect(await codeOf(400, (h) => h.post('/api/v1/pipeline').send(refused))).toBe(
      'pipeline.destination_refused',
    );
  });

  it('CodeGen scripts', async () => {
    const scripts = `/api/v1/pipelines/${pipeline}/codegen-scripts`;
    expect(await codeOf(400, (h) => h.get(`${scripts}/bogus/versions`))).toBe('codegen.unknown_kind');
    expect(await codeOf(400, (h) => h.post(`${scripts}/dataQuality/versions/1/restore`))).toBe(
      'codegen.no_instruction',
    );
    expect(await codeOf(404, (h) => h.get('/api/v1/pipelines/no_such_pipeline/codegen-scripts'))).toBe(
      'pipeline.not_found',
    );
  });

  it('secrets', async () => {
    expect(await codeOf(404, (h) => h.get('/api/v1/secrets/no-such-secret'))).toBe('secret.not_found');
    expect(await codeOf(400, (h) => h.put('/api/v1/secrets/empty').send({}))).toBe('secret.invalid_body');
    expect(await codeOf(400, (h) => h.put('/api/v1/secrets/api-key-mappings').send({ a: 'b' }))).toBe(
      'secret.reserved',
    );
  });

  it('metadata and incidents', async () => {
    expect(
      await codeOf(404, (h) => h.get('/api/v1/metadata/postgres/schemas').query({ database: 'no_such_db' })),
    ).toBe('metadata.database_not_found');
    expect(
      await codeOf(404, (h) => h.get('/api/v1/metadata/postgres/tables').query({ schema: 'tapyard' })),
    ).toBe('metadata.schema_not_found');
    expect(await codeOf(404, (h) => h.get(`/api/v1/incidents/${randomUUID()}`))).toBe('incident.not_found');
  });

  it('API keys', async () => {
    const issue = (label: string, grant: Record<string, unknown>) => (h: TestApi['http']) =>
      h.post('/api/v1/keys').send({ label, ...grant });
    await issue('reader', { template: 'reporting' })(api.http).set('x-api-key', boot).expect(201);
    expect(await codeOf(409, issue('reader', { template: 'reporting' }))).toBe('key.exists');
    expect(await codeOf(400, issue('bootstrap', { template: 'reporting' }))).toBe('key.invalid');
    expect(await codeOf(400, issue('odd', { capabilities: ['nonsense'] }))).toBe('auth.invalid_capability');
    expect(await codeOf(404, (h) => h.delete('/api/v1/keys/no-such-key'))).toBe('key.not_found');
  });

  it('taps', async () => {
    expect(await codeOf(404, (h) => h.get('/api/v1/tap').query({ name: 'no_such_tap' }))).toBe(
      'tap.not_found',
    );
    expect(
      await codeOf(400, (h) =>
        h
          .post('/api/v1/tap')
          .send({ name: `t_${randomUUID().slice(0, 8)}`, cronExpression: '0 0 0 1 1 ? 2001' }),
      ),
    ).toBe('tap.invalid_cron');
  });

  it('vector stores, config files, uploads', async () => {
    const search = { query: 'anything', collection: 'docs' };
    expect(await codeOf(400, (h) => h.post('/api/v1/search/bogus').send(search))).toBe(
      'vector_store.invalid_request',
    );
    // Nothing configures Milvus in a fresh environment.
    expect(await codeOf(503, (h) => h.post('/api/v1/search/milvus').send(search))).toBe(
      'vector_store.not_configured',
    );
    expect(await codeOf(400, (h) => h.post('/api/v1/config/upload').field('type', 'javascript'))).toBe(
      'config_file.missing_field',
    );
    expect(
      await codeOf(400, (h) =>
        h.post('/api/v1/config/upload').field('type', 'nonsense').attach('file', Buffer.from('x'), 'a.js'),
      ),
    ).toBe('config_file.unknown_type');
    expect(
      await codeOf(400, (h) =>
        h.post('/api/v1/pipeline/upload').attach('file', Buffer.from('id\n1\n'), 'rows.csv'),
      ),
    ).toBe('upload.missing_field');
  });
});
