import request from 'supertest';
import { TestApi, startApi } from './support/apps';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';

/**
 * Everyday client habits and hostile requests through the real HTTP app: nulls posted back, NUL
 * bytes in query values, very deep JSON bodies, a broken content-encoding. Each is a 4xx naming
 * the problem, never a 500, and the server keeps serving.
 */
describe('request hygiene', () => {
  const env = uniqueEnvironment('hygiene');
  let api: TestApi;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
  });
  afterAll(async () => {
    await api.close();
  });

  it('a tap read with GET /tap and posted back unchanged is accepted (script: null means no change)', async () => {
    await api.http.post('/api/v1/tap').send({ name: 'roundtrip', description: 'x' }).expect(200);
    const got = await api.http.get('/api/v1/tap').query({ name: 'roundtrip' }).expect(200);
    expect(got.body.script).toBeNull();
    await api.http
      .post('/api/v1/tap')
      .send({ ...got.body, description: 'changed' })
      .expect(200);
    const again = await api.http.get('/api/v1/tap').query({ name: 'roundtrip' }).expect(200);
    expect(again.body).toMatchObject({ description: 'changed', script: null, scriptPath: null });
  });

  it('null in any field of a tap or a pipeline is a 200 or a 400 naming the field, never a 500', async () => {
    const tap: Record<string, unknown> = {
      name: 'nulls',
      description: 'd',
      script: 'def fetch():\n    return []\n',
      targetPipeline: '',
      packages: [],
      secretName: null,
      cronExpression: null,
      timezone: 'UTC',
      enabled: false,
      tapType: 'structured',
      catalog: null,
    };
    for (const field of Object.keys(tap)) {
      const res = await api.http.post('/api/v1/tap').send({ ...tap, [field]: null });
      expect({ field, status: res.status }).toEqual({ field, status: field === 'name' ? 400 : 200 });
      if (res.status === 400) expect(res.body.message).toMatch(new RegExp(field));
    }
    const pipeline = csvPipeline('nullable', 'nullable_t', [['a', 'int']], {
      catalog: 'c',
      description: 'd',
      dataQuality: { rules: [{ type: 'not_null', column: 'a' }], aiInstruction: null },
      transformation: { mappings: [], aiInstruction: null },
    });
    const paths: string[][] = [];
    const walk = (o: unknown, path: string[]) => {
      if (typeof o !== 'object' || o === null) return;
      for (const [k, v] of Object.entries(o)) {
        paths.push([...path, k]);
        walk(v, [...path, k]);
      }
    };
    walk(pipeline, []);
    for (const path of paths) {
      const body = structuredClone(pipeline) as Record<string, unknown>;
      let at: Record<string, unknown> = body;
      for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
      at[path[path.length - 1]] = null;
      const res = await api.http.post('/api/v1/pipeline').send(body);
      expect({ path: path.join('.'), status: res.status < 500 }).toEqual({
        path: path.join('.'),
        status: true,
      });
    }
    await api.http.get('/api/v1/version').expect(200);
  });

  it('a NUL byte in a query value is a 400', async () => {
    const res = await api.http.get('/api/v1/pipeline').query({ pipeline: 'a\u0000b' }).expect(400);
    expect(res.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'validation_failed',
      message: "query parameter 'pipeline' holds a NUL character",
    });
    await api.http.get('/api/v1/pipeline/status?pipelinename=x%00y').expect(400);
    await api.http.get('/api/v1/version').expect(200);
  });

  it('a very deep JSON body is a 400', async () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    const res = await api.http
      .post('/api/v1/pipeline')
      .set('content-type', 'application/json')
      .send(`{"name":"deep","source":${deep}}`)
      .expect(400);
    expect(res.body.message).toMatch(/nested deeper than \d+ levels/);
    await api.http.get('/api/v1/version').expect(200);
  });

  it('a malformed or unknown content-encoding is a 400, not a 500', async () => {
    const server = api.app.getHttpServer();
    const gzipGarbage = await request(server)
      .post('/api/v1/pipeline')
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip')
      .send('this is not gzip')
      .expect(400);
    expect(gzipGarbage.body.message).toBe(
      "request body could not be decoded: it does not match its content-encoding 'gzip'",
    );
    const malformed = await request(server)
      .post('/api/v1/pipeline')
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip;;')
      .send('{}')
      .expect(400);
    expect(malformed.body.message).toBe('the content-encoding header is malformed');
    const unknown = await request(server)
      .post('/api/v1/pipeline')
      .set('content-type', 'application/json')
      .set('content-encoding', 'x-nonsense')
      .send('{}')
      .expect(415);
    expect(unknown.body.message).toMatch(/content-encoding 'x-nonsense' is not supported/);
    await api.http.get('/api/v1/version').expect(200);
  });

  it('the OpenAPI document carries the interface version; /version the server version', async () => {
    const doc = await api.http.get('/api/docs-json').expect(200);
    expect(doc.body.info.version).toBe('1.28.0');
    const version = await api.http.get('/api/v1/version').expect(200);
    expect(version.body.version).toBe(api.config.version);
    expect(version.body.version).not.toBe('1.28.0');
  });
});
