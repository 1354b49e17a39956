import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';
import { TestMinio } from './support/minio';

const ORDER_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { id: { type: 'integer' }, total: { type: 'number' } },
  required: ['id'],
};

describe('object store buckets and configuration files (real MinIO)', () => {
  const env = uniqueEnvironment('cfg');
  let api: TestApi;
  let worker: TestWorker;
  let minio: TestMinio;
  let pg: Client;

  const readObject = async (bucket: string, key: string): Promise<string> =>
    (await minio.read(bucket, key)).toString('utf8');
  const uploadConfig = (type: string | null, name: string, content: string | Buffer) => {
    let req = api.http.post('/api/v1/config/upload');
    if (type !== null) req = req.field('type', type);
    return req.attach('file', Buffer.isBuffer(content) ? content : Buffer.from(content), name);
  };

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    worker = await startWorker({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    minio = new TestMinio();
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('creates the environment’s buckets at boot and reports the store up', async () => {
    for (const purpose of ['raw', 'config', 'taps', 'staged', 'output']) {
      expect(await minio.client.bucketExists(`${env}-${purpose}`)).toBe(true);
    }
    const health = await api.http.get('/api/v1/health/services').expect(200);
    expect(health.body.minio).toEqual({ status: 'up' });
    expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toContain('objectstore');
  });

  it('stores an uploaded validation schema at <env>-config/<type>/<filename>', async () => {
    const text = JSON.stringify(ORDER_SCHEMA);
    const res = await uploadConfig('validation-schema', 'orders.json', text).expect(200);
    expect(res.body).toEqual({
      filename: 'orders.json',
      path: `s3://${env}-config/validation-schema/orders.json`,
    });
    expect(await readObject(`${env}-config`, 'validation-schema/orders.json')).toBe(text);
    const js = await uploadConfig('javascript', 'clean.js', 'export default (r) => r;\n').expect(200);
    expect(js.body.path).toBe(`s3://${env}-config/javascript/clean.js`);
  });

  it('refuses bad config uploads with a clear 4xx', async () => {
    expect((await uploadConfig(null, 'a.json', '{}').expect(400)).body.message).toMatch(/'type' is required/);
    expect((await uploadConfig('binary', 'a.json', '{}').expect(400)).body.message).toMatch(
      /type 'binary' is unknown/,
    );
    await uploadConfig('validation-schema', 'a.exe', 'MZ').expect(415);
    await uploadConfig('javascript', 'a.json', '{}').expect(415);
    const broken = await uploadConfig('validation-schema', 'broken.json', '{"type": ').expect(400);
    expect(broken.body.message).toMatch(/'broken.json' is not valid JSON/);
    const notSchema = await uploadConfig('validation-schema', 'bad.json', '{"type": 12}').expect(400);
    expect(notSchema.body.message).toMatch(/not a valid JSON Schema/);
    await uploadConfig('validation-schema', 'empty.json', '').expect(400);
    await uploadConfig('validation-schema', 'huge.json', Buffer.alloc(5 * 1024 * 1024 + 10, 0x20)).expect(
      413,
    );
    // A path in the file name is never a path in the store.
    const sneaky = await uploadConfig('validation-schema', '../../x.json', '{}').expect(200);
    expect(sneaky.body.path).toBe(`s3://${env}-config/validation-schema/x.json`);
  });

  it('generates a JSON Schema and an XSD from samples, deterministically, and stores them', async () => {
    const sample = JSON.stringify([
      { id: 1, total: 9.5, placed: '2026-11-01', tags: ['a'] },
      { id: 2, total: 3, placed: '2026-11-02' },
    ]);
    const res = await api.http
      .post('/api/v1/config/generate-schema')
      .send({ type: 'json-schema', name: 'sales', sampleData: sample })
      .expect(200);
    expect(res.body.filename).toBe('sales.json');
    expect(res.body.path).toBe(`s3://${env}-config/validation-schema/sales.json`);
    const schema = JSON.parse(res.body.schema);
    expect(schema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      required: ['id', 'total', 'placed'],
      properties: {
        id: { type: 'integer' },
        total: { type: 'number' },
        placed: { type: 'string', format: 'date' },
      },
    });
    expect(await readObject(`${env}-config`, 'validation-schema/sales.json')).toBe(res.body.schema);
    const again = await api.http
      .post('/api/v1/config/generate-schema')
      .send({ type: 'json-schema', name: 'sales', sampleData: sample })
      .expect(200);
    expect(again.body.schema).toBe(res.body.schema);

    const xsd = await api.http
      .post('/api/v1/config/generate-schema')
      .send({
        type: 'xsd',
        name: 'feed',
        sampleData: '<feed><item sku="A"><qty>2</qty></item><item sku="B"/></feed>',
      })
      .expect(200);
    expect(xsd.body.filename).toBe('feed.xsd');
    expect(xsd.body.schema).toMatch(/<xs:element name="feed">/);
    expect(xsd.body.schema).toMatch(/maxOccurs="unbounded"/);

    const bad = await api.http
      .post('/api/v1/config/generate-schema')
      .send({ type: 'json-schema', name: 'x', sampleData: '{"a": ' })
      .expect(400);
    expect(bad.body.message).toMatch(/^sampleData: /);
    await api.http
      .post('/api/v1/config/generate-schema')
      .send({ type: 'yaml', name: 'x', sampleData: '{}' })
      .expect(400);
    await api.http
      .post('/api/v1/config/generate-schema')
      .send({ type: 'json-schema', name: '../etc', sampleData: '{}' })
      .expect(400);
  });

  it('a JSON pipeline referencing a validation schema rejects failing records with the validation message', async () => {
    const table = `validated_${env.replace(/[^a-z0-9]/g, '_')}`;
    const cfg = (extra: Record<string, unknown>) => ({
      name: 'validated',
      source: {
        fileAttributes: { format: 'json' },
        schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
      },
      destination: { database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true } },
      ...extra,
    });
    await api.http
      .post('/api/v1/pipeline')
      .send(cfg({ dataQuality: { validationSchema: 'orders.json' } }))
      .expect(200);
    const token = await upload(
      api.http,
      'validated',
      '{"id":1,"total":2.5}\n{"total":3}\n{"id":"x"}\n{"id":4}\n',
      'o.ndjson',
    );
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    const loaded = await pg.query(`SELECT _json FROM ingest_test."${table}" ORDER BY 1`);
    expect(loaded.rows.map((r) => JSON.parse(r._json).id)).toEqual([1, 4]);
    const rejects = await pg.query(`SELECT reason FROM ingest_test."${table}_rejects" ORDER BY line`);
    expect(rejects.rows.map((r) => r.reason)).toEqual([
      "record does not match validation schema 'orders.json': / must have required property 'id'",
      "record does not match validation schema 'orders.json': /id must be integer",
    ]);

    const missing = await api.http
      .post('/api/v1/pipeline')
      .send({ ...cfg({ dataQuality: { validationSchema: 'nope.json' } }), name: 'missing_schema' })
      .expect(200);
    expect(missing.body.status).toBe('ok');
    const t2 = await upload(api.http, 'missing_schema', '{"id":1}\n', 'o.ndjson');
    const failed = await waitForJob(api.http, t2);
    expect(failed.rollup.status).toBe('error');
    expect(failed.rollup.jobs[0].lastError?.description).toMatch(
      /validation schema 'nope.json' does not exist/,
    );

    const xsd = await api.http
      .post('/api/v1/pipeline')
      .send(cfg({ dataQuality: { validationSchema: 'feed.xsd' } }))
      .expect(400);
    expect(xsd.body.details[0]).toMatchObject({ field: 'dataQuality.validationSchema' });
  });

  // Audit finding 4: each pattern costs up to some 30 ms on an 8 KB value, and their number was not bounded.
  it('refuses a JSON Schema with more than 16 patterns at upload, and fails the jobs of one stored before', async () => {
    const allOf = (n: number) => Array.from({ length: n }, (_, i) => ({ pattern: `^[a-z]{0,${40 + i}}$` }));
    const tooMany = { type: 'object', properties: { name: { allOf: allOf(17) } } };
    const refused = await uploadConfig('validation-schema', 'names.json', JSON.stringify(tooMany)).expect(
      400,
    );
    expect(refused.body).toMatchObject({
      code: 'config_file.invalid_schema',
      message: expect.stringMatching(
        /^'names.json' is not a valid JSON Schema: it applies 17 patterns .* more than the 16 a schema may have/,
      ) as string,
    });
    // Sixteen are allowed, and checked (on the stage thread: a pattern keeps the job off the worker's main one).
    const sixteen = { type: 'object', properties: { name: { allOf: allOf(16) } }, required: ['name'] };
    await uploadConfig('validation-schema', 'names.json', JSON.stringify(sixteen)).expect(200);
    const table = `named_${env.replace(/[^a-z0-9]/g, '_')}`;
    const pipeline = (name: string, schemaFile: string) => ({
      name,
      source: {
        fileAttributes: { format: 'json' },
        schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
      },
      dataQuality: { validationSchema: schemaFile },
      destination: { database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true } },
    });
    await api.http.post('/api/v1/pipeline').send(pipeline('named', 'names.json')).expect(200);
    const token = await upload(api.http, 'named', '{"name":"ada"}\n{"name":"Ada"}\n', 'n.ndjson');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('warning');
    const rejects = await pg.query(`SELECT reason FROM ingest_test."${table}_rejects"`);
    expect(rejects.rows.map((r) => r.reason)).toEqual([
      expect.stringMatching(
        /^record does not match validation schema 'names.json': \/name must match pattern/,
      ),
    ]);

    // Stored before the limit (written to the store directly): its jobs fail naming it.
    await minio.client.putObject(
      `${env}-config`,
      'validation-schema/old.json',
      Buffer.from(JSON.stringify(tooMany)),
    );
    await api.http.post('/api/v1/pipeline').send(pipeline('named_old', 'old.json')).expect(200);
    const t2 = await upload(api.http, 'named_old', '{"name":"ada"}\n', 'n.ndjson');
    const failed = await waitForJob(api.http, t2);
    expect(failed.rollup.status).toBe('error');
    expect(failed.rollup.jobs[0].lastError?.description).toMatch(
      /'old.json' is not a valid JSON Schema: it applies 17 patterns .* more than the 16 a schema may have/,
    );
  });

  it('an XML pipeline referencing an XSD rejects failing records with libxml2’s message', async () => {
    const table = `xsd_${env.replace(/[^a-z0-9]/g, '_')}`;
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'xsd_checked',
        source: {
          fileAttributes: { format: 'xml', xmlAttributes: { rowElement: 'item' } },
          schemaProperties: { fields: [{ name: '_xml', type: 'string' }] },
        },
        dataQuality: { validationSchema: 'feed.xsd' },
        destination: {
          database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true },
        },
      })
      .expect(200);
    const xml =
      '<feed>\n<item sku="C"><qty>5</qty></item>\n<item><qty>1</qty></item>\n<item sku="D"><qty>x</qty></item>\n' +
      '<item sku="E &amp; F"/>\n</feed>\n';
    const token = await upload(api.http, 'xsd_checked', xml, 'feed.xml');
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    const loaded = await pg.query(`SELECT _xml FROM ingest_test."${table}"`);
    expect(loaded.rows.map((r) => JSON.parse(r._xml)['@sku']).sort()).toEqual(['C', 'E & F']);
    const rejects = await pg.query(`SELECT reason FROM ingest_test."${table}_rejects" ORDER BY line`);
    expect(rejects.rows.map((r) => r.reason)).toEqual([
      expect.stringMatching(
        /^record does not match validation schema 'feed.xsd': .*attribute 'sku' is required/,
      ),
      expect.stringMatching(/'x' is not a valid value of the atomic type 'xs:integer'/),
    ]);
  });

  it('answers 503 naming the object store when it is not configured', async () => {
    const bare = await startApi({
      TAPYARD_ENV: uniqueEnvironment('cfg-nostore'),
      OBJECT_STORE_ENDPOINT: undefined,
    });
    try {
      const res = await bare.http
        .post('/api/v1/config/upload')
        .field('type', 'javascript')
        .attach('file', Buffer.from('x'), 'a.js')
        .expect(503);
      expect(res.body.message).toMatch(/object store is not configured \(OBJECT_STORE_ENDPOINT\)/);
    } finally {
      await bare.close();
    }
  });
});
