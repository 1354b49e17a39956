import { TestApi, startApi } from './support/apps';
import { newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';

const expectSecurityHeaders = (headers: Record<string, string>): void => {
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['content-security-policy']).toBe("frame-ancestors 'none'");
};

describe('OpenAPI and Swagger UI', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it('documents every foundation endpoint with responses', async () => {
    const doc = (await api.http.get('/api/docs-json').expect(200)).body;
    expect(doc.openapi).toMatch(/^3\./);
    const expected: [string, string][] = [
      ['get', '/api/v1/version'],
      ['get', '/api/v1/health/services'],
      ['get', '/api/v1/destinations/available'],
      ['get', '/api/v1/vector-stores/available'],
      ['get', '/api/v1/secrets'],
      ['get', '/api/v1/secrets/{name}'],
      ['put', '/api/v1/secrets/{name}'],
      ['delete', '/api/v1/secrets/{name}'],
      ['post', '/api/v1/pipeline'],
      ['get', '/api/v1/pipeline'],
      ['delete', '/api/v1/pipeline'],
      ['get', '/api/v1/pipelines'],
      ['post', '/api/v1/pipeline/generate'],
      ['post', '/api/v1/pipeline/profile'],
      ['post', '/api/v1/pipeline/upload'],
      ['get', '/api/v1/pipeline/status'],
      ['delete', '/api/v1/pipeline/status'],
    ];
    for (const [method, path] of expected) {
      const op = doc.paths[path]?.[method];
      expect(op).toBeDefined();
      expect(op.summary).toEqual(expect.any(String));
      expect(op.responses['200']).toBeDefined();
    }
    expect(doc.components.schemas.VersionInfoDto.required).toEqual(
      expect.arrayContaining([
        'version',
        'environment',
        'multiTenant',
        'postgresDatabase',
        'mongodbDatabase',
      ]),
    );
    expect(doc.components.schemas.ErrorBodyDto).toBeDefined();
    // The pipeline configuration is documented down to its nested sections.
    for (const schema of [
      'PipelineConfigDto',
      'SourceDto',
      'CsvAttributesDto',
      'DataQualityRuleDto',
      'TransformationStepDto',
      'DatabaseDestinationDto',
    ]) {
      expect(doc.components.schemas[schema]).toBeDefined();
    }
    // `destination` is built from the registered plug-ins' sections, each with its own schema, and
    // the write options every pipeline has.
    expect(Object.keys(doc.components.schemas.DestinationDto.properties).sort()).toEqual([
      'activemq',
      'database',
      'databricks',
      'kafka',
      'objectStore',
      'primaryKey',
      'rest',
      'snowflake',
      'vectorStore',
      'writeMode',
    ]);
    expect(doc.components.schemas.KafkaDestinationDto.required).toEqual(['secretName', 'topic']);
    expect(doc.components.schemas.DestinationDto.properties.objectStore.allOf).toEqual([
      { $ref: '#/components/schemas/ObjectStoreDestinationDto' },
    ]);
    expect(doc.components.schemas.ObjectStoreDestinationDto.properties.format.enum).toEqual([
      'parquet',
      'csv',
      'jsonl',
    ]);
    expect(doc.components.schemas.DataQualityDto.properties.aiInstruction).toBeDefined();
    expect(doc.components.schemas.TransformationDto.properties.aiInstruction).toBeDefined();
    expect(
      doc.paths['/api/v1/pipeline/upload'].post.requestBody.content['multipart/form-data'],
    ).toBeDefined();
    // A JSON body sent under another content type is 415 on every route that reads one.
    type Operation = {
      requestBody?: { content?: Record<string, unknown> };
      responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
    };
    let jsonBodies = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op.requestBody?.content?.['application/json']) continue;
        jsonBodies++;
        expect([method, path, op.responses['415']?.content?.['application/json']?.schema]).toEqual([
          method,
          path,
          { $ref: '#/components/schemas/ErrorBodyDto' },
        ]);
      }
    }
    expect(jsonBodies).toBeGreaterThan(20);
  });

  it("documents the tap configuration's nullable text fields as strings (the console's typed client reads them)", async () => {
    const doc = (await api.http.get('/api/docs-json').expect(200)).body;
    const { properties } = doc.components.schemas.TapConfigDto;
    for (const field of ['scriptPath', 'targetPipeline', 'secretName', 'cronExpression', 'catalog'])
      expect([field, properties[field].type, properties[field].nullable]).toEqual([field, 'string', true]);
  });

  it('GET /metrics serves Prometheus text with route templates, never raw paths', async () => {
    await api.http.put('/api/v1/secrets/metrics-canary-name').send({ a: 'b' }).expect(200);
    const res = await api.http.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toContain('tapyard_process_cpu_user_seconds_total');
    expect(res.text).toMatch(
      /tapyard_http_request_duration_seconds_count\{environment="[^"]+",method="PUT",route="\/api\/v1\/secrets\/:name",status="200"\} 1/,
    );
    expect(res.text).not.toContain('metrics-canary-name');
  });

  it('serves Swagger UI', async () => {
    const res = await api.http.get('/api/docs').redirects(1).expect(200);
    expect(res.text).toContain('swagger-ui');
  });

  it('sends nosniff and no-framing headers on routes, errors, the docs and their assets', async () => {
    expectSecurityHeaders((await api.http.get('/api/v1/version').expect(200)).headers);
    expectSecurityHeaders((await api.http.get('/api/v1/no-such-route').expect(404)).headers);
    expectSecurityHeaders((await api.http.get('/api/v1/pipeline?pipeline=a%00b').expect(400)).headers);
    expectSecurityHeaders((await api.http.get('/metrics').expect(200)).headers);
    expectSecurityHeaders((await api.http.get('/api/docs-json').expect(200)).headers);
    const ui = await api.http.get('/api/docs/').expect(200);
    expectSecurityHeaders(ui.headers);
    // Under nosniff the UI's scripts must carry a script content type to run at all.
    const scripts = [...ui.text.matchAll(/<script src="\.?\/?([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toContain('swagger-ui-init.js');
    for (const src of scripts) {
      const asset = await api.http.get(`/api/docs/${src}`).expect(200);
      expect(asset.headers['content-type']).toMatch(/javascript/);
      expectSecurityHeaders(asset.headers);
    }
  });
});

describe('API_DOCS: who may read the API description', () => {
  const key = newBootstrapKey();
  let keyed: TestApi;
  let off: TestApi;
  beforeAll(async () => {
    keyed = await startApi({
      TAPYARD_ENV: uniqueEnvironment('docs'),
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: key,
    });
    off = await startApi({ API_DOCS: 'off' });
  });
  afterAll(async () => {
    await keyed.close();
    await off.close();
  });

  it('with authentication on, needs a valid key by default (UI, assets, JSON and YAML)', async () => {
    for (const path of [
      '/api/docs-json',
      '/api/docs-yaml',
      '/api/docs',
      '/api/docs/',
      '/api/docs/swagger-ui-init.js',
    ]) {
      const res = await keyed.http.get(path).expect(401);
      expect(res.body.message).toMatch(/API_DOCS=authenticated/);
      expectSecurityHeaders(res.headers);
      await keyed.http.get(path).set('x-api-key', 'not-a-key-of-this-platform-at-all').expect(401);
    }
    const doc = await keyed.http.get('/api/docs-json').set('x-api-key', key).expect(200);
    expect(doc.body.paths['/api/v1/version']).toBeDefined();
    await keyed.http.get('/api/docs/').set('x-api-key', key).expect(200);
    // Routes that merely start alike are not the docs: /version answers its own 401 (it needs a key).
    const version = await keyed.http.get('/api/v1/version').expect(401);
    expect(version.body.message).not.toMatch(/API_DOCS/);
    await keyed.http.get('/api/v1/version').set('x-api-key', key).expect(200);
  });

  it('API_DOCS=off serves no description at all', async () => {
    await off.http.get('/api/docs-json').expect(404);
    await off.http.get('/api/docs/').expect(404);
    await off.http.get('/api/v1/version').expect(200);
  });
});
